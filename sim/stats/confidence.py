"""Student-t confidence intervals across independent replications (Law 2015, ch. 9)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np


@cache
def t_quantile(probability: float, degrees_of_freedom: int) -> float:
    """Student-t quantile: `scipy.stats.t.ppf(probability, degrees_of_freedom)`, bit for bit.

    That is `scipy.special.stdtrit(df, q) * scale + loc` with scale 1 and loc 0 for 0 < q < 1
    and df > 0, called here directly: importing scipy.stats takes longer than a small run
    (0.4 s more than scipy.special once numba has loaded scipy.linalg, 0.7 s in all without
    it), scipy.special 0.03 s.  Anything else goes to scipy.stats itself."""
    if 0.0 < probability < 1.0 and degrees_of_freedom > 0:
        from scipy.special import stdtrit

        return float(stdtrit(degrees_of_freedom, probability) * 1.0 + 0.0)
    from scipy import stats

    return float(stats.t.ppf(probability, degrees_of_freedom))


@dataclass(frozen=True)
class Interval:
    mean: float
    half_width: float
    low: float
    high: float
    n: int
    level: float

    @property
    def relative_half_width(self) -> float:
        if self.half_width == 0:
            return 0.0
        if self.mean == 0 or math.isnan(self.half_width):
            return math.inf
        return self.half_width / abs(self.mean)

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high


def t_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """Mean +- t_{(1+level)/2, n-1} s / sqrt(n).  One value gives an undefined (NaN) half-width."""
    data = np.asarray(values, dtype=float)
    n = len(data)
    if n == 0:
        raise ValueError("a confidence interval needs at least one value")
    mean = float(data.mean())
    if n == 1:
        return Interval(mean, math.nan, math.nan, math.nan, 1, level)
    s = float(data.std(ddof=1))
    half = t_quantile((1 + level) / 2, n - 1) * s / math.sqrt(n) if s > 0 else 0.0
    return Interval(mean, half, mean - half, mean + half, n, level)


def t_intervals(samples: Mapping[str, Sequence[float]], level: float = 0.95) -> dict[str, Interval]:
    """`t_interval` of each named sample, the same floats: the means and standard deviations
    of the samples of one size computed in one NumPy call (a row's reduction is the 1-D one,
    pairwise summation included) instead of two calls per sample -- a run summarises some 60
    metrics, a capacity search or a calibration hundreds of runs."""
    by_size: dict[int, list[str]] = {}
    for name, values in samples.items():
        by_size.setdefault(len(values), []).append(name)
    out: dict[str, Interval] = {}
    for n, names in by_size.items():
        if n == 0:
            raise ValueError("a confidence interval needs at least one value")
        data = np.array([samples[name] for name in names], dtype=float)  # (samples, n)
        means = data.mean(axis=1)
        if n == 1:
            for name, mean in zip(names, means.tolist()):
                out[name] = Interval(mean, math.nan, math.nan, math.nan, 1, level)
            continue
        sds = data.std(axis=1, ddof=1)
        for name, mean, s in zip(names, means.tolist(), sds.tolist()):
            half = t_quantile((1 + level) / 2, n - 1) * s / math.sqrt(n) if s > 0 else 0.0
            out[name] = Interval(mean, half, mean - half, mean + half, n, level)
    return {name: out[name] for name in samples}


def paired_t_interval(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> Interval:
    """Interval on the mean of a_j - b_j: the comparison of two configurations run with
    common random numbers (Law 2015, ch. 10)."""
    if len(a) != len(b):
        raise ValueError("paired comparison needs the same number of replications on both sides")
    return t_interval(np.asarray(a, dtype=float) - np.asarray(b, dtype=float), level)


def replications_needed(
    values: Sequence[float], target_half_width: float, level: float = 0.95, limit: int = 1_000_000
) -> int:
    """Smallest n with t_{(1+level)/2, n-1} s / sqrt(n) <= target (the Student-t iteration),
    s from the pilot replications `values`."""
    s = float(np.std(np.asarray(values, dtype=float), ddof=1))
    if s == 0:
        return max(len(values), 2)
    n = 2
    while n < limit:
        if t_quantile((1 + level) / 2, n - 1) * s / math.sqrt(n) <= target_half_width:
            return n
        n += 1
    return limit
