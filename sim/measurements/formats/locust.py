"""Locust's CSV files (`--csv PREFIX`): `PREFIX_stats.csv` and `PREFIX_stats_history.csv`.

`_stats.csv` is the whole run, one line per (`Type`, `Name`) and an `Aggregated` line: used
are `Request Count`, `Failure Count`, `Average Response Time` (ms), `Requests/s` and the
columns `50%`, `90%`, `95%`, `99%` (ms; Locust's percentile is the smallest recorded time
with at least that share of requests at or below it, from response times it rounds to two
significant figures above 100 ms). The window is [0, Request Count / Requests/s]: Locust's
own elapsed time, as the file gives no timestamps.

`_stats_history.csv` has a line per second (and per `Name` with `--csv-full-history`) with
cumulative `Total Request Count`, `Total Failure Count` and `Total Average Response Time`,
and `User Count`. A window's counts and mean are differences of those cumulative values at
its ends, which is exact; the history's percentile columns cover Locust's own sliding
10-second window, not ours, so the window percentiles are left empty.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from sim.measurements.classes import TOTAL, ClassMap
from sim.measurements.errors import MeasurementError, shorten
from sim.measurements.table import Row, successes_only
from sim.measurements.text import csv_records, read_lines
from sim.measurements.windows import window_bounds

STATS = ["Type", "Name", "Request Count", "Failure Count", "Average Response Time", "Requests/s"]
HISTORY = [
    "Timestamp",
    "User Count",
    "Type",
    "Name",
    "Total Request Count",
    "Total Failure Count",
    "Total Average Response Time",
]
EXPECTED = (
    "a Locust _stats.csv or _stats_history.csv file "
    "(header Type,Name,Request Count,... or Timestamp,User Count,...)"
)
AGGREGATED = "Aggregated"


def _records(path, lines: list[str]) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    reader = csv_records(path, csv.reader(lines), 1, EXPECTED)
    header = next(reader)
    records = []
    for number, values in enumerate(reader, start=2):
        if not values:
            continue
        if len(values) != len(header):
            raise MeasurementError(
                path, number, f"{len(values)} fields; expected {len(header)} as on the header line"
            )
        records.append((number, dict(zip(header, values))))
    return header, records


def _number(path, line: int, record: dict[str, str], name: str, allow_na: bool = False) -> float:
    text = record[name]
    if allow_na and text.strip() in ("N/A", ""):
        return math.nan
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise MeasurementError(path, line, f"{name} = {shorten(text)}; expected a number >= 0")
    return value


def _labels(records: list[tuple[int, dict[str, str]]]) -> dict[tuple[str, str], str]:
    """Locust keys its statistics by (method, name); the label is the name, prefixed with
    the method only where one name is used with several methods."""
    methods: dict[str, set[str]] = {}
    for _, record in records:
        if record["Name"] != AGGREGATED or record["Type"]:
            methods.setdefault(record["Name"], set()).add(record["Type"])
    return {
        (method, name): name if len(kinds) == 1 else f"{method} {name}"
        for name, kinds in methods.items()
        for method in kinds
    }


def aggregate_rows(
    path: str | Path, run: str, classes: ClassMap, window_s: float | None, encoding: str = "utf-8"
) -> tuple[list[Row], float | None]:
    """Table rows of one Locust file, and the run's time zero (None for _stats.csv)."""
    lines = read_lines(path, EXPECTED, encoding)
    header, records = _records(path, lines)
    if header[:1] == ["Timestamp"]:
        return _history(path, run, classes, window_s, header, records)
    missing = [name for name in STATS if name not in header]
    if missing:
        raise MeasurementError(path, 1, f"header lacks {', '.join(missing)}; expected {EXPECTED}")
    if not records:
        raise MeasurementError(path, 2, f"no statistics after the header; expected {EXPECTED}")
    labels = _labels(records)
    parts: dict[str, list[Row]] = {}
    total: Row | None = None
    for line, record in records:
        count = _number(path, line, record, "Request Count")
        rate = _number(path, line, record, "Requests/s")
        row: Row = {
            "throughput": rate,
            "count.completed": count,
            "count.errors": _number(path, line, record, "Failure Count"),
            "response.mean": _number(path, line, record, "Average Response Time", True) / 1000.0,
        }
        for p in (50, 90, 95, 99):
            column = f"{p}%"
            row[f"response.p{p}"] = (
                _number(path, line, record, column, True) / 1000.0 if column in record else math.nan
            )
        if record["Name"] == AGGREGATED and not record["Type"]:
            total = row
            continue
        parts.setdefault(classes.name(labels[(record["Type"], record["Name"])]), []).append(row)
    if total is None:
        raise MeasurementError(path, len(lines), f"no ',Aggregated' line; expected {EXPECTED}")
    duration = (
        total["count.completed"] / total["throughput"] if total["throughput"] > 0 else math.nan
    )
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
    return [successes_only(row) for row in rows], None


def _combine(name: str, members: list[Row]) -> Row:
    """Several Locust lines mapped to one class: counts and rates add, the mean is weighted by
    count; percentiles cannot be combined from percentiles, so they stay only for one line."""
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
    row.update({f"response.p{p}": math.nan for p in (50, 90, 95, 99)})
    return row


def _history(path, run, classes, window_s, header, records) -> tuple[list[Row], float]:
    missing = [name for name in HISTORY if name not in header]
    if missing:
        raise MeasurementError(path, 1, f"header lacks {', '.join(missing)}; expected {EXPECTED}")
    if not records:
        raise MeasurementError(path, 2, f"no history after the header; expected {EXPECTED}")
    labels = _labels(records)
    series: dict[str, list[tuple[float, float, float, float, float]]] = {}
    for line, record in records:
        when = _number(path, line, record, "Timestamp")
        count = _number(path, line, record, "Total Request Count")
        point = (
            when,
            count,
            _number(path, line, record, "Total Failure Count"),
            _number(path, line, record, "Total Average Response Time") * count / 1000.0,
            _number(path, line, record, "User Count"),
        )
        key = (
            TOTAL
            if record["Name"] == AGGREGATED and not record["Type"]
            else (labels[(record["Type"], record["Name"])])
        )
        points = series.setdefault(key, [])
        if points and when < points[-1][0]:
            raise MeasurementError(
                path, line, f"Timestamp {when:.0f} goes back in time; expected rising timestamps"
            )
        points.append(point)
    zero = min(points[0][0] for points in series.values())
    last = max(points[-1][0] for points in series.values()) - zero
    bounds = window_bounds(last, window_s)
    users_series = series[TOTAL] if TOTAL in series else next(iter(series.values()))

    def at(points, t: float) -> tuple[float, float, float]:
        """Cumulative (requests, failures, response-time sum) at time t after zero."""
        value = (0.0, 0.0, 0.0)
        for when, count, failures, total_time, _users in points:
            if when - zero > t + 1e-9:
                break
            value = (count, failures, total_time)
        return value

    rows: list[Row] = []
    grouped: dict[str, list[str]] = {}
    for key in series:
        if key != TOTAL:
            grouped.setdefault(classes.name(key), []).append(key)
    for low, high in bounds:
        length = high - low
        inside = [
            u
            for when, *_, u in users_series
            if low < when - zero <= high or (low == 0 and when == zero)
        ]
        users = sum(inside) / len(inside) if inside else math.nan
        entries = [(name, keys) for name, keys in sorted(grouped.items())]
        if TOTAL in series:
            entries.append((TOTAL, [TOTAL]))
        for name, keys in entries:
            count = failures = total_time = 0.0
            for key in keys:
                a, b = at(series[key], low), at(series[key], high)
                count += b[0] - a[0]
                failures += b[1] - a[1]
                total_time += b[2] - a[2]
            row: Row = {
                "run": run,
                "window_start_s": low,
                "window_end_s": high,
                "class": name,
                "users": users,
                "arrival_rate_per_s": math.nan,
                "throughput": count / length if length > 0 else math.nan,
                "response.mean": total_time / count if count > 0 else math.nan,
                "count.completed": count,
                "count.errors": failures,
            }
            row.update({f"response.p{p}": math.nan for p in (50, 90, 95, 99)})
            rows.append(successes_only(row))
    return rows, zero
