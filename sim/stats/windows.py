"""The replications of a run, windowed alike and summarised: one warm-up for all of them,
pooled percentiles, physical intervals and the steady-state checks.

Each replication hands over its candidate windows (`WindowCandidates`); the accumulator keeps
per replication only the counter rows at the candidates and its own percentiles at each, and
across replications the pooled window histograms, so its memory grows by a few kilobytes per
replication whatever the histogram's size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sim.stats.confidence import Interval, t_intervals
from sim.stats.histogram import LogBins
from sim.stats.quantiles import sectioning_interval, window_quantiles
from sim.stats.steady_state import (
    WindowCandidates,
    common_truncation,
    effective_observations,
    steady_state_warnings,
)

MetricsBetween = Callable[[np.ndarray, np.ndarray], dict[str, float]]


def clipped(interval: Interval, floor: float = 0.0) -> Interval:
    """The interval with its lower bound raised to `floor` (every metric here is a time, a
    count, a rate or a fraction: never negative). `half_width` stays the t half-width."""
    if not math.isfinite(interval.low) or interval.low >= floor:
        return interval
    return Interval(
        interval.mean, interval.half_width, floor, interval.high, interval.n, interval.level
    )


@dataclass(frozen=True)
class WindowedReplication:
    """One replication's candidate windows as `PooledWindows.add` reads them, computed once:
    its window histograms (the end's histogram less each candidate start's), its own
    nearest-rank percentiles in each, and the names of the metrics its counter rows give.
    `sim.run.finish` windows a replication alone and a run of replications then pools it with
    the others: both read the same windows, so the run reuses these instead of computing them
    again (bit for bit the same arrays)."""

    windows: np.ndarray  # (C, bins)
    quantiles: np.ndarray  # (C, percentiles)
    own: frozenset[str]  # the names `metrics_between` gives
    bins: LogBins
    percentiles: tuple[int, ...]
    metrics_between: MetricsBetween


@dataclass
class _Replication:
    rows: np.ndarray  # (C + 1, columns)
    quantiles: np.ndarray  # (C, percentiles)
    extra: dict[str, float]  # metrics the windows do not give (in flight, makespan, batches)
    order: list[str]  # the metric names in the replication's own order
    # its own probes' reading of a window: a probe may hold a replication's own state (the
    # front's last close, `elapsed.server_close`), which another replication's must not give
    between: MetricsBetween
    cut: int = -1  # the window the replication's metrics were last computed for
    metrics: dict[str, float] = field(default_factory=dict)


class PooledWindows:
    def __init__(
        self,
        metrics_between: MetricsBetween,
        bins: LogBins,
        percentiles: Sequence[int],
        *,
        mser: bool,
    ) -> None:
        self.metrics_between = metrics_between
        self.bins = bins
        self.percentiles = tuple(percentiles)
        self.mser = mser
        self._replications: list[_Replication] = []
        self._pooled: np.ndarray | None = None  # (C, bins): sum over replications of windows
        self._candidates = 0
        self._cell_completed: list[np.ndarray] = []
        self._cell_response: list[np.ndarray] = []
        self.cut = 0
        self.warmup_s = 0.0

    def windowed(self, window: WindowCandidates) -> WindowedReplication:
        """The replication's windows and percentiles at each candidate start (for `add`)."""
        between = window.metrics_between or self.metrics_between
        candidates = len(window.starts)
        windows = window.histograms[-1][None, :] - window.histograms[:candidates]
        qs = [p / 100 for p in self.percentiles]
        return WindowedReplication(
            windows=windows,
            quantiles=window_quantiles(windows, self.bins.representative, qs),
            own=frozenset(between(window.rows[0], window.rows[-1])),
            bins=self.bins,
            percentiles=self.percentiles,
            metrics_between=between,
        )

    def add(
        self,
        window: WindowCandidates,
        metrics: dict[str, float],
        windowed: WindowedReplication | None = None,
    ) -> None:
        """Pool a replication: its candidate windows, and `metrics` (its metrics and their
        order) for what the windows do not give.  `windowed`: its windows computed already
        (`windowed`, by this or another accumulator of the same bins and percentiles)."""
        if (
            windowed is None
            or windowed.bins is not self.bins
            or windowed.percentiles != self.percentiles
        ):
            windowed = self.windowed(window)
        between = window.metrics_between or self.metrics_between
        # the names another reading of a window gave are taken from this one's
        own = (
            windowed.own
            if windowed.metrics_between is between
            else frozenset(between(window.rows[0], window.rows[-1]))
        )
        candidates = len(window.starts)
        windows = windowed.windows
        if self._pooled is None:
            self._pooled = windows.astype(np.int64)
            self._candidates = candidates
            self._starts = window.starts
        else:
            self._candidates = min(self._candidates, candidates)
            self._pooled = self._pooled[: self._candidates] + windows[: self._candidates]
        quantiles = {f"response.p{p}" for p in self.percentiles}
        self._replications.append(
            _Replication(
                rows=window.rows,
                quantiles=windowed.quantiles,
                extra={k: v for k, v in metrics.items() if k not in own and k not in quantiles},
                order=list(metrics),
                between=between,
            )
        )
        self._cell_completed.append(window.cell_completed)
        self._cell_response.append(window.cell_response)

    def metrics(self, index: int) -> dict[str, float]:
        """Replication `index`'s metrics over the common window."""
        rep = self._replications[index]
        cut = self.cut
        if rep.cut == cut:
            return dict(rep.metrics)
        values = rep.between(rep.rows[cut], rep.rows[-1])
        for p, value in zip(self.percentiles, rep.quantiles[cut]):
            values[f"response.p{p}"] = float(value)
        values.update(rep.extra)
        ordered = {name: values[name] for name in rep.order if name in values}
        ordered.update(values)
        rep.cut, rep.metrics = cut, ordered
        return dict(ordered)

    def choose_window(self) -> None:
        if self.mser and self._candidates > 1:
            self.cut = common_truncation(
                self._cell_completed, self._cell_response, self._candidates
            )
        else:
            self.cut = 0
        self.warmup_s = float(self._starts[self.cut])

    def summarise(
        self, replication_metrics: list[dict[str, float]], level: float
    ) -> tuple[dict[str, Interval], list[str]]:
        """Intervals per metric and the run's steady-state warnings."""
        names: list[str] = []
        for metrics in replication_metrics:
            names += [name for name in metrics if name not in names]
        pooled = self._pooled[self.cut] if self._pooled is not None else None
        pooled_values = (
            self.bins.quantiles(pooled, [p / 100 for p in self.percentiles])
            if pooled is not None
            else [math.nan] * len(self.percentiles)
        )
        pooled_of = {f"response.p{p}": v for p, v in zip(self.percentiles, pooled_values)}
        sectioned: dict[str, Interval] = {}
        averaged: dict[str, list[float]] = {}  # the metrics whose interval is Student-t's
        for name in names:
            values = [m.get(name, math.nan) for m in replication_metrics]
            finite = [v for v in values if not math.isnan(v)]
            if not finite:
                continue
            if name in pooled_of and math.isfinite(pooled_of[name]):
                estimate = pooled_of[name]
                sectioned[name] = sectioning_interval(
                    estimate,
                    finite,
                    level,
                    resolution=self.bins.relative_error * estimate,
                )
            else:
                averaged[name] = finite
        intervals = t_intervals(averaged, level)
        summary = {
            name: sectioned[name] if name in sectioned else clipped(intervals[name])
            for name in names
            if name in sectioned or name in intervals
        }
        warnings: list[str] = []
        if replication_metrics and pooled is not None:
            means = [m.get("response.mean", math.nan) for m in replication_metrics]
            effective = effective_observations(means, self._variance(pooled))
            window_s = float(np.nanmean([m.get("elapsed", math.nan) for m in replication_metrics]))
            warnings = steady_state_warnings(
                mser=self.mser,
                cut=self.cut,
                candidates=self._candidates,
                warmup_s=self.warmup_s,
                window_s=window_s,
                replications=len(replication_metrics),
                effective=effective,
                percentiles=[p for p in self.percentiles if p >= 90],
            )
        return summary, warnings

    def _variance(self, histogram: np.ndarray) -> float:
        total = histogram.sum()
        if total < 2:
            return math.nan
        values = self.bins.representative
        mean = float((histogram * values).sum() / total)
        return float((histogram * (values - mean) ** 2).sum() / (total - 1))
