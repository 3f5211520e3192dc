"""Conditioned draws screened by their misfit on the fitted figures
(sim.studies.calibration.screen): checked on toy problems whose figures are given in closed
form, against the law the screen's draws must follow."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sim.studies.calibration.conditioned import condition
from sim.studies.calibration.linear import UNIFORM_SD, Problem
from sim.studies.calibration.screen import LEVEL, misfit_limit, screened_draws
from sim.studies.calibration.truncated import truncated_gaussian

SD = 0.01  # every figure's relative sd
SEED = 11
# the toy linear model: six figures, an [[unknown]] (column 0) and a [[calibrate]] (column 1)
JACOBIAN = np.array([[0.5, 0.2], [0.1, 0.6], [-0.3, 0.4], [0.2, -0.1], [0.4, 0.4], [0.0, 0.3]])
CENTRE = np.array([1.5, 1.5])


def _linear(misfit_at_fit: float) -> tuple[Problem, np.ndarray, np.ndarray]:
    """The linear-Gaussian problem r(u) = r0 + J (u - u0) with a flat prior: its posterior is
    exactly N(u0, (J' W J)^-1) (its sd about 0.01 on a range of 1, so the range's ends hold no
    mass), and r0 is orthogonal to J's columns with sum (r0 / sd)^2 = `misfit_at_fit`: a draw's
    misfit is misfit_at_fit + chi-square(2)."""
    rng = np.random.default_rng(3)
    direction = rng.normal(size=len(JACOBIAN))
    q, _ = np.linalg.qr(JACOBIAN)
    direction -= q @ (q.T @ direction)
    r0 = direction / np.linalg.norm(direction) * SD * np.sqrt(misfit_at_fit)
    problem = Problem(
        u0=CENTRE,
        residuals=r0,
        jacobian=JACOBIAN,
        sigma=np.full(len(JACOBIAN), SD),
        prior_mean=CENTRE,
        prior_sd=np.full(2, 1e6),
    )
    precision = JACOBIAN.T @ JACOBIAN / SD**2
    return problem, np.linalg.inv(precision), precision


def _run(problem: Problem, cov: np.ndarray, count: int, seed: int = SEED):
    rows = list(range(len(problem.residuals)))

    def simulate(points: np.ndarray) -> np.ndarray:
        return problem.residuals[None, :] + (points - problem.u0[None, :]) @ problem.jacobian.T

    def draw(n: int) -> np.ndarray:
        return truncated_gaussian(problem.u0, cov, n, seed)

    return screened_draws(problem, rows, [False, True], draw, count, simulate)


@pytest.mark.parametrize("misfit_at_fit", [4.0, 10.0])
def test_the_kept_draws_are_the_posterior_inside_the_screens_ellipsoid(misfit_at_fit):
    """Linear figures: conditioning leaves every draw where it is, and its misfit is
    misfit_at_fit + chi-square(2) (the Mahalanobis distance m of the draw from the fit).  The
    screen keeps m <= c = limit - misfit_at_fit: the posterior N(u0, C) cut to that ellipsoid,
    whose mean is u0 and whose E[m] is 2 F_4(c) / F_2(c) (the chi-square's truncated mean);
    it screens a draw with probability 1 - F_2(c).  At the fit's usual misfit (figures minus
    parameters, 4, which the fit's model error is estimated to make it) that costs a right
    draw 0.2 % and the kept draws' E[m] 1 %: they are the posterior's moments within the
    interval.  At 10 the screen bites (3 %, E[m] -12 %), and exactly as computed."""
    problem, cov, precision = _linear(misfit_at_fit)
    count = 2048
    found = _run(problem, cov, count)
    limit = misfit_limit(len(JACOBIAN))
    assert limit == pytest.approx(stats.chi2.ppf(LEVEL, len(JACOBIAN)))
    c = limit - misfit_at_fit
    kept_share = stats.chi2.cdf(c, 2)
    truncated_mean = 2 * stats.chi2.cdf(c, 4) / kept_share

    units = found.units
    assert len(units) == count and found.refilled == 0
    assert np.all(found.conditioned.misfit_chi2 <= limit)
    delta = units - CENTRE[None, :]
    distance = np.einsum("ij,jk,ik->i", delta, precision, delta)
    assert np.allclose(found.conditioned.misfit_chi2, misfit_at_fit + distance, atol=1e-6)
    # the kept m has variance at most chi-square(2)'s, 4: a 4-sd interval of its mean
    half = 4 * np.sqrt(4 / count)
    assert abs(distance.mean() - truncated_mean) < half, (distance.mean(), truncated_mean)
    # the sample mean's Mahalanobis distance from u0, times the count, is at most chi-square(2)
    mean = delta.mean(axis=0)
    assert count * mean @ precision @ mean < stats.chi2.ppf(0.999, 2)
    # the screened share of the draws tried, inside the binomial's 99.9 % interval
    tried = count + found.screened
    low, high = stats.binom.interval(0.999, tried, 1 - kept_share)
    assert low <= found.screened <= high, (found.screened, tried, 1 - kept_share)
    if misfit_at_fit == 4.0:
        assert abs(distance.mean() - 2.0) < half  # the exact posterior's E[m]
    else:
        assert abs(distance.mean() - 2.0) > half  # the cut the theory computes, not noise


def _ruled_out():
    """An unknown (column 0) the figures hardly pin, a calibrated parameter (column 1) the first
    two figures pin with it, and a third figure that at the fit does not move with the unknown
    (the linearisation's Jacobian there is 0) but grows as (u - 1.6)^2 past 1.6 on its unit
    scale: the draws high in the unknown no value of the calibrated parameter can bring back."""
    jacobian = np.array([[0.02, 0.05], [0.0, 0.05], [0.0, 0.0]])
    problem = Problem(
        u0=CENTRE,
        residuals=np.zeros(3),
        jacobian=jacobian,
        sigma=np.full(3, SD),
        prior_mean=CENTRE,
        prior_sd=np.full(2, UNIFORM_SD),
    )
    precision = (jacobian.T @ jacobian) / SD**2 + np.eye(2) / UNIFORM_SD**2
    cov = np.linalg.inv(precision)

    def simulate(points: np.ndarray) -> np.ndarray:
        linear = (points - CENTRE[None, :]) @ jacobian.T
        linear[:, 2] += 2.0 * np.maximum(points[:, 0] - 1.6, 0.0) ** 2
        return linear

    def draw(n: int) -> np.ndarray:
        return truncated_gaussian(CENTRE, cov, n, SEED)

    return problem, simulate, draw


def test_a_draw_the_figures_rule_out_is_replaced_by_the_next_of_the_sequence():
    problem, simulate, draw = _ruled_out()
    rows, kinds = [0, 1, 2], [False, True]
    found = screened_draws(problem, rows, kinds, draw, 16, simulate)
    # the sequence conditioned one by one, without the screen
    alone = condition(problem, rows, kinds, draw(64), simulate)
    limit = misfit_limit(3)
    passing = np.flatnonzero(alone.misfit_chi2 <= limit)
    assert len(alone.units) - len(passing) >= 1  # the toy has draws to screen
    assert np.array_equal(found.sequence, passing[:16])
    assert np.allclose(found.units, alone.units[passing[:16]])
    assert found.screened == int(np.sum(alone.misfit_chi2[: passing[15] + 1] > limit)) >= 1
    assert found.refilled == 0
    # every kept draw is within the limit; a screened one is far past it (the unknown high)
    assert np.all(found.conditioned.misfit_chi2 <= limit)
    out = np.setdiff1d(np.arange(passing[15] + 1), passing)
    assert np.all(alone.units[out, 0] > 1.6)
    # deterministic for a seed, and a run with fewer draws keeps a prefix of them
    again = screened_draws(problem, rows, kinds, draw, 16, simulate)
    assert np.array_equal(again.units, found.units)
    fewer = screened_draws(problem, rows, kinds, draw, 8, simulate)
    assert np.array_equal(fewer.units, found.units[:8])
    assert np.array_equal(fewer.sequence, found.sequence[:8])
    document = found.as_dict()
    assert document["screened"] == found.screened
    assert document["screen"]["degrees_of_freedom"] == 3
    assert document["screen"]["limit"] == pytest.approx(stats.chi2.ppf(0.99, 3))
    assert f"{found.screened} conditioned draw" in found.sentence()


def test_a_fit_at_odds_with_its_own_figures_keeps_the_least_misfitting_and_says_so():
    """Every draw 20 sds off a figure: the screen cannot find draws within the limit in TRIED
    times the count, keeps the least misfitting of those tried, and counts them."""
    problem, simulate, draw = _ruled_out()

    def off(points: np.ndarray) -> np.ndarray:
        shifted = simulate(points)
        shifted[:, 1] += 20 * SD
        return shifted

    # the calibrated parameter cannot move the figure back: it is not in the fit's Jacobian
    blind = Problem(
        problem.u0,
        problem.residuals,
        np.array([[0.02, 0.05], [0.0, 0.0], [0.0, 0.0]]),
        problem.sigma,
        problem.prior_mean,
        problem.prior_sd,
    )
    found = screened_draws(blind, [0, 1, 2], [False, True], draw, 4, off)
    assert found.refilled == 4 and len(found.units) == 4
    assert np.all(found.conditioned.misfit_chi2 > misfit_limit(3))
    assert "kept past it for want of others" in found.sentence()
