"""One replication on the reference engine: the plan assembled into components on one SimPy
calendar, run to its end, and handed back as a trace (`sim.observe.trace.Trace`), which
`sim.run.finish` windows as it windows the compiled engine's."""

from __future__ import annotations

import time

from sim.engines.pauses import SimulatedProgress
from sim.engines.reference.assemble import assemble
from sim.engines.reference.slices import run_in_slices
from sim.model.parts.run_control import RunControl
from sim.model.plan import Plan
from sim.observe.checkpoints import Checkpoints
from sim.observe.metrics import window_metrics
from sim.observe.probes import REQUESTS, SECONDS
from sim.observe.recorder import Recorder
from sim.observe.trace import BINS, TimeseriesSink, Trace, metrics_between, single_window
from sim.random.streams import Streams
from sim.stats.mser import mser_truncation
from sim.stats.steady_state import WindowCandidates


def run_trace(
    plan: Plan,
    replication: int,
    seed: int,
    timeseries: TimeseriesSink | None = None,
    simulated: SimulatedProgress | None = None,
) -> Trace:
    """One replication of the plan's model on the reference (SimPy-calendar) engine, to its
    trace; `simulated` hears how far the replication has come, several times a second (its
    slices, `sim.engines.reference.slices`)."""
    started = time.perf_counter()
    run = plan.run
    streams = Streams(seed, replication)
    # a finite workload records from its start and runs to its last outcome
    fixed_warmup = run.warmup_s

    def make_recorder(kernel, assembly) -> Recorder:
        return Recorder(
            kernel,
            assembly.probes(),
            BINS,
            recording=fixed_warmup is None,
            classes=assembly.class_stats,
        )

    assembly, recorder = assemble(plan, streams, make_recorder)
    kernel, clients = assembly.kernel, assembly.clients
    clients.max_inside = run.max_in_flight

    finished_at: list[float] = []
    if run.finite:
        front = assembly.front

        def on_finished() -> None:
            # The observation window (and `makespan`) ends at the last outcome; the run goes on
            # until the front has closed the last client connection a client still waits on
            # (`elapsed.server_close`; one whose client gave up is nobody's end).
            finished_at.append(kernel.now)
            recorder.finish()
            if front is not None and front.watched:
                front.on_all_closed = kernel.stop
            else:
                kernel.stop()

        clients.on_finished = on_finished
        if front is not None:
            clients.on_give_up = front.client_gave_up
    else:
        if fixed_warmup is not None and fixed_warmup > 0:
            kernel.after(fixed_warmup, lambda _arg: recorder.start_recording())
        elif fixed_warmup is not None:
            recorder.start_recording()
        if run.stop_after_requests is not None:
            recorder.stop_after_requests(run.stop_after_requests)
    batches = _record_batches(recorder, clients) if getattr(clients, "repeat", 1) > 1 else None
    if timeseries is not None:
        _sample_periodically(
            kernel, recorder, assembly, replication, run.timeseries_interval_s, timeseries
        )
    mser = run.mser
    grid = _progress_grid(kernel, recorder, run) if mser else None

    clients.start()
    run_in_slices(kernel, run.horizon_s, simulated)
    if not finished_at:
        recorder.finish()

    table = recorder.table()
    probes = assembly.probes()
    candidates = grid.finish() if grid is not None else whole_window(recorder)
    candidates.metrics_between = metrics_between(recorder.columns, probes)
    end = len(table) - 1
    histogram = recorder.histograms[end] - recorder.histograms[0]
    units: dict[str, str] = {}
    metrics = window_metrics(recorder.columns, table[0], table[end], histogram, BINS, probes, units)
    metrics["count.in_flight"] = float(clients.in_flight)
    units["count.in_flight"] = REQUESTS
    if recorder.classes is not None:
        # class.NAME.response.pXX: over this replication's own MSER window on its batch rows
        # (the run's common warm-up re-windows counters and the total's percentiles, not these)
        start = 0
        if mser:
            means, counts = recorder.batch_means()
            if len(means) >= 4:
                start = mser_truncation(means, weights=counts)
        rows = recorder.class_histograms
        metrics.update(recorder.classes.window_percentiles(rows[start], rows[end], units))
    if batches:
        for k, (row, hist) in enumerate(batches[1:], start=1):
            previous, previous_hist = batches[k - 1]
            window = window_metrics(
                recorder.columns, previous, row, hist - previous_hist, BINS, probes
            )
            metrics.update({f"batch.{k}.{name}": value for name, value in window.items()})
            units.update({f"batch.{k}.{name}": units[name] for name in window if name in units})
    notes: list[str] = []
    finished = True
    if run.finite:
        finished = clients.finished
        metrics["makespan"] = finished_at[0] if finished_at else kernel.now
        units["makespan"] = SECONDS
        if not finished:
            notes.append(
                f"the workload did not finish within run.max_duration_s = {run.max_duration_s:g} s"
            )
    front_part = plan.stack.front if plan.stack is not None else None
    if front_part is not None:
        notes.extend(front_part.notes)  # what httpd logs when it adjusts the directives
    return Trace(
        replication,
        candidates,
        metrics,
        units,
        mser=mser,
        notes=notes,
        batch_size=recorder.batch,
        finished=finished,
        started=started,
    )


def whole_window(recorder: Recorder) -> WindowCandidates:
    """The one window of a run without MSER: from the start of recording to the end."""
    rows, histograms = recorder.rows, recorder.histograms
    return single_window(rows[0], rows[-1], histograms[0], histograms[-1])


def _progress_grid(kernel, recorder: Recorder, run: RunControl) -> Checkpoints:
    if run.duration_s is not None:
        return Checkpoints(kernel, recorder, horizon_s=run.duration_s)
    return Checkpoints(kernel, recorder, requests=run.stop_after_requests)


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
    probes = assembly.probes()
    state = {"row": recorder.snapshot(), "hist": recorder._histogram.copy()}

    def sample(_arg) -> None:
        recorder._flush()
        row = recorder.snapshot()
        histogram = recorder._histogram
        # the same probes and names as the run's --json: each row is the window since the last
        metrics = window_metrics(
            recorder.columns, state["row"], row, histogram - state["hist"], BINS, probes
        )
        metrics["count.in_flight"] = float(assembly.clients.in_flight)
        sink(replication, kernel.now, metrics)
        state["row"], state["hist"] = row, histogram.copy()
        kernel.after(interval, sample, None)

    kernel.after(interval, sample, None)
