"""New predictions from a calibration (`run --calibration`, `capacity --calibration`): the
fit's parameter uncertainty carried into a model it was not fitted on, checked against M/M/1
theory at the drawn parameter quantiles; and the calibration document's errors."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from scipy import stats

from sim.cli import main
from sim.studies.calibration.saved import CalibrationFileError, load_calibration
from tests.conftest import one_server_file

MODEL = one_server_file(duration_s=4000, warmup_s=100, replications=4)
LOW, HIGH = 0.05, 0.2  # the demand's calibration range (log scale: 0.1 is u = 1.5)
SD_UNIT = 0.05  # the fit's sd of the demand on the unit scale: about +-7 % of D


def calibration_document(sd_unit: float = SD_UNIT, model_error: float = 0.0) -> dict:
    """What `tiersim calibrate --save` writes, for a demand fitted at D = 0.1 s."""
    return {
        "experiment": "mm1",
        "parameters": [
            {
                "parameter": "backends.0.demand.mean",
                "value": 0.1,
                "low": LOW,
                "high": HIGH,
                "scale": "log",
                "when": {},
                "kind": "calibrate",
            }
        ],
        "uncertainty": {
            "model_error": {"sd": model_error, "estimated": model_error > 0},
            "posterior": {"scale": "unit", "mean": [1.5], "cov": [[sd_unit**2]]},
        },
    }


def demand_quantile(q: float) -> float:
    u = 1.5 + stats.norm.ppf(q) * SD_UNIT
    return LOW * (HIGH / LOW) ** (u - 1.0)


def mm1_response(demand: float, rate: float = 5.0) -> float:
    return demand / (1.0 - rate * demand)


def write(tmp_path, document) -> tuple[str, str]:
    (tmp_path / "model.toml").write_text(MODEL)
    (tmp_path / "cal.json").write_text(json.dumps(document))
    return str(tmp_path / "model.toml"), str(tmp_path / "cal.json")


def test_run_with_a_calibration_sets_the_fitted_values_and_gives_the_parameters_interval(tmp_path):
    """The model file says D = 0.3 s (unstable at lambda = 5); the calibration's D = 0.1 s is
    what runs.  The 90 % prediction interval of the mean response time must hold M/M/1's R at
    the fitted D, reach past R at D's 25 % and 75 % quantiles (the parameters are in it), and
    stay within R at D's 0.5 % and 99.5 % quantiles widened by the draws' noise."""
    model, calibration = write(tmp_path, calibration_document())
    out = CliRunner().invoke(
        main, ["run", model, "--calibration", calibration, "--draws", "16", "--json"]
    )
    assert out.exit_code == 0, out.output
    document = json.loads(out.output[out.output.index("{") :])
    assert "backends.0.demand.mean=0.1" in document["model"]["overrides"]
    run = document["metrics"]["response.mean"]
    assert run["low"] <= mm1_response(0.1) <= run["high"]
    predicted = document["prediction"]["metrics"]["response.mean"]
    noise = 3 * predicted["sd_noise"]
    assert predicted["pi_low"] <= mm1_response(0.1) <= predicted["pi_high"]
    assert predicted["pi_low"] < mm1_response(demand_quantile(0.25))
    assert predicted["pi_high"] > mm1_response(demand_quantile(0.75))
    assert predicted["pi_low"] > mm1_response(demand_quantile(0.005)) - noise
    assert predicted["pi_high"] < mm1_response(demand_quantile(0.995)) + noise
    assert predicted["sd_parameters"] > predicted["sd_noise"]
    assert predicted["most_sensitive"].startswith("backends.0.demand.mean")
    assert document["prediction"]["unstable_draws"] == 0


def test_a_model_error_widens_the_prediction_interval(tmp_path):
    model, calibration = write(tmp_path, calibration_document(model_error=0.10))
    out = CliRunner().invoke(
        main, ["run", model, "--calibration", calibration, "--draws", "4", "--json"]
    )
    assert out.exit_code == 0, out.output
    document = json.loads(out.output[out.output.index("{") :])
    predicted = document["prediction"]["metrics"]["response.mean"]
    # the model error alone is 1.645 x 10 % of the value on each side
    half = (predicted["pi_high"] - predicted["pi_low"]) / 2
    assert half >= 0.1645 * predicted["value"]
    assert math.isclose(predicted["sd_model"], 0.1 * predicted["value"])


def test_capacity_with_a_calibration_answers_with_a_range_that_holds_theory(tmp_path):
    """Largest arrival rate with mean response < 0.5 s: M/M/1 gives (1 - 2D) / D, 8 per s at
    D = 0.1.  The range over 8 draws must hold the fitted answer and lie within the exact
    answers at D's 0.5 % and 99.5 % quantiles (with the search's 2 % tolerance)."""
    model, calibration = write(tmp_path, calibration_document())
    out = CliRunner().invoke(
        main,
        [
            "capacity",
            model,
            "--slo",
            "response.mean<0.5",
            "--vary",
            "clients.rate_per_s",
            "--min",
            "1",
            "--max",
            "20",
            "--knee",
            "0",
            "--serial",
            "--calibration",
            calibration,
            "--draws",
            "8",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    document = json.loads(out.output[out.output.index("{") :])
    found = document["calibrated_range"]
    assert found["low"] <= found["at_the_fit"] <= found["high"]
    assert found["low"] < found["high"]
    best = lambda d: (1 - 2 * d) / d  # noqa: E731
    assert found["low"] > 0.97 * best(demand_quantile(0.995))
    assert found["high"] < 1.03 * best(demand_quantile(0.005))
    assert len(found["answers"]) == 8


@pytest.mark.parametrize(
    "edit, message",
    [
        (None, "no such file"),
        ("text", "not a JSON document"),
        (lambda d: d.pop("parameters"), "no `parameters` list"),
        (lambda d: d.pop("uncertainty"), "without its uncertainty (--no-uncertainty)"),
        (
            lambda d: d["uncertainty"]["posterior"].update(cov=[[1.0, 0.0]]),
            "uncertainty.posterior.cov must be finite numbers of shape (1, 1)",
        ),
        (lambda d: d["parameters"][0].update(value="x"), "parameters[0].value = 'x'"),
        (
            lambda d: d["uncertainty"].setdefault("model_error", {}).update(noise_sd=-0.1),
            "uncertainty.model_error.noise_sd = -0.1 must be a number >= 0",
        ),
        (
            lambda d: d["parameters"][0].update(when={"row": "a"}),
            "every fitted parameter applies to some rows only",
        ),
    ],
)
def test_a_bad_calibration_document_names_the_field_and_the_fix(tmp_path, edit, message):
    path = tmp_path / "cal.json"
    if edit == "text":
        path.write_text("{not json")
    elif edit is not None:
        document = calibration_document()
        edit(document)
        path.write_text(json.dumps(document))
    with pytest.raises(CalibrationFileError) as caught:
        load_calibration(path)
    assert message in str(caught.value) and str(path) in str(caught.value)
    (tmp_path / "model.toml").write_text(MODEL)
    out = CliRunner().invoke(
        main, ["run", str(tmp_path / "model.toml"), "--calibration", str(path)]
    )
    assert out.exit_code == 2 and message in out.output and "Traceback" not in out.output


def test_a_sweep_with_a_calibration_stores_each_points_prediction_interval(tmp_path):
    """Every point runs at the calibration's D = 0.1 s (the model file says 0.3) and stores
    METRIC.pi_low / .pi_high, which hold M/M/1's R at the fitted D and widen toward saturation
    (the same +-7 % in D moves R more at lambda = 6 than at lambda = 2)."""
    from sim.studies.sweep.execute import SerialExecutor, run_sweep
    from sim.studies.sweep.spec import load_sweep
    from sim.studies.sweep.store import ResultStore, load_results

    write(tmp_path, calibration_document())
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(
        '[sweep]\nbase = "model.toml"\ncalibration = "cal.json"\ndraws = 8\nreplications = 3\n'
        'metrics = ["response.mean"]\n[factors]\n"clients.rate_per_s" = [2.0, 6.0]\n'
    )
    plan = load_sweep(sweep_file)
    run_sweep(plan, ResultStore(tmp_path / "results"), SerialExecutor())
    frame = load_results(tmp_path / "results").set_index("clients.rate_per_s")
    widths = {}
    for rate in (2.0, 6.0):
        row = frame.loc[rate]
        assert row["status"] == "ok"
        assert (
            row["response.mean.pi_low"] <= mm1_response(0.1, rate) <= row["response.mean.pi_high"]
        )
        widths[rate] = (row["response.mean.pi_high"] - row["response.mean.pi_low"]) / mm1_response(
            0.1, rate
        )
    assert widths[6.0] > widths[2.0]


def test_a_sweep_names_a_bad_calibration_file(tmp_path):
    from sim.studies.sweep.spec import SweepError, load_sweep

    write(tmp_path, calibration_document())
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(
        '[sweep]\nbase = "model.toml"\ncalibration = "nope.json"\n'
        '[factors]\n"clients.rate_per_s" = [2.0]\n'
    )
    with pytest.raises(SweepError, match=r"sweep.calibration: .*nope.json: no such file"):
        load_sweep(sweep_file)


def test_a_chosen_setting_goes_with_the_fitted_values(tmp_path):
    """A calibration that chose a structural value ([[choose]]) applies it before the fitted
    values, in every draw too; a file whose choices mark no candidate is refused."""
    document = calibration_document()
    document["choices"] = [
        {"set": ["backends.0.cores=1"], "chosen": False},
        {"set": ["backends.0.cores=2"], "chosen": True},
    ]
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(document))
    calibrated = load_calibration(path)
    assert calibrated.overrides()[0] == "backends.0.cores=2"
    _, values = calibrated.draws(4, seed=1)
    assert all(calibrated.overrides(v)[0] == "backends.0.cores=2" for v in values)
    document["choices"][1]["chosen"] = False
    path.write_text(json.dumps(document))
    with pytest.raises(CalibrationFileError, match="exactly one candidate as chosen"):
        load_calibration(path)
