"""What an engine hands back from one replication, before any windowing: the trace.

Both engines end a replication here -- the reference (`sim.engines.reference`) from its
recorder, the compiled one (`sim.engines.compiled`) from its tables -- and one module above
them (`sim.run.finish`) turns a trace into a windowed result, so that the two are windowed,
warmed up and summarised alike and neither imports the other's finishing code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from sim.observe.metrics import window_metrics
from sim.observe.probes import Measures
from sim.stats.histogram import LogBins
from sim.stats.steady_state import WindowCandidates

# The response-time histogram of every run: log-binned, 0.5 % relative error from 1 us to 1e6 s
BINS = LogBins(min_value=1e-6, max_value=1e6, relative_error=0.005)

# --timeseries: (replication, simulated time [s], the window's metrics) for each sample
TimeseriesSink = Callable[[int, float, dict[str, float]], None]


@dataclass
class Trace:
    """One replication as an engine recorded it: its metrics over the whole recording, the
    candidate windows the warm-up is chosen among, and what the engine noted."""

    replication: int
    candidates: WindowCandidates  # with `metrics_between` set
    metrics: dict[str, float]  # over the whole recording
    units: dict[str, str]  # each metric's unit, from its probe
    mser: bool  # the warm-up is chosen by MSER (else fixed, or none for a finite run)
    notes: list[str] = field(default_factory=list)
    batch_size: int = 1  # completions per batch at the end (MSER granularity)
    finished: bool = True  # finite workloads: all requests had an outcome in time
    started: float = 0.0  # time.perf_counter() when the replication started
    events: int = 0


def metrics_between(
    columns: list[str], probes: Sequence[Measures]
) -> Callable[[np.ndarray, np.ndarray], dict]:
    """The metrics of the window between two counter rows (percentiles aside)."""
    return partial(_window, columns, probes)


def _window(columns, probes, start: np.ndarray, end: np.ndarray) -> dict:
    return window_metrics(columns, start, end, None, BINS, probes)


def single_window(
    first_row: np.ndarray, last_row: np.ndarray, first_histogram, last_histogram
) -> WindowCandidates:
    """The one window of a run without MSER: from the start of recording to the end."""
    return WindowCandidates(
        starts=np.asarray([first_row[0]]),
        rows=np.vstack([first_row, last_row]),
        histograms=np.vstack([first_histogram, last_histogram]),
        cell_completed=np.zeros(0),
        cell_response=np.zeros(0),
    )
