"""Warm-up removal across replications, and the checks that a steady-state run is one.

Warm-up. MSER-5 run on each replication by itself removes high early *excursions*, not only
the initial transient: in a heavily loaded queue an early busy period looks like a transient,
and deleting it biases every estimate low (M/M/1, rho = 0.95, 30 x 5 000 s: 9 replications
cut at 840-2 130 s, the mean falls from 1.97 to 1.90 and a 95 % interval for the mean covers
the truth in 45 % of repeated experiments). So MSER is applied, as Hoad, Robinson & Davies
(2010, JORS 61) recommend, to the *average over the replications* of the output, batched on a
grid of the run's progress common to all replications, and the same warm-up is deleted from
every replication (replication-deletion, Law 2015 ch. 9): the excursions of one replication
weigh 1/R in the average, the transient of them all weighs fully (coverage back to 93-98 %).

Checks. A run is reported as not in steady state, or too short, when
* MSER's truncation point lies at its limit (the end of the first half of the run): the output
  is still drifting at the end, no warm-up can be found;
* each replication holds fewer than MIN_EFFECTIVE independent observations of the response
  time. The count is estimated as n_eff = s^2 / Var(replication means) (the variance of one
  response over that of a replication's mean), which is also the run length divided by the
  output's correlation time; below about 20 the start-up bias and the skew of the replication
  means make a t-interval miss (measured: M/M/1 at rho = 0.95, n_eff = 5 and 9: coverage of a
  nominal 95 % interval 81-85 % for the mean, 42-52 % for p99; n_eff = 24 and above: 93-98 %);
* a percentile q has fewer than MIN_EXCEEDANCES independent observations beyond it over all
  replications (R n_eff (1 - q)): its estimate rests on a few excursions (measured, M/M/1 at
  rho = 0.9, 99 % intervals for p99: R n_eff (1 - q) = 4.6 -> 85 % coverage, 12 and more ->
  96-98 %);
* fewer than MIN_REPLICATIONS replications carry an interval: a Student-t interval of two or
  three replications rests entirely on their values being normal.
These thresholds are rules of thumb measured on M/M/1 (experiments/heavy_load/README.md), not
theorems: a warning says the interval may miss, its absence does not prove that it covers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sim.stats.mser import mser_truncation

MIN_EFFECTIVE = 20.0
MIN_EXCEEDANCES = 10.0
MIN_REPLICATIONS = 5


@dataclass
class WindowCandidates:
    """One replication's candidate observation windows: from each start to the end."""

    starts: np.ndarray  # (C,) simulated time of each candidate window start [s]
    rows: np.ndarray  # (C + 1, columns) cumulative counters at each start, then at the end
    histograms: np.ndarray  # (C + 1, bins) cumulative response-time histograms, likewise
    cell_completed: np.ndarray  # (G,) completions in each cell of the progress grid
    cell_response: np.ndarray  # (G,) summed response time in each cell
    # The metrics of the window between two rows (the recorder's columns, the model's
    # capacities); percentiles come from the histograms instead.
    metrics_between: Callable[[np.ndarray, np.ndarray], dict[str, float]] | None = None


def common_truncation(
    cell_completed: Sequence[np.ndarray], cell_response: Sequence[np.ndarray], candidates: int
) -> int:
    """MSER on the replications' pooled batch means: the index of the first kept cell."""
    cells = min(len(c) for c in cell_completed)
    if cells < 4 or candidates < 2:
        return 0
    counts = np.sum([c[:cells] for c in cell_completed], axis=0)
    sums = np.sum([r[:cells] for r in cell_response], axis=0)
    # Cells with no completion weigh nothing; trailing empty cells would leave MSER nothing
    # to average, so the series ends at the last cell with a completion.
    last = int(np.flatnonzero(counts)[-1]) + 1 if counts.any() else 0
    if last < 4:
        return 0
    means = np.divide(sums[:last], counts[:last], out=np.zeros(last), where=counts[:last] > 0)
    return min(mser_truncation(means, weights=counts[:last], max_fraction=0.5), candidates - 1)


def truncation_at_limit(cut: int, candidates: int) -> bool:
    """MSER's minimum in the last tenth of its range (beyond 45 % of the run): the output is
    still drifting, the minimum is where the search stops, not where a transient ends."""
    return candidates >= 10 and cut >= (candidates - 1) - (candidates - 1) // 10


def effective_observations(response_means: Sequence[float], response_variance: float) -> float:
    """Independent observations per replication: Var(one response) / Var(replication mean)."""
    means = np.asarray([m for m in response_means if math.isfinite(m)], dtype=float)
    if len(means) < 3 or not math.isfinite(response_variance):
        return math.nan
    between = float(means.var(ddof=1))
    if between <= 0:
        return math.inf
    return response_variance / between


def steady_state_warnings(
    *,
    mser: bool,
    cut: int,
    candidates: int,
    warmup_s: float,
    window_s: float,
    replications: int,
    effective: float,
    percentiles: Sequence[int],
) -> list[str]:
    warnings = []
    if mser and truncation_at_limit(cut, candidates):
        warnings.append(
            f"not in steady state: the warm-up MSER finds ({warmup_s:.4g} s) is at its limit, "
            "half the run, so the response times still drift at the end of the run; the "
            "figures describe the start-up, not a steady state: run longer (run.duration_s)"
        )
    if math.isfinite(effective) and effective < MIN_EFFECTIVE:
        correlation = window_s / effective if effective > 0 else math.inf
        warnings.append(
            f"run too short: each replication holds about {effective:.2g} independent response "
            f"times (correlation time about {correlation:.3g} s against a window of "
            f"{window_s:.4g} s; at least {MIN_EFFECTIVE:g} needed): start-up bias and skew can "
            "put the truth outside the intervals: run longer (run.duration_s)"
        )
    elif math.isfinite(effective):
        for p in percentiles:
            beyond = replications * effective * (1 - p / 100)
            if beyond < MIN_EXCEEDANCES:
                warnings.append(
                    f"response.p{p}: the replications hold about {beyond:.2g} independent "
                    f"responses beyond it (at least {MIN_EXCEEDANCES:g} needed): its interval "
                    "may miss: add replications or run longer"
                )
    if 1 < replications < MIN_REPLICATIONS:
        warnings.append(
            f"only {replications} replications: a Student-t interval from so few rests on "
            f"their values being normal; run at least {MIN_REPLICATIONS} (--replications)"
        )
    return warnings
