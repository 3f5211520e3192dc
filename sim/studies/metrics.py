"""The metric vocabulary of the studies: the friendly names a user may give (`--slo p95<1`, a
sweep's `metrics`) and the names a model's run reports (`<component>.<metric>`)."""

from __future__ import annotations

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


def metric_names(model) -> set[str]:
    """Every metric name a run of `model` reports, found by building the model's components
    without running them (the names depend on its stations, pools and probes, not on the
    simulation).  The stack plan lists the probes without building anything; until it does,
    the assembly is the one place that knows them."""
    import numpy as np

    from sim.engines.reference.assemble import assemble
    from sim.observe.metrics import window_metrics
    from sim.observe.recorder import Recorder
    from sim.observe.trace import BINS
    from sim.random.streams import Streams

    assembly, recorder = assemble(
        model, Streams(0, 0), lambda kernel, a: Recorder(kernel, a.probes(), BINS, recording=False)
    )
    row = np.zeros(len(recorder.columns))
    names = set(
        window_metrics(recorder.columns, row, row, np.ones(BINS.n_bins), BINS, assembly.probes())
    )
    names.add("count.in_flight")
    if model.finite:
        names.add("makespan")
    repeat = getattr(model.clients, "repeat", 1)
    names |= {f"batch.{k}.{name}" for k in range(1, repeat + 1) for name in list(names)}
    return names
