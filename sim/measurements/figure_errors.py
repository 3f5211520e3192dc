"""The measurement error of one figure of a measured level: how far a second measurement of
the same level, as long and with as many requests, would read from the first.

One row of the measurement table (a level imported as one window) carries what is needed:
its `count.completed`, its window, and the errors the import measured from the level's own
samples (`COLUMN.std_error`, docs/measurement-table.md). A figure's relative standard error is,
in this order:

* `COLUMN.std_error` over the figure, where the import measured one: batch means over time
  (the throughput's sub-windows, the mean's batches, a percentile's Woodruff interval), which
  count the correlation of successive requests and a closed loop's own dependence;
* otherwise, from `count.completed` = n alone, a stated approximation:
  - throughput, a mean, a utilisation: 1/√n, the error of n independent requests whose
    coefficient of variation is 1 (a Poisson count; an exponential's mean). A closed loop
    whose cycle varies less (a uniform timer) completes more regularly than that, so for a
    throughput 1/√n is on the safe side (three times too wide on the `cluster-db` light
    levels);
  - the p-th percentile: binomial order statistics. Of n independent samples, the share of
    the distribution below the k-th smallest is Beta(k, n + 1 − k) whatever the distribution
    (k = (n − 1)p + 1, the rank NumPy's percentile interpolates at), so its 90 % interval in
    probability is exact at any n, where the normal approximation fails with a few samples
    above the percentile (it is what the batch-means error is left empty for). Only turning
    it into seconds needs a shape, which one row does not carry: an exponential tail,
    ξ_q ∝ −ln(1 − q), the same cv-1 assumption as the mean's. The standard error is that
    interval's width over 2 × 1.645.

A figure the row does not hold (empty, or not a column) has no measurement error: it is not
a measurement.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.measurements.table import STD_ERROR

Z90 = 1.6448536269514722  # the standard normal's 95 % point: a 90 % interval is ± Z90 sd

FROM_SAMPLES = "the level's own samples (batch means over time)"
POISSON = "1/sqrt(n) of n requests (cv 1: a Poisson count)"
ORDER_STATISTICS = "binomial order statistics of n requests, exponential tail"


@dataclass(frozen=True)
class FigureError:
    """A measured figure's relative standard error, and how it was obtained."""

    column: str
    value: float
    relative_sd: float
    method: str  # FROM_SAMPLES, POISSON or ORDER_STATISTICS


def number(value: Any) -> float | None:
    """A finite number from a table cell (text, float, NaN, None), else None."""
    try:
        found = float(value)
    except (TypeError, ValueError):
        return None
    return found if math.isfinite(found) else None


def percentile_of(column: str) -> float | None:
    """p in 0..1 for `response.pNN` (`class.X.response.p95` too), else None."""
    head, _, tail = column.rpartition(".p")
    if not head.endswith("response"):
        return None
    try:
        p = float(tail) / 100
    except ValueError:
        return None
    return p if 0 < p < 1 else None


def from_samples(row: Mapping[str, Any], column: str) -> float | None:
    """The relative error the import measured from the level's samples, where it did."""
    error, value = number(row.get(column + STD_ERROR)), number(row.get(column))
    if error is None or value is None or value == 0 or error <= 0:
        return None
    return error / abs(value)


def from_count(column: str, count: float) -> tuple[float, str]:
    """The relative error of a figure of `count` requests (module docstring), and its method;
    an infinite error without a request."""
    if not count > 0:
        return math.inf, POISSON
    p = percentile_of(column)
    if p is None:
        return 1 / math.sqrt(count), POISSON
    # the beta distribution's quantiles, as scipy.stats.beta.ppf computes them (it calls this
    # function): scipy.stats takes 1.5-2.5 s of CPU to import, scipy.special a tenth of it
    from scipy import special

    rank = (count - 1) * p + 1
    low, high = special.betaincinv(rank, count + 1 - rank, np.array([0.05, 0.95]))
    spread = math.log1p(-float(low)) - math.log1p(-float(high))
    return spread / -math.log1p(-p) / (2 * Z90), ORDER_STATISTICS


def figure_error(row: Mapping[str, Any], column: str, samples: bool = True) -> FigureError | None:
    """The measurement error of `column` in a level's row; None where the row holds no value.
    `samples=False`: from the count alone, whatever the import measured."""
    value = number(row.get(column))
    if value is None:
        return None
    measured = from_samples(row, column) if samples else None
    if measured is not None:
        return FigureError(column, value, measured, FROM_SAMPLES)
    count = number(row.get("count.completed"))
    sd, method = from_count(column, math.nan if count is None else count)
    return FigureError(column, value, sd, method)
