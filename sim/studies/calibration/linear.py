"""The fit's uncertainty to first order (Gauss–Newton, i.e. a Laplace approximation).

Coordinates: every free parameter on its unit scale u in [1, 2] (log of the value when the
range is positive), every figure as its relative error r = (simulated - published) / published.
Around a point u0 the simulated figures are linear, r(u) = r0 + J (u - u0), with J from finite
differences under common random numbers.  Each figure has a relative standard deviation
`sigma` (its measurement error and the simulation's noise); each parameter a prior from its
declared range (a uniform over [1, 2] has sd 1/sqrt(12); its Gaussian stand-in keeps a
parameter no figure informs at the width of its range instead of at infinity).

`posterior(problem, rows)` is one Gauss–Newton step of the weighted least-squares fit on the
figures `rows` from u0 and the covariance of its result, (J' W J + prior precision)^-1.  When
the figures scatter around the fit by more than their sigma allows, the excess is a model
error (discrepancy) common to the experiment's figures, estimated as the sd `delta` that makes
the weighted residual sum equal its degrees of freedom (n minus the effective number of
parameters, the trace of the hat matrix) -- Birge's ratio made additive.  It widens both the
parameters' covariance and every prediction.  With no degrees of freedom left it cannot be
estimated and is reported as unknown (0 in the arithmetic, flagged).  A prediction's interval
is Student-t's on those degrees of freedom for the part of its variance the residuals
estimate (`estimated_sd`, `interval_factor`), also when the estimate is zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

UNIFORM_SD = 1.0 / math.sqrt(12.0)  # sd of a uniform over the unit range [1, 2]
# A direction the figures inform less than the declared range does is "not identified": its
# posterior sd stays above 1/sqrt(2) of its prior sd (a singular value of the prior-scaled,
# whitened Jacobian below 1).
IDENTIFIED_SINGULAR_VALUE = 1.0
# A parameter is "pinned" by the figures when its posterior sd is below half its prior sd.
PINNED_RATIO = 0.5


@dataclass(frozen=True)
class Problem:
    u0: np.ndarray  # (p,) the point of linearisation, unit scale
    residuals: np.ndarray  # (n,) relative errors at u0
    jacobian: np.ndarray  # (n, p) d residual / d u
    sigma: np.ndarray  # (n,) relative sd of each figure (measurement and simulation noise)
    prior_mean: np.ndarray  # (p,)
    prior_sd: np.ndarray  # (p,)


@dataclass(frozen=True)
class Posterior:
    mean: np.ndarray  # (p,) unit scale
    cov: np.ndarray  # (p, p)
    discrepancy: float  # relative model-error sd (0 when the residuals are within their noise)
    dof: float  # figures minus effective parameters
    discrepancy_known: bool  # False: no degrees of freedom to estimate it
    discrepancy_declared: bool = False  # not estimable: the experiment's declared value
    # the mean known variance (measurement and simulation noise) of the fitted figures: with
    # the model error it is the residuals' scale, which is what the figures estimate
    noise_var: float = 0.0

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))


def _solve_discrepancy(residuals: np.ndarray, variance: np.ndarray, dof: float) -> float:
    """The delta^2 >= 0 with sum r^2 / (variance + delta^2) = dof (0 if already below)."""

    def excess(d2: float) -> float:
        return float(np.sum(residuals**2 / (variance + d2))) - dof

    if excess(0.0) <= 0.0:
        return 0.0
    low, high = 0.0, float(np.max(residuals**2)) * len(residuals) + 1e-12
    for _ in range(80):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if excess(middle) > 0 else (low, middle)
    return 0.5 * (low + high)


def posterior(
    problem: Problem,
    rows: np.ndarray | list[int],
    estimate_discrepancy: bool = True,
    declared_discrepancy: float | None = None,
) -> Posterior:
    """The fit on figures `rows` (one Gauss–Newton step from u0, kept in [1, 2]).  When the
    figures leave no degrees of freedom to estimate the model error, `declared_discrepancy`
    (the experiment's `model_error`, known from elsewhere) stands in for it; else it is 0 and
    said to be unknown."""
    rows = np.asarray(rows, dtype=int)
    J, r = problem.jacobian[rows], problem.residuals[rows]
    variance = problem.sigma[rows] ** 2
    prior_precision = 1.0 / problem.prior_sd**2

    def step(delta2: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The Gauss-Newton step with model-error variance delta2: weights, covariance, mean."""
        weights = 1.0 / (variance + delta2)
        hessian = (J.T * weights) @ J + np.diag(prior_precision)
        gradient = J.T @ (weights * r) + prior_precision * (problem.u0 - problem.prior_mean)
        cov = np.linalg.inv(hessian)
        return weights, cov, np.clip(problem.u0 - cov @ gradient, 1.0, 2.0)

    delta2, known = 0.0, estimate_discrepancy
    for _ in range(50):
        weights, cov, mean = step(delta2)
        fitted = r + J @ (mean - problem.u0)
        dof = len(rows) - float(np.trace((J * weights[:, None]) @ cov @ J.T))
        if not estimate_discrepancy:
            break
        if dof < 0.5:
            known = False
            break
        new = _solve_discrepancy(fitted, variance, dof)
        if abs(new - delta2) <= 1e-6 * max(new, 1e-12):
            delta2 = new
            break
        delta2 = new
    declared = False
    if estimate_discrepancy and not known and declared_discrepancy is not None:
        delta2, declared = declared_discrepancy**2, True
        _, _, mean = step(delta2)
    _, cov, _ = step(delta2)
    return Posterior(mean, cov, math.sqrt(delta2), dof, known, declared, float(np.mean(variance)))


def cooks_distance(full: Posterior, fold: Posterior) -> float:
    """How far leaving one figure out moves the fit, in the fit's own uncertainty: Cook's
    distance (Cook 1977), (u_fold - u_full)' C_full^-1 (u_fold - u_full) / p.  Above 1 the
    fold's estimate lies outside the full fit's 50 % region: the figure pulls the fit hard,
    so its one-step fold extrapolates furthest from the linearisation and is the one to
    check with a whole refit."""
    step = fold.mean - full.mean
    return float(step @ np.linalg.solve(full.cov, step)) / len(step)


def model_error_dof(post: Posterior) -> float | None:
    """The degrees of freedom the model error was estimated from; None when it is taken as
    known (declared, or not estimable).  An estimate of zero (the residuals within their
    noise) keeps its degrees of freedom: from a few figures, zero is an estimate, not a
    fact -- random-effects meta-analysis makes the same point (Higgins, Thompson &
    Spiegelhalter 2009, the prediction interval on t whatever the estimated spread)."""
    if not post.discrepancy_known or post.discrepancy_declared or not post.dof > 0.0:
        return None
    return post.dof


def model_error_quantile(probability: float, dof: float | None) -> float:
    """A quantile of the model error in units of its sd: Student-t on the degrees of freedom
    it was estimated from (the textbook prediction of a regression whose variance is
    estimated), normal when it is known.  scipy.stats' `norm.ppf` and `t.ppf`, bit for bit,
    from scipy.special (`scipy.stats.t._ppf` is `stdtrit`, scaled by 1 and shifted by 0):
    importing scipy.stats costs 1.5-2.5 s of CPU."""
    from sim.studies.calibration.sobol import normal_quantile

    if dof is None:
        return float(normal_quantile(probability))
    if 0.0 < probability < 1.0 and dof > 0.0:
        from scipy.special import stdtrit

        return float(stdtrit(dof, probability) * 1.0 + 0.0)
    from scipy import stats

    return float(stats.t.ppf(probability, dof))


def estimated_sd(parameter_var: float, model_sd: float, noise_sd: float) -> float:
    """The part of a prediction's relative sd that the figures' residuals estimate: the model
    error `model_sd`, the fitted figures' known noise `noise_sd` it was separated from (its
    estimate is as uncertain as their whole scale), and the parameters' variance (weighted by
    that scale)."""
    return math.sqrt(max(parameter_var, 0.0) + model_sd**2 + noise_sd**2)


def interval_factor(total_sd: float, estimated: float, dof: float | None, level: float) -> float:
    """The multiple of a prediction's total relative sd that spans its central `level`
    interval, when the `estimated` part of that sd comes from residuals with `dof` degrees of
    freedom: Welch–Satterthwaite's dof * (total variance / estimated variance)^2.  In the
    textbook regression (all of it estimated) that is `dof` itself, Student-t's prediction
    interval; a large known part (a noisy figure) brings it towards the normal; a figure
    less noisy than the fitted ones, below `dof` -- never below one, Cauchy's tail."""
    if dof is not None and estimated > 0.0:
        dof = max(dof * (total_sd**2 / estimated**2) ** 2, 1.0)
    return model_error_quantile(0.5 + level / 2, dof)


def predict(problem: Problem, post: Posterior, index: int) -> tuple[float, float]:
    """Figure `index` at the posterior: its relative error and the variance of it that comes
    from the parameters (J C J')."""
    row = problem.jacobian[index]
    mean = float(problem.residuals[index] + row @ (post.mean - problem.u0))
    return mean, float(row @ post.cov @ row)


def first_order_shares(problem: Problem, post: Posterior, index: int) -> np.ndarray:
    """Variance-based first-order index of each parameter for figure `index` under the linear
    Gaussian posterior: Var(E[y | u_j]) / Var(y) = Cov(y, u_j)^2 / (Var u_j Var y), the share
    of the parameter-driven variance that knowing u_j exactly would remove."""
    row = problem.jacobian[index]
    covariance = post.cov @ row
    total = float(row @ covariance)
    if total <= 0.0:
        return np.zeros_like(row)
    return covariance**2 / (np.diag(post.cov) * total)


@dataclass(frozen=True)
class Direction:
    singular_value: float  # 1 = the figures inform it as much as its declared range does
    weights: dict[int, float]  # parameter index -> component of the direction (|w| >= 0.3)


def unidentified(problem: Problem, rows: np.ndarray | list[int]) -> list[Direction]:
    """Combinations of parameters the figures `rows` do not pin: right singular vectors of the
    whitened Jacobian in prior-sd units whose singular value is below 1."""
    rows = np.asarray(rows, dtype=int)
    scaled = problem.jacobian[rows] / problem.sigma[rows, None] * problem.prior_sd[None, :]
    _, values, vectors = np.linalg.svd(scaled, full_matrices=True)
    values = np.concatenate([values, np.zeros(vectors.shape[0] - len(values))])
    out = []
    for value, vector in zip(values, vectors):
        if value < IDENTIFIED_SINGULAR_VALUE:
            vector = vector * np.sign(vector[np.argmax(np.abs(vector))])
            out.append(
                Direction(
                    float(value),
                    {j: float(w) for j, w in enumerate(vector) if abs(w) >= 0.3},
                )
            )
    return out


def describe(direction: Direction, names: list[str]) -> str:
    """A direction in plain words."""
    parts = sorted(direction.weights.items(), key=lambda kv: -abs(kv[1]))
    if len(parts) == 1:
        return f"the figures do not determine {names[parts[0][0]]}"
    up = [names[j] for j, w in parts if w > 0]
    down = [names[j] for j, w in parts if w < 0]
    if up and down:
        return (
            f"the figures fix only a combination: raising {' and '.join(up)} while lowering "
            f"{' and '.join(down)} (each in proportion to its range) leaves them unchanged"
        )
    return (
        f"the figures do not determine {' and '.join(up)} together: raising them all (each in "
        "proportion to its range) leaves them unchanged"
    )
