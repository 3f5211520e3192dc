"""The database evidence table: per run and statement, the calls per request, the time per
call, the lock waits and each statement's growth with load (docs/measurement-table.md,
"The database evidence table"). An empty cell is evidence the files do not hold, and the
`missing` column names the measurement that would give it; nothing is filled in by guess."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from sim.measurements.classes import TOTAL
from sim.measurements.database.statements import StatementRun
from sim.measurements.errors import MeasurementError
from sim.measurements.text import read_lines

COLUMNS = [
    "run",
    "users",
    "requests",
    "failed_requests",
    "source",
    "statement_id",
    "statement",
    "calls",
    "calls_per_request",
    "total_time_s",
    "time_per_call_s",
    "growth",
    "rows_per_call",
    "lock_waits",
    "lock_wait_s",
    "lock_wait_per_call_s",
    "complete",
    "missing",
]
TEXT = ("run", "source", "statement_id", "statement", "complete", "missing")


@dataclass
class Level:
    """A run of the measurement table (`tiersim import` of its JTL): its users and requests."""

    users: float
    requests: float  # successful requests (class total, count.completed over its windows)
    failed: float  # count.errors + count.timed_out


def levels_of(table) -> dict[str, Level]:
    """Each run's users (time-weighted over its windows) and requests, from a measurement table."""
    rows = table[table["class"] == TOTAL]
    out = {}
    for run, group in rows.groupby("run", sort=False):
        length = (group["window_end_s"] - group["window_start_s"]).to_numpy(dtype=float)
        users = group["users"].to_numpy(dtype=float)
        weighted = float((users * length).sum() / length.sum()) if length.sum() > 0 else math.nan
        failed = sum(
            float(group[c].fillna(0).sum())
            for c in ("count.errors", "count.timed_out")
            if c in group
        )
        out[str(run)] = Level(weighted, float(group["count.completed"].fillna(0).sum()), failed)
    return out


def _ratio(numerator: float, denominator: float) -> float:
    if not (math.isfinite(numerator) and math.isfinite(denominator)) or denominator <= 0:
        return math.nan
    return numerator / denominator


def evidence_rows(
    statements: list[StatementRun], levels: dict[str, Level] | None
) -> list[dict[str, object]]:
    """One row per run and statement, in the order read. `levels`: the runs of the load test's
    measurement table, None when none was given."""
    rows: list[dict[str, object]] = []
    for found in statements:
        level = (levels or {}).get(found.run)
        missing = [found.note] if found.note else []
        counted = found.complete is True
        calls = found.calls
        time_per_call = _ratio(found.total_time_s, calls) if counted else math.nan
        if level is None:
            missing.append(
                "calls_per_request, users: no run "
                f"{found.run} in the load test's table (give --table, the run's JTL import, "
                "with the run named as the database files are)"
                if levels is not None
                else "calls_per_request, users: give --table (the load test's measurement table)"
            )
        per_request = _ratio(calls, level.requests) if (level and counted) else math.nan
        rows.append(
            {
                "run": found.run,
                "users": level.users if level else math.nan,
                "requests": level.requests if level else math.nan,
                "failed_requests": level.failed if level else math.nan,
                "source": found.source,
                "statement_id": found.statement_id,
                "statement": found.statement,
                "calls": calls,
                "calls_per_request": per_request,
                "total_time_s": found.total_time_s,
                "time_per_call_s": time_per_call,
                "growth": math.nan,
                "rows_per_call": _ratio(found.rows, calls) if counted else math.nan,
                "lock_waits": found.lock_waits,
                "lock_wait_s": found.lock_wait_s,
                "lock_wait_per_call_s": _ratio(found.lock_wait_s, calls) if counted else math.nan,
                "complete": {True: "yes", False: "no", None: "unknown"}[found.complete],
                "missing": "; ".join(missing),
            }
        )
    _growth(rows)
    return rows


def _growth(rows: list[dict[str, object]]) -> None:
    """Each statement's time per call over its time per call at the lightest run (fewest users)
    of the same source: 1 there, 6.2 where a call takes 6.2 times as long. Without the runs'
    users there is no lightest run, and the cell stays empty."""
    lightest: dict[tuple[object, object], tuple[float, float]] = {}
    for row in rows:
        users, per_call = float(row["users"]), float(row["time_per_call_s"])  # type: ignore[arg-type]
        if math.isfinite(users) and math.isfinite(per_call) and per_call > 0:
            key = (row["source"], row["statement_id"])
            if key not in lightest or users < lightest[key][0]:
                lightest[key] = (users, per_call)
    for row in rows:
        base = lightest.get((row["source"], row["statement_id"]))
        if base is not None:
            row["growth"] = _ratio(float(row["time_per_call_s"]), base[1])  # type: ignore[arg-type]


def _cell(value: object) -> object:
    if isinstance(value, float):
        return "" if not math.isfinite(value) else f"{value:.10g}"
    return value


def write(rows: list[dict[str, object]], path: str | Path) -> None:
    """The evidence table as CSV (UTF-8, a header line, empty cells where the files say nothing)."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row[k]) for k in COLUMNS})


def read(path: str | Path) -> list[dict[str, object]]:
    """An evidence table written by `write`: its rows with numbers as floats (NaN where empty)."""
    lines = read_lines(path, "a database evidence table (tiersim import pg-stat ... -o)")
    reader = csv.DictReader(lines)
    header = reader.fieldnames or []
    absent = [c for c in COLUMNS if c not in header]
    if absent:
        raise MeasurementError(
            path, 1, f"the header lacks {', '.join(absent)}; expected a database evidence table"
        )
    out = []
    for row in reader:
        parsed: dict[str, object] = {}
        for column in COLUMNS:
            text = row[column] or ""
            if column in TEXT:
                parsed[column] = text
                continue
            try:
                parsed[column] = float(text) if text else math.nan
            except ValueError:
                raise MeasurementError(
                    path, reader.line_num, f"{column} = {text!r}; expected a number"
                ) from None
        out.append(parsed)
    return out
