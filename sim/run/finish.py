"""A trace turned into a replication's result: its own window, warm-up and metrics.

Both engines' traces (`sim.observe.trace.Trace`) end here, so their replications are
windowed alike; a run of several replications then chooses one warm-up for them all
(`sim.stats.windows`) and re-windows each."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sim.observe.metrics import PERCENTILES
from sim.observe.trace import BINS, Trace
from sim.stats.steady_state import WindowCandidates
from sim.stats.windows import PooledWindows, WindowedReplication


@dataclass
class ReplicationResult:
    replication: int
    metrics: dict[str, float]
    warmup_s: float  # simulated time removed at the start
    batch_size: int  # completions per batch at the end (MSER granularity)
    finished: bool  # finite workloads: all requests had an outcome before max_duration_s
    wall_s: float
    events: int = 0
    notes: list[str] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)  # each metric's unit, from its probe
    # Candidate windows, for choosing one warm-up across replications; dropped once used.
    window: WindowCandidates | None = field(default=None, repr=False)
    # Its windows and percentiles at each candidate, computed once here for the run to pool.
    windowed: WindowedReplication | None = field(default=None, repr=False)
    engine: str = "reference"  # the engine that ran it: "reference" or "compiled"


def finish(trace: Trace) -> ReplicationResult:
    """A replication's result over its own window (its warm-up as if it were the only one),
    from its candidate windows and its metrics over the whole recording."""
    candidates = trace.candidates
    assert candidates.metrics_between is not None
    windowing = PooledWindows(candidates.metrics_between, BINS, PERCENTILES, mser=trace.mser)
    windowed = windowing.windowed(candidates)
    windowing.add(candidates, trace.metrics, windowed)
    windowing.choose_window()
    metrics = windowing.metrics(0)
    notes = trace.notes
    if metrics["count.completed"] == 0:
        notes.append("no request completed inside the observation window")
    return ReplicationResult(
        replication=trace.replication,
        metrics=metrics,
        warmup_s=windowing.warmup_s,
        batch_size=trace.batch_size,
        finished=trace.finished,
        wall_s=time.perf_counter() - trace.started,
        events=trace.events,
        notes=notes,
        units=trace.units,
        window=candidates,
        windowed=windowed,
    )
