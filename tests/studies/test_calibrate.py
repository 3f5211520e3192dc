"""`tiersim calibrate`: fits checked against M/M/1 theory, resumption from the cache, and the
errors a user meets when an experiment's calibration is set up wrong."""

from __future__ import annotations

import json
import math
import textwrap

import pytest
from click.testing import CliRunner

import sim.run.simulate
import sim.studies.reproduce
from sim.cli import main
from sim.studies.calibration.fit import RESOLVED, calibrate

MODEL = """
[clients]
kind = "open"
rate_per_s = 5.0

[[backends]]
name = "server"
threads = 1
cores = 1
demand = { dist = "exponential", mean = 0.05 }

[[backends]]
name = "other"
threads = 1
cores = 1
demand = { dist = "exponential", mean = 0.05 }

[balancer]
policy = "round_robin"
members = ["server"]

[run]
duration_s = 600
warmup = 50
replications = 5
seed = 3
"""


def mm1_response(demand_s: float, rate: float) -> float:
    """M/M/1 mean response time D / (1 - lambda D)."""
    return demand_s / (1.0 - rate * demand_s)


def experiment(tmp_path, published: str, calibration: str, fitted: str) -> str:
    (tmp_path / "model.toml").write_text(MODEL)
    (tmp_path / "published.csv").write_text(textwrap.dedent(published).lstrip())
    rows = [line.split(",")[0] for line in textwrap.dedent(published).strip().splitlines()[1:]]
    (tmp_path / "experiment.toml").write_text(
        textwrap.dedent(f"""
        [experiment]
        name = "mm1"
        published = "published.csv"
        value_column = "response_s"
        metric = "response.mean"

        [models]
        column = "row"
        {chr(10).join(f'{r} = "model.toml"' for r in rows)}

        [factors.rate]
        "*" = ["clients.rate_per_s={{value}}"]

        [factors.server]
        server = []
        other = ['balancer.members=["other"]']
        """)
        + textwrap.dedent(calibration)
        + textwrap.dedent(fitted)
    )
    return str(tmp_path)


def one_figure(folder) -> str:
    """R = 0.2 s published at lambda = 5 (D = 0.1 s); the server's demand free in [0.01, 0.15]."""
    return experiment(
        folder,
        """
        row,rate,server,response_s
        fit,5,server,0.2
        """,
        """
        [[calibrate]]
        parameter = "backends.0.demand.mean"
        bounds = [0.01, 0.15]
        """,
        """
        [[fitted]]
        row = "fit"
        """,
    )


def assert_resolved(target: dict) -> None:
    """The fit's end: the simulated figure as close to the published one as its interval resolves."""
    half = (target["ci_high"] - target["ci_low"]) / 2
    assert abs(target["simulated"] - target["published"]) <= RESOLVED * half, target


def inside(low: float, exact: float, high: float) -> None:
    assert low <= exact <= high, f"{exact} not in [{low}, {high}]"


def test_one_parameter_fit_agrees_with_mm1_theory(tmp_path):
    """Published R = 0.2 s at lambda = 5 (an M/M/1 with D = 0.1 s).  At the fitted D the
    simulated R meets the figure, the exact M/M/1 value lies in the simulation's interval (the
    fit is as good as the noise allows), and the row not fitted to (lambda = 3) is predicted
    within its interval of theory."""
    folder = experiment(
        tmp_path,
        """
        row,rate,server,response_s
        fit,5,server,0.2
        predict,3,server,0.142857
        """,
        """
        [[calibrate]]
        parameter = "backends.0.demand.mean"
        bounds = [0.01, 0.15]
        """,
        """
        [[fitted]]
        row = "fit"
        """,
    )
    result = calibrate(folder)
    assert result.converged, result.message
    (parameter,) = result.parameters
    demand = parameter["value"]
    assert not parameter["at_bound"] and parameter["fitted_to"] == ["row=fit response_s"]
    (target,) = result.targets
    assert_resolved(target)
    inside(target["ci_low"], mm1_response(demand, 5.0), target["ci_high"])
    fit_row, predicted = result.rows
    assert fit_row.fitted and not predicted.fitted
    assert predicted.overrides[-1] == f"backends.0.demand.mean={demand!r}"
    inside(predicted.ci_low, mm1_response(demand, 3.0), predicted.ci_high)


def test_two_parameters_fitted_jointly_each_to_its_rows(tmp_path):
    """Two servers, each with its own demand (`when` picks the rows a parameter applies to),
    fitted jointly to one figure each: R = 0.2 s (D = 0.1) and R = 1/15 s (D = 0.05) at lambda = 5."""
    folder = experiment(
        tmp_path,
        """
        row,rate,server,response_s
        a,5,server,0.2
        b,5,other,0.0666667
        """,
        """
        [[calibrate]]
        parameter = "backends.0.demand.mean"
        bounds = [0.01, 0.15]
        when = { server = "server" }

        [[calibrate]]
        parameter = "backends.1.demand.mean"
        bounds = [0.01, 0.15]
        when = { server = "other" }
        """,
        """
        [[fitted]]
        row = "a"

        [[fitted]]
        row = "b"
        """,
    )
    result = calibrate(folder)
    assert result.converged, result.message
    first, second = (p["value"] for p in result.parameters)
    assert [p["fitted_to"] for p in result.parameters] == [
        ["row=a response_s"],
        ["row=b response_s"],
    ]
    for target, demand in zip(result.targets, (first, second)):
        assert_resolved(target)
        inside(target["ci_low"], mm1_response(demand, 5.0), target["ci_high"])
    # each row carries only its own parameter
    assert [r.overrides[-1].split("=")[0] for r in result.rows] == [
        "backends.0.demand.mean",
        "backends.1.demand.mean",
    ]
    # the rows of an evaluation in two processes: the same fit, number for number
    pooled = calibrate(folder, workers=2)
    assert pooled.parameters == result.parameters and pooled.targets == result.targets
    assert [r.as_dict() for r in pooled.rows] == [r.as_dict() for r in result.rows]
    # and `tiersim reproduce --workers 2` prints what the serial run prints
    serial, parallel = (
        CliRunner().invoke(main, ["reproduce", folder, "--json", *extra])
        for extra in ([], ["-w", "2"])
    )
    assert serial.exit_code == parallel.exit_code == 0 and serial.output == parallel.output


def test_interrupted_fit_resumes_from_the_cache(tmp_path, monkeypatch):
    """Every finished evaluation is in the cache: a fit interrupted after 4 simulations, rerun,
    simulates only the rest and ends at the same values as an uninterrupted fit."""
    (tmp_path / "exp").mkdir()
    folder = one_figure(tmp_path / "exp")
    whole = calibrate(folder, cache=None)
    cache = tmp_path / "cache.jsonl"
    real_run, calls = sim.run.simulate.run, []

    def interrupted_after_four(*args, **kwargs):
        calls.append(1)
        if len(calls) > 4:
            raise KeyboardInterrupt
        return real_run(*args, **kwargs)

    monkeypatch.setattr(sim.run.simulate, "run", interrupted_after_four)
    with pytest.raises(KeyboardInterrupt):
        calibrate(folder, cache=cache)
    monkeypatch.setattr(sim.run.simulate, "run", real_run)
    assert len(cache.read_text().splitlines()) == 4
    resumed = calibrate(folder, cache=cache)
    assert resumed.cached == 4
    assert resumed.evaluations == whole.evaluations - 4
    assert resumed.parameters[0]["value"] == whole.parameters[0]["value"]
    again = calibrate(folder, cache=cache)
    assert again.evaluations == 0 and again.parameters == resumed.parameters


@pytest.mark.parametrize(
    "calibration, fitted, message",
    [
        ("", '[[fitted]]\nrow = "fit"\n', "no [[calibrate]] entries"),
        (
            '[[calibrate]]\nparameter = "backends.0.demand.mean"\nbounds = [0.2, 0.1]\n',
            '[[fitted]]\nrow = "fit"\n',
            "calibrate[0].bounds = [0.2, 0.1]: must be [low, high] with low < high",
        ),
        (
            '[[calibrate]]\nparameter = "backends.0.demand.mean"\nbounds = [0, 0.1]\nscale = "log"\n',
            '[[fitted]]\nrow = "fit"\n',
            "a log scale needs low > 0",
        ),
        (
            '[[calibrate]]\nparameter = "backends.0.demand.mean"\nbounds = [0.01, 0.1]\n',
            "",
            "no [[fitted]] entry names a published figure",
        ),
        (
            '[[calibrate]]\nparameter = "backends.0.demand.mean"\nbounds = [0.01, 0.1]\n',
            '[[fitted]]\nrow = "held"\n',
            "which is withheld; a withheld figure is predicted, never fitted",
        ),
        (
            (
                '[[calibrate]]\nparameter = "backends.0.demand.mean"\nbounds = [0.01, 0.1]\n'
                '[[calibrate]]\nparameter = "backends.1.demand.mean"\nbounds = [0.01, 0.1]\n'
            ),
            '[[fitted]]\nrow = "fit"\n',
            "2 free parameters but only 1 fitted figures",
        ),
        (
            '[[calibrate]]\nparameter = "backends.0.demand.mean"\nbounds = [0.01, 0.1]\nwhen = { server = "other" }\n',
            '[[fitted]]\nrow = "fit"\n',
            "applies to none of the fitted figures' rows",
        ),
        (
            '[[calibrate]]\nparameter = "backends.0.cpux.mean"\nbounds = [0.01, 0.1]\n',
            '[[fitted]]\nrow = "fit"\n',
            "backends.0.cpux: unknown parameter",
        ),
        (
            '[[calibrate]]\nparameter = "backends.0.demand.mean"\nbounds = [0.01, 0.5]\nstart = 0.4\n',
            '[[fitted]]\nrow = "fit"\n',
            "the model is unstable",
        ),
    ],
)
def test_setup_errors_name_the_entry_and_the_fix(tmp_path, calibration, fitted, message):
    folder = experiment(
        tmp_path,
        """
        row,rate,server,response_s
        fit,5,server,0.2
        held,5,server,
        """,
        calibration,
        fitted,
    )
    outcome = CliRunner().invoke(main, ["calibrate", folder, "--no-cache"])
    assert outcome.exit_code == 3, outcome.output
    assert message in outcome.output
    assert "Traceback" not in outcome.output


def test_cli_json_lists_parameters_targets_and_rows(tmp_path):
    folder = one_figure(tmp_path)
    outcome = CliRunner().invoke(
        main, ["calibrate", folder, "--json", "--cache", str(tmp_path / "c.jsonl")]
    )
    assert outcome.exit_code == 0, outcome.output
    document = json.loads(outcome.stdout)
    assert (
        document["converged"] and document["parameters"][0]["parameter"] == "backends.0.demand.mean"
    )
    assert document["rows"][0]["fitted"] is True
    assert (tmp_path / "c.jsonl").is_file()


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda text: text.replace('column = "row"', 'column = "nope"'),
            "models.column: 'nope' is not a column of published.csv",
        ),
        (
            lambda text: text.replace('value_column = "response_s"', ""),
            "say which figure each row is compared on",
        ),
        (
            lambda text: text.replace('fit = "model.toml"', 'other = "model.toml"'),
            "no row of published.csv maps onto a",
        ),
    ],
)
def test_user_experiment_mapping_errors_name_the_fix(tmp_path, edit, message):
    """A user's own experiment folder that maps nothing, or compares on nothing, is refused with
    the fix, not run into an empty table or a traceback."""
    folder = one_figure(tmp_path)
    source = tmp_path / "experiment.toml"
    source.write_text(edit(source.read_text()))
    for command in ("reproduce", "calibrate"):
        outcome = CliRunner().invoke(main, [command, folder])
        assert outcome.exit_code == 3, outcome.output
        assert message in outcome.output


def test_a_fit_that_cannot_meet_its_one_figure_says_so_and_is_not_converged(tmp_path):
    """R = 0.2 s at lambda = 5 needs D = 0.1 s, outside the bounds [0.01, 0.05]: the optimiser
    stops at the bound satisfied, but with as many figures as parameters every figure should be
    met, so the result names the missed figure with its distance in sds and is not converged."""
    folder = experiment(
        tmp_path,
        """
        row,rate,server,response_s
        fit,5,server,0.2
        """,
        """
        [[calibrate]]
        parameter = "backends.0.demand.mean"
        bounds = [0.01, 0.05]
        """,
        """
        [[fitted]]
        row = "fit"
        """,
    )
    result = calibrate(folder, analyse=False)
    assert not result.converged
    assert "stopped short of row=fit response_s -" in result.message, result.message
    assert " sd)" in result.message
    assert result.parameters[0]["at_bound"]


def test_calibrate_save_writes_a_calibration_that_run_can_use(tmp_path):
    """`calibrate --save FILE` writes the --json document; `load_calibration` reads back the
    fitted demand with the fit's Gaussian (the posterior on the unit scale)."""
    from sim.studies.calibration.saved import load_calibration

    folder = one_figure(tmp_path)
    saved = tmp_path / "cal.json"
    out = CliRunner().invoke(main, ["calibrate", folder, "--no-cache", "--save", str(saved)])
    assert out.exit_code == 0, out.output
    document = json.loads(saved.read_text())
    calibrated = load_calibration(saved)
    assert calibrated.values == (document["parameters"][0]["value"],)
    assert calibrated.overrides() == [f"backends.0.demand.mean={calibrated.values[0]!r}"]
    # the model error's estimate comes with the noise it was separated from
    model_error = document["uncertainty"]["model_error"]
    assert calibrated.residual_noise_sd == model_error["noise_sd"] >= 0.0
    low, high = document["parameters"][0]["interval"]
    sd = math.sqrt(calibrated.cov[0, 0])
    p = calibrated.parameters[0]
    # the saved Gaussian is the one the printed 95 % interval came from
    assert math.isclose(p.from_unit(calibrated.mean[0] - 1.96 * sd), low, rel_tol=0.02)
    assert math.isclose(p.from_unit(calibrated.mean[0] + 1.96 * sd), high, rel_tol=0.02)
