"""A capacity question asked whole: SLOs, the parameter to vary and its range checked before any
simulation, the search, and, given a calibration, the search repeated at its parameter draws
(`tiersim capacity`, `sim.capacity`)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from sim.studies.calibration.saved import Calibrated, Point
from sim.studies.capacity.kept import KeptEvaluations
from sim.studies.capacity.search import (
    CapacityResult,
    Evaluation,
    SearchBase,
    SearchSteps,
    default_direction,
    resolve_path,
    search,
    search_base,
    search_steps,
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
    kept: KeptEvaluations | None = None,
) -> CapacityResult:
    """The search (bracket, bisection, knee) on `executor` with `workers` points at a time;
    `kept`: the finished evaluations of an earlier run, and where this run's are kept."""
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
        kept=kept,
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
    ahead: Future[list[Point]] | None = None,
    kept: KeptEvaluations | None = None,
) -> CapacityRange:
    """The search repeated at `draws` parameter draws of the calibration, each started from the
    answer at the fitted values (`nominal`, the nearest guess) with its own seed; the user's
    own overrides come after the drawn values.  The draws' searches run side by side on
    `executor` (`Executor.interleave`), one point at a time each: a draw's next point is
    submitted as soon as its last one returns, so the workers stay busy until the last draw's
    last point; the answers are the same on any executor, serial included.  `ahead`: the
    draws' points from `draw_points_ahead`; `kept`: as `answer`'s, each draw's evaluations
    told apart by its seed, its drawn values and its moved SLOs."""
    search_at = DrawSearch(
        question,
        nominal.best.value if nominal.best is not None else question.start,
        tolerance,
        tuple(user_overrides),
        kept,
    )

    def side_by_side(search_at: DrawSearch, *columns) -> Iterator[CapacityResult]:
        return executor.interleave([search_at.steps(*task) for task in zip(*columns)])

    return capacity_range(
        search_at,
        calibrated,
        draws,
        question.base.seed,
        nominal,
        question.integer,
        progress,
        side_by_side,
        points=None if ahead is None else ahead.result(),
    )


def draw_points_ahead(
    question: Question, calibrated: Calibrated, draws: int, executor
) -> Future[list[Point]]:
    """The calibration's `draws` parameter points (`answer_range`'s), drawn in a thread of this
    process while the search at the fitted values runs on the workers.  The Sobol points no
    longer import scipy.stats (1-2 s of CPU: `sim.studies.calibration.sobol` makes them
    without it); the draws' Student-t quantiles import scipy.special (up to 0.3 s where numba
    has not brought in scipy's shared parts), off the workers' path here all the same.  The
    workers are started first (`Executor.start`): a worker forked while this thread imports
    would inherit a module's import lock that no thread of its own ever releases."""
    executor.start()
    ahead: Future[list[Point]] = Future()

    def draw() -> None:
        try:
            ahead.set_result(calibrated.points(draws, question.base.seed))
        except BaseException as exc:  # raised where the points are read
            ahead.set_exception(exc)

    threading.Thread(target=draw, name="parameter draws", daemon=True).start()
    return ahead


@dataclass(frozen=True)
class DrawSearch:
    """One draw's search: `steps` for the executor to run beside the other draws' searches
    (`Executor.interleave`), or called, the whole search here, serially."""

    question: Question
    start: float
    tolerance: float
    user_overrides: tuple[str, ...]
    kept: KeptEvaluations | None = None

    def __call__(self, drawn: tuple[str, ...], draw_seed: int, slos: list) -> CapacityResult:
        """The whole search, here."""
        from sim.studies.executor import SerialExecutor

        return next(SerialExecutor().interleave([self.steps(drawn, draw_seed, slos)]))

    def steps(self, drawn: tuple[str, ...], draw_seed: int, slos: list) -> SearchSteps:
        """The search as steps (`search_steps`), one point at a time, no analytic guess (it
        starts from the fitted answer, the nearest guess) and no knee."""
        question = self.question
        at = dataclasses.replace(
            question.base, overrides=(*drawn, *self.user_overrides), seed=draw_seed
        )
        return search_steps(
            at,
            question.path,
            slos,
            direction=question.direction,
            integer=question.integer,
            start=self.start,
            tolerance=self.tolerance,
            bounds=question.bounds,
            workers=1,
            kept=self.kept,
        )
