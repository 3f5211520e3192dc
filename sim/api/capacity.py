"""Capacity on the package's face (`import sim`; docs/api.md): the search `tiersim capacity`
runs, of a model file, a sweep file or a `Model`, and with a calibration its range."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api import arguments
from sim.api.arguments import ArgumentError
from sim.api.studies import CalibrationResult, as_calibration, model_data, model_label
from sim.model.schema import Model

if TYPE_CHECKING:
    import pandas as pd

    from sim.studies.calibration.saved import Calibrated
    from sim.studies.capacity.next_measurement import NextMeasurements
    from sim.studies.capacity.question import Question
    from sim.studies.capacity.search import CapacityResult
    from sim.studies.capacity.uncertain import CapacityRange


@dataclass
class Capacity:
    """A capacity answer: `result` (the search: best value, its neighbour, every evaluation,
    the knee) and, with a calibration, `range` over its parameters' uncertainty and, when
    asked, `next_measurements`: the range's expected width after each candidate measurement,
    best first."""

    result: CapacityResult
    range: CapacityRange | None = None
    next_measurements: NextMeasurements | None = None
    # evaluations replayed from `cache` (a run cut short before), of `evaluated` in all
    resumed: int = 0
    evaluated: int = 0

    @property
    def best(self) -> float | None:
        return None if self.result.best is None else self.result.best.value

    def as_dict(self) -> dict:
        """The document `tiersim capacity --json` prints."""
        document = self.result.as_dict()
        if self.range is not None:
            document["calibrated_range"] = self.range.as_dict()
        if self.next_measurements is not None:
            document["what_next"] = self.next_measurements.as_dict()
        return document

    def to_frame(self) -> pd.DataFrame:
        """Every evaluation of the search: the value tried, whether it met the SLOs, each SLO
        metric's mean and interval, and beside them `share.failed` with its interval (the share
        of requests that failed: the latencies are of the answered ones only; a value meets the
        SLOs only with its upper bound within the error budget, `attrs["error_budget"]`).
        `answer` marks the row of the answer (`best`)."""
        import pandas as pd

        from sim.present.failures import FAILED_SHARE

        best = self.result.best
        rows = []
        for e in sorted(self.result.evaluations, key=lambda e: e.value):
            row: dict[str, Any] = {
                self.result.path: e.value,
                "met": e.met,
                "answer": best is not None and e.value == best.value,
                "note": e.note,
            }
            for metric, (mean, low, high) in e.metrics.items():
                row |= {metric: mean, f"{metric}.ci_low": low, f"{metric}.ci_high": high}
            share, low, high = e.failed_share
            row |= {
                FAILED_SHARE: share,
                f"{FAILED_SHARE}.ci_low": low,
                f"{FAILED_SHARE}.ci_high": high,
            }
            rows.append(row)
        frame = pd.DataFrame(rows)
        frame.attrs["error_budget"] = self.result.error_budget
        return frame


def capacity(
    source: Model | str | Path,
    slo: str | Sequence[str],
    vary: str,
    *,
    direction: str | None = None,
    overrides: Sequence[str] = (),
    replications: int | None = None,
    seed: int | None = None,
    tolerance: float = 0.02,
    minimum: float | None = None,
    maximum: float | None = None,
    knee_points: int = 8,
    use_analytic: bool = True,
    workers: int | None = 1,
    calibration: Calibrated | CalibrationResult | str | Path | None = None,
    draws: int = 8,
    error_budget: float | None = None,
    what_next: bool = False,
    candidates: Sequence[str] = (),
    cache: str | Path | None = None,
) -> Capacity:
    """`tiersim capacity`: the largest load (or smallest cluster) of a model (a `Model`, a
    model file or a sweep file) whose interval meets every SLO (`"p95<1.0"`, ...), varying
    `vary`; with a calibration, the search again at its parameter draws, as a range.
    `error_budget`: the share of requests that may fail at a value that meets the SLOs
    (`--error-budget`; None: the sweep file's, else 1 %).  `workers` = 1 runs in this
    process, None one process per core.  With a calibration, `what_next` weighs the default
    measurements and `candidates` the given ones (`--what-next`, `--candidate`).  `cache`: a
    file where each finished evaluation is kept as it finishes (none by default; `tiersim
    capacity --cache`): a call cut short (Ctrl-C) and made again replays them, with the same
    answer (`Capacity.resumed` counts them)."""
    from sim.api.placeholders import refuse
    from sim.studies.capacity.kept import CacheError, KeptEvaluations, calibration_digest
    from sim.studies.capacity.next_measurement import weigh as weigh_candidates
    from sim.studies.capacity.question import answer, answer_range
    from sim.studies.executor import ProcessExecutor, SerialExecutor

    where = arguments.model_source(source, "source")
    slos = [slo] if isinstance(slo, str) else list(arguments.strings(slo, "slo", "p95<1.0"))
    if not isinstance(vary, str) or not vary:
        raise ArgumentError(
            "vary", f"expected a parameter's dotted path, e.g. 'clients.users', not {vary!r}"
        )
    extra = arguments.overrides(overrides)
    chosen = arguments.optional_choice(direction, "direction", ("largest", "smallest"))
    count = arguments.replications(replications, low=2)
    root = arguments.seed(seed)
    width = arguments.number(tolerance, "tolerance", above=0.0, below=1.0)
    low = arguments.optional_number(minimum, "minimum")
    high = arguments.optional_number(maximum, "maximum")
    knee = arguments.integer(knee_points, "knee_points", 0, 100)
    analytic = arguments.flag(use_analytic, "use_analytic")
    pool = arguments.workers(workers)
    calibrated = None if calibration is None else as_calibration(calibration)
    points = arguments.integer(draws, "draws", 2, 1024)
    budget = arguments.optional_number(error_budget, "error_budget", at_least=0.0, below=1.0)
    weigh = arguments.flag(what_next, "what_next")
    wanted = list(arguments.strings(candidates, "candidates", "clients.users=80:response.p95"))
    if (weigh or wanted) and calibrated is None:
        raise ArgumentError(
            "what_next" if weigh else "candidates",
            "measurements are weighed by a calibration's draws: give calibration=",
        )
    kept_in = arguments.optional_path(cache, "cache", "cache file")
    fixed = (*calibrated.overrides(), *extra) if calibrated is not None else extra
    question = _question(where, slos, vary, chosen, fixed, count, root, low, high, budget)
    # a from-config model's placeholders (a demand of 0 s) would be searched as values
    if isinstance(where, Model):
        refuse(where, fixed, "sim.capacity", (question.path,))
    else:  # a model file, or a sweep file's base model with its fixed overrides
        refuse(
            Path(question.base.source), question.base.overrides, "sim.capacity", (question.path,)
        )
    given = _candidates(wanted, question)
    try:
        kept = KeptEvaluations(kept_in, calibration_digest(calibrated))
    except CacheError as exc:
        raise ArgumentError("cache", str(exc)) from None

    with SerialExecutor() if pool == 1 else ProcessExecutor(pool) as executor:
        result = answer(question, executor, executor.slots, width, analytic, knee, kept=kept)
        spread = weighed = None
        if calibrated is not None:
            spread = answer_range(
                question, result, calibrated, points, executor, width, extra, kept=kept
            )
            if weigh or given:
                weighed = weigh_candidates(
                    question, result, spread, calibrated, given, weigh, executor, extra
                )
    return Capacity(result, spread, weighed, kept.reused, kept.total)


def _candidates(texts: list[str], question: Question) -> list:
    """The given candidates, checked before any simulation."""
    from sim.studies.capacity.candidates import CandidateError, parse_candidate

    try:
        return [parse_candidate(text, question.base) for text in texts]
    except CandidateError as exc:
        raise ArgumentError("candidates", str(exc)) from None


def _question(
    source: Model | Path,
    slos: list[str],
    vary: str,
    direction: str | None,
    fixed: tuple[str, ...],
    replications: int | None,
    seed: int | None,
    minimum: float | None,
    maximum: float | None,
    error_budget: float | None,
) -> Question:
    """The capacity question, checked before any simulation, of a file or of a `Model`."""
    from sim.model.load import parse_model
    from sim.studies.capacity.question import Question, SearchRangeError, ask
    from sim.studies.capacity.search import (
        CapacityError,
        SearchBase,
        default_direction,
        resolve_path,
        utilization_metrics,
    )
    from sim.studies.capacity.slo import DEFAULT_ERROR_BUDGET, check_metrics, parse_slo
    from sim.studies.metrics import metric_names

    if not isinstance(source, Model):
        return ask(
            source, slos, vary, direction, fixed, replications, seed, minimum, maximum, error_budget
        )
    # `ask`'s checks, on the Model's own data instead of a file's: every evaluation parses
    # that data with its point's value, never a file
    objectives = [parse_slo(text) for text in slos]
    raw, name = model_data(source), model_label(source)
    model = parse_model(raw, name, fixed)
    count = replications or model.run.replications
    if count < 2:
        raise CapacityError(
            f"{count} replication gives no interval to decide an SLO on; give replications=2 or more"
        )
    base = SearchBase(
        raw,
        name,
        str(Path.cwd()),
        fixed,
        count,
        model.run.seed if seed is None else seed,
        DEFAULT_ERROR_BUDGET if error_budget is None else error_budget,
    )
    path, integer, start = resolve_path(base, vary)
    names = metric_names(model)
    check_metrics(objectives, names)
    low = minimum if minimum is not None else (1.0 if integer else start / 2**20)
    high = maximum if maximum is not None else start * 2**20
    if low >= high:
        raise SearchRangeError(
            f"minimum/maximum leave no range to search for {path} (from {low:g} to {high:g}): "
            "give both"
        )
    return Question(
        base,
        path,
        objectives,
        direction or default_direction(path),
        integer,
        start,
        (low, high),
        utilization_metrics(names),
    )
