"""The compiled loop's pauses (`sim.engines.compiled.pauses`): a replication that stops every
few events and goes on is the one that runs through, bit for bit -- every table of its state,
every --timeseries sample -- and says how far it has come at each pause."""

from __future__ import annotations

import numpy as np
import pytest

from sim.engines.compiled import engine
from sim.engines.compiled import kernel as k
from sim.model.plan import compile_plan
from tests.conftest import differing, model_from
from tests.engines.test_compiled_engine import MODELS

NEVER = 2**62  # events: a loop that never pauses


def replicated(data: dict, pause_events: int, monkeypatch, **keywords):
    """The tables of replication 0 (seed 11) on the compiled engine, pausing every
    `pause_events` events, and the (simulated, horizon) it said at each pause."""
    monkeypatch.setattr(engine, "PAUSE_EVENTS", pause_events)
    said: list[tuple[float, float]] = []
    model = model_from(data, engine="compiled")
    _, tables = engine.simulate(
        compile_plan(model),
        0,
        11,
        simulated=lambda now, until: said.append((now, until)),
        **keywords,
    )
    return tables, said


def assert_same_state(paused, through) -> None:
    for name, table in through.tables.items():
        if name == "TOKEN":
            continue  # the run's key for its callbacks: a new one each run
        other = paused.tables[name]
        if name == "I":  # the pause point itself differs, every other counter must not
            table, other = np.delete(table, k.I_PAUSE_AT), np.delete(other, k.I_PAUSE_AT)
        assert table.shape == other.shape, name
        assert np.array_equal(table, other, equal_nan=table.dtype.kind == "f"), name


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_replication_that_pauses_is_the_one_that_runs_through(name, monkeypatch):
    through, never = replicated(MODELS[name], NEVER, monkeypatch)
    events = int(through["I"][k.I_EVENTS])
    every = max(events // 60, 1) | 1  # some 60 pauses, at odd counts
    paused, said = replicated(MODELS[name], every, monkeypatch)
    assert never == []
    assert len(said) >= 30  # it did stop, many times (a table's growth moves the next pause on)
    assert_same_state(paused, through)
    times = [now for now, _ in said]
    assert times == sorted(times)
    assert all(until == through["F"][k.F_UNTIL] for _, until in said)


def test_a_pause_at_every_event_changes_nothing(monkeypatch):
    data = MODELS["processor sharing with ties"]
    data = {**data, "run": {**data.get("run", {}), "requests": 300}}
    through, _ = replicated(data, NEVER, monkeypatch)
    paused, said = replicated(data, 1, monkeypatch)
    assert len(said) >= int(through["I"][k.I_EVENTS]) - 1
    assert_same_state(paused, through)


def test_timeseries_samples_are_the_same_when_the_loop_pauses(monkeypatch):
    data = MODELS["closed 3-tier chain, MSER"]
    data = {**data, "run": {**data.get("run", {}), "timeseries_interval_s": 0.7}}
    samples: dict[int, list] = {NEVER: [], 31: []}
    for pause_events, rows in samples.items():

        def sink(replication, now, metrics, rows=rows):
            rows.append((replication, now, metrics))

        replicated(data, pause_events, monkeypatch, timeseries=sink)
    assert len(samples[31]) == len(samples[NEVER]) > 10
    for (r1, t1, m1), (r2, t2, m2) in zip(samples[NEVER], samples[31]):
        assert (r1, t1) == (r2, t2) and list(m1) == list(m2)
        assert not differing(m1, m2)


def test_a_run_of_replications_says_the_simulated_time_of_each(monkeypatch):
    from sim.run.simulate import simulate

    monkeypatch.setattr(engine, "PAUSE_EVENTS", 211)
    data = MODELS["closed 3-tier chain, MSER"]
    said: list[tuple[float, float]] = []
    outcome = simulate(
        model_from(data, engine="compiled"),
        replications=2,
        seed=3,
        simulated=lambda now, until: said.append((now, until)),
    )
    assert outcome.ok, outcome.message
    times = [now for now, _ in said]
    restarts = [i for i in range(1, len(times)) if times[i] < times[i - 1]]
    assert len(restarts) == 1  # the second replication starts again from t = 0
    assert len(said) > 20
