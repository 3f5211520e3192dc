"""Turn two recorder snapshots into the named metrics of a window.

Metric names are the stable public vocabulary (the `--json` document, sweep columns):
`throughput`, `response.mean`, `response.p95`, `count.timed_out`, `<station>.wait`,
`<pool>.utilization`, `<cpu>.utilization`, ...  Times in seconds, rates per second.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from sim.observe.probes import PER_SECOND, REQUESTS, SECONDS, Measures, Window, ratio

PERCENTILES = (50, 90, 95, 99)
# the recorder's own counts of request outcomes, reported as `count.<name>`
COUNTS = (
    "completed",
    "arrived",
    "timed_out",
    "errors",
    "failed",
    "retried",
    "late",
    "syn_retransmits",
)


def window_metrics(
    columns: list[str],
    start: np.ndarray,
    end: np.ndarray,
    histogram: np.ndarray | None,
    bins,
    probes: Sequence[Measures],
    units: dict[str, str] | None = None,
) -> dict[str, float]:
    """Metrics of the window between two cumulative snapshots (`histogram` = end - start).
    Each probe names and measures its own metrics; their units go into `units` when given."""
    delta = dict(zip(columns, end - start))
    level = dict(zip(columns, end))  # the value at the window's end, for gauges
    elapsed = delta["time"]
    completed = delta["completed"]
    out: dict[str, float] = {}
    unit: dict[str, str] = {} if units is None else units
    out["elapsed"] = elapsed
    unit["elapsed"] = SECONDS
    out["throughput"] = ratio(completed, elapsed)
    unit["throughput"] = PER_SECOND
    out["response.mean"] = ratio(delta["response_sum"], completed)
    unit["response.mean"] = SECONDS
    if histogram is not None:
        total = int(histogram.sum())
        values = (
            bins.quantiles(histogram, [p / 100 for p in PERCENTILES])
            if total > 0
            else [math.nan] * len(PERCENTILES)
        )
        for p, value in zip(PERCENTILES, values):
            out[f"response.p{p}"] = float(value)
            unit[f"response.p{p}"] = SECONDS
    for name in COUNTS:
        out[f"count.{name}"] = delta[name]
        unit[f"count.{name}"] = REQUESTS
    for probe in probes:
        prefix = f"{probe.name}:"
        window = Window(
            {f: delta[prefix + f] for f in probe.fields},
            {f: level[prefix + f] for f in probe.fields},
            elapsed,
        )
        for name, value, measured_in in probe.metrics(window):
            out[f"{probe.name}.{name}"] = value
            unit[f"{probe.name}.{name}"] = measured_in
    return out
