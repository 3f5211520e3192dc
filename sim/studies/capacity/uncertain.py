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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from sim.studies.calibration.linearise import SEED_OFFSET
from sim.studies.calibration.saved import Calibrated
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
            "method": "the search at parameter draws from the calibration's Gaussian "
            "(scrambled Sobol; over the open [[choose]] candidates by weight), each with its own "
            "seed and a drawn model error e (the SLO's target over 1 + e); 5-95 % quantiles of "
            "the answers",
        }

    def sentence(self) -> str:
        slo = " and ".join(self.slos)
        if self.low is None or self.high is None:
            met = sum(a is not None for a in self.answers)
            return (
                f"with the calibration's uncertainty: only {met} of {self.draws} parameter draws "
                f"have a {self.path} meeting {slo} in the search range: no {LEVEL:.0%} range"
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
            f"confidence over the calibration's {over} ({self.draws} draws{at})"
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
) -> CapacityRange:
    """`search_at(parameter overrides, seed, slos)` runs one search; it is run at `draws`
    points, each with the SLOs' targets moved by the point's model error, through `map_`
    (builtin map, or an executor's: every draw at once, results in draw order; each draw's seed
    and targets are in its task, so the answers are the same)."""
    points = calibrated.points(draws, seed)
    errors = [calibrated.model_error_sd * p.model_error_z for p in points]
    answers: list[float | None] = []
    beyond: list[bool] = []
    drawn, seeds = draw_runs(calibrated, draws, seed)
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
    # A draw with no value meeting the SLO is the worst case of a "largest" search and the
    # worst of a "smallest" one too: the range exists only if such draws are within the tail.
    missing = len(answers) - len(found)
    tail = (1 - LEVEL) / 2
    if len(found) and missing <= math.floor(tail * len(answers)):
        # the missing draws sit at the unfavourable end
        ordered = np.sort(found)
        if nominal.direction == "largest":
            ordered = np.concatenate([np.full(missing, -np.inf), ordered])
        else:
            ordered = np.concatenate([ordered, np.full(missing, np.inf)])
        low = float(np.quantile(ordered, tail, method="lower"))
        high = float(np.quantile(ordered, 1 - tail, method="higher"))
        if not (math.isfinite(low) and math.isfinite(high)):
            low = high = None
        elif integer:
            low, high = float(math.floor(low)), float(math.ceil(high))
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
    )


def draw_runs(
    calibrated: Calibrated, draws: int, seed: int
) -> tuple[list[tuple[str, ...]], list[int]]:
    """Each draw's parameter overrides and seed: what its search runs with, and what any other
    run at the same draw must run with to be paired with its answer (`next_measurement`)."""
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
