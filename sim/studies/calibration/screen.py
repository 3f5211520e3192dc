"""Conditioned draws screened by their misfit on the fitted figures: a draw the fitted levels
rule out is replaced by the next draw of the sequence, and counted.

A conditioned draw (`conditioned`) keeps its unknowns as the Gaussian drew them.  Where the
figures are not linear in an unknown beyond what the linearisation saw, no values of the
calibrated parameters bring the draw to the fitted levels (on `cluster-db` one draw stayed 4.68
of a figure's sds away, and alone set the one-node capacity's low end).  Such a draw is not a
draw of the posterior, and counting it as one lets a value the data reject set a range's end.

The test: the draw's realised discrepancy on the n fitted figures, X^2 = sum_i (r_i / s_i)^2
(r_i its relative residual against the published figure, s_i the figure's sd: measurement,
simulation noise and the fit's model error, as the fit weighs it).  Under the model, for a
pair (data, parameters) from their joint law -- which is the law of the data with a draw of
their posterior -- r_i / s_i are independent standard normals, so X^2 is chi-square with n
degrees of freedom *exactly* (Gelman, Meng & Stern 1996, "Posterior predictive assessment of
model fitness via realized discrepancies", Statistica Sinica 6, 733-807, sec. 2.3: the
realised chi-square discrepancy).  A draw with X^2 past the chi-square's LEVEL quantile is
screened: the fitted figures reject it at 1 - LEVEL.  LEVEL is the convention of a test at
1 %, not a value chosen for any result.

What the screen costs a right draw: given the data, a draw of a linear-Gaussian posterior has
X^2 = X^2_min + chi-square(p) (X^2_min the fit's own misfit, p the parameters the figures
pin; the fit's model error is estimated so that X^2_min is n - p), so it is screened with
probability 1 - F_p(q - X^2_min), q the limit: 0.2 % with n = 6 figures and p = 2, and the
kept draws are the Gaussian cut to the ellipsoid inside it, whose covariance is the
Gaussian's times F_{p+2}(c) / F_p(c), c = q - X^2_min (a 1 % narrowing there).  Importance
weights (the true likelihood over the draw's proposal density) would be exact instead, but
the conditioned draws' proposal density is the Gaussian's over the Jacobian determinant of the
conditioning map (randomise-then-optimise: Bardsley, Solonen, Haario & Laine 2014, SIAM J.
Sci. Comput. 36(4), A1895-A1910), p more simulations a draw through the noise of finite
differences, and a weighted 5-95 % quantile of 8 draws rests on one or two of them; the
screen needs only the simulation the conditioning already made.

Deterministic: the Gaussian's points are a fixed sequence for a seed (`truncated`), draw m the
same point whatever the count; a screened draw's place goes to the next points in sequence
order, so the kept draws are the sequence's first `count` that pass, and a run with fewer
draws keeps a prefix of them.  At most TRIED times the draws asked are conditioned: when the
screen rejects more than that leaves (the fit itself, not a draw, is then at odds with its
figures), the places left are filled by the screened draws with the least misfit, and said.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sim.studies.calibration.conditioned import Conditioned, condition
from sim.studies.calibration.linear import Problem

LEVEL = 0.99  # a screened draw's misfit is past this quantile of chi-square(figures)
TRIED = 4  # draws conditioned at most, per draw asked


def misfit_limit(figures: int, level: float = LEVEL) -> float:
    """The `level` quantile of the chi-square with `figures` degrees of freedom."""
    from scipy.special import chdtri

    return float(chdtri(figures, 1.0 - level))


@dataclass(frozen=True)
class Screened:
    conditioned: Conditioned  # the kept draws, in sequence order
    sequence: np.ndarray  # (draws,) each kept draw's place in the Gaussian's sequence
    screened: int  # draws of the sequence screened ahead of the last kept one
    refilled: int  # kept draws past the limit, for want of others within TRIED
    figures: int  # the degrees of freedom: fitted figures
    limit: float  # the LEVEL quantile of chi-square(figures)

    @property
    def units(self) -> np.ndarray:
        return self.conditioned.units

    def as_dict(self) -> dict:
        return {
            **self.conditioned.as_dict(),
            "sequence": [int(x) for x in self.sequence],
            "screened": self.screened,
            "screened_kept": self.refilled,
            "screen": {
                "statistic": "sum of the fitted figures' squared residuals in their sds",
                "degrees_of_freedom": self.figures,
                "level": LEVEL,
                "limit": self.limit,
            },
        }

    def sentence(self) -> str:
        """What the screen did, for `calibrate`'s output."""
        if self.screened == 0:
            return f"no conditioned draw past the fitted figures' {LEVEL:.0%} chi-square"
        text = (
            f"{self.screened} conditioned draw{'s' if self.screened != 1 else ''} screened "
            f"(misfit on the {self.figures} fitted figures past chi-square's {LEVEL:.0%} "
            f"quantile, {self.limit:.3g}), each replaced by the next of the sequence"
        )
        if self.refilled:
            text += f"; {self.refilled} kept past it for want of others"
        return text


def screened_draws(
    problem: Problem,
    rows: list[int],
    calibrated: list[bool],
    draw: Callable[[int], np.ndarray],
    count: int,
    simulate: Callable[[np.ndarray], np.ndarray],
    discrepancy: float = 0.0,
) -> Screened:
    """`count` conditioned draws whose misfit on the fitted figures `rows` is within the limit:
    `draw(n)` gives the Gaussian's first n points (unit scale, a prefix of any longer call);
    the rest as `conditioned.condition`."""
    rows = list(rows)
    limit = misfit_limit(len(rows))
    parts: list[Conditioned] = []
    places: list[np.ndarray] = []
    tried = 0
    kept = 0
    while kept < count and tried < TRIED * count:
        # the next points of the sequence, as many as places are still open
        fresh = min(count - kept, TRIED * count - tried)
        raw = draw(tried + fresh)[tried:]
        found = condition(problem, rows, calibrated, raw, simulate, discrepancy)
        parts.append(found)
        places.append(np.arange(tried, tried + fresh))
        tried += fresh
        kept += int(np.sum(_passes(found, limit)))
    units = np.vstack([p.units for p in parts])
    misfit = np.concatenate([p.misfit_sd for p in parts])
    chi2 = np.concatenate([_chi2(p) for p in parts])
    place = np.concatenate(places)
    passing = chi2 <= limit
    chosen = np.flatnonzero(passing)[:count]
    refilled = 0
    if len(chosen) < count:
        # the fit rejects most of its own draws: keep the least misfitting of the rest
        rest = np.flatnonzero(~passing)
        extra = rest[np.argsort(chi2[rest], kind="stable")][: count - len(chosen)]
        refilled = len(extra)
        chosen = np.sort(np.concatenate([chosen, extra]))
    last = int(place[chosen[-1]]) if len(chosen) else -1
    screened = int(np.sum(~passing & (place <= last))) - refilled
    return Screened(
        Conditioned(units[chosen], misfit[chosen], int(np.sum(misfit[chosen] > 1.0)), chi2[chosen]),
        place[chosen],
        screened,
        refilled,
        len(rows),
        limit,
    )


def _chi2(found: Conditioned) -> np.ndarray:
    # a draw `condition` left as it was (no calibrated parameter, no fitted figure) has no misfit
    if found.misfit_chi2 is None:
        return np.zeros(len(found.units))
    return found.misfit_chi2


def _passes(found: Conditioned, limit: float) -> np.ndarray:
    return _chi2(found) <= limit
