"""The parameter draws are the fit's Gaussian truncated to the parameters' ranges
(sim.studies.calibration.truncated), not cut to a range's end: their moments are the truncated
normal's (scipy.stats.truncnorm, or its marginal by quadrature where two coordinates are
correlated) inside the computed interval, no draw sits at an end, and a seed gives the same
draws, draw m the same whatever the count."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from sim.studies.calibration.linearise import draw_units
from sim.studies.calibration.truncated import (
    gaussian_points,
    truncated_gaussian,
    truncated_normal_inverse,
)

Z = 4.0  # interval half-widths in standard errors: a false alarm about once in 16,000 checks
KS_P = 1e-3


def _check_moments(x: np.ndarray, mean: float, var: float, fourth: float) -> None:
    """Sample mean and variance of `x` against the theory's, inside Z standard errors (the
    independent-draw errors; the quasi-random points' are no larger)."""
    n = len(x)
    assert abs(x.mean() - mean) < Z * math.sqrt(var / n), (x.mean(), mean)
    assert abs(x.var(ddof=1) - var) < Z * math.sqrt((fourth - var**2) / n), (x.var(), var)


def _truncnorm(mean: float, sd: float):
    return stats.truncnorm((1.0 - mean) / sd, (2.0 - mean) / sd, loc=mean, scale=sd)


def _check_truncnorm(x: np.ndarray, mean: float, sd: float) -> None:
    theory = _truncnorm(mean, sd)
    m, v, _, kurtosis = (float(s) for s in theory.stats(moments="mvsk"))
    _check_moments(x, m, v, (kurtosis + 3.0) * v**2)
    assert stats.kstest(x, theory.cdf).pvalue > KS_P
    # no mass at an end: clipping put every draw past it there (half, for a mean at an end)
    assert np.all((x > 1.0) & (x < 2.0))
    for end, inside in ((1.0, 1.01), (2.0, 1.99)):
        p = abs(float(theory.cdf(inside)) - float(theory.cdf(end)))
        share = float(np.mean(np.abs(x - end) < 0.01))
        assert abs(share - p) < Z * math.sqrt(p * (1 - p) / len(x)) + 1.0 / len(x), (end, share, p)


@pytest.mark.parametrize(
    "mean, sd",
    [
        (1.0, 0.285),  # the cluster test's CPU demand: the fit at its low end, sd the prior's
        (2.0, 0.1),
        (1.5, 1.0),  # both ends cut
        (1.3, 0.05),  # hardly any mass past an end
        (1.02, 0.4),
    ],
)
def test_one_parameter_is_the_truncated_normal(mean, sd):
    x = draw_units(np.array([mean]), np.array([[sd**2]]), 4096, 11)[:, 0]
    _check_truncnorm(x, mean, sd)


def test_independent_parameters_are_each_truncated_normal():
    means, sds = np.array([1.0, 1.5, 2.0]), np.array([0.3, 0.4, 0.2])
    x = draw_units(means, np.diag(sds**2), 4096, 5)
    for j in range(3):
        _check_truncnorm(x[:, j], float(means[j]), float(sds[j]))
    # the box keeps independent coordinates independent
    assert abs(np.corrcoef(x.T)[0, 2]) < Z / math.sqrt(len(x))


def _marginal_theory(mean: np.ndarray, cov: np.ndarray, j: int) -> tuple[float, float, float]:
    """Mean, variance and fourth central moment of coordinate j of a 2-D Gaussian truncated to
    [1, 2]^2, by quadrature: f(x_j) ~ phi(x_j) (Phi((2 - m_k|j) / s) - Phi((1 - m_k|j) / s))."""
    k = 1 - j
    sd_j = math.sqrt(cov[j, j])
    slope = cov[k, j] / cov[j, j]
    conditional_sd = math.sqrt(cov[k, k] - cov[k, j] ** 2 / cov[j, j])

    def density(x: float) -> float:
        centre = mean[k] + slope * (x - mean[j])
        inside = stats.norm.cdf((2.0 - centre) / conditional_sd) - stats.norm.cdf(
            (1.0 - centre) / conditional_sd
        )
        return float(stats.norm.pdf(x, mean[j], sd_j) * inside)

    def moment(power: int, about: float = 0.0) -> float:
        return integrate.quad(lambda x: (x - about) ** power * density(x), 1.0, 2.0, epsabs=0)[0]

    total = moment(0)
    m = moment(1) / total
    return m, moment(2, m) / total, moment(4, m) / total


CORRELATED = (
    np.array([1.0, 1.9]),
    np.array([[0.3**2, -0.8 * 0.3 * 0.2], [-0.8 * 0.3 * 0.2, 0.2**2]]),
)


@pytest.mark.parametrize("budget", [2**16, 2], ids=["rejection", "gibbs"])
def test_correlated_parameters_have_the_truncated_gaussians_marginals(budget):
    """Correlation -0.8, one mean at an end and one near the other (as the cluster test's CPU
    demand and its wait's offset): each coordinate's moments are the truncated Gaussian's
    marginal's, whether the draws are the Gaussian's own points inside the box or (a budget of
    two points) all but the first from the Gibbs sampler."""
    mean, cov = CORRELATED
    x = truncated_gaussian(mean, cov, 2048, 3, budget=budget)
    assert np.all((x > 1.0) & (x < 2.0))
    for j in range(2):
        _check_moments(x[:, j], *_marginal_theory(mean, cov, j))


def test_past_the_budget_the_gibbs_draws_are_the_truncated_normal():
    """Fourteen parameters each fitted at an end: the box holds 2^-14 of the Gaussian, so few of
    2^16 points are inside and the Gibbs sampler draws the rest; independent coordinates, so
    every one of them is a truncated normal."""
    dimension, sd = 14, 0.3
    mean, cov = np.ones(dimension), np.eye(dimension) * sd**2
    x = truncated_gaussian(mean, cov, 300, 9)
    inside = gaussian_points(mean, cov, 2**16, 9)
    kept = int(np.sum(np.all((inside >= 1.0) & (inside <= 2.0), axis=1)))
    assert kept < 30  # the path under test is the sampler's
    _check_truncnorm(x.ravel(), 1.0, sd)


@pytest.mark.parametrize("budget", [2**16, 2], ids=["rejection", "gibbs"])
def test_a_seed_gives_the_same_draws_and_draw_m_whatever_the_count(budget):
    mean, cov = CORRELATED
    first = truncated_gaussian(mean, cov, 32, 17, budget=budget)
    assert first.tobytes() == truncated_gaussian(mean, cov, 32, 17, budget=budget).tobytes()
    assert first[:8].tobytes() == truncated_gaussian(mean, cov, 8, 17, budget=budget).tobytes()
    assert not np.array_equal(first, truncated_gaussian(mean, cov, 32, 18, budget=budget))


def test_a_point_inside_the_ranges_is_drawn_as_before():
    """The draws are the Gaussian's own points (those `draw_units` cut into the box before) that
    lie inside it, in sequence order: a calibration whose draws were all inside draws the same."""
    mean, cov = CORRELATED
    points = gaussian_points(mean, cov, 256, 4)
    inside = points[np.all((points >= 1.0) & (points <= 2.0), axis=1)]
    assert truncated_gaussian(mean, cov, 40, 4).tobytes() == inside[:40].tobytes()


@pytest.mark.parametrize(
    "low, high", [(-1, 2), (0, 3), (2, 3), (5, 6), (-6, -5), (10, 10.5), (-0.5, 40), (30, 31)]
)
def test_the_univariate_quantile_is_truncnorms(low, high):
    u = np.linspace(0.001, 0.999, 999)
    ours = truncated_normal_inverse(u, 0.0, 1.0, low, high)
    assert np.allclose(ours, stats.truncnorm.ppf(u, low, high), rtol=0, atol=1e-12)


def test_far_in_a_tail_the_quantile_stays_inside_and_near_the_theory():
    """40 sds out Phi underflows; the tail's exponential form keeps the draws inside and their
    mean within 1e-3 sd of the truncated normal's (its error is of order 1 / b^3)."""
    u = (np.arange(4000) + 0.5) / 4000
    for low, high, sign in ((40.0, 41.0, 1), (-41.0, -40.0, -1)):
        x = truncated_normal_inverse(u, 0.0, 1.0, low, high)
        assert np.all((x >= low) & (x <= high)) and np.all(np.diff(x) >= 0)
        assert abs(x.mean() - stats.truncnorm.mean(low, high)) < 1e-3
        assert sign * x.mean() > 40.0
