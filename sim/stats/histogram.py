"""Log-binned histogram layout: percentiles of a stream in constant memory.

Bin i (1 <= i <= n-2) covers [a, g a) with a = min * g^(i-1) and g = (1 + e) / (1 - e).
Its representative r = 2 a g / (1 + g) (the harmonic mid-point) satisfies
(r - a) / a = (g - 1) / (g + 1) = e and (g a - r) / (g a) = e, so every value in the bin,
hence every quantile inside the range, is reported within relative error e.
Bin 0 holds values below `min_value`
(including zeros); the last bin holds values at or above `max_value`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


class LogBins:
    def __init__(
        self, min_value: float = 1e-6, max_value: float = 1e5, relative_error: float = 0.01
    ) -> None:
        if not 0 < min_value < max_value:
            raise ValueError("need 0 < min_value < max_value")
        if not 0 < relative_error < 0.5:
            raise ValueError("relative_error must be in (0, 0.5)")
        self.min_value = min_value
        self.max_value = max_value
        self.relative_error = relative_error
        self.growth = (1 + relative_error) / (1 - relative_error)
        self._log_growth = math.log(self.growth)
        self.inner = math.ceil(math.log(max_value / min_value) / self._log_growth)
        self.n_bins = self.inner + 2
        lower = min_value * self.growth ** np.arange(self.inner)
        self.representative = np.concatenate(
            ([min_value], 2 * lower * self.growth / (1 + self.growth), [max_value])
        )

    def index(self, values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            raw = np.floor(np.log(values / self.min_value) / self._log_growth) + 1
        raw = np.where(values < self.min_value, 0, raw)
        return np.clip(raw, 0, self.n_bins - 1).astype(np.int64)

    def quantiles(self, counts: np.ndarray, qs: Sequence[float]) -> list[float]:
        """Nearest-rank quantiles: the representative of the bin holding observation ceil(q n)."""
        cumulative = np.cumsum(counts)
        total = cumulative[-1]
        if total <= 0:
            return [math.nan for _ in qs]
        out = []
        for q in qs:
            rank = max(1, math.ceil(q * total))
            out.append(float(self.representative[int(np.searchsorted(cumulative, rank))]))
        return out

    def quantile(self, counts: np.ndarray, q: float) -> float:
        return self.quantiles(counts, [q])[0]

    def mean_estimate(self, counts: np.ndarray) -> float:
        total = counts.sum()
        return float((counts * self.representative).sum() / total) if total else math.nan
