"""MSER warm-up truncation (White 1997; White, Cobb & Spratt 2000).

Choose the number d of leading batches to delete that minimises
MSER(d) = sum_{j>d} w_j (Z_j - Zbar(d))^2 / (sum_{j>d} w_j)^2, over d <= k/2.
With equal weights this is the classical (1/(k-d)^2) sum (Z_j - Zbar(d))^2 on batch means
of 5 observations (MSER-5); weights (batch counts) allow batches of unequal size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def mser_truncation(
    batch_means: Sequence[float] | np.ndarray,
    weights: Sequence[float] | np.ndarray | None = None,
    max_fraction: float = 0.5,
) -> int:
    z = np.asarray(batch_means, dtype=float)
    k = len(z)
    if k < 2:
        return 0
    w = np.ones(k) if weights is None else np.asarray(weights, dtype=float)
    # Suffix sums give every candidate d in O(k).
    sw = np.cumsum(w[::-1])[::-1]
    swz = np.cumsum((w * z)[::-1])[::-1]
    swz2 = np.cumsum((w * z * z)[::-1])[::-1]
    last = max(0, min(k - 2, int(k * max_fraction)))
    d = np.arange(last + 1)
    mean = swz[d] / sw[d]
    squares = np.maximum(swz2[d] - sw[d] * mean**2, 0.0)
    statistic = squares / sw[d] ** 2
    return int(np.argmin(statistic))


def batch_means(values: Sequence[float], batch_size: int = 5) -> np.ndarray:
    """Means of consecutive batches; an incomplete last batch is dropped."""
    data = np.asarray(values, dtype=float)
    k = len(data) // batch_size
    return data[: k * batch_size].reshape(k, batch_size).mean(axis=1)


def mser5(values: Sequence[float]) -> int:
    """Number of raw observations to delete by MSER-5."""
    return 5 * mser_truncation(batch_means(values, 5))
