"""The reference engine's slices (`sim.engines.reference.slices`): a replication whose calendar
runs in many short slices of simulated time is the one that runs through, bit for bit -- every
metric, the warm-up, the notes, the candidate windows, every --timeseries sample -- and says
how far it has come between two slices, as the compiled loop does at its pauses."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sim.engines.reference import replication, slices
from sim.run.replication import run_replication
from tests.conftest import differing, model_from
from tests.engines.test_compiled_engine import EXP, MODELS, _two_nodes, same_candidates
from tests.tiers.test_elastic_group import spike

# Mechanisms only the reference engine has: they schedule on the calendar in ways the
# compiled engine's models do not (crashes, credits, polls).
REFERENCE_ONLY = {
    "a node crashes and comes back": _two_nodes(
        backends=[
            {
                "name": "app",
                "count": 2,
                "demand": {"dist": EXP, "mean": 0.01},
                "events": [
                    {"at_s": 10.0, "kind": "crash", "node": 1},
                    {"at_s": 25.0, "kind": "recover", "node": 1},
                ],
            }
        ],
        run={"duration_s": 60.0},
    ),
    "asynchronous replication": _two_nodes(
        cluster={"replication": [{"mode": "async"}]}, run={"requests": 2000}
    ),
    "power of d choices": _two_nodes(balancer={"policy": "power_of_d"}, run={"requests": 2000}),
    "an autoscaled group's spike": spike(warm_pool=False),
}
ALL = {**MODELS, **REFERENCE_ONLY}
# In the default suite: each way a replication starts recording and ends (MSER on a grid of
# completions or of time, a fixed warm-up, none; run.requests, run.duration_s, a finite
# workload's last outcome or the front's last close, run.max_duration_s), a front that
# grows and shrinks, classes, and the mechanisms only the reference has.  Every other model
# of `MODELS` in `make slow-test`.
DEFAULT = {
    "closed 3-tier chain, MSER",
    "chain, fixed warm-up",
    "chain, no warm-up",
    "M/M/4 open",
    "a grid of time cut short by run.requests",
    "worker MPM: MaxRequestWorkers in whole children, a grid of time",
    "ab -c 6 -n 900 with connection set-up, a bounded accept queue",
    "ab through the proxy: the run ends when the front closes its last connection",
    "a finite workload cut short by run.max_duration_s",
    "round robin, fixed-length sessions, deterministic arrivals",
    "process management: an event front trimmed and grown again",
    "request classes: a mix, their own work, replication, timeouts",
    "a ramp of closed users",  # its changes scheduled at the start, due over the run
    "an open schedule of rates",
    *(name for name in REFERENCE_ONLY if name != "an autoscaled group's spike"),
}


def replicated(data: dict, monkeypatch, slice_s: float | None, **keywords):
    """Replication 0 (seed 11) on the reference engine, its calendar run in slices of `slice_s`
    simulated seconds each (None: in one run to the horizon); with the (simulated, horizon) it
    said between slices, and the simulated time it ended at."""
    ended: list[float] = []

    def through(kernel, horizon_s, _simulated) -> None:
        kernel.run(until=horizon_s)
        ended.append(kernel.now)

    def sliced(kernel, horizon_s, simulated) -> None:
        slices.run_in_slices(kernel, horizon_s, simulated)
        ended.append(kernel.now)

    monkeypatch.setattr(replication, "run_in_slices", through if slice_s is None else sliced)
    monkeypatch.setattr(slices, "FIRST_SLICE_S", slice_s or 1.0)
    monkeypatch.setattr(slices, "MAX_CHANGE", 1.0)  # every slice as long as the first
    said: list[tuple[float, float]] = []
    result = run_replication(
        model_from(data, engine="reference"),
        0,
        11,
        simulated=lambda now, until: said.append((now, until)),
        **keywords,
    )
    assert result.engine == "reference"
    return result, said, ended[0]


def assert_same_replication(sliced, through) -> None:
    assert list(sliced.metrics) == list(through.metrics)
    assert not differing(sliced.metrics, through.metrics)
    assert sliced.units == through.units
    assert (sliced.warmup_s, sliced.batch_size) == (through.warmup_s, through.batch_size)
    assert (sliced.finished, sliced.notes) == (through.finished, through.notes)
    assert (sliced.window is None) == (through.window is None)
    if through.window is not None:
        same_candidates(sliced.window, through.window)


@pytest.mark.parametrize(
    "name",
    [
        name if name in DEFAULT else pytest.param(name, marks=pytest.mark.slow)
        for name in sorted(ALL)
    ],
)
def test_a_replication_in_slices_is_the_one_that_runs_through(name, monkeypatch):
    through, never, end_s = replicated(ALL[name], monkeypatch, None)
    assert never == []
    # some 60 slices, at times no event is due at
    sliced, said, sliced_end_s = replicated(ALL[name], monkeypatch, end_s / 61.3)
    assert_same_replication(sliced, through)
    assert sliced_end_s == end_s
    assert len(said) >= 55  # it did stop, between every two slices
    times = [now for now, _ in said]
    assert times == sorted(times) and times[-1] <= end_s
    horizons = {until for _, until in said}
    assert len(horizons) == 1 and horizons.pop() >= end_s


@pytest.mark.parametrize(
    "name",
    [
        "chain, fixed warm-up",  # recording starts at 20 s, a slice's end
        "round robin, fixed-length sessions, deterministic arrivals",
        "a node crashes and comes back",  # at 10 s, back at 25 s
        "an open schedule of rates",  # its steps at 15 s and 30 s
    ],
)
def test_slices_that_end_where_events_are_due(name, monkeypatch):
    """Slices of a round half second end where deterministic events are due (a fixed warm-up,
    a schedule's step, a crash, deterministic arrivals): each is processed before the slice
    ends, in the order of the one run."""
    through, _, _ = replicated(ALL[name], monkeypatch, None)
    sliced, said, _ = replicated(ALL[name], monkeypatch, 0.5)
    assert_same_replication(sliced, through)
    assert said[0][0] == 0.5 and said[1][0] == 1.0


@pytest.mark.parametrize(
    "name",
    ["closed 3-tier chain, MSER", "request classes: a mix, their own work, replication, timeouts"],
)
def test_timeseries_samples_are_the_same_in_slices(name, monkeypatch):
    """--timeseries every 0.7 s, in slices of 0.7 s: a sample due at a slice's end is taken in
    that slice, and every sample is the one the run through takes."""
    data = {**ALL[name], "run": {**ALL[name].get("run", {}), "timeseries_interval_s": 0.7}}
    samples: dict[str, list] = {"through": [], "sliced": []}
    results = {}
    for how, slice_s in (("through", None), ("sliced", 0.7)):

        def sink(replication, now, metrics, rows=samples[how]):
            rows.append((replication, now, metrics))

        results[how], _, _ = replicated(data, monkeypatch, slice_s, timeseries=sink)
    assert len(samples["sliced"]) == len(samples["through"]) > 10
    for (r1, t1, m1), (r2, t2, m2) in zip(samples["through"], samples["sliced"]):
        assert (r1, t1) == (r2, t2) and list(m1) == list(m2)
        assert not differing(m1, m2)
    assert_same_replication(results["sliced"], results["through"])


def _wall_clock(slow_slices: int, slow_s: float, then_s: float):
    """A clock read twice a slice (at its start and its end): the first `slow_slices` slices
    take `slow_s` each, the others `then_s`."""
    now, reads = 0.0, 0

    def perf_counter() -> float:
        nonlocal now, reads
        if reads % 2:  # a slice's end
            now += slow_s if reads // 2 < slow_slices else then_s
        reads += 1
        return now

    return SimpleNamespace(perf_counter=perf_counter)


def test_the_slices_follow_the_wall_clock(monkeypatch):
    """Each slice is sized from the last one's wall time, towards SLICE_WALL_S: after slices
    that took 0.4 s, each is a quarter of the last (at most MAX_CHANGE shorter); after ones
    that took SLICE_WALL_S, as long as the last.  The replication is still the one that runs
    through."""
    data = MODELS["closed 3-tier chain, MSER"]
    through, _, _ = replicated(data, monkeypatch, None)
    monkeypatch.setattr(slices, "time", _wall_clock(3, 0.4, slices.SLICE_WALL_S))
    monkeypatch.setattr(replication, "run_in_slices", slices.run_in_slices)
    monkeypatch.setattr(slices, "FIRST_SLICE_S", 64.0)
    monkeypatch.setattr(slices, "MAX_CHANGE", 4.0)
    said: list[tuple[float, float]] = []
    sliced = run_replication(
        model_from(data, engine="reference"), 0, 11, simulated=lambda n, u: said.append((n, u))
    )
    assert_same_replication(sliced, through)
    steps = [b - a for (a, _), (b, _) in zip([(0.0, 0.0), *said], said)]
    assert steps[:4] == [64.0, 16.0, 4.0, 1.0]
    assert all(step == pytest.approx(1.0) for step in steps[4:]) and len(steps) > 10
