"""The metric vocabulary of the studies: the friendly names a user may give (`--slo p95<1`, a
sweep's `metrics`) and the names a model's run reports (`<component>.<metric>`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim.model.features import Hold

# Friendly metric names (the CLI's `--slo p95<1` and a sweep's `metrics`) -> metric names.
METRIC_ALIASES = {
    "mean": "response.mean",
    "p50": "response.p50",
    "p90": "response.p90",
    "p95": "response.p95",
    "p99": "response.p99",
    "median": "response.p50",
}


def metric_name(name: str) -> str:
    return METRIC_ALIASES.get(name, name)


def holds(model) -> tuple[Hold, ...]:
    """The resources a run of `model` measures (`<name>.utilization`), each at its depth in
    the nesting of holds, as the stack parts declare them (`sim.model.features.Hold`), from
    the stack's probe layout (`sim.model.parts.probes`)."""
    from sim.model.plan import compile_plan

    stack = compile_plan(model).stack
    assert stack is not None  # compile_plan always decides the stack
    return stack.probes.holds


def metric_names(model) -> set[str]:
    """Every metric name a run of `model` reports, learnt from the stack's probe layout
    (`sim.model.parts.probes`) without building or running anything: each probe's view names
    its metrics as the component does."""
    import numpy as np

    from sim.model.plan import compile_plan
    from sim.observe.metrics import window_metrics
    from sim.observe.trace import BINS

    stack = compile_plan(model).stack
    assert stack is not None  # compile_plan always decides the stack
    layout = stack.probes
    row = np.zeros(len(layout.columns))
    names = set(
        window_metrics(list(layout.columns), row, row, np.ones(BINS.n_bins), BINS, layout.views())
    )
    names.add("count.in_flight")
    if model.finite:
        names.add("makespan")
    repeat = getattr(model.clients, "repeat", 1)
    names |= {f"batch.{k}.{name}" for k in range(1, repeat + 1) for name in list(names)}
    return names
