"""One replication: a pure function (model, seed, replication index) -> metrics, on the engine
`run.engine` selects (`sim.engines.choose`: by the features the model's plan uses).

Steady-state runs remove the warm-up (a fixed time, or MSER after the fact); finite
workloads (`ab -n`, a fixed number of requests per user) run to completion and report
their makespan, with no deletion: there the transient *is* the result.
"""

from __future__ import annotations

from collections.abc import Callable

from sim.engines import EngineChoice, choose
from sim.model.plan import Plan, compile_plan
from sim.model.schema import Model
from sim.observe.trace import TimeseriesSink
from sim.run.finish import ReplicationResult, finish
from sim.tiers.clients.populations import RunawayQueue

__all__ = ["ReplicationResult", "RunawayQueue", "TimeseriesSink", "run_replication"]


def run_replication(
    model: Model,
    replication: int,
    seed: int | None = None,
    timeseries: TimeseriesSink | None = None,
    plan: Plan | None = None,
    choice: EngineChoice | None = None,
    simulated: Callable[[float, float], None] | None = None,
) -> ReplicationResult:
    """One replication on the engine `run.engine` selects (or `choice`, made once for a run of
    replications); a note says which engine ran and why.  `simulated(now_s, until_s)` hears
    how far the replication has come, several times a second, on either engine (at its
    pauses, `sim.engines.pauses`)."""
    plan = compile_plan(model) if plan is None else plan
    choice = choose(plan) if choice is None else choice
    seed = model.run.seed if seed is None else seed
    if choice.engine == "compiled":
        from sim.engines.compiled.engine import run_trace as run_compiled

        trace = run_compiled(plan, replication, seed, timeseries, simulated)
    else:
        from sim.engines.reference.replication import run_trace as run_reference

        trace = run_reference(plan, replication, seed, timeseries, simulated)
    completed = trace.metrics.get("count.completed", 0.0)  # over the whole recording
    result = finish(trace)
    result.engine = choice.engine
    result.notes.insert(0, choice.note)
    run = model.run
    if run.duration_s is not None and run.requests is not None and not model.finite:
        # two stop rules: whichever comes first ends the run, and the result says which
        result.notes.append(
            f"ended by run.requests = {run.requests} before run.duration_s = {run.duration_s:g} s"
            if completed >= run.requests
            else f"ended by run.duration_s = {run.duration_s:g} s after {completed:.0f} of "
            f"run.requests = {run.requests} responses"
        )
    return result
