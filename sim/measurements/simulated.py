"""A simulated run as measurement-table rows, so that tiersim's output goes through the same
estimation and comparison as a measured one.

Each replication is its own run (`<name>#<r>`) with one window: its observation period after
the warm-up. Rows carry the replication's `throughput`, `response.*`, `count.completed`,
`count.errors` and every `<node>.cpu.utilization`, under the metric names tiersim uses.
A run with request classes gives one row per class (its `class.NAME.*` metrics) beside
`total`; a run without gives one row of class `class_name`.
"""

from __future__ import annotations

import math

from sim.measurements.classes import TOTAL
from sim.measurements.table import CPU_SUFFIX, FIXED, Row


def rows_from_run(result, name: str, class_name: str = "requests") -> list[Row]:
    """Rows of a `sim.run.replications.run` result (a RunResult)."""
    clients = result.model.clients
    users = float(getattr(clients, "users", math.nan) or math.nan)
    rate = float(getattr(clients, "rate_per_s", math.nan) or math.nan)
    rows: list[Row] = []
    for replication in result.replications:
        metrics = replication.metrics
        start = float(replication.warmup_s)
        base: Row = {
            "run": f"{name}#{replication.replication}",
            "window_start_s": start,
            "window_end_s": start + float(metrics["elapsed"]),
            "users": users,
            "arrival_rate_per_s": rate,
        }
        for column in FIXED[6:]:
            if column in metrics:
                base[column] = float(metrics[column])
        for metric, value in metrics.items():
            if metric.endswith(CPU_SUFFIX):
                base[metric] = float(value)
        classes = sorted(
            {m.split(".")[1] for m in metrics if m.startswith("class.") and m.count(".") >= 2}
        )
        if not classes:
            rows += [{**base, "class": class_name}, {**base, "class": TOTAL}]
            continue
        hosts = {m: v for m, v in base.items() if m.endswith(CPU_SUFFIX)}
        window = {k: base[k] for k in ("run", "window_start_s", "window_end_s", "users")}
        window["arrival_rate_per_s"] = rate
        for name in classes:
            prefix = f"class.{name}."
            own: Row = {**window, **hosts, "class": name}
            for column in FIXED[6:]:
                if prefix + column in metrics:
                    own[column] = float(metrics[prefix + column])
            rows.append(own)
        rows.append({**base, "class": TOTAL})
    return rows
