"""Independent replications and their confidence intervals.

Replication r of a run uses streams keyed (seed, r), so a run's numbers do not depend on
how many replications ran before it, nor on whether they ran in parallel.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sim import __version__
from sim.model.plan import Plan, compile_plan
from sim.model.schema import Model
from sim.run.replication import ReplicationResult, TimeseriesSink, run_replication
from sim.stats.confidence import Interval, t_interval


class UnknownMetric(ValueError):
    """The precision rule names a metric the model does not produce."""


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
    summary = {}
    for name in names:
        values = [rep.metrics.get(name, math.nan) for rep in replications]
        finite = [v for v in values if not math.isnan(v)]
        if not finite:
            continue
        summary[name] = t_interval(finite, level)
    return summary


def run(
    model: Model,
    *,
    replications: int | None = None,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    timeseries: TimeseriesSink | None = None,
    plan: Plan | None = None,
) -> RunResult:
    """Run the model's replications (or the sequential precision rule) and summarise them.
    The model's plan is compiled once for all replications (`sim.run.simulate` passes it)."""
    started = time.perf_counter()
    plan = compile_plan(model) if plan is None else plan
    control = model.run
    seed = control.seed if seed is None else seed
    planned = replications or control.replications
    precision = control.precision if replications is None else None
    limit = precision.max_replications if precision else planned
    results: list[ReplicationResult] = []
    stopped_by = "replications"
    r = 0
    while r < limit:
        try:
            results.append(run_replication(model, r, seed, timeseries, plan))
        except KeyboardInterrupt:
            if not results:
                raise
            stopped_by = "interrupted"  # keep the finished replications
            break
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
            interval = summarise(results, control.confidence).get(precision.metric)
            if (
                interval is not None
                and interval.relative_half_width <= precision.relative_half_width
            ):
                stopped_by = "precision"
                break
    else:
        if precision is not None:
            stopped_by = "precision-limit"
    return RunResult(
        model=model,
        seed=seed,
        confidence=control.confidence,
        replications=results,
        summary=summarise(results, control.confidence),
        stopped_by=stopped_by,
        wall_s=time.perf_counter() - started,
    )
