"""One replication: a pure function (model, seed, replication index) -> metrics.

Steady-state runs remove the warm-up (a fixed time, or MSER after the fact); finite
workloads (`ab -n`, a fixed number of requests per user) run to completion and report
their makespan, with no deletion: there the transient *is* the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sim.engines import choose
from sim.model.schema import Model
from sim.observe.metrics import window_metrics
from sim.observe.recorder import Recorder
from sim.random.streams import Streams
from sim.run.assemble import assemble
from sim.stats.histogram import LogBins
from sim.stats.mser import mser_truncation
from sim.tiers.clients.populations import RunawayQueue  # noqa: F401 - re-exported for the CLI

BINS = LogBins(min_value=1e-6, max_value=1e6, relative_error=0.005)


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
    engine: str = "reference"  # the engine that ran it: "reference" or "compiled"


TimeseriesSink = Callable[[int, float, dict[str, float]], None]


def run_replication(
    model: Model,
    replication: int,
    seed: int | None = None,
    timeseries: TimeseriesSink | None = None,
) -> ReplicationResult:
    """One replication on the engine `run.engine` selects (`sim.engines.choose`); the first
    note says which engine ran and why."""
    choice = choose(model, timeseries=timeseries is not None)
    if choice.engine == "compiled":
        result = _run_compiled(model, replication, seed)
    else:
        result = run_reference_replication(model, replication, seed, timeseries)
    result.engine = choice.engine
    result.notes.insert(0, choice.note)
    return result


def _run_compiled(model: Model, replication: int, seed: int | None) -> ReplicationResult:
    from sim.engines.compiled.engine import run_replication as run_compiled

    out = run_compiled(model, replication, model.run.seed if seed is None else seed, BINS)
    notes = []
    if out["metrics"]["count.completed"] == 0:
        notes.append("no request completed inside the observation window")
    return ReplicationResult(
        replication=replication,
        metrics=out["metrics"],
        warmup_s=out["warmup_s"],
        batch_size=out["batch_size"],
        finished=True,
        wall_s=out["wall_s"],
        events=out["events"],
        notes=notes,
    )


def run_reference_replication(
    model: Model,
    replication: int,
    seed: int | None = None,
    timeseries: TimeseriesSink | None = None,
) -> ReplicationResult:
    """One replication on the reference (SimPy-calendar) engine."""
    started = time.perf_counter()
    run = model.run
    seed = run.seed if seed is None else seed
    streams = Streams(seed, replication)
    fixed_warmup = run.warmup if isinstance(run.warmup, float) and not model.finite else None

    def make_recorder(kernel, assembly):
        return Recorder(kernel, assembly.probes(), BINS, recording=fixed_warmup is None)

    assembly, recorder = assemble(model, streams, make_recorder)
    kernel, clients = assembly.kernel, assembly.clients
    clients.max_inside = run.max_in_flight

    if model.finite:
        clients.on_finished = kernel.stop
        horizon = run.max_duration_s
    else:
        warm = fixed_warmup or 0.0
        if fixed_warmup is not None and fixed_warmup > 0:
            kernel.after(fixed_warmup, lambda _arg: recorder.start_recording())
        elif fixed_warmup is not None:
            recorder.start_recording()
        horizon = warm + run.duration_s if run.duration_s is not None else run.max_duration_s
        if run.requests is not None:
            recorder.stop_after_requests(run.requests)
    batches = _record_batches(recorder, clients) if getattr(clients, "repeat", 1) > 1 else None
    if timeseries is not None:
        _sample_periodically(
            kernel, recorder, assembly, replication, run.timeseries_interval_s, timeseries
        )

    clients.start()
    kernel.run(until=horizon)
    recorder.finish()

    table = recorder.table()
    start = 0
    if not model.finite and run.warmup == "mser":
        means, counts = recorder.batch_means()
        if len(means) >= 4:
            start = mser_truncation(means, weights=counts)
    end = len(table) - 1
    histogram = recorder.histograms[end] - recorder.histograms[start]
    metrics = window_metrics(
        recorder.columns, table[start], table[end], histogram, BINS, assembly.capacities()
    )
    metrics["count.in_flight"] = float(clients.in_flight)
    if batches:
        capacities = assembly.capacities()
        for k, (row, hist) in enumerate(batches[1:], start=1):
            previous, previous_hist = batches[k - 1]
            window = window_metrics(
                recorder.columns, previous, row, hist - previous_hist, BINS, capacities
            )
            metrics.update({f"batch.{k}.{name}": value for name, value in window.items()})
    notes = []
    finished = True
    if model.finite:
        finished = clients.finished
        metrics["makespan"] = kernel.now
        if not finished:
            notes.append(
                f"the workload did not finish within run.max_duration_s = {run.max_duration_s:g} s"
            )
    if metrics["count.completed"] == 0:
        notes.append("no request completed inside the observation window")
    return ReplicationResult(
        replication=replication,
        metrics=metrics,
        warmup_s=float(table[start][0]),
        batch_size=recorder.batch,
        finished=finished,
        wall_s=time.perf_counter() - started,
        notes=notes,
    )


def _record_batches(recorder: Recorder, clients) -> list:
    """Snapshots at the start and at the end of each batch of a repeated finite workload
    (`ab` run again and again): each batch is then a window like any other."""
    recorder._flush()
    marks = [(recorder.snapshot(), recorder._histogram.copy())]

    def mark(_batch: int) -> None:
        recorder._flush()
        marks.append((recorder.snapshot(), recorder._histogram.copy()))

    clients.on_batch = mark
    return marks


def _sample_periodically(
    kernel, recorder: Recorder, assembly, replication: int, interval: float, sink: TimeseriesSink
) -> None:
    capacities = assembly.capacities()
    state = {"row": recorder.snapshot(), "hist": recorder._histogram.copy()}

    def sample(_arg) -> None:
        recorder._flush()
        row = recorder.snapshot()
        histogram = recorder._histogram
        metrics = window_metrics(
            recorder.columns, state["row"], row, histogram - state["hist"], BINS, capacities
        )
        metrics["clients.in_flight"] = float(assembly.clients.in_flight)
        for pool in assembly.pools:
            metrics[f"{pool.name}.in_use_now"] = float(pool.in_use)
            metrics[f"{pool.name}.waiting_now"] = float(pool.waiting)
        for station in assembly.stations:
            metrics[f"{station.name}.serving_now"] = float(station.in_progress)
        for backend in assembly.backend_pools:
            metrics.update(backend.now_values())
        sink(replication, kernel.now, metrics)
        state["row"], state["hist"] = row, histogram.copy()
        kernel.after(interval, sample, None)

    kernel.after(interval, sample, None)
