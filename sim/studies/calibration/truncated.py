"""Parameter draws from the fit's Gaussian truncated to the parameters' ranges.

Every free parameter's prior is uniform over its range (a `[[calibrate]]` entry's `bounds`, an
`[[unknown]]`'s `range`: the unit box [1, 2]^p), so the posterior the linearised fit describes
is its Gaussian N(m, C) restricted to the box and renormalised: a truncated multivariate
normal.  A Gaussian point past a range's end is therefore not a draw at that end.  Cutting it
there (clipping) piles the whole tail beyond the end onto the end as a point mass -- half of
the draws when the fit sits at an unknown's end, as the cluster test's CPU demand does -- and
the parameters correlated with it keep the move that compensated the part cut off.

Method: rejection, which is exact (a Gaussian point conditioned on lying in the box is a draw
of the truncated Gaussian: Devroye 1986, *Non-Uniform Random Variate Generation*, II.3; the
naive acceptance-rejection of Botev 2017, J. R. Stat. Soc. B 79(1), 125-148, sec. 1).  The
Gaussian's points are the ones `linearise.draw_units` always made (scrambled Sobol' points
through the normal quantile and the Cholesky factor); those inside the box are kept in
sequence order, so draw m is the same point for any number of draws past m, and a point that
was inside the box before is drawn as before.  The cost is 1 / P(box) points a draw and no
simulation (the cluster test's posterior puts 37 % of its mass in the box).

At most BUDGET points are tried.  When fewer than the draws asked are inside (a box mass below
draws / BUDGET: about a dozen parameters with the fit at an end at once), the remaining draws
come from a Gibbs sampler (Geweke 1991, "Efficient simulation from the multivariate normal and
Student-t distributions subject to linear constraints", Computing Science and Statistics 23,
571-578): each coordinate in turn from its normal conditional on the others, truncated to its
range, by inversion (Robert 1995, "Simulation of truncated normal variables", Statistics and
Computing 5, 121-125), started from the draw's own Gaussian point cut into the box and run
SWEEPS sweeps with uniforms from numpy's generator seeded by (seed, draw).  The chain's law
tends to the truncated Gaussian; with a correlation rho between two coordinates the start is
forgotten as rho^(2 sweeps) (rho = 0.95: 1e-4 after 100).
"""

from __future__ import annotations

import math

import numpy as np

from sim.studies.calibration.sobol import normal_quantile, sobol_points

LOW, HIGH = 1.0, 2.0  # every parameter's range on its unit scale
BUDGET = 2**16  # Gaussian points tried at most before the Gibbs sampler takes the rest
SWEEPS = 200  # Gibbs sweeps per draw past the budget


def gaussian_points(mean: np.ndarray, cov: np.ndarray, count: int, seed: int | None) -> np.ndarray:
    """The first `count` points (count, p) of the Gaussian (mean, cov) from scrambled Sobol'
    points mapped through the normal quantile and the Cholesky factor (`scipy.stats.qmc.Sobol(p,
    scramble=True, seed=seed)`, `scipy.stats.norm.ppf`, computed without scipy.stats: `sobol`).
    A balanced Sobol' set has a power of two points: the first `count` of the next one."""
    dimension = len(mean)
    points = sobol_points(dimension, 2 ** max(1, math.ceil(math.log2(count))), seed)[:count]
    normal = normal_quantile(np.clip(points, 1e-9, 1 - 1e-9))
    factor = np.linalg.cholesky(np.asarray(cov) + 1e-15 * np.eye(dimension))
    return np.asarray(mean)[None, :] + normal @ factor.T


def truncated_gaussian(
    mean: np.ndarray, cov: np.ndarray, count: int, seed: int | None, budget: int = BUDGET
) -> np.ndarray:
    """`count` draws (count, p) of the Gaussian (mean, cov) truncated to [1, 2]^p: its points
    inside the box in sequence order, then, past `budget` points tried, Gibbs draws."""
    mean = np.asarray(mean, dtype=float)
    if count <= 0:
        return np.empty((0, len(mean)))
    # the points tried grow in balanced sets up to the budget, which is the same whatever
    # the count: past it, the kept points are those of the whole budget
    tried = min(2 ** max(1, math.ceil(math.log2(count))), budget)
    while True:
        points = gaussian_points(mean, cov, tried, seed)
        inside = points[np.all((points >= LOW) & (points <= HIGH), axis=1)]
        if len(inside) >= count or tried >= budget:
            break
        tried = min(tried * 2, budget)
    if len(inside) >= count:
        return inside[:count]
    # the draws past the kept points start from the Gaussian's next points, so draw m stays
    # the same whatever the count
    missing = count - len(inside)
    starts = np.clip(gaussian_points(mean, cov, tried + missing, seed)[tried:], LOW, HIGH)
    chained = gibbs(mean, cov, starts, seed, first=len(inside))
    return np.vstack([inside, chained])


def gibbs(
    mean: np.ndarray, cov: np.ndarray, starts: np.ndarray, seed: int | None, first: int
) -> np.ndarray:
    """SWEEPS Gibbs sweeps of the Gaussian truncated to the box from each of `starts` (inside
    the box), draw k's uniforms from `numpy.random.default_rng((seed, first + k))`.  A
    coordinate's conditional is normal with sd 1 / sqrt(Q_jj) and mean
    m_j - sum_{i != j} Q_ji (x_i - m_i) / Q_jj, Q the precision C^-1."""
    dimension = len(mean)
    precision = np.linalg.inv(np.asarray(cov) + 1e-15 * np.eye(dimension))
    diagonal = np.diag(precision)
    uniforms = np.stack(
        [
            np.random.default_rng(None if seed is None else (seed, first + k)).random(
                (SWEEPS, dimension)
            )
            for k in range(len(starts))
        ]
    )
    x = np.array(starts, dtype=float)
    for sweep in range(SWEEPS):
        for j in range(dimension):
            centred = x - mean[None, :]
            centred[:, j] = 0.0
            centre = mean[j] - centred @ precision[j] / diagonal[j]
            x[:, j] = truncated_normal_inverse(
                uniforms[:, sweep, j], centre, 1.0 / math.sqrt(diagonal[j]), LOW, HIGH
            )
    return x


def truncated_normal_inverse(
    u: np.ndarray, centre: np.ndarray | float, sd: float, low: float, high: float
) -> np.ndarray:
    """The quantile at `u` of the normal (centre, sd) truncated to [low, high]:
    centre + sd * Phi^-1(Phi(a) + u (Phi(b) - Phi(a))), a and b the ends in sds (increasing in
    u).  An interval in the upper tail is mirrored into the lower one (u into 1 - u), where Phi
    keeps its relative precision; one so far out that Phi(b) underflows (b < -37) takes the
    tail's exponential form there, density proportional to exp(|b| (z - b)) on [a, b] (Robert
    1995, sec. 2: the normal's tail past b is within a factor 1 + 1/b^2 of it)."""
    from scipy.special import ndtr, ndtri

    u = np.asarray(u, dtype=float)
    a = (low - np.asarray(centre, dtype=float)) / sd
    b = (high - np.asarray(centre, dtype=float)) / sd
    a, b = np.broadcast_arrays(a, b)
    mirrored = a > 0
    lower = np.where(mirrored, -b, a)
    upper = np.where(mirrored, -a, b)
    v = np.where(mirrored, 1.0 - u, u)
    p_lower, p_upper = ndtr(lower), ndtr(upper)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = ndtri(p_lower + v * (p_upper - p_lower))
        rate = np.abs(upper)
        tail = upper + np.log1p(-(1.0 - v) * -np.expm1(-rate * (upper - lower))) / rate
    z = np.where(p_upper > 1e-300, z, tail)
    z = np.clip(z, lower, upper)  # rounding only: the quantile lies in [lower, upper]
    return np.asarray(centre) + sd * np.where(mirrored, -z, z)
