"""A capacity question asked whole: SLOs, the parameter to vary and its range checked before any
simulation, the search, and, given a calibration, the search repeated at its parameter draws
(`tiersim capacity`, `sim.capacity`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sim.studies.calibration.saved import Calibrated
from sim.studies.capacity.search import (
    CapacityResult,
    Evaluation,
    SearchBase,
    default_direction,
    resolve_path,
    search,
    search_base,
    utilization_metrics,
)
from sim.studies.capacity.slo import Slo, check_error_budget, check_metrics, parse_slo
from sim.studies.capacity.uncertain import CapacityRange, capacity_range
from sim.studies.metrics import metric_names


class SearchRangeError(ValueError):
    """`--min`/`--max` leave nothing to search."""


@dataclass(frozen=True)
class Question:
    """Everything a search needs, checked: the base, the real path, its kind, the SLOs."""

    base: SearchBase
    path: str  # the real dotted path (backends.count -> backends.0.count)
    slos: list[Slo]
    direction: str  # "largest" or "smallest"
    integer: bool
    start: float  # the base model's value
    bounds: tuple[float, float]
    # every resource's busy-share metric a run reports (`tomcat1.threads.utilization`), read
    # at each point of the nominal search to name the bottleneck at its answer
    busy: tuple[str, ...] = ()

    @property
    def error_budget(self) -> float:
        return self.base.error_budget


def ask(
    source: str | Path,
    slos: Sequence[str],
    vary: str,
    direction: str | None = None,
    overrides: Sequence[str] = (),
    replications: int | None = None,
    seed: int | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    error_budget: float | None = None,
) -> Question:
    """The question checked before any simulation: the SLOs parse (`SloError`), the error
    budget is a share (`SloError`; default: the sweep file's, else 1 %), the source and the
    path exist (`SweepError`, `CapacityError`), the model produces every SLO's metric
    (`SloError`), and the range holds values (`SearchRangeError`)."""
    objectives = [parse_slo(text) for text in slos]
    if error_budget is not None:
        check_error_budget(error_budget)
    base = search_base(source, tuple(overrides), replications, seed, error_budget)
    path, integer, start = resolve_path(base, vary)
    direction = direction or default_direction(path)
    names = metric_names(base.model())
    check_metrics(objectives, names)
    low = minimum if minimum is not None else (1.0 if integer else start / 2**20)
    high = maximum if maximum is not None else start * 2**20
    if low >= high:  # one bound given, beyond the default of the other
        given = f"--min {minimum:g}" if minimum is not None else f"--max {maximum:g}"
        raise SearchRangeError(
            f"{given} leaves no range to search for {path} (from {low:g} to {high:g}): "
            "give both --min and --max"
        )
    busy = utilization_metrics(names)
    return Question(base, path, objectives, direction, integer, start, (low, high), busy)


def answer(
    question: Question,
    executor,
    workers: int = 1,
    tolerance: float = 0.02,
    use_analytic: bool = True,
    knee_points: int = 8,
    on_evaluation: Callable[[Evaluation], None] | None = None,
) -> CapacityResult:
    """The search (bracket, bisection, knee) on `executor` with `workers` points at a time."""
    return search(
        question.base,
        question.path,
        question.slos,
        direction=question.direction,
        integer=question.integer,
        start=question.start,
        executor=executor,
        tolerance=tolerance,
        bounds=question.bounds,
        workers=workers,
        use_analytic=use_analytic,
        knee_points=knee_points,
        on_evaluation=on_evaluation,
        busy=question.busy,
    )


def answer_range(
    question: Question,
    nominal: CapacityResult,
    calibrated: Calibrated,
    draws: int,
    executor,
    tolerance: float = 0.02,
    user_overrides: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> CapacityRange:
    """The search repeated at `draws` parameter draws of the calibration, each started from the
    answer at the fitted values (`nominal`, the nearest guess) with its own seed; the user's
    own overrides come after the drawn values.  Each draw's search is one task of `executor`
    (`sim.studies.executor`), one point at a time: the draws run side by side, and their
    answers are the same on any executor, serial included."""
    search_at = DrawSearch(
        question,
        nominal.best.value if nominal.best is not None else question.start,
        tolerance,
        tuple(user_overrides),
    )
    return capacity_range(
        search_at,
        calibrated,
        draws,
        question.base.seed,
        nominal,
        question.integer,
        progress,
        executor.map,
    )


@dataclass(frozen=True)
class DrawSearch:
    """One draw's search, as a task an executor can send to another process: plain data, and
    the search run where it lands, serially."""

    question: Question
    start: float
    tolerance: float
    user_overrides: tuple[str, ...]

    def __call__(self, drawn: tuple[str, ...], draw_seed: int, slos: list) -> CapacityResult:
        from sim.studies.executor import SerialExecutor

        question = self.question
        at = dataclasses.replace(
            question.base, overrides=(*drawn, *self.user_overrides), seed=draw_seed
        )
        return search(
            at,
            question.path,
            slos,
            direction=question.direction,
            integer=question.integer,
            start=self.start,
            executor=SerialExecutor(),
            tolerance=self.tolerance,
            bounds=question.bounds,
            workers=1,
            use_analytic=False,  # started from the fitted answer, the nearest guess
            knee_points=0,
        )
