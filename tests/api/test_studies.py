"""`sim.calibrate`, `reproduce`, `rows_frame`, `load_calibration`, `predict`, `capacity`,
`sweep`: a path or a `Model` alike, a calibration passed as a value (no file between), frames
named alike, and every argument they cannot use refused by name."""

from __future__ import annotations

import json

import numpy as np
import pytest

import sim
from tests.api.conftest import experiment


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    folder = experiment(tmp_path_factory.mktemp("experiment"))
    return folder, sim.calibrate(folder, replications=2, draws=0, max_evaluations=8)


def test_calibrate_fits_and_names_its_intervals_alike(fitted):
    _, result = fitted
    assert result.converged, result.message
    parameters = result.parameters_frame()
    (row,) = parameters.itertuples()
    assert row.parameter == "backends.0.demand.mean"
    assert (row.range_low, row.range_high) == (0.05, 0.15)
    assert row.ci_low < row.value < row.ci_high
    assert not {"low", "high", "interval"} & set(parameters.columns)
    rows = result.rows_frame()
    assert {"published", "simulated", "ci_low", "ci_high", "pi_low", "pi_high", "unit"} <= set(
        rows.columns
    )
    assert result.as_dict()["parameters"][0]["parameter"] == row.parameter


def test_a_saved_calibration_and_the_result_are_the_same_calibration(fitted, tmp_path):
    _, result = fitted
    result.save(tmp_path / "fit.json")
    loaded = sim.load_calibration(tmp_path / "fit.json")
    from sim.api.studies import as_calibration

    passed = as_calibration(result)  # in memory: no file between
    assert passed.overrides() == loaded.overrides()
    for drawn, read in zip(passed.draws(4, seed=9), loaded.draws(4, seed=9)):
        assert np.array_equal(drawn, read)
    assert json.loads((tmp_path / "fit.json").read_text())["parameters"] == json.loads(
        json.dumps(result.as_dict()["parameters"])
    )


def test_reproduce_gives_the_rows_with_their_interval(fitted):
    folder, _ = fitted
    rows = sim.reproduce(folder, replications=2)
    assert list(rows["figure"]) == ["fit", "other"]
    fit = rows.iloc[0]
    assert fit["ci_low"] <= fit["simulated"] <= fit["ci_high"] and fit["unit"] == "s"
    assert sim.rows_frame([]).empty
    with pytest.raises(sim.ArgumentError, match=r"^rows: "):
        sim.rows_frame(rows)  # type: ignore[arg-type]  # a frame, not the rows


def test_predict_a_model_or_its_file_alike(fitted):
    folder, result = fitted
    by_file = sim.predict(folder / "model.toml", result, replications=2, draws=4)
    by_model = sim.predict(sim.load_model(folder / "model.toml"), result, replications=2, draws=4)
    frame = by_file.to_frame()
    assert frame.equals(by_model.to_frame())
    row = frame.loc["response.mean"]
    assert row["pi_low"] < row["value"] < row["pi_high"] and row["unit"] == "s"
    assert not {"low", "high"} & set(frame.columns)


def test_capacity_of_a_model_or_its_file_alike(mm1_file):
    """M/M/1 (D = 0.1 s): R < 0.5 s holds below 8/s; the search's answer, decided on the
    interval's upper bound, is below that and the same for the file and the Model."""
    asked = {"replications": 2, "knee_points": 0, "maximum": 9.5, "error_budget": 0.05}
    by_file = sim.capacity(mm1_file, "mean<0.5", "clients.rate_per_s", **asked)
    by_model = sim.capacity(sim.load_model(mm1_file), "mean<0.5", "clients.rate_per_s", **asked)
    assert by_file.as_dict() == by_model.as_dict()
    assert by_model.result.error_budget == 0.05
    assert by_file.best is not None and by_file.best < 8.0
    frame = by_file.to_frame()
    assert {"clients.rate_per_s", "met", "response.mean.ci_low", "response.mean.ci_high"} <= set(
        frame.columns
    )


def test_capacity_keeps_its_evaluations_and_a_second_call_replays_them(fitted, tmp_path):
    """`cache=`: every evaluation kept as it finishes, those of the draws too; the same call
    again replays them all and answers as a call without a cache does, bit for bit."""
    folder, result = fitted
    asked = {"replications": 2, "knee_points": 0, "maximum": 9.5, "calibration": result}
    asked |= {"draws": 2, "error_budget": 0.05}
    model, cache = folder / "model.toml", tmp_path / "capacity.jsonl"
    first = sim.capacity(model, "mean<0.5", "clients.rate_per_s", cache=cache, **asked)
    assert first.resumed == 0
    assert (
        first.evaluated == len(cache.read_text().splitlines()) > len(first.result.evaluations)
    )  # the draws' evaluations kept beside the search's
    again = sim.capacity(model, "mean<0.5", "clients.rate_per_s", cache=cache, **asked)
    assert again.resumed == again.evaluated == first.evaluated
    plain = sim.capacity(model, "mean<0.5", "clients.rate_per_s", **asked)
    assert plain.resumed == 0
    documents = {json.dumps(c.as_dict(), sort_keys=True) for c in (first, again, plain)}
    assert len(documents) == 1
    with pytest.raises(sim.ArgumentError, match=r"^cache: "):
        sim.capacity(model, "mean<0.5", "clients.rate_per_s", cache=3, **asked)


def test_sweep_returns_every_point_with_its_interval(tmp_path, mm1_file):
    (tmp_path / "sweep.toml").write_text(
        "[sweep]\n"
        'name = "rates"\n'
        f'base = "{mm1_file.name}"\n'
        'set = ["run.duration_s=100"]\n'
        'design = "grid"\n'
        "replications = 2\n"
        "seed = 4\n"
        'metrics = ["throughput", "response.mean"]\n\n'
        '[factors]\n"clients.rate_per_s" = [2.0, 4.0]\n'
    )
    frame = sim.sweep(tmp_path / "sweep.toml", tmp_path / "results")
    assert sorted(frame["clients.rate_per_s"]) == [2.0, 4.0]
    assert (frame["response.mean.ci_low"] <= frame["response.mean"]).all()
    assert (frame["response.mean"] <= frame["response.mean.ci_high"]).all()
    assert frame.attrs["units"]["response.mean"] == "s"


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        ({"source": 3}, "source"),
        ({"slo": 0.5}, "slo"),
        ({"vary": ""}, "vary"),
        ({"direction": "up"}, "direction"),
        ({"replications": 1}, "replications"),
        ({"seed": -1}, "seed"),
        ({"tolerance": 0}, "tolerance"),
        ({"minimum": "1"}, "minimum"),
        ({"knee_points": -1}, "knee_points"),
        ({"use_analytic": 1}, "use_analytic"),
        ({"workers": 0}, "workers"),
        ({"calibration": 3}, "calibration"),
        ({"draws": 1}, "draws"),
        ({"overrides": "clients.rate_per_s=2"}, "overrides"),
        ({"error_budget": 1.0}, "error_budget"),
        ({"error_budget": -0.1}, "error_budget"),
        ({"error_budget": "1%"}, "error_budget"),
    ],
)
def test_capacity_refuses_an_argument_it_cannot_use(mm1_file, arguments, parameter):
    given = {"source": mm1_file, "slo": "mean<0.5", "vary": "clients.rate_per_s", **arguments}
    with pytest.raises(sim.ArgumentError) as caught:
        sim.capacity(**given)
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        ({"model": None}, "model"),
        ({"calibration": {"parameters": []}}, "calibration"),
        ({"replications": 0}, "replications"),
        ({"seed": -3}, "seed"),
        ({"draws": 0}, "draws"),
        ({"draw_replications": 0}, "draw_replications"),
        ({"progress": "bar"}, "progress"),
    ],
)
def test_predict_refuses_an_argument_it_cannot_use(fitted, arguments, parameter):
    folder, result = fitted
    given = {"model": folder / "model.toml", "calibration": result, **arguments}
    with pytest.raises(sim.ArgumentError) as caught:
        sim.predict(**given)
    assert caught.value.parameter == parameter


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        ({"experiment": 3}, "experiment"),
        ({"replications": 0}, "replications"),
        ({"max_evaluations": 0}, "max_evaluations"),
        ({"workers": -1}, "workers"),
        ({"executor": "dask"}, "executor"),
        ({"analyse": "no"}, "analyse"),
        ({"draws": -1}, "draws"),
        ({"cache": 5}, "cache"),
    ],
)
def test_calibrate_refuses_an_argument_it_cannot_use(tmp_path, arguments, parameter):
    given = {"experiment": tmp_path, **arguments}
    with pytest.raises(sim.ArgumentError) as caught:
        sim.calibrate(**given)
    assert caught.value.parameter == parameter


def test_the_other_studies_refuse_what_they_cannot_use(tmp_path):
    with pytest.raises(sim.ArgumentError, match=r"^experiment: "):
        sim.reproduce(None)  # type: ignore[arg-type]
    with pytest.raises(sim.ArgumentError, match=r"^replications: "):
        sim.reproduce("seed000", replications=-1)
    with pytest.raises(sim.ArgumentError, match=r"^path: "):
        sim.load_calibration(3)  # type: ignore[arg-type]
    with pytest.raises(sim.ArgumentError, match=r"^sweep_file: "):
        sim.sweep(None)  # type: ignore[arg-type]
    with pytest.raises(sim.ArgumentError, match=r"^workers: "):
        sim.sweep(tmp_path / "s.toml", workers=0)


def test_a_study_of_a_missing_file_says_so_in_one_line(tmp_path):
    for call in (
        lambda: sim.capacity(tmp_path / "none.toml", "mean<1", "clients.users"),
        lambda: sim.sweep(tmp_path / "none.toml"),
        lambda: sim.load_calibration(tmp_path / "none.json"),
    ):
        with pytest.raises(ValueError) as caught:
            call()
        assert "none." in str(caught.value) and "\n" not in str(caught.value)
