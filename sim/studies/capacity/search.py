"""`tiersim capacity`: the largest load, or the smallest cluster, that meets an SLO.

1. First guess from queueing theory (`sim.analytic.model_solver`: exact MVA or a Jackson
   network) only where the solver's network is the model (`unmodelled_by_solver`: no
   approximation, no pool that fills up); a percentile is guessed from the mean as if the
   response time were exponential (p = -mean ln(1 - q)).  Otherwise the search starts from
   the model's own value and doubles (or halves).
2. Bracket on simulation: step away from the first value until the SLO flips.
3. Bisect on simulation until the bracket is narrower than the tolerance; with W workers,
   W points per round (W+1-section).

Each evaluation is a full run with replications; "meets the SLO" is decided on the interval
(`sim.studies.capacity.slo`), and the estimate is reported beside it.  A latency is measured on
the answered requests only, so a load also meets the SLO only while the share of requests that
failed (refused, errors, given up after a timeout; `sim.present.failures`) is within the error
budget, decided on that share's interval alike: a load at which most requests are refused is
not one that meets `p95<1`, and the search does not double on past it.  Every evaluation uses the same
root seed (common random numbers): the estimated curve is then smooth in the varied parameter,
and the bisection does not chase the noise between independent streams.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.model.load import ModelError, parse_model
from sim.present.failures import FAILED_SHARE
from sim.studies.capacity.kept import KeptEvaluations
from sim.studies.capacity.knee import knee
from sim.studies.capacity.slo import DEFAULT_ERROR_BUDGET, Slo, within_budget
from sim.studies.sweep.design import toml_literal
from sim.studies.sweep.point import PointTask
from sim.studies.sweep.spec import SweepError, has_path, load_sweep, read_sweep_toml

LOADS = {
    "clients.users",
    "clients.rate_per_s",
    "clients.session_rate_per_s",
    "clients.concurrency",
    "clients.requests_per_session",
}


class CapacityError(ValueError):
    """A search that cannot be set up or continued; the message names the parameter and the fix."""


@dataclass(frozen=True)
class SearchBase:
    """What every evaluation shares: the base model, fixed overrides, replications and seed."""

    raw_model: dict[str, Any]
    source: str
    base_dir: str
    overrides: tuple[str, ...]
    replications: int
    seed: int
    # the share of requests that may fail at a load that meets the SLO (`--error-budget`, or
    # the sweep file's `error_budget`)
    error_budget: float = DEFAULT_ERROR_BUDGET

    def model(self, extra: tuple[str, ...] = ()):
        return parse_model(
            self.raw_model, self.source, (*self.overrides, *extra), Path(self.base_dir)
        )


def search_base(
    path: str | Path,
    overrides: tuple[str, ...],
    replications: int | None,
    seed: int | None,
    error_budget: float | None = None,
) -> SearchBase:
    """From a model file, or from a sweep file (its base model, fixed overrides, replications,
    seed and error budget)."""
    path = Path(path)
    raw = read_sweep_toml(path, "model or sweep file")
    if "sweep" in raw:
        plan = load_sweep(path)
        sweep = plan.spec.sweep
        raw, source, fixed = plan.base_raw, plan.base_path, (*sweep.set, *overrides)
        replications = replications or sweep.replications
        seed = sweep.seed if seed is None else seed
        error_budget = sweep.error_budget if error_budget is None else error_budget
    else:
        source, fixed = path, tuple(overrides)
    base = SearchBase(raw, str(source), str(source.parent), fixed, 0, 0)
    try:
        model = base.model()
    except ModelError as exc:
        raise SweepError(str(exc)) from None
    replications = replications or model.run.replications
    if replications < 2:
        raise CapacityError(
            f"{replications} replication gives no interval to decide an SLO on; "
            "use --replications 2 or more"
        )
    return SearchBase(
        raw,
        str(source),
        str(source.parent),
        fixed,
        replications,
        model.run.seed if seed is None else seed,
        DEFAULT_ERROR_BUDGET if error_budget is None else error_budget,
    )


def resolve_path(base: SearchBase, path: str) -> tuple[str, bool, float]:
    """The real dotted path (`backends.count` -> `backends.0.count` with one group), whether it is
    a whole number, and the base model's value."""
    dumped = base.model().model_dump()
    keys = path.split(".")
    if keys[0] == "backends" and len(keys) == 2:
        if len(dumped["backends"]) != 1:
            raise CapacityError(
                f"--vary {path}: the model has {len(dumped['backends'])} backend groups; "
                "name one by index, e.g. backends.0.count"
            )
        keys = ["backends", "0", keys[1]]
    if not has_path(dumped, keys):
        raise CapacityError(
            f"--vary {path}: the model has no parameter {'.'.join(keys)} "
            "(a dotted path as in --set; `tiersim schema` lists them)"
        )
    node: Any = dumped
    for key in keys:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise CapacityError(
            f"--vary {'.'.join(keys)}: is {node!r} in this model; it must be a number"
        )
    return ".".join(keys), isinstance(node, int), float(node)


def default_direction(path: str) -> str:
    if path in LOADS:
        return "largest"
    if path.startswith("clients."):
        raise CapacityError(
            f"--vary {path}: say whether to find the largest or the smallest value meeting "
            "the SLO (--direction largest|smallest)"
        )
    return "smallest"


NO_SHARE = (math.nan, math.nan, math.nan)
OVER_BUDGET = "over the error budget"


@dataclass
class Evaluation:
    value: float
    metrics: dict[str, tuple[float, float, float]]  # metric -> (mean, ci_low, ci_high)
    met: bool
    note: str = ""  # why a point without metrics counts as not meeting (unstable, unfinished)
    # the share of requests that failed (mean, ci_low, ci_high) and the failed and answered
    # requests per replication (means): what every latency above is read beside
    failed_share: tuple[float, float, float] = NO_SHARE
    failed: float = math.nan
    completed: float = math.nan
    # how it was measured: replications, each one's window after the warm-up, the warm-up
    # removed (means over the replications, s), and the run's warnings
    replications: int = 0
    window_s: float = math.nan
    warmup_s: float = math.nan
    warnings: tuple[str, ...] = ()
    # each resource's busy share (`database.lock.utilization`: mean), for the bottleneck
    utilization: dict[str, float] = field(default_factory=dict)

    @property
    def over_budget(self) -> bool:
        """The latency meets the SLO, but too many requests failed for the load to count."""
        return self.note == OVER_BUDGET


@dataclass
class CapacityResult:
    path: str
    direction: str  # "largest" or "smallest"
    slos: list[Slo]
    evaluations: list[Evaluation]
    best: Evaluation | None  # the boundary value that meets the SLO
    neighbour: Evaluation | None  # the closest evaluated value beyond it, which does not
    guess: float | None
    guess_note: str
    knee: Evaluation | None = None
    notes: list[str] = field(default_factory=list)
    error_budget: float = DEFAULT_ERROR_BUDGET

    def as_dict(self) -> dict:
        def ev(e: Evaluation | None):
            if e is None:
                return None
            return {
                "value": e.value,
                "met": e.met,
                "note": e.note,
                "metrics": {
                    m: {"mean": v[0], "ci_low": v[1], "ci_high": v[2]} for m, v in e.metrics.items()
                },
                FAILED_SHARE: {
                    "mean": e.failed_share[0],
                    "ci_low": e.failed_share[1],
                    "ci_high": e.failed_share[2],
                },
                "failed_per_replication": e.failed,
                "completed_per_replication": e.completed,
                "replications": e.replications,
                "window_s": e.window_s,
                "warmup_s": e.warmup_s,
                "warnings": list(e.warnings),
            }

        return {
            "parameter": self.path,
            "direction": self.direction,
            "slo": [str(s) for s in self.slos],
            "error_budget": self.error_budget,
            "decision": "interval bound (upper for <, lower for >); and the failed share's upper "
            "bound within the error budget",
            "best": ev(self.best),
            "neighbour": ev(self.neighbour),
            "analytic_guess": self.guess,
            "analytic_note": self.guess_note,
            "knee": ev(self.knee),
            "knee_definition": "farthest point from the chord of the scaled curve",
            "evaluations": [ev(e) for e in sorted(self.evaluations, key=lambda e: e.value)],
            "notes": self.notes,
        }


# --------------------------------------------------------------------------- analytic first guess
class _LeftOut(Exception):
    """The solver's answer at a value leaves out part of the model: no guess is shown."""


def unmodelled_by_solver(plan, answer=None) -> list[str]:
    """What of the model the analytic solver leaves out: the one condition under which no
    analytic first guess is shown.  A network without Tomcat's `maxThreads` or Apache's
    `MaxRequestWorkers` gave 715 users where the simulation answers 91: a guess is worth
    printing only where the solver's network is the model.

    Before solving (`answer` None), the plan's approximations (`sim.model.plan.Approximation`:
    a blocking connector, timeouts, a JVM, a refusing accept queue ...), which no value of
    the varied parameter removes, so no solve is spent on them; at a solved value, every
    caveat of the answer: those, and the slot pools that fill up at that load (threads,
    workers, a JDBC pool: a slot held across downstream calls is a nested hold)."""
    if answer is None:
        return [str(approximation) for approximation in plan.approximations]
    return list(answer.caveats)


def _left_out_note(left_out: list[str], where: str = "") -> str:
    more = f" (and {len(left_out) - 1} more)" if len(left_out) > 1 else ""
    return f"the solver leaves out {left_out[0]}{more}{where}; `tiersim solve` lists it all"


def analytic_guess(
    base: SearchBase,
    path: str,
    slos: list[Slo],
    direction: str,
    integer: bool,
    start: float,
    bounds: tuple[float, float],
) -> tuple[float | None, str]:
    from sim.analytic.model_solver import NotProductForm, solve_model
    from sim.model.plan import compile_plan

    for slo in slos:
        if slo.metric not in ("throughput", "response.mean") and not slo.metric.startswith(
            "response.p"
        ):
            return None, f"no analytic counterpart of {slo.metric}"
    left_out = unmodelled_by_solver(compile_plan(base.model()))
    if left_out:
        return None, _left_out_note(left_out)

    def meets(value: float) -> bool:
        model = base.model((f"{path}={_literal(value, integer)}",))
        try:
            answer = solve_model(model)
        except NotProductForm as exc:
            if "grows without bound" in str(exc):
                return False  # unstable: certainly not meeting the SLO
            raise
        left = unmodelled_by_solver(None, answer)
        if left:
            raise _LeftOut(_left_out_note(left, f" at {path} = {value:g}"))
        for slo in slos:
            if slo.metric == "throughput":
                estimate = answer.throughput_per_s
            elif slo.metric == "response.mean":
                estimate = answer.response_mean_s
            else:
                q = float(slo.metric.removeprefix("response.p")) / 100
                estimate = -answer.response_mean_s * math.log(1 - q)
            if not slo.met_by_estimate(estimate):
                return False
        return True

    try:
        found = _boundary(meets, direction, integer, start, bounds, factor=2.0, tolerance=1e-4)
    except _LeftOut as exc:
        return None, str(exc)
    except NotProductForm as exc:
        return None, f"the analytic solver refuses: {exc}"
    except ModelError as exc:
        return (
            None,
            f"the analytic solver cannot evaluate it: {exc.args[0].splitlines()[-1].strip()}",
        )
    if found is None:
        return None, "no value in range meets the SLO analytically"
    return (
        found,
        f"{'largest' if direction == 'largest' else 'smallest'} value meeting it analytically "
        "(exact: the solver's network holds every part of the model; a percentile from the mean "
        "as if the response time were exponential)",
    )


def _boundary(
    meets: Callable[[float], bool],
    direction: str,
    integer: bool,
    start: float,
    bounds: tuple[float, float],
    factor: float,
    tolerance: float,
) -> float | None:
    """Cheap serial boundary search, for the analytic predicate."""
    feasible, infeasible = None, None
    value = start
    for _ in range(80):
        if meets(value):
            feasible = value
            if infeasible is not None:
                break
            value = _step(
                value,
                direction,
                toward_feasible=False,
                integer=integer,
                factor=factor,
                bounds=bounds,
            )
        else:
            infeasible = value
            if feasible is not None:
                break
            value = _step(
                value,
                direction,
                toward_feasible=True,
                integer=integer,
                factor=factor,
                bounds=bounds,
            )
        if value in (feasible, infeasible):
            break
    if feasible is None:
        return None
    if infeasible is None:
        return feasible
    while _gap(feasible, infeasible, integer, tolerance):
        middle = _middle(feasible, infeasible, integer)
        if meets(middle):
            feasible = middle
        else:
            infeasible = middle
    return feasible


# --------------------------------------------------------------------------- simulation search
# A search as steps: the generator yields each batch of points to simulate (their tasks) and is
# sent back their records, so that whoever drives it decides where and when the points run --
# one search on an executor (`search`), or many searches side by side, each batch submitted as
# soon as its search's previous batch returned (`Executor.interleave`: a capacity range's draws).
# The points a search asks for depend only on the records it was sent, never on when or where
# they ran, so every driver gives the same answer.
SearchSteps = Generator[list[PointTask], Iterable[dict], CapacityResult]


def search(
    base: SearchBase,
    path: str,
    slos: list[Slo],
    *,
    direction: str,
    integer: bool,
    start: float,
    executor,
    tolerance: float = 0.02,
    bounds: tuple[float, float] | None = None,
    workers: int = 1,
    use_analytic: bool = True,
    knee_points: int = 0,
    on_evaluation: Callable[[Evaluation], None] | None = None,
    busy: tuple[str, ...] = (),
    kept: KeptEvaluations | None = None,
) -> CapacityResult:
    """`busy`: the resources' busy-share metrics to read at each point, to name the bottleneck
    at the answer (`utilization_metrics`); none for a draw's search, which names none.  Each
    batch's points run on `executor` and are recorded as they finish; `kept`: the finished
    evaluations of an earlier run, replayed, and where this run's are kept."""
    bounds = bounds or default_bounds(start, integer)
    guess, note = (
        analytic_guess(base, path, slos, direction, integer, start, bounds)
        if use_analytic
        else (None, "not asked for")
    )
    steps = search_steps(
        base,
        path,
        slos,
        direction=direction,
        integer=integer,
        start=start,
        tolerance=tolerance,
        bounds=bounds,
        workers=workers,
        guess=(guess, note),
        knee_points=knee_points,
        on_evaluation=on_evaluation,
        busy=busy,
        kept=kept,
    )
    try:
        tasks = next(steps)
        while True:
            tasks = steps.send(executor.map_unordered(tasks))
    except StopIteration as finished:
        return finished.value


def default_bounds(start: float, integer: bool) -> tuple[float, float]:
    return (1.0 if integer else start / 2**20), start * 2**20


def search_steps(
    base: SearchBase,
    path: str,
    slos: list[Slo],
    *,
    direction: str,
    integer: bool,
    start: float,
    tolerance: float,
    bounds: tuple[float, float],
    workers: int,
    guess: tuple[float | None, str] = (None, "not asked for"),
    knee_points: int = 0,
    on_evaluation: Callable[[Evaluation], None] | None = None,
    busy: tuple[str, ...] = (),
    kept: KeptEvaluations | None = None,
) -> SearchSteps:
    """The search (bracket, W+1-section, knee) as steps: yields each batch's tasks, is sent
    their records (in any order, as an iterable read as they come), returns the result.
    `guess`: the first value (the analytic guess, or None: the start) and what to say of it.
    `kept`: finished evaluations replayed instead of run (never yielded), and where each
    record is kept as it comes (`sim.studies.capacity.kept`)."""
    first_guess, note = guess
    metrics = tuple(dict.fromkeys(s.metric for s in slos))
    done: dict[float, Evaluation] = {}

    def evaluate(values: list[float]) -> Generator[list[PointTask], Iterable[dict], None]:
        todo = [v for v in dict.fromkeys(values) if v not in done]
        if not todo:
            return
        asked = (*metrics, *busy)
        tasks = [_task(base, path, v, integer, asked, i) for i, v in enumerate(todo)]
        # the kept evaluations first (a rerun after an interruption), then those that run,
        # each kept as soon as its record comes back
        keys = [kept.fingerprint(task, slos) if kept else None for task in tasks]
        known = [kept.recall(key, task) if kept else None for key, task in zip(keys, tasks)]
        fresh = {t.point_id: (t, k) for t, k, r in zip(tasks, keys, known) if r is None}
        for record in known:
            if record is not None:
                finished(record)
        if fresh:
            records = yield [task for task, _ in fresh.values()]
            for record in records:
                finished(record)
                if kept is not None:
                    task, key = fresh[record["point_id"]]
                    kept.keep(key, record, task)

    def finished(record: dict) -> None:
        evaluation = _evaluation(record, path, slos, metrics, base.error_budget, busy)
        done[evaluation.value] = evaluation
        if on_evaluation is not None:
            on_evaluation(evaluation)

    factor = 1.25 if first_guess is not None else 2.0
    first = _clamp(first_guess if first_guess is not None else start, bounds, integer)
    feasible, infeasible = yield from _bracket(
        evaluate, done, first, direction, integer, factor, bounds, workers
    )
    while (
        feasible is not None
        and infeasible is not None
        and _gap(feasible, infeasible, integer, tolerance)
    ):
        inner = _interior(feasible, infeasible, integer, workers)
        yield from evaluate(inner)
        for value in sorted(inner, reverse=direction == "smallest"):  # from the feasible end
            if not done[value].met:
                infeasible = value
                break
            feasible = value
    result = CapacityResult(
        path,
        direction,
        slos,
        list(done.values()),
        done.get(feasible) if feasible is not None else None,
        done.get(infeasible) if infeasible is not None else None,
        first_guess,
        note,
        error_budget=base.error_budget,
    )
    if feasible is None:
        result.notes.append(f"no value of {path} in [{bounds[0]:g}, {bounds[1]:g}] meets the SLO")
    elif infeasible is None:
        result.notes.append(
            f"every value of {path} tried meets the SLO, up to the bound {feasible:g}"
        )
    said = _bottleneck_note(result, path, base)
    if said:
        result.notes.append(said)
    if knee_points and result.best is not None:
        yield from _knee(result, evaluate, done, integer, knee_points, bounds)
    return result


def utilization_metrics(names: Iterable[str]) -> tuple[str, ...]:
    """Of a run's metric names, each resource's busy share (its CPUs and slot pools, the
    database's lock: `<resource>.utilization`)."""
    suffix = ".utilization"
    return tuple(sorted(n for n in names if n.endswith(suffix) and "." in n[: -len(suffix)]))


def _bottleneck_note(result: CapacityResult, path: str, base: SearchBase) -> str:
    """The bottleneck where the SLO stops being met: at the first value beyond the answer, or,
    when no value meets it, at the value tried farthest toward meeting it (the most nodes).
    The resources ranked are the base model's, whose busy shares every point reads."""
    from sim.studies.capacity.bottleneck import bottleneck
    from sim.studies.metrics import holds

    at = result.neighbour or result.best
    if result.best is None and result.evaluations:
        tried = [e for e in result.evaluations if e.utilization]
        if tried:
            at = (max if result.direction == "smallest" else min)(tried, key=lambda e: e.value)
    if at is None or not at.utilization:
        return ""
    found = bottleneck(at.utilization, holds(base.model()))
    return "" if found is None else found.sentence(path, at.value)


def _bracket(evaluate, done, first, direction, integer, factor, bounds, workers):
    yield from evaluate([first])
    feasible = first if done[first].met else None
    infeasible = None if done[first].met else first
    value = first
    while feasible is None or infeasible is None:
        toward_feasible = feasible is None
        batch = []
        for _ in range(max(1, workers)):
            value = _step(value, direction, toward_feasible, integer, factor, bounds)
            if value in done or value in batch:
                break
            batch.append(value)
        if not batch:
            break  # reached a bound
        yield from evaluate(batch)
        for candidate in batch:  # in order, moving away from the first value
            if done[candidate].met == toward_feasible:
                if toward_feasible:
                    feasible = candidate
                else:
                    infeasible = candidate
                break
            if toward_feasible:
                infeasible = candidate
            else:
                feasible = candidate
    return feasible, infeasible


def _knee(result: CapacityResult, evaluate, done, integer, points, bounds):
    """Evaluate the metric curve on `points` evenly spaced values and mark its knee."""
    assert result.best is not None  # called only when a value meets the SLO
    edge = result.neighbour.value if result.neighbour is not None else result.best.value
    if result.direction == "largest":
        low, high = max(bounds[0], edge / points), edge
    else:
        low, high = edge, min(bounds[1], max(edge * 4, edge + points))
    values = [_clamp(low + (high - low) * k / (points - 1), bounds, integer) for k in range(points)]
    yield from evaluate(values)
    metric = result.slos[0].metric
    curve = sorted(
        (e for e in done.values() if low <= e.value <= high and metric in e.metrics),
        key=lambda e: e.value,
    )
    index = knee([e.value for e in curve], [e.metrics[metric][0] for e in curve])
    result.evaluations = list(done.values())
    result.knee = curve[index] if index is not None else None


def _task(
    base: SearchBase, path: str, value: float, integer: bool, metrics, index: int
) -> PointTask:
    from sim.studies.sweep.design import point_id

    return PointTask(
        point_id=point_id({path: value}),
        index=index,
        values={path: value},
        overrides=(*base.overrides, f"{path}={_literal(value, integer)}"),
        seed=base.seed,
        replications=base.replications,
        metrics=metrics,
        raw_model=base.raw_model,
        source=base.source,
        base_dir=base.base_dir,
    )


def _evaluation(
    record: dict, path: str, slos: list[Slo], metrics, error_budget: float, busy=()
) -> Evaluation:
    value = record[path]
    if record["status"] != "ok":
        if record["error_kind"] in ("unstable", "unfinished"):
            return Evaluation(value, {}, False, note=record["error_kind"])
        raise CapacityError(f"{path} = {value:g}: {record['error']}")
    values = {m: (record[m], record[f"{m}.ci_low"], record[f"{m}.ci_high"]) for m in metrics}
    share = (
        record[FAILED_SHARE],
        record[f"{FAILED_SHARE}.ci_low"],
        record[f"{FAILED_SHARE}.ci_high"],
    )
    latency = all(slo.met(values[slo.metric][1], values[slo.metric][2]) for slo in slos)
    budget = within_budget(share[2], error_budget)
    note = OVER_BUDGET if latency and not budget else ""
    return Evaluation(
        value,
        values,
        latency and budget,
        note=note,
        failed_share=share,
        failed=record["count.failed"],
        completed=record["count.completed"],
        replications=int(record["replications"]),
        window_s=record["window_s"],
        warmup_s=record["warmup_s"],
        warnings=tuple(json.loads(record["warnings"])),
        utilization={m: record[m] for m in busy if m in record and record[m] == record[m]},
    )


def _literal(value: float, integer: bool) -> str:
    return toml_literal(int(value) if integer else float(value))


def _clamp(value: float, bounds: tuple[float, float], integer: bool) -> float:
    value = min(max(value, bounds[0]), bounds[1])
    return round(value) if integer else value


def _step(value, direction, toward_feasible, integer, factor, bounds):
    # For a load (largest), more is harder; for a capacity (smallest), more is easier.
    up = toward_feasible == (direction == "smallest")
    moved = value * factor if up else value / factor
    if integer:
        moved = max(round(moved), int(value) + 1) if up else min(round(moved), int(value) - 1)
    return _clamp(moved, bounds, integer)


def _gap(feasible, infeasible, integer, tolerance) -> bool:
    """True while the bracket is wider than the tolerance (relative; whole numbers: to 1)."""
    width, allowed = abs(infeasible - feasible), tolerance * abs(feasible)
    return width > max(1.0, allowed) if integer else width > allowed


def _middle(a, b, integer):
    return (a + b) // 2 if integer else (a + b) / 2


def _interior(feasible, infeasible, integer, workers):
    values = [feasible + (infeasible - feasible) * k / (workers + 1) for k in range(1, workers + 1)]
    if integer:
        values = [round(v) for v in values]
        values = [v for v in dict.fromkeys(values) if v not in (feasible, infeasible)] or [
            _middle(feasible, infeasible, integer)
        ]
    return values
