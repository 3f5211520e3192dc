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

import numpy as np

from sim.observe.probes import PER_SECOND, REQUESTS, SECONDS, Metric, Window

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

# A snapshot of one class's cumulative histogram: (first occupied bin, counts from there on).
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
        self.bins = None  # LogBins, set by the recorder that stores the snapshots
        self._buffers: list[list[float]] = [[] for _ in names]
        self._histograms: list[np.ndarray] | None = None

    def complete(self, klass: int, response_time: float) -> None:
        self.completed[klass] += 1
        self.response_sum[klass] += response_time
        buffer = self._buffers[klass]
        buffer.append(response_time)
        if len(buffer) >= _FLUSH:
            self._flush()

    def probes(self) -> list[ClassProbe]:
        return [ClassProbe(self, k) for k in range(len(self.names))]

    # ------------------------------------------------------------------ histograms
    def _flush(self) -> None:
        if self.bins is None:
            return
        if self._histograms is None:
            self._histograms = [np.zeros(self.bins.n_bins, dtype=np.int64) for _ in self.names]
        for buffer, histogram in zip(self._buffers, self._histograms):
            if buffer:
                np.add.at(histogram, self.bins.index(np.asarray(buffer, dtype=float)), 1)
                buffer.clear()

    def snapshot(self) -> list[Snapshot]:
        """Each class's cumulative histogram, trimmed to its occupied range (a run's responses
        span a few hundred of the bins: the recorder keeps one of these per row)."""
        self._flush()
        out = []
        for histogram in self._histograms or []:
            occupied = np.flatnonzero(histogram)
            if len(occupied) == 0:
                out.append((0, np.zeros(0, dtype=np.int64)))
            else:
                out.append((int(occupied[0]), histogram[occupied[0] : occupied[-1] + 1].copy()))
        return out

    def window_percentiles(
        self, start: list[Snapshot], end: list[Snapshot], units: dict[str, str] | None = None
    ) -> dict[str, float]:
        """`class.NAME.response.pXX` of the window between two snapshots."""
        out: dict[str, float] = {}
        n_bins = self.bins.n_bins
        for k, name in enumerate(self.names):
            histogram = np.zeros(n_bins, dtype=np.int64)
            if k < len(end):
                lo, counts = end[k]
                histogram[lo : lo + len(counts)] += counts
            if k < len(start):
                lo, counts = start[k]
                histogram[lo : lo + len(counts)] -= counts
            values = (
                self.bins.quantiles(histogram, [p / 100 for p in PERCENTILES])
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
