"""Parameter draws conditioned on the fitted figures: each draw's `[[calibrate]]` parameters
moved until its simulated fitted figures are where the fit's Gaussian places them.

The draws of `run/capacity --calibration` and of `calibrate`'s sampled intervals come from the
fit's Gaussian (`linear.posterior`): the fit linearised at its point on each parameter's unit
scale.  Along a combination the fitted figures pin -- a CPU demand and a wait's fixed offset
that make one light response between them -- it moves the calibrated parameter in proportion
to the unknown's draw.  Where the figures are not linear on the unit scale, that proportion
misses, and always on the same side:

* an unknown on a log scale (a CPU per request carried over five times its low end) grows by
  more than the linear step for a draw above the fit and falls by less for one below, while
  the offset that makes up the rest moves by the linear step: the light response of every such
  draw is longer than the fit's;
* a draw past a range's end cut to the end (the model cannot run a value outside it) keeps,
  in its correlated partners, the move that compensated the part cut off: with the fit at an
  unknown's low end, half of the draws had that unknown at the end and a longer wait than the
  fitted levels allow.  The draws are now the Gaussian's truncated to the ranges
  (`truncated`), never a point at an end, so this is left to the first.

Such draws are inconsistent with the very levels fitted (a light response several of its
standard deviations long), and their saturated throughput is lower than the fit's: the
interval reaches far below the fit and barely above it.

Here each draw is conditioned on its unknowns: they stay as drawn (within their ranges), and
its calibrated parameters take Gauss-Newton steps (the linearisation's Jacobian in their
columns, the fitted figures' weights) until the draw's simulated fitted figures are at
r0 + J (u - u0) -- where the Gaussian places them for its own draw u, a draw of the Gaussian
truncated to the ranges (the posterior under the ranges' uniform priors).  A step is kept
within the calibrated parameter's search range (a bound on the steps, not on a draw).  A draw
keeps the posterior's spread of the fitted figures and of every parameter the figures do not
pin, and loses only the linearisation's error.  The runs have the fit's own
seeds (common random numbers, as the Jacobian's), so a step's effect is not sampling noise.

A draw that no values of the calibrated parameters bring there (an unknown whose value the
fitted levels rule out where the linearisation could not see it) keeps its last values and is
counted in `not_met`, with how far it stayed; its misfit on the fitted figures at those values
(`misfit_chi2`: the sum of the squared residuals in their sds) is what `screen` judges it by.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sim.studies.calibration.linear import Problem

# Gauss-Newton steps at most per draw; a draw within MET of its target in every fitted figure
# (in the figure's own sds: measurement, simulation noise and model error) takes no more
STEPS = 3
MET = 0.5
# the number of conditioned draws `calibrate` keeps at least: `run --calibration`'s default
# draws (16) and `capacity`'s (8) are its first points
KEPT = 16


@dataclass(frozen=True)
class Conditioned:
    units: np.ndarray  # (draws, p) unit scale, within [1, 2]
    misfit_sd: np.ndarray  # (draws,) the largest distance of a fitted figure from its target
    not_met: int  # draws left more than one sd from their targets after STEPS steps
    # (draws,) the sum over the fitted figures of (residual / sd)^2 at the draw's last values:
    # its residuals against the published figures, not against its target
    misfit_chi2: np.ndarray | None = None

    def as_dict(self) -> dict:
        return {
            "draws": [[float(x) for x in row] for row in self.units],
            "misfit_sd": [float(x) for x in self.misfit_sd],
            "not_met": self.not_met,
            "misfit_chi2": [] if self.misfit_chi2 is None else [float(x) for x in self.misfit_chi2],
        }


def condition(
    problem: Problem,
    rows: list[int],
    calibrated: list[bool],
    raw: np.ndarray,
    simulate: Callable[[np.ndarray], np.ndarray],
    discrepancy: float = 0.0,
) -> Conditioned:
    """The draws `raw` (unit scale, inside the ranges: `truncated`) conditioned on their
    unknowns: `calibrated[j]` marks the parameters that move; `simulate(points)` gives the
    relative errors of the fitted figures `rows` at points within [1, 2] (one row per point,
    with the fit's seeds); `discrepancy` is the fit's model-error sd."""
    raw = np.asarray(raw, dtype=float)
    moved = np.flatnonzero(np.asarray(calibrated, dtype=bool))
    rows = list(rows)
    sd = np.sqrt(problem.sigma[rows] ** 2 + discrepancy**2)
    target = (
        problem.residuals[rows][None, :] + (raw - problem.u0[None, :]) @ problem.jacobian[rows].T
    )
    current = raw.copy()
    misfit = np.full(len(raw), np.inf)
    chi2 = np.full(len(raw), np.inf)
    if len(moved) == 0 or not rows or len(raw) == 0:
        return Conditioned(current, np.zeros(len(raw)), 0)
    weights = 1.0 / sd**2
    columns = problem.jacobian[rows][:, moved]
    # the calibrated parameters' own prior, as the fit's, keeps a step bounded where the
    # figures hardly move a parameter
    hessian = (columns.T * weights) @ columns + np.diag(1.0 / problem.prior_sd[moved] ** 2)
    open_ = np.arange(len(raw))
    for step in range(STEPS + 1):
        residual = np.asarray(simulate(current[open_]), dtype=float)
        deviation = residual - target[open_]
        misfit[open_] = np.max(np.abs(deviation) / sd[None, :], axis=1)
        chi2[open_] = np.sum((residual / sd[None, :]) ** 2, axis=1)
        if step == STEPS:
            break
        going = misfit[open_] > MET
        if not np.any(going):
            break
        open_, deviation = open_[going], deviation[going]
        change = -np.linalg.solve(hessian, columns.T @ (weights[:, None] * deviation.T)).T
        # a calibrated parameter stays within its search range: a step past its end stops there
        current[np.ix_(open_, moved)] = np.clip(current[np.ix_(open_, moved)] + change, 1.0, 2.0)
    return Conditioned(current, misfit, int(np.sum(misfit > 1.0)), chi2)
