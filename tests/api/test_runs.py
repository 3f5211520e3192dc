"""`sim.load_model`, `sim.parse_model`, `sim.simulate`, `sim.solve`: a path or a `Model`, typed
arguments, frames named alike, and every argument they cannot use refused by name."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

import sim
from tests.api.conftest import MM1

DEMO = str(Path(__file__).resolve().parents[2] / "models" / "demo.toml")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "mm1.toml"
    path.write_text(MM1)
    return sim.simulate(path, replications=3, seed=5)


def test_simulate_a_path_runs_what_was_asked(run):
    assert run.status == "ok"
    assert len(run.replications) == 3 and run.seed == 5
    frame = run.to_frame()
    assert list(frame.columns) == ["mean", "ci_low", "ci_high", "half_width", "unit"]
    response = run.summary["response.mean"]
    row = frame.loc["response.mean"]
    assert (row["mean"], row["ci_low"], row["ci_high"]) == (
        response.mean,
        response.low,
        response.high,
    )
    assert row["unit"] == "s" and frame.attrs["units"]["throughput"] == "1/s"
    wide = run.replications_frame()
    assert len(wide) == 3 and "response.mean" in wide.columns


def test_simulate_a_model_gives_the_same_figures_as_its_file(run, mm1_file):
    model = sim.load_model(mm1_file)
    again = sim.simulate(model, replications=3, seed=5)
    assert again.to_frame().equals(run.to_frame())


def test_the_model_defaults_are_used_only_when_nothing_is_given(mm1_file):
    """None: the model's run.replications (2) and run.seed (3); never a silent default."""
    calls = []
    result = sim.simulate(mm1_file, ["run.duration_s=100"], progress=lambda d, t: calls.append(t))
    assert len(result.replications) == 2 and result.seed == 3
    assert calls and calls[-1] == 2


def test_parse_model_is_load_model_of_the_same_data(mm1_file):
    parsed = sim.parse_model(tomllib.loads(MM1), source="mm1", overrides=["clients.rate_per_s=4"])
    loaded = sim.load_model(mm1_file, ["clients.rate_per_s=4"])
    assert parsed == loaded and parsed.clients.rate_per_s == 4


def test_solve_is_mm1_theory_named_as_the_simulation(mm1_file, run):
    """M/M/1 at rho = 0.5 (D = 0.1 s, lambda = 5/s): R = D/(1 - rho) = 0.2 s, L = 1."""
    for source in (mm1_file, sim.load_model(mm1_file)):
        frame = sim.solve(source)
        assert list(frame.columns) == ["value", "unit"] and frame.attrs["exact"] is True
        assert math.isclose(frame.loc["throughput", "value"], 5.0)
        assert math.isclose(frame.loc["response.mean", "value"], 0.2)
        assert math.isclose(frame.loc["server1.cpu.utilization", "value"], 0.5)
        assert math.isclose(frame.loc["server1.cpu.queue", "value"], 1.0)
        assert frame.loc["response.mean", "unit"] == "s"
        assert frame.attrs["units"]["server1.cpu.utilization"] == "fraction"
    # the same names as the simulation's: the two frames line up on their index
    both = frame.join(run.to_frame(), how="inner", rsuffix=".simulated")
    assert {"throughput", "response.mean", "server1.cpu.utilization"} <= set(both.index)
    assert (both["unit"] == both["unit.simulated"]).all()


def test_solve_says_what_it_cannot_solve(mm1_file):
    with pytest.raises(sim.NotProductForm, match=r"clients.interarrival"):
        sim.solve(
            mm1_file, ['clients={kind="open", interarrival={dist="uniform", low=0.1, high=0.3}}']
        )


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        ({"replications": 0}, "replications"),
        ({"replications": -2}, "replications"),
        ({"replications": 10_001}, "replications"),
        ({"replications": 2.0}, "replications"),
        ({"replications": "3"}, "replications"),
        ({"replications": True}, "replications"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**63}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"seed": "7"}, "seed"),
        ({"progress": 3}, "progress"),
        ({"timeseries": "yes"}, "timeseries"),
        ({"overrides": "backends.0.threads=3"}, "overrides"),
        ({"overrides": [3]}, "overrides"),
    ],
)
def test_simulate_refuses_an_argument_it_cannot_use(mm1_file, arguments, parameter):
    with pytest.raises(sim.ArgumentError) as caught:
        sim.simulate(mm1_file, **arguments)
    assert caught.value.parameter == parameter
    assert str(caught.value).startswith(f"{parameter}: ") and "\n" not in str(caught.value)
    # both kinds a caller may catch
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, TypeError)


@pytest.mark.parametrize("model", [3, None, "", b"mm1.toml", {"clients": {}}])
@pytest.mark.parametrize("function", [sim.simulate, sim.solve])
def test_a_model_is_a_model_or_a_path(function, model):
    with pytest.raises(sim.ArgumentError, match=r"^model: expected a sim.Model or a model file"):
        function(model)


def test_a_model_with_overrides_is_refused_with_the_fix(mm1_file):
    model = sim.load_model(mm1_file)
    for function in (sim.simulate, sim.solve):
        with pytest.raises(sim.ArgumentError, match=r"sim.load_model"):
            function(model, ["backends.0.threads=3"])


def test_model_file_problems_are_model_errors(tmp_path, mm1_file):
    with pytest.raises(sim.ModelError, match=r"missing.toml: no such model file"):
        sim.simulate(tmp_path / "missing.toml")
    with pytest.raises(sim.ModelError, match=r"backends.0.threads"):
        sim.simulate(mm1_file, ["backends.0.threads=-1"])


def test_a_bare_number_over_a_random_demand_is_refused_with_both_fixes(mm1_file):
    with pytest.raises(sim.ModelError) as caught:
        sim.simulate(mm1_file, ["backends.0.demand=0.01"])
    message = str(caught.value)
    assert "backends.0.demand.mean=0.01" in message
    assert 'backends.0.demand={dist="deterministic", value=0.01}' in message


def test_an_unstable_model_is_a_simulation_error(mm1_file):
    with pytest.raises(sim.SimulationError) as caught:
        sim.simulate(mm1_file, ["clients.rate_per_s=20"])
    assert caught.value.status == "unstable"


@pytest.mark.parametrize(
    "call, parameter",
    [
        (lambda path: sim.load_model(3), "path"),
        (lambda path: sim.load_model(None), "path"),
        (lambda path: sim.load_model(path, "clients.rate_per_s=2"), "overrides"),
        (lambda path: sim.parse_model("clients"), "data"),
        (lambda path: sim.parse_model({}, source=3), "source"),
        (lambda path: sim.parse_model({}, overrides="run.seed=2"), "overrides"),
        (lambda path: sim.parse_model({}, base_dir=3), "base_dir"),
    ],
)
def test_loading_refuses_an_argument_it_cannot_use(mm1_file, call, parameter):
    with pytest.raises(sim.ArgumentError) as caught:
        call(mm1_file)
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)


def test_parse_model_resolves_files_from_base_dir(tmp_path):
    (tmp_path / "demand.csv").write_text("demand_s\n0.1\n0.2\n")
    data = tomllib.loads(MM1)
    data["backends"][0]["demand"] = {"dist": "empirical", "csv": "demand.csv", "column": "demand_s"}
    model = sim.parse_model(data, source="mm1", base_dir=tmp_path)
    assert model.backends[0].demand.csv == str(tmp_path / "demand.csv")
    with pytest.raises(sim.ModelError, match=r"demand\.csv"):
        sim.parse_model(data, source="mm1", base_dir=tmp_path / "elsewhere")


def test_simulate_reports_the_simulated_time_of_a_long_replication():
    """`simulated(now_s, until_s)` hears the compiled loop's pauses: increasing simulated times
    up to the run's end, within one replication."""
    heard: list[tuple[float, float]] = []
    sim.simulate(
        DEMO,
        ["run.engine=compiled", "run.duration_s=2000"],
        replications=1,
        seed=3,
        simulated=lambda now, until: heard.append((now, until)),
    )
    assert len(heard) >= 2
    times = [now for now, _ in heard]
    assert times == sorted(times) and 0 < times[0] < times[-1]
    assert all(until == heard[0][1] for _, until in heard) and times[-1] <= heard[0][1]
    with pytest.raises(sim.ArgumentError, match="simulated"):
        sim.simulate(DEMO, replications=1, simulated="not a function")
