"""The measurement error of means and percentiles (sim.measurements.sampling) against a known
distribution: lognormal samples, i.i.d. and autocorrelated (a Gaussian AR(1) mapped through
the lognormal, so the marginal, and every true percentile, is known exactly).

A 90 % interval, estimate ± t(19)·SE, must hold the true value in 90 % of 250 replications:
the binomial standard deviation is 1.9 %, so [84 %, 96 %] is about ±3 sd. On the
autocorrelated samples the i.i.d. formula is shown to fail the same check, so the check can
fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import signal, stats

from sim.measurements import sampling

MU, SIGMA = -3.0, 0.6  # lognormal: median 50 ms, cv 0.66
REPLICATIONS = 250
SAMPLES = 8000
T90 = float(stats.t.ppf(0.95, sampling.BATCHES - 1))


def lognormal_series(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    """A stationary AR(1) with lag-one correlation phi and N(0, 1) margins, exponentiated."""
    noise = rng.standard_normal(n)
    tail, _ = signal.lfilter([math.sqrt(1 - phi**2)], [1, -phi], noise[1:], zi=[phi * noise[0]])
    return np.exp(MU + SIGMA * np.concatenate([[noise[0]], tail]))


def true_percentile(p: float) -> float:
    return math.exp(MU + SIGMA * float(stats.norm.ppf(p / 100)))


def coverage(phi: float, seed: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(["mean", 50, 90, 95, 99], 0)
    naive = dict.fromkeys([50, 90, 95, 99], 0)
    true_mean = math.exp(MU + SIGMA**2 / 2)
    for _ in range(REPLICATIONS):
        x = lognormal_series(rng, SAMPLES, phi)
        hits["mean"] += abs(x.mean() - true_mean) <= T90 * sampling.mean_error(x)
        for p in (50, 90, 95, 99):
            truth = true_percentile(p)
            estimate = np.quantile(x, p / 100)
            hits[p] += abs(estimate - truth) <= T90 * sampling.percentile_error(x, p)
            # the i.i.d. Woodruff interval: the share's binomial error, no correlation
            share = math.sqrt(p / 100 * (1 - p / 100) / SAMPLES) * 1.645
            low, high = np.quantile(x, [p / 100 - share, p / 100 + share])
            naive[p] += low <= truth <= high
    return (
        {k: v / REPLICATIONS for k, v in hits.items()},
        {k: v / REPLICATIONS for k, v in naive.items()},
    )


@pytest.mark.parametrize(("phi", "seed"), [(0.0, 1), (0.9, 2)])
def test_ninety_percent_intervals_hold_the_truth_ninety_percent_of_the_time(phi, seed):
    covered, naive = coverage(phi, seed)
    for statistic, share in covered.items():
        assert 0.84 <= share <= 0.96, (statistic, covered)
    if phi > 0:
        # correlated samples: the i.i.d. formula's intervals are far too narrow
        assert max(naive.values()) < 0.7, naive


def test_the_rule_of_samples_per_percentile():
    assert [sampling.min_samples(p) for p in (None, 50, 90, 95, 99)] == [40, 40, 200, 400, 2000]
    rng = np.random.default_rng(3)
    x = rng.lognormal(MU, SIGMA, 399)
    assert math.isnan(sampling.percentile_error(x, 95))
    assert math.isfinite(sampling.percentile_error(x, 90))
    assert math.isnan(sampling.mean_error(x[:39])) and math.isfinite(sampling.mean_error(x[:40]))


def test_an_error_is_never_below_the_files_resolution():
    # whole milliseconds, nearly all the same: the percentile is known to the rounding only
    x = np.full(1000, 0.012)
    x[::50] = 0.013
    assert sampling.resolution_s(x) == 1e-3
    assert sampling.percentile_error(x, 50) == pytest.approx(1e-3 / math.sqrt(12))
    assert sampling.resolution_s(np.array([0.0121234567])) == 0.0


# --------------------------------------------------------------------------- throughput
THINK_S = (0.25, 0.75)  # a JMeter Uniform Random Timer, as in notebooks/data/cluster-db
RESPONSE_S = 0.040
CLOSED_USERS, WINDOW_S, SETTLE_S = 10, 56.0, 20.0


def closed_loop_completions(rng: np.random.Generator) -> np.ndarray:
    """Completion times of closed users (think, then a 40-ms request) over [SETTLE_S, SETTLE_S +
    WINDOW_S]; the users start at once and have settled into their stationary phases by then."""
    cycles = rng.uniform(*THINK_S, (CLOSED_USERS, 400)) + RESPONSE_S
    ends = np.cumsum(cycles, axis=1).ravel()
    return ends[(ends >= SETTLE_S) & (ends <= SETTLE_S + WINDOW_S)]


def test_throughput_interval_of_closed_users_holds_the_rate_and_poisson_does_not_fit():
    """The sub-windows' error of a closed loop's throughput: a 90 % interval, rate ± t(19)·SE,
    holds the long-run rate N / E[cycle] in 84-98 % of 250 runs (94 % in 3000: a sub-window of
    2.8 s is five cycles, and a closed loop's adjacent counts are negatively correlated, so the
    error is on the safe side by about a sixth); the Poisson error 1/√n (what a count of
    independent arrivals would have) is about three times too wide for these users, whose
    cycle's cv is 0.27, so its intervals hold the rate nearly always."""
    rng = np.random.default_rng(11)
    rate = CLOSED_USERS / (sum(THINK_S) / 2 + RESPONSE_S)
    hits = poisson_hits = 0
    ratios = []
    for _ in range(REPLICATIONS):
        done = closed_loop_completions(rng)
        measured = len(done) / WINDOW_S
        error = sampling.throughput_error(done, SETTLE_S, SETTLE_S + WINDOW_S)
        hits += abs(measured - rate) <= T90 * error
        poisson = measured / math.sqrt(len(done))
        poisson_hits += abs(measured - rate) <= 1.645 * poisson
        ratios.append(error / poisson)
    assert 0.84 <= hits / REPLICATIONS <= 0.98, hits
    assert poisson_hits / REPLICATIONS > 0.99, poisson_hits
    assert 0.2 < float(np.median(ratios)) < 0.5, np.median(ratios)


def test_throughput_error_needs_forty_completions():
    rng = np.random.default_rng(12)
    done = np.sort(rng.uniform(0.0, 10.0, 40))
    assert math.isfinite(sampling.throughput_error(done, 0.0, 10.0))
    assert math.isnan(sampling.throughput_error(done[:39], 0.0, 10.0))
    assert math.isnan(sampling.throughput_error(done, 5.0, 5.0))
