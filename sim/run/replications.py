"""Independent replications and their confidence intervals.

Replication r of a run uses streams keyed (seed, r), so a run's numbers do not depend on
how many replications ran before it, nor on whether they ran in parallel.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from sim import __version__
from sim.engines import EngineChoice, choose
from sim.model.plan import Plan, compile_plan
from sim.model.schema import Model
from sim.model.workload import estimate
from sim.run.replication import ReplicationResult, TimeseriesSink, run_replication
from sim.stats.confidence import Interval, t_intervals
from sim.stats.windows import PooledWindows


class UnknownMetric(ValueError):
    """The precision rule names a metric the model does not produce."""


class KeptReplications(Protocol):
    """Finished replications kept as each finishes, so that a rerun after Ctrl-C replays them
    instead of running them again (`sim.studies.kept_replications`, `tiersim run --cache`).
    A replication is a pure function of the model, the seed and its index (and the engine,
    whose note it carries), so a kept one is the one a run would make."""

    def recall(
        self, model: Model, seed: int, choice: EngineChoice, replication: int
    ) -> ReplicationResult | None: ...

    def keep(
        self, model: Model, seed: int, choice: EngineChoice, result: ReplicationResult
    ) -> None: ...


@dataclass
class RunResult:
    model: Model
    seed: int
    confidence: float
    replications: list[ReplicationResult]
    summary: dict[str, Interval] = field(default_factory=dict)
    stopped_by: str = "replications"  # or "precision", "precision-limit", "interrupted"
    wall_s: float = 0.0
    version: str = __version__
    warnings: list[str] = field(default_factory=list)  # steady state not reached, run too short

    @property
    def units(self) -> dict[str, str]:
        """Each metric's unit, as its probe declared it."""
        out: dict[str, str] = {}
        for rep in self.replications:
            out.update(rep.units)
        return out


def summarise(replications: list[ReplicationResult], level: float) -> dict[str, Interval]:
    names: list[str] = []
    for rep in replications:
        for name in rep.metrics:
            if name not in names:
                names.append(name)
    samples: dict[str, list[float]] = {}
    for name in names:
        values = [rep.metrics.get(name, math.nan) for rep in replications]
        finite = [v for v in values if not math.isnan(v)]
        if finite:
            samples[name] = finite
    return t_intervals(samples, level)


def run(
    model: Model,
    *,
    replications: int | None = None,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    timeseries: TimeseriesSink | None = None,
    plan: Plan | None = None,
    simulated: Callable[[float, float], None] | None = None,
    kept: KeptReplications | None = None,
) -> RunResult:
    """Run the model's replications (or the sequential precision rule) and summarise them.
    The model's plan is compiled once for all replications (`sim.run.simulate` passes it).
    `progress(done, total)` hears of each finished replication, `simulated(now_s, until_s)`
    of the one under way (`sim.run.replication.run_replication`).  `kept`: replications kept
    by an earlier run are replayed, and each one run is kept as it finishes."""
    started = time.perf_counter()
    plan = compile_plan(model) if plan is None else plan
    control = model.run
    seed = control.seed if seed is None else seed
    planned = replications or control.replications
    precision = control.precision if replications is None else None
    limit = precision.max_replications if precision else planned
    # one engine for every replication, chosen by the size of the whole run
    choice = choose(
        plan,
        estimate(model, plan, replications=limit, timeseries=timeseries is not None).events,
    )
    results: list[ReplicationResult] = []
    windows = None
    stopped_by = "replications"
    r = 0
    while r < limit:
        try:
            result = kept.recall(model, seed, choice, r) if kept is not None else None
            if result is None:
                result = run_replication(model, r, seed, timeseries, plan, choice, simulated)
                if kept is not None:
                    kept.keep(model, seed, choice, result)
            results.append(result)
        except KeyboardInterrupt:
            if not results:
                raise
            stopped_by = "interrupted"  # keep the finished replications
            break
        if windows is None:
            windows = _pooled_windows(model, results[0])
        if windows is not None and results[-1].window is not None:
            # the windows `finish` computed for this replication alone, pooled, not again
            windows.add(results[-1].window, results[-1].metrics, results[-1].windowed)
            results[-1].window = None  # the candidate windows are large; the pool keeps enough
            results[-1].windowed = None
        r += 1
        if r == 1 and precision is not None and precision.metric not in results[0].metrics:
            known = ", ".join(sorted(results[0].metrics))
            raise UnknownMetric(
                f"run.precision.metric = {precision.metric!r} is not a metric of this model; one of: {known}"
            )
        if progress is not None:
            progress(r, limit if precision else planned)
        if precision is None:
            if r >= planned:
                break
            continue
        if r >= max(planned, 2):
            summary, warnings = _common_window(windows, results, control.confidence)
            interval = summary.get(precision.metric)
            # A run that is not in steady state, or too short for its intervals, has not met
            # the precision rule however narrow they are: it goes on to the limit and says so.
            if (
                interval is not None
                and interval.relative_half_width <= precision.relative_half_width
                and not warnings
            ):
                stopped_by = "precision"
                break
    else:
        if precision is not None:
            stopped_by = "precision-limit"
    if windows is not None:
        summary, warnings = _common_window(windows, results, control.confidence)
    else:
        summary, warnings = summarise(results, control.confidence), []
    if stopped_by == "precision-limit" and warnings:
        warnings.append(
            f"run.precision: not met within {limit} replications while the other warnings "
            "stand; more replications do not remove start-up bias: run longer"
        )
    return RunResult(
        model=model,
        seed=seed,
        confidence=control.confidence,
        replications=results,
        summary=summary,
        stopped_by=stopped_by,
        wall_s=time.perf_counter() - started,
        warnings=warnings,
    )


def _pooled_windows(model: Model, first: ReplicationResult) -> PooledWindows | None:
    if first.window is None:
        return None
    from sim.observe.metrics import PERCENTILES
    from sim.observe.trace import BINS

    mser = not model.finite and model.run.warmup == "mser"
    metrics_between = first.window.metrics_between
    assert metrics_between is not None  # run_replication sets it on every window it returns
    return PooledWindows(metrics_between, BINS, PERCENTILES, mser=mser)


def _common_window(
    windows: PooledWindows | None, results: list[ReplicationResult], level: float
) -> tuple[dict[str, Interval], list[str]]:
    """One warm-up for all replications (chosen on their average), their metrics re-windowed
    to it, and the summary with pooled percentiles and the steady-state checks."""
    if windows is None:
        return summarise(results, level), []
    windows.choose_window()
    for index, rep in enumerate(results):
        rep.metrics = windows.metrics(index)
        rep.warmup_s = windows.warmup_s
    return windows.summarise([rep.metrics for rep in results], level)
