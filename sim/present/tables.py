"""The two faces of a result: a readable table (rich) and a stable JSON document.

The JSON document's layout is versioned (`schema_version`) and described in
docs/json-output.md; scripts may rely on it.
"""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sim.present.failures import (
    FAILED_SHARE,
    FAILED_SHARE_MEANING,
    is_latency,
    with_failed_share,
)
from sim.run.replications import RunResult
from sim.stats.confidence import Interval

SCHEMA_VERSION = 1


def _number(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def interval_json(interval: Interval) -> dict[str, Any]:
    return {
        "mean": _number(interval.mean),
        "half_width": _number(interval.half_width),
        "low": _number(interval.low),
        "high": _number(interval.high),
        "n": interval.n,
    }


def result_document(result: RunResult, source: str, overrides: list[str]) -> dict[str, Any]:
    model = result.model
    units = result.units
    notes = sorted({note for rep in result.replications for note in rep.notes})
    return {
        "schema_version": SCHEMA_VERSION,
        "tiersim_version": result.version,
        "model": {"name": model.meta.name, "file": source, "overrides": list(overrides)},
        "run": {
            "workload": "finite" if model.finite else "steady",
            "seed": result.seed,
            "replications": len(result.replications),
            "confidence": result.confidence,
            "stopped_by": result.stopped_by,
            "warmup": model.run.warmup if not model.finite else "none",
            "wall_s": result.wall_s,
        },
        "metrics": {
            name: {**interval_json(interval), "unit": units.get(name) or _derived_unit(name)}
            for name, interval in _with_failed_share(result).items()
        },
        "replications": [
            {
                "replication": rep.replication,
                "warmup_s": rep.warmup_s,
                "finished": rep.finished,
                "metrics": {k: _number(v) for k, v in rep.metrics.items()},
            }
            for rep in result.replications
        ],
        "notes": notes,
        "warnings": list(result.warnings),
    }


def _fmt(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-3:
        return f"{x:.4g}"
    return f"{x:.4g}" if abs(x) < 100 else f"{x:,.1f}"


def plain(x: float | None, digits: int = 4) -> str:
    """A number as people write it: `digits` significant digits (a large number whole),
    never an exponent (2834, 0.0412, 123456), with trailing zeros dropped."""
    if x is None or not math.isfinite(x):
        return "-"
    if x == 0:
        return "0"
    if abs(x) < 1e-9:  # not a figure anyone measures: the exponent is the information
        return f"{x:.{digits - 1}e}"
    magnitude = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{x:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _row(table: Table, label: str, interval: Interval | None, unit: str) -> None:
    if interval is None:
        return
    hw = interval.half_width
    table.add_row(
        label,
        _fmt(interval.mean),
        "-" if not math.isfinite(hw) else f"± {_fmt(hw)}",
        f"[{_fmt(interval.low)}, {_fmt(interval.high)}]" if math.isfinite(hw) else "-",
        unit,
    )


def render(result: RunResult, console: Console, source: str) -> None:
    model = result.model
    units = result.units
    summary = result.summary
    reps = len(result.replications)
    level = round(result.confidence * 100)
    console.print(f"[bold]{model.meta.name}[/bold]  ({source})")
    workload = (
        "finite workload, run to completion"
        if model.finite
        else f"steady state, warm-up: {model.run.warmup}"
    )
    console.print(
        f"{reps} replication{'s' if reps != 1 else ''}, seed {result.seed}, {workload}"
        f"{_window(result)}; "
        f"{level}% intervals (Student-t across replications; percentiles pooled, by sectioning; "
        f"lower bounds clipped at 0); stopped by {result.stopped_by}; {result.wall_s:.1f} s wall"
    )
    # Before the tables, not after: a figure of a run that is not in steady state must not be
    # read without the warning.
    for warning in result.warnings:
        console.print(f"[bold red]warning:[/bold red] {escape(warning)}")

    summary = _with_failed_share(result)
    units = {**units, FAILED_SHARE: "fraction"}

    def section(title: str, rows: list[tuple[str, str]]) -> None:
        present = [(label, name) for label, name in rows if name in summary]
        if not present:
            return
        # a table of latencies (a tier's wait, a batch's response time) is of the answered
        # requests: the run's failed share heads it unless the table has its own
        shown_share = any(name.endswith(FAILED_SHARE) for _, name in present)
        latency = any(is_latency(name, units.get(name)) for _, name in present)
        if latency and not shown_share and FAILED_SHARE in summary:
            present.insert(0, ("requests failed (share)", FAILED_SHARE))
        table = Table(title=title, title_justify="left", show_edge=False, header_style="bold")
        for column in ("metric", "mean", f"±{level}%", "interval", "unit"):
            table.add_column(column, justify="left" if column in ("metric", "unit") else "right")
        for label, name in present:
            _row(table, label, summary.get(name), units.get(name, ""))
        console.print(table)

    # the failed share beside the latencies: they are of the answered requests only
    headline = [
        ("throughput", "throughput"),
        ("requests failed (share)", FAILED_SHARE),
        ("response mean", "response.mean"),
    ]
    headline += [(f"response p{p}", f"response.p{p}") for p in (50, 90, 95, 99)]
    if model.finite:
        headline.insert(0, ("makespan", "makespan"))
    section("Requests", headline)
    classes = [c.name for c in model.classes]
    section(
        "Request classes",
        [
            (f"{name} {label}", f"class.{name}.{metric}")
            for name in classes
            for label, metric in (
                ("throughput", "throughput"),
                ("requests failed (share)", FAILED_SHARE),
                ("response mean", "response.mean"),
                ("response p95", "response.p95"),
            )
        ]
        + [
            (f"{name} {c.replace('_', ' ')}", f"class.{name}.count.{c}")
            for name in classes
            for c in ("errors", "timed_out", "failed")
            if _nonzero(summary, f"class.{name}.count.{c}")
        ],
    )
    counts = [
        "completed",
        "arrived",
        "timed_out",
        "errors",
        "failed",
        "retried",
        "late",
        "syn_retransmits",
        "in_flight",
    ]
    section(
        "Counts (per replication, inside the window)",
        [
            (c.replace("_", " "), f"count.{c}")
            for c in counts
            if c in ("completed", "arrived") or _nonzero(summary, f"count.{c}")
        ],
    )
    whole = [
        name for name in summary if not name.startswith("batch.")
    ]  # batch windows have their section
    stations = [name[: -len(".residence")] for name in whole if name.endswith(".residence")]
    rows = []
    for station in stations:
        rows += [
            (f"{station} wait", f"{station}.wait"),
            (f"{station} service", f"{station}.service"),
        ]
    section(
        "Time at each tier (per visit: waiting for a slot / own work, downstream excluded)", rows
    )
    pools = [name[: -len(".busy")] for name in whole if name.endswith(".busy")]
    rows = []
    for pool in pools:
        rows += [
            (f"{pool} busy", f"{pool}.busy"),
            (f"{pool} utilization", f"{pool}.utilization"),
            (f"{pool} queue", f"{pool}.queue"),
        ]
        if _nonzero(summary, f"{pool}.refused"):
            rows.append((f"{pool} refused", f"{pool}.refused"))
    section("Pools (time averages)", rows)
    cpus = [name[: -len(".utilization")] for name in whole if name.endswith(".cpu.utilization")]
    section("CPUs", [(f"{cpu} utilization", f"{cpu}.utilization") for cpu in cpus])
    replications = [name[: -len(".replicated")] for name in whole if name.endswith(".replicated")]
    section(
        "Session replication (per replication of the run: messages, bytes; wait per message)",
        [
            (f"{r} {field}", f"{r}.{field}")
            for r in replications
            for field in ("replicated", "bytes", "wait", "credit_waits")
        ],
    )
    jvms = [name[: -len(".jvm.gc_fraction")] for name in whole if name.endswith(".jvm.gc_fraction")]
    jvm_fields = ("gc_fraction", "young_gcs", "full_gcs", "sessions", "live_mb", "resident_mb")
    section(
        "JVMs",
        [
            (f"{node} {field.replace('_', ' ')}", f"{node}.jvm.{field}")
            for node in jvms
            for field in jvm_fields
            + (("out_of_memory",) if _nonzero(summary, f"{node}.jvm.out_of_memory") else ())
        ],
    )
    elastic = [
        name.removesuffix(".autoscale.replicas")
        for name in whole
        if name.endswith(".autoscale.replicas")
    ]
    section(
        "Autoscaled groups (means over the window; decisions and node-seconds in it)",
        [
            (f"{group} {field.replace('_', ' ')}", f"{group}.autoscale.{field}")
            for group in elastic
            for field in ("replicas", "ready", "scale_ups", "scale_downs", "node_seconds")
        ],
    )
    batches = sorted({int(name.split(".")[1]) for name in summary if name.startswith("batch.")})
    rows = []
    for k in batches:
        rows += [
            (f"batch {k} throughput", f"batch.{k}.throughput"),
            (f"batch {k} response mean", f"batch.{k}.response.mean"),
        ]
        rows += [
            (f"batch {k} {node} gc fraction", f"batch.{k}.{node}.jvm.gc_fraction") for node in jvms
        ]
    section("Batches (clients.repeat)", rows)
    shares = [name for name in summary if name.startswith("balancer.share.")]
    section("Balancer", [(name.removeprefix("balancer.share."), name) for name in shares])
    notes = sorted({note for rep in result.replications for note in rep.notes})
    for note in notes:
        console.print(f"[yellow]note:[/yellow] {note}")
    if FAILED_SHARE in summary:
        console.print(
            f"requests failed (share): {FAILED_SHARE_MEANING}; the response times are of the "
            "answered requests only",
            markup=False,
        )


def _window(result: RunResult) -> str:
    """The window each replication measured and the warm-up removed before it."""
    windows = [rep.metrics.get("elapsed", math.nan) for rep in result.replications]
    windows = [w for w in windows if math.isfinite(w)]
    if not windows:
        return ""
    warmups = [rep.warmup_s for rep in result.replications]
    removed = (
        f" after {_fmt(sum(warmups) / len(warmups))} s of warm-up removed" if any(warmups) else ""
    )
    return f", a window of {_fmt(sum(windows) / len(windows))} s per replication{removed}"


def _derived_unit(name: str) -> str | None:
    """The unit of a figure derived here rather than reported by a probe: a failed share is a
    fraction of the requests sent."""
    return "fraction" if name.endswith(FAILED_SHARE) else None


def _with_failed_share(result: RunResult) -> dict[str, Interval]:
    """The run's summary with the share of requests that failed, and each request class's
    (`sim.present.failures.with_failed_share`)."""
    return with_failed_share(
        result.summary,
        [rep.metrics for rep in result.replications],
        [c.name for c in result.model.classes],
        result.confidence,
    )


def _nonzero(summary: dict[str, Interval], name: str) -> bool:
    interval = summary.get(name)
    return interval is not None and interval.mean != 0
