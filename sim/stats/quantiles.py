"""Confidence intervals for quantiles pooled over independent replications.

Averaging each replication's own percentile is biased when a replication's sample is strongly
autocorrelated (a heavily loaded queue): a replication's empirical distribution is then a
random distribution whose scale varies from run to run, and the mean of the quantiles of such
distributions falls short of the quantile of their average, the stationary distribution. In
M/M/1 at rho = 0.95 (30 replications of 5 000 s) the mean of the replications' p99 is 8.26 s
where the pooled p99 is 8.64 s and the truth 9.21 s (experiments/heavy_load).

So the point estimate is the quantile of the pooled sample (the sum of the replications'
window histograms) and the interval is *sectioning* (Asmussen & Glynn 2007, III.5a;
Nakayama 2014, ACM TOMACS 24(4)): the replications are the sections, and their own quantiles'
spread around the pooled one gives t_{R-1} S / sqrt(R). Two physical limits are applied and
reported: a time is never below zero (the lower bound is clipped), and no interval is narrower
than the histogram can resolve (the half-width is at least the bins' relative error times the
estimate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from sim.stats.confidence import Interval, t_quantile


def sectioning_interval(
    pooled: float,
    sections: Sequence[float],
    level: float,
    *,
    resolution: float = 0.0,
    floor: float = 0.0,
) -> Interval:
    """Interval centred on the pooled quantile, with the sections' spread around it."""
    values = np.asarray(sections, dtype=float)
    values = values[np.isfinite(values)]
    n = len(values)
    if n < 2 or not math.isfinite(pooled):
        return Interval(pooled, math.nan, math.nan, math.nan, n, level)
    spread = math.sqrt(float(((values - pooled) ** 2).sum()) / (n - 1))
    half = t_quantile((1 + level) / 2, n - 1) * spread / math.sqrt(n)
    half = max(half, resolution)
    return Interval(pooled, half, max(pooled - half, floor), pooled + half, n, level)


def window_quantiles(
    window_histograms: np.ndarray, representative: np.ndarray, qs: Sequence[float]
) -> np.ndarray:
    """Nearest-rank quantiles of each row of `window_histograms` (rows x bins): rows x len(qs).
    A row with no observation gives NaN."""
    counts = np.atleast_2d(window_histograms)
    out = np.full((counts.shape[0], len(qs)), math.nan)
    # Only the bins some row observed: the run's histogram spans 1 us to 1e6 s (~2 800 bins)
    # and a replication's responses a few hundred of them; outside that band every row's
    # cumulative count is flat, so no rank is first reached there.  A replication windows up
    # to 128 candidate starts, twice (`sim.run.finish`, then with the other replications).
    occupied = np.flatnonzero(counts.any(axis=0))
    if occupied.size == 0:
        return out
    low = int(occupied[0])
    cumulative = np.cumsum(counts[:, low : int(occupied[-1]) + 1], axis=1)
    total = cumulative[:, -1]
    has = total > 0
    for k, q in enumerate(qs):
        rank = np.maximum(1, np.ceil(q * total))
        index = (cumulative >= rank[:, None]).argmax(axis=1) + low
        out[has, k] = representative[index[has]]
    return out
