"""What one more measurement would leave of a capacity range: a preposterior, linear-Gaussian
update over the calibration's draws.

At M parameter draws the capacity search gave answers c_i; at the same draws (the same
parameter vectors and seeds) the model gives the figure y_i a planner could measure (the
throughput at 80 users on two nodes, the lock's wait at the heaviest level: PostgreSQL's
`pg_stat_statements.mean_exec_time` of the locking `UPDATE` less its own time).  If c and y
were jointly Gaussian, measuring y with an error of variance s² would leave c the posterior
variance

    Var(c | y) = Var(c) - Cov(c, y)² / (Var(y) + s²) = Var(c) (1 - ρ² k),  k = Var(y) / (Var(y) + s²)

whatever value y turns out to have: that is the expected width after the measurement, before
anyone runs it.  The range's width today scales by sqrt(1 - ρ² k): the same quantile level,
scaled from the sd.  Var(y) is the draws' spread including each draw's own simulation noise,
which only makes k, and so the gain, smaller.

With the 8-16 draws a capacity range is usually made of, the sample correlation r is rough
(its sd near zero is about 1 / sqrt(M - 1)) and r² is biased upwards: ρ² is the adjusted
r² = 1 - (1 - r²)(M - 1)/(M - 2) (Ezekiel's shrinkage, never below zero), and ρ's 90 %
interval is Fisher's z ± 1.645 / sqrt(M - 3).  A measurement is said to narrow the range only
when that interval excludes zero; otherwise the draws cannot tell it from an unrelated figure,
its expected width is today's, and the width its interval allows is shown beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

LEVEL = 0.90
# Fisher's z needs M - 3 > 0; with fewer draws no interval, so no claim
FEWEST_PAIRS = 4
SAME_ANSWER = "every draw gives the same answer: there is no range to narrow"
# |r| is kept below 1 so that a figure exactly linear in the answer has a finite z
_R_CAP = 1.0 - 1e-12


@dataclass(frozen=True)
class Update:
    """The expected effect of one measurement on the capacity's sd: `ratio` = sd after / sd
    today (1: no narrowing claimed), with its 90 % interval over the correlation's own
    uncertainty (`ratio_low` at the strongest correlation the draws allow, `ratio_high` at the
    weakest)."""

    pairs: int
    correlation: float  # the draws' r of (c, y); nan when either does not vary
    correlation_low: float  # its 90 % interval (Fisher's z); nan with too few pairs
    correlation_high: float
    explained: float  # the shrunk ρ² used for the estimate
    resolved: float  # k = Var(y) / (Var(y) + s²): the share of y's spread a measurement sees
    ratio: float
    ratio_low: float
    ratio_high: float
    tells: bool  # the draws tell the figure's correlation with the answer from zero
    why_not: str = ""  # when it does not: too few pairs, an answer or figure that never varies

    @property
    def verdict(self) -> str:
        """For the table: how much narrower the range is expected to be, or why no narrowing is
        claimed (a figure the draws tell apart may still buy nothing when its measurement's
        error is larger than its spread over the draws: "0 % narrower")."""
        if self.tells:
            return f"{1 - self.ratio:.0%} narrower"
        if self.pairs < FEWEST_PAIRS:
            return "too few draws"
        if math.isfinite(self.correlation):
            return "cannot tell"
        return "same answer" if self.why_not == SAME_ANSWER else "figure constant"

    def as_dict(self) -> dict:
        return {
            "pairs": self.pairs,
            "correlation": self.correlation,
            "correlation_interval": [self.correlation_low, self.correlation_high],
            "explained_share": self.explained,
            "resolved_share": self.resolved,
            "sd_ratio": self.ratio,
            "expected_narrowing": 1 - self.ratio,
            "sd_ratio_interval": [self.ratio_low, self.ratio_high],
            "narrows": self.tells,
            "why_not": self.why_not,
        }


def expected_update(answers: np.ndarray, figures: np.ndarray, noise_sd: float) -> Update:
    """The update of the answers' sd by measuring the figure with an error of sd `noise_sd`
    (the model's error on the figure and the measurement's own, in the figure's unit), from
    the pairs (answers[i], figures[i]) of the same draws."""
    c = np.asarray(answers, dtype=float)
    y = np.asarray(figures, dtype=float)
    n = len(c)
    if len(y) != n:
        raise ValueError(
            f"{n} answers against {len(y)} figures: the pairs must be of the same draws"
        )
    var_c = float(np.var(c, ddof=1)) if n > 1 else 0.0
    var_y = float(np.var(y, ddof=1)) if n > 1 else 0.0
    resolved = var_y / (var_y + noise_sd**2) if var_y > 0 else 0.0
    if n < FEWEST_PAIRS:
        return _no_claim(n, math.nan, resolved, f"{n} draws: too few to tell a correlation")
    if var_c == 0:
        return _no_claim(n, math.nan, resolved, SAME_ANSWER)
    if var_y == 0:
        return _no_claim(n, math.nan, resolved, "the figure is the same at every draw")
    r = float(np.clip(np.corrcoef(c, y)[0, 1], -_R_CAP, _R_CAP))
    half = stats.norm.ppf(0.5 + LEVEL / 2) / math.sqrt(n - 3)
    low, high = math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)
    strongest = max(low**2, high**2)
    weakest = 0.0 if low <= 0 <= high else min(low**2, high**2)
    explained = max(0.0, 1.0 - (1.0 - r**2) * (n - 1) / (n - 2))
    tells = not (low <= 0 <= high)
    ratio_low = _ratio(strongest, resolved)
    ratio_high = _ratio(weakest, resolved)
    ratio = min(max(_ratio(explained, resolved), ratio_low), ratio_high) if tells else 1.0
    return Update(
        pairs=n,
        correlation=r,
        correlation_low=low,
        correlation_high=high,
        explained=explained if tells else 0.0,
        resolved=resolved,
        ratio=ratio,
        ratio_low=ratio_low,
        ratio_high=ratio_high,
        tells=tells,
        why_not="" if tells else "the draws cannot tell its correlation with the answer from zero",
    )


def _ratio(explained: float, resolved: float) -> float:
    """sd after / sd before: sqrt(1 - ρ² k)."""
    return math.sqrt(max(0.0, 1.0 - explained * resolved))


def _no_claim(n: int, r: float, resolved: float, why: str) -> Update:
    return Update(n, r, math.nan, math.nan, 0.0, resolved, 1.0, 1.0, 1.0, False, why)
