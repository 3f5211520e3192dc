"""The figures of Gatling's HTML report: `js/stats.json` (or `js/global_stats.json`).

Gatling writes them up to 3.13.4; from 3.13.5 the report has no JSON (gatling/gatling commit
711b8d4e7), and the run's `simulation.log` (binary from 3.13) is imported as `gatling` instead.

`stats.json` holds the whole run (`stats`, "All Requests") and a `contents` entry per request
name (and per group, with its own `contents`); `global_stats.json` holds the run's `stats`
alone. Each figure is split into `total`, `ok` (successful responses) and `ko`; the table
takes `ok`, so its figures are the successes' as the simulator's are:

- `numberOfRequests`: count; `meanNumberOfRequestsPerSecond`: count per second of the run,
  whose length Gatling counts in whole seconds (a 12.6 s run is 12 s);
- `meanResponseTime` (ms, rounded to a whole ms by Gatling);
- `percentiles1` ... `percentiles4`: Gatling's `charting.indicators.percentile1..4`, by
  default the 50th, 75th, 95th and 99th, from a t-digest, rounded to a whole ms. They are
  the table's `response.p50`, `response.p95` and `response.p99` (the 75th has no column);
  a report made with other percentile settings must not be imported as these.

Older reports quote the figures as strings ("300", "-" for none): both are read. The window is
[0, count / rate], Gatling's own run length, as the file gives no timestamps.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from sim.measurements.classes import TOTAL, ClassMap
from sim.measurements.errors import MeasurementError
from sim.measurements.table import Row
from sim.measurements.text import nested_too_deep, read_lines

EXPECTED = "the figures of Gatling's HTML report (js/stats.json or js/global_stats.json)"
PERCENTILE_COLUMNS = {"percentiles1": "response.p50", "percentiles3": "response.p95",
                      "percentiles4": "response.p99"}  # fmt: skip


def _value(path, where: str, stats: dict, figure: str, part: str = "ok") -> float:
    entry = stats.get(figure)
    if not isinstance(entry, dict) or part not in entry:
        raise MeasurementError(
            path, None, f"{where}.{figure}.{part} is missing; expected {EXPECTED}"
        )
    value = entry[part]
    if value == "-":  # Gatling's "none" (no successful response)
        return math.nan
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise MeasurementError(
            path, None, f'{where}.{figure}.{part} = {value!r}; expected a number >= 0 or "-"'
        )
    return number


def _row(path, where: str, stats: dict) -> Row:
    count = _value(path, where, stats, "numberOfRequests")
    failed = _value(path, where, stats, "numberOfRequests", "ko")
    row: Row = {
        "throughput": _value(path, where, stats, "meanNumberOfRequestsPerSecond"),
        "count.completed": count,
        "count.errors": failed,
        "response.mean": _value(path, where, stats, "meanResponseTime") / 1000.0,
        "response.p90": math.nan,
    }
    for figure, column in PERCENTILE_COLUMNS.items():
        row[column] = _value(path, where, stats, figure) / 1000.0
    if count == 0:
        for column in ("response.mean", *PERCENTILE_COLUMNS.values()):
            row[column] = math.nan  # Gatling writes 0 where no response succeeded
    return row


def _requests(path, contents: dict, where: str) -> list[tuple[str, dict]]:
    """(label, stats) of every request in the report, groups' requests as `group/name`."""
    found = []
    for key, entry in contents.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("stats"), dict):
            raise MeasurementError(path, None, f"{where}.{key} has no stats; expected {EXPECTED}")
        if entry.get("type") == "GROUP":
            found += _requests(path, entry.get("contents") or {}, f"{where}.{key}.contents")
        else:
            found.append(
                (str(entry.get("path") or entry["stats"].get("name") or key), entry["stats"])
            )
    return found


def aggregate_rows(
    path: str | Path, run: str, classes: ClassMap, encoding: str = "utf-8"
) -> list[Row]:
    text = "\n".join(read_lines(path, EXPECTED, encoding))
    try:
        document = json.loads(text)
    except RecursionError:
        raise nested_too_deep(path, 1, EXPECTED) from None
    except json.JSONDecodeError as exc:
        start = text.lstrip()
        hint = ""
        if start.startswith("var "):
            # Gatling wrote stats.json beside stats.js up to 3.13.4; 3.13.5 stopped (gatling
            # commit 711b8d4e7) and 3.14 keeps the figures in the HTML page alone
            hint = (
                " (js/stats.js, the figures as JavaScript: import js/stats.json where the "
                "report has one, Gatling 3.13.4 or earlier, or the run's simulation.log as gatling)"
            )
        elif start.startswith(("ASSERTION\t", "RUN\t", "USER\t", "REQUEST\t")):
            hint = " (a simulation.log: import it as gatling)"
        raise MeasurementError(
            path, exc.lineno, f"not JSON ({exc.msg}){hint}; expected {EXPECTED}"
        ) from None
    if not isinstance(document, dict):
        raise MeasurementError(path, 1, f"a JSON {type(document).__name__}; expected {EXPECTED}")
    stats = document.get("stats", document)
    if not isinstance(stats, dict) or "numberOfRequests" not in stats:
        raise MeasurementError(path, 1, f"no numberOfRequests figures; expected {EXPECTED}")
    total = _row(path, "stats", stats)
    duration = (
        _value(path, "stats", stats, "numberOfRequests", "total")
        / _value(path, "stats", stats, "meanNumberOfRequestsPerSecond", "total")
        if _value(path, "stats", stats, "meanNumberOfRequestsPerSecond", "total") > 0
        else math.nan
    )
    parts: dict[str, list[Row]] = {}
    for label, entry in _requests(path, document.get("contents") or {}, "contents"):
        parts.setdefault(classes.name(label), []).append(_row(path, f"contents[{label!r}]", entry))
    rows = [_combine(name, members) for name, members in sorted(parts.items())]
    rows.append({"class": TOTAL, **total})
    for row in rows:
        row.update(
            run=run,
            window_start_s=0.0,
            window_end_s=duration,
            users=math.nan,
            arrival_rate_per_s=math.nan,
        )
    return rows


def _combine(name: str, members: list[Row]) -> Row:
    """Requests mapped to one class: counts and rates add, the mean is weighted by count;
    percentiles of several requests cannot be had from theirs, so they stay only for one."""
    if len(members) == 1:
        return {"class": name, **members[0]}
    count = sum(m["count.completed"] for m in members)
    weighted = sum(
        m["response.mean"] * m["count.completed"] for m in members if m["count.completed"]
    )
    row: Row = {
        "class": name,
        "throughput": sum(m["throughput"] for m in members),
        "count.completed": count,
        "count.errors": sum(m["count.errors"] for m in members),
        "response.mean": weighted / count if count else math.nan,
    }
    row.update(
        {
            column: math.nan
            for column in ("response.p50", "response.p90", "response.p95", "response.p99")
        }
    )
    return row
