"""Per-class statistics: the request outcomes of every class, counted apart.

The recorder counts every request in its base columns (`throughput`, `response.*`,
`count.*`); with request classes the clients also count each request under its class here.
Each class is a probe (`class.NAME`), so its counts are cumulative columns of the recorder's
rows like any component's and every window -- after warm-up, a `batch.K` of repeated `ab`
runs, a time-series row -- gives `class.NAME.throughput`, `class.NAME.response.mean` and
`class.NAME.count.*`.  Percentiles need the response-time distribution of the window: each
class keeps a cumulative log-binned histogram, and the recorder stores its occupied range at
every row (`histograms`), so a window's histogram is again a difference of two snapshots.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from sim.observe.probes import PER_SECOND, REQUESTS, SECONDS, Metric, Window

if TYPE_CHECKING:
    from sim.stats.histogram import LogBins

OUTCOMES = (
    "arrived",
    "completed",
    "response_sum",
    "timed_out",
    "errors",
    "failed",
    "retried",
    "late",
)
PERCENTILES = (50, 90, 95, 99)
_FLUSH = 4096  # response times buffered per class before they are binned

# A snapshot of the classes' cumulative histograms: (first occupied bin, classes x counts).
Snapshot = tuple[int, np.ndarray]


class ClassStats:
    """Every class's cumulative outcome counts and response-time histogram."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        k = len(names)
        self.arrived = [0] * k
        self.completed = [0] * k
        self.response_sum = [0.0] * k
        self.timed_out = [0] * k
        self.errors = [0] * k
        self.failed = [0] * k
        self.retried = [0] * k
        self.late = [0] * k
        self.bins: LogBins | None = None  # set by the recorder that stores the snapshots
        self._times: list[float] = []  # response times not yet binned, and their classes
        self._classes: list[int] = []
        self._histogram: np.ndarray | None = None  # classes x bins, cumulative
        self._occupied = (0, 0)  # [first, last + 1) bin in use by any class

    def complete(self, klass: int, response_time: float) -> None:
        self.completed[klass] += 1
        self.response_sum[klass] += response_time
        self._times.append(response_time)
        self._classes.append(klass)
        if len(self._times) >= _FLUSH:
            self._flush()

    def probes(self) -> list[ClassProbe]:
        return [ClassProbe(self, k) for k in range(len(self.names))]

    # ------------------------------------------------------------------ histograms
    def _flush(self) -> None:
        if self.bins is None:
            return
        n_bins, k = self.bins.n_bins, len(self.names)
        if self._histogram is None:
            self._histogram = np.zeros((k, n_bins), dtype=np.int64)
        if not self._times:
            return
        # one binning for every class's responses (a row boundary comes every few requests)
        indices = self.bins.index(np.asarray(self._times, dtype=float))
        flat = np.asarray(self._classes, dtype=np.int64) * n_bins + indices
        self._histogram += np.bincount(flat, minlength=k * n_bins).reshape(k, n_bins)
        first, end = int(indices.min()), int(indices.max()) + 1
        lo, hi = self._occupied
        self._occupied = (first, end) if hi == 0 else (min(lo, first), max(hi, end))
        self._times.clear()
        self._classes.clear()

    def snapshot(self) -> Snapshot:
        """Every class's cumulative histogram over the bins any class occupies (a run's
        responses span a few hundred of the bins: the recorder keeps one of these per row)."""
        self._flush()
        lo, hi = self._occupied
        if self._histogram is None:
            return (0, np.zeros((len(self.names), 0), dtype=np.int64))
        return (lo, self._histogram[:, lo:hi].copy())

    def window_percentiles(
        self, start: Snapshot, end: Snapshot, units: dict[str, str] | None = None
    ) -> dict[str, float]:
        """`class.NAME.response.pXX` of the window between two snapshots."""
        out: dict[str, float] = {}
        bins = self.bins
        assert bins is not None  # the recorder that took the snapshots set it
        histograms = np.zeros((len(self.names), bins.n_bins), dtype=np.int64)
        for sign, (lo, counts) in ((1, end), (-1, start)):
            histograms[:, lo : lo + counts.shape[1]] += sign * counts
        for name, histogram in zip(self.names, histograms):
            values = (
                bins.quantiles(histogram, [p / 100 for p in PERCENTILES])
                if histogram.sum() > 0
                else [math.nan] * len(PERCENTILES)
            )
            for p, value in zip(PERCENTILES, values):
                out[f"class.{name}.response.p{p}"] = float(value)
                if units is not None:
                    units[f"class.{name}.response.p{p}"] = SECONDS
        return out


class ClassProbe:
    """One class's outcomes as a probe named `class.NAME`."""

    fields = OUTCOMES

    def __init__(self, stats: ClassStats, klass: int) -> None:
        self.stats = stats
        self.klass = klass
        self.name = f"class.{stats.names[klass]}"

    def counters(self, now: float) -> tuple[float, ...]:
        stats, k = self.stats, self.klass
        return tuple(float(getattr(stats, field)[k]) for field in OUTCOMES)

    def metrics(self, w: Window) -> Iterator[Metric]:
        """The class's responses per second and mean response time, and its outcome counts
        (the base metrics' meanings, for this class's requests only)."""
        yield "throughput", w.rate("completed"), PER_SECOND
        yield "response.mean", w.per("response_sum", "completed"), SECONDS
        for field in OUTCOMES:
            if field != "response_sum":
                yield f"count.{field}", w.delta[field], REQUESTS
