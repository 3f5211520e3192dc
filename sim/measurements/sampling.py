"""The measurement error of a level's mean and percentiles, from its own samples.

Successive responses of a load test are correlated (a garbage collection, a neighbour's job,
a queue that builds and drains slow down many requests in a row), so the i.i.d. formulas
(s/√n for a mean, √(p(1 − p)/n)/f(ξ) for a percentile) understate the error. Both errors here
come from **batch means** over time: the samples, in the order they completed, are cut into
B = 20 contiguous batches (Schmeiser 1982: 10 to 30 batches; fewer, longer batches are less
correlated with each other).

* The mean: the standard deviation of the B batch means over √B.
* The throughput: the window cut into B sub-windows of equal length, the standard deviation of
  their completion rates over √B. A closed loop's completions are not a Poisson count (a user
  completes again only after its think time, so a count over a window varies less than 1/√n
  says when the cycle's cv is below 1, and more when the load drifts); the sub-windows' own
  spread counts both, where 1/√n counts neither.
* A percentile ξ_p: the batch means of the indicator 1{x ≤ ξ̂_p} estimate the standard error
  σ_p of the share of samples at or below the percentile, correlation included (a batch mean
  of a 0/1 indicator is a mean, unbiased at any batch size, where a batch's own percentile is
  biased in small batches). Woodruff's interval (1952) maps it back through the sample's own
  quantile function, [Q̂(p − z·σ_p), Q̂(p + z·σ_p)] with z = 1.96, which needs no density
  estimate; the standard error is the interval's width over 2z.

A block bootstrap would also count the correlation, but costs a thousand resamples of every
window and needs its own block length; batch means cost one pass. Intervals built on these
errors use Student's t with B − 1 = 19 degrees of freedom.

**How many samples a percentile needs.** The indicator's batch means carry information only if
each batch expects at least one sample above the percentile: n·(1 − p)/B ≥ 1, so
n ≥ B/(1 − p): 40 samples for p50 (and the mean), 200 for p90, 400 for p95, 2000 for p99. With
fewer, most batches hold no exceedance and the variance estimate collapses; the error is then
left empty (the percentile itself is still the exact statistic of the samples).

Response times are recorded at a resolution (JMeter: whole milliseconds), so a percentile
cannot be known better than that: an error below the rounding error's standard deviation
(resolution/√12) is raised to it.
"""

from __future__ import annotations

import math

import numpy as np

BATCHES = 20
Z_WOODRUFF = 1.959963984540054  # the standard normal's 97.5 % point
GRIDS_S = (1e-3, 1e-4, 1e-5, 1e-6)  # resolutions a response-time file is recorded at


def min_samples(p: float | None) -> int:
    """Samples a percentile p (0..100) needs for its error; the mean (None) as p50."""
    share_above = 0.5 if p is None else 1.0 - p / 100.0
    return math.ceil(BATCHES / share_above - 1e-9)


def resolution_s(values: np.ndarray) -> float:
    """The coarsest of 1 ms, 0.1 ms, 10 µs, 1 µs every value is a whole multiple of; 0 for
    values recorded finer (synthetic, or a tool that writes fractions of a microsecond)."""
    values = np.asarray(values, dtype=float)
    for grid in GRIDS_S:
        steps = values / grid
        if np.all(np.abs(steps - np.round(steps)) < 1e-6):
            return grid
    return 0.0


def _batches(values: np.ndarray) -> list[np.ndarray]:
    return np.array_split(values, BATCHES)


def mean_error(values: np.ndarray) -> float:
    """Standard error of the mean of `values` (in time order) by batch means; NaN with fewer
    than `min_samples(None)` values."""
    values = np.asarray(values, dtype=float)
    if len(values) < min_samples(None):
        return math.nan
    means = np.array([batch.mean() for batch in _batches(values)])
    return float(means.std(ddof=1) / math.sqrt(BATCHES))


def throughput_error(completed_s: np.ndarray, low_s: float, high_s: float) -> float:
    """Standard error of the throughput of a window [low_s, high_s] whose successful samples
    completed at `completed_s` (seconds, any order): the B sub-windows' completion rates, their
    standard deviation over √B. NaN with fewer than `min_samples(None)` completions (two a
    sub-window on average) or an empty window."""
    completed_s = np.asarray(completed_s, dtype=float)
    length = high_s - low_s
    if len(completed_s) < min_samples(None) or not length > 0:
        return math.nan
    edges = np.linspace(low_s, high_s, BATCHES + 1)
    counts, _ = np.histogram(completed_s, edges)  # the last edge is inside its sub-window
    rates = counts / (length / BATCHES)
    return float(rates.std(ddof=1) / math.sqrt(BATCHES))


def percentile_error(values: np.ndarray, p: float, resolution: float | None = None) -> float:
    """Standard error of the p-th percentile (0..100) of `values` (in time order): Woodruff's
    interval on the batch-means error of the share at or below it. NaN with fewer than
    `min_samples(p)` values."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n < min_samples(p):
        return math.nan
    share = p / 100.0
    estimate = float(np.quantile(values, share))
    below = (values <= estimate).astype(float)
    shares = np.array([batch.mean() for batch in _batches(below)])
    sigma = float(shares.std(ddof=1) / math.sqrt(BATCHES))
    ordered = np.sort(values)
    low = float(np.quantile(ordered, max(0.0, share - Z_WOODRUFF * sigma)))
    high = float(np.quantile(ordered, min(1.0, share + Z_WOODRUFF * sigma)))
    error = (high - low) / (2.0 * Z_WOODRUFF)
    grid = resolution_s(values) if resolution is None else resolution
    return max(error, grid / math.sqrt(12.0))
