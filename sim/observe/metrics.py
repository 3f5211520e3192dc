"""Turn two recorder snapshots into the named metrics of a window.

Metric names are the stable public vocabulary (the `--json` document, sweep columns):
`throughput`, `response.mean`, `response.p95`, `count.timed_out`, `<station>.wait`,
`<pool>.utilization`, `<cpu>.utilization`, ...  Times in seconds, rates per second.
"""

from __future__ import annotations

import math

import numpy as np

PERCENTILES = (50, 90, 95, 99)


def window_metrics(
    columns: list[str],
    start: np.ndarray,
    end: np.ndarray,
    histogram: np.ndarray | None,
    bins,
    capacities: dict[str, float],
) -> dict[str, float]:
    """Metrics of the window between two cumulative snapshots (`histogram` = end - start)."""
    delta = dict(zip(columns, end - start))
    level = dict(zip(columns, end))  # the value at the window's end, for gauges
    elapsed = delta["time"]
    completed = delta["completed"]
    out: dict[str, float] = {}
    out["elapsed"] = elapsed
    out["throughput"] = completed / elapsed if elapsed > 0 else math.nan
    out["response.mean"] = delta["response_sum"] / completed if completed > 0 else math.nan
    if histogram is not None:
        total = int(histogram.sum())
        if total > 0:
            values = bins.quantiles(histogram, [p / 100 for p in PERCENTILES])
            for p, value in zip(PERCENTILES, values):
                out[f"response.p{p}"] = float(value)
        else:
            for p in PERCENTILES:
                out[f"response.p{p}"] = math.nan
    for name in (
        "completed",
        "arrived",
        "timed_out",
        "errors",
        "failed",
        "retried",
        "late",
        "syn_retransmits",
    ):
        out[f"count.{name}"] = delta[name]

    def ratio(a: float, b: float) -> float:
        return a / b if b > 0 else math.nan

    for key, value in delta.items():
        if ":" not in key:
            continue
        probe, field = key.split(":", 1)
        kind = capacities.get(f"{probe}#kind")
        if kind == "pool":
            if field == "busy_area":
                out[f"{probe}.busy"] = ratio(value, elapsed)
                capacity = capacities.get(probe, math.inf)
                if math.isfinite(capacity):
                    out[f"{probe}.utilization"] = ratio(value, elapsed * capacity)
            elif field == "queue_area":
                out[f"{probe}.queue"] = ratio(value, elapsed)
            elif field == "refused":
                out[f"{probe}.refused"] = value
            elif field == "wait_sum":
                out[f"{probe}.wait"] = ratio(value, delta[f"{probe}:acquired"])
        elif kind == "cpu":
            if field == "busy_area":
                out[f"{probe}.utilization"] = ratio(value, elapsed * capacities[probe])
            elif field == "jobs_area":
                out[f"{probe}.runnable"] = ratio(value, elapsed)
        elif kind == "station":
            visits = delta[f"{probe}:visits"]
            if field == "visits":
                out[f"{probe}.throughput"] = ratio(value, elapsed)
            elif field == "wait_sum":
                out[f"{probe}.wait"] = ratio(value, visits)
            elif field == "residence_sum":
                out[f"{probe}.residence"] = ratio(value, visits)
                exclusive = value - delta[f"{probe}:wait_sum"] - delta[f"{probe}:downstream_sum"]
                out[f"{probe}.service"] = ratio(exclusive, visits)
            elif field == "failed":
                out[f"{probe}.failed"] = value
        elif kind == "replication":
            if field == "wait_sum":  # time a replicating request spent on it, thread held
                out[f"{probe}.wait"] = ratio(value, delta[f"{probe}:replicated"])
            else:
                out[f"{probe}.{field}"] = value
        elif kind == "jvm":
            if field == "gc_time":
                out[f"{probe}.gc_fraction"] = ratio(value, elapsed)
            elif field in ("young_gcs", "full_gcs"):
                out[f"{probe}.{field}"] = value
            else:  # gauges: sessions held, live and old-generation MiB, resident MiB, out of memory
                out[f"{probe}.{field}"] = level[key]
        elif kind == "dispatcher":
            if field.startswith("#"):  # the balancer's own counts (failovers, sessions lost ...)
                out[f"{probe}.{field[1:]}"] = value
                continue
            total = sum(v for k, v in delta.items() if k.startswith(f"{probe}:") and "#" not in k)
            out[f"{probe}.share.{field}"] = ratio(value, total)
            out[f"{probe}.dispatched.{field}"] = value
    return out
