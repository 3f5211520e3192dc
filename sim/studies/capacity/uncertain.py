"""A capacity answer as a range: the search repeated at parameter draws from a calibration.

`tiersim capacity ... --calibration FILE --draws M`: the search runs at the fitted values (the
answer as before), then once at each of M parameter points drawn from the fit's Gaussian
(scrambled Sobol, each with its own seed).  The 5-95 % quantiles of the M answers are the
90 % range ("320-350 users meet p95 < 1 s with 90 % confidence"): it holds the parameters'
uncertainty, the simulation noise of each search's decisions, the `[[choose]]` candidates the
figures left open (the draws shared by their weights) and the calibration's model error: a
relative error e of every figure, drawn with each point (stratified), moves what the model must
predict for the real stack to meet the SLO, so the draw's search asks `p95 < 0.3 / (1 + e)` of
the model where the SLO asks `p95 < 0.3` of the stack.

The draws are the calibration's own, conditioned on the fitted figures; when its draws were
screened (`calibration.screen`: a draw whose misfit on the fitted figures is past
chi-square's 99 % quantile replaced by the next of the sequence, its places saved), the
sentence says how many were screened ahead of the M run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from sim.present.failures import budget_percent
from sim.studies.calibration.linearise import SEED_OFFSET
from sim.studies.calibration.saved import Calibrated, Point
from sim.studies.capacity.search import CapacityResult
from sim.studies.capacity.slo import Slo

LEVEL = 0.90


@dataclass
class CapacityRange:
    path: str
    direction: str
    slos: list[str]
    nominal: float | None  # the answer at the fitted values
    answers: list[float | None]  # per draw; None: no value in the search range meets the SLO
    beyond: list[bool]  # per draw: every value tried met the SLO (the answer is a bound)
    low: float | None
    high: float | None
    level: float
    draws: int
    model_error_sd: float
    parameters: list[str]
    left_out: list[str] = field(default_factory=list)
    structures: str = ""  # the [[choose]] candidates drawn, with their weights
    model_errors: list[float] = field(default_factory=list)  # per draw, the relative error e
    # the share of requests that may fail at a value that meets the SLO, applied by every
    # draw's search as by the search at the fitted values (`--error-budget`)
    error_budget: float | None = None
    # draws of the calibration's sequence the fitted figures ruled out ahead of these, each
    # replaced by the next (`Calibrated.screened`)
    screened: int = 0

    def as_dict(self) -> dict:
        return {
            "parameter": self.path,
            "direction": self.direction,
            "slo": self.slos,
            "level": self.level,
            "at_the_fit": self.nominal,
            "low": self.low,
            "high": self.high,
            "draws": self.draws,
            "answers": self.answers,
            "answer_is_a_search_bound": self.beyond,
            "drawn_parameters": self.parameters,
            "not_applied": self.left_out,
            "model_error_sd": self.model_error_sd,
            "model_errors": self.model_errors,
            "structures": self.structures,
            "screened_draws": self.screened,
            "method": "the search at parameter draws from the calibration's Gaussian "
            "(scrambled Sobol; over the open [[choose]] candidates by weight), each with its own "
            "seed and a drawn model error e (the SLO's target over 1 + e); 5-95 % quantiles of "
            "the answers; draws the calibration screened (misfit on the fitted figures past "
            "chi-square's 99 % quantile) replaced by the next of the sequence",
        }

    @property
    def half_open(self) -> bool:
        """One end of the range is beyond the search: some draws found no value meeting the
        SLO (`None` at that end, the other end found)."""
        return (self.low is None) != (self.high is None)

    def sentence(self) -> str:
        slo = " and ".join(self.slos)
        if self.error_budget is not None:
            slo += f" with at most {budget_percent(self.error_budget)} failed"
        met = sum(a is not None for a in self.answers)
        if self.low is None and self.high is None:
            return (
                f"with the calibration's uncertainty: none of {self.draws} parameter draws "
                f"has a {self.path} meeting {slo} in the search range: no {LEVEL:.0%} range"
            )
        if self.half_open:
            at = "" if self.nominal is None else f" (at the fitted values {self.nominal:g})"
            if self.low is not None:
                span = f"{self.low:g} or more"
                where = "up to the search's greatest value"
            else:
                span = f"at most {self.high:g}"
                where = "down to the search's least value"
            return (
                f"{self.direction} {self.path} meeting {slo}: {span}{at}, with {self.level:.0%} "
                f"confidence over the calibration's parameters -- in {self.draws - met} of "
                f"{self.draws} draws no {self.path} {where} meets it, so the range has no "
                f"other end within the search{self._screen()}"
            )
        span = f"{self.low:g}" if self.low == self.high else f"{self.low:g}–{self.high:g}"
        at = "" if self.nominal is None else f"; at the fitted values {self.nominal:g}"
        over = "parameters"
        if self.model_error_sd > 0:
            over += f" and model error ({self.model_error_sd:.1%})"
        if self.structures:
            over += f", over {self.structures}"
        return (
            f"{self.direction} {self.path} meeting {slo}: {span} with {self.level:.0%} "
            f"confidence over the calibration's {over} ({self.draws} draws{self._screen()}{at})"
        )

    def _screen(self) -> str:
        if not self.screened:
            return ""
        return (
            f"; {self.screened} draw{'s' if self.screened != 1 else ''} the fitted figures "
            "rule out screened, each replaced by the next of the sequence"
        )


def capacity_range(
    search_at: Callable[[tuple[str, ...], int, list[Slo]], CapacityResult],
    calibrated: Calibrated,
    draws: int,
    seed: int,
    nominal: CapacityResult,
    integer: bool,
    progress: Callable[[int, int], None] | None = None,
    map_: Callable[..., Iterable[CapacityResult]] = map,
    points: list[Point] | None = None,
) -> CapacityRange:
    """`search_at(parameter overrides, seed, slos)` runs one search; it is run at `draws`
    points, each with the SLOs' targets moved by the point's model error, through `map_`
    (builtin map, or an executor's: every draw at once, results in draw order; each draw's seed
    and targets are in its task, so the answers are the same).  `points`: the calibration's
    `points(draws, seed)` when already drawn."""
    if points is None:
        points = calibrated.points(draws, seed)
    errors = [calibrated.model_error_sd * p.model_error_z for p in points]
    answers: list[float | None] = []
    beyond: list[bool] = []
    drawn, seeds = draw_runs(calibrated, draws, seed, points)
    results = map_(
        search_at,
        drawn,
        seeds,
        [[moved(slo, error) for slo in nominal.slos] for error in errors],
    )
    for m, result in enumerate(results):
        answers.append(None if result.best is None else result.best.value)
        beyond.append(result.best is not None and result.neighbour is None)
        if progress is not None:
            progress(m + 1, len(points))
    found = np.array([a for a in answers if a is not None], dtype=float)
    low = high = None
    # A draw with no value meeting the SLO is the worst case of a "largest" search (not even
    # its least value meets it) and of a "smallest" one (not even its greatest): such draws
    # sit at the unfavourable end, and when they reach into the tail that end is open -- the
    # range is half-open ("2 nodes or more, none within the search in 1 of 8 draws"), never
    # dropped, since the draws that did find a value still bound the other end.
    missing = len(answers) - len(found)
    tail = (1 - LEVEL) / 2
    if len(found):
        ordered = np.sort(found)
        if nominal.direction == "largest":
            ordered = np.concatenate([np.full(missing, -np.inf), ordered])
        else:
            ordered = np.concatenate([ordered, np.full(missing, np.inf)])
        low = float(np.quantile(ordered, tail, method="lower"))
        high = float(np.quantile(ordered, 1 - tail, method="higher"))
        if integer:
            low = math.floor(low) if math.isfinite(low) else low
            high = math.ceil(high) if math.isfinite(high) else high
        low = float(low) if math.isfinite(low) else None
        high = float(high) if math.isfinite(high) else None
    return CapacityRange(
        path=nominal.path,
        direction=nominal.direction,
        slos=[str(s) for s in nominal.slos],
        nominal=None if nominal.best is None else nominal.best.value,
        answers=answers,
        beyond=beyond,
        low=low,
        high=high,
        level=LEVEL,
        draws=draws,
        model_error_sd=calibrated.model_error_sd,
        parameters=calibrated.names,
        left_out=list(calibrated.left_out),
        structures=calibrated.structures,
        model_errors=errors,
        error_budget=nominal.error_budget,
        screened=calibrated.screened(draws),
    )


def draw_runs(
    calibrated: Calibrated, draws: int, seed: int, points: list[Point] | None = None
) -> tuple[list[tuple[str, ...]], list[int]]:
    """Each draw's parameter overrides and seed: what its search runs with, and what any other
    run at the same draw must run with to be paired with its answer (`next_measurement`).
    `points`: the calibration's `points(draws, seed)` when already drawn."""
    if points is None:
        points = calibrated.points(draws, seed)
    return (
        [tuple(point.overrides) for point in points],
        [seed + SEED_OFFSET * (m + 1) for m in range(len(points))],
    )


def moved(slo: Slo, error: float) -> Slo:
    """What the model must predict for the stack to meet `slo` when the stack's figure is the
    model's times (1 + error): the target over 1 + error (a relative error is the same for an
    upper and a lower bound).  An error of -100 % or less is out of the model error's reach
    (its sd is a few per cent) and is cut at -90 %."""
    import dataclasses

    return dataclasses.replace(slo, target=slo.target / (1.0 + max(error, -0.9)))
