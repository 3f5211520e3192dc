"""PostgreSQL's `pg_stat_statements` view, snapshotted before and after each run.

A snapshot is the view saved as CSV with a header, e.g.

    psql --csv -c "select queryid, query, calls, total_exec_time, rows from pg_stat_statements" > users20.before.csv

(or `\\copy (select ...) to 'users20.before.csv' csv header`). Read: `queryid`, `query`,
`calls`, and the execution time in milliseconds: `total_exec_time` (PostgreSQL 13+), or
`total_time` (12 and older), or failing both `mean_exec_time`/`mean_time` times `calls`;
`rows` when present. Other columns (`shared_blks_*`, `wal_*`, `userid`, `dbid`) are allowed and
not read. Rows of one `queryid` (several users or databases) are added up.
"""

from __future__ import annotations

from pathlib import Path

from sim.measurements.database.snapshots import (
    Counters,
    Snapshot,
    difference,
    number,
    pair_files,
    read_snapshot,
)
from sim.measurements.database.statements import StatementRun
from sim.measurements.errors import MeasurementError

SOURCE = "pg_stat_statements"
EXPECTED = (
    "a pg_stat_statements snapshot: CSV with a header naming queryid, query, calls and "
    "total_exec_time (total_time before PostgreSQL 13)"
)
TOTAL = ("total_exec_time", "total_time")  # ms: PostgreSQL 13+, 12 and older
MEAN = ("mean_exec_time", "mean_time")


def read(path: str | Path) -> Snapshot:
    """One snapshot of the view, by queryid, times in seconds."""

    def row_reader(row: dict[str, str], line: int) -> tuple[str, Counters] | None:
        key = row["queryid"].strip()
        if key in ("", "NULL"):  # a row of another user's statement, shown without its id
            return None
        calls = number(path, line, row, "calls")
        total = next((c for c in TOTAL if c in row), None)
        if total is not None:
            total_ms = number(path, line, row, total)
        else:
            mean = next(c for c in MEAN if c in row)
            total_ms = number(path, line, row, mean) * calls
        rows = number(path, line, row, "rows") if "rows" in row else float("nan")
        return key, Counters(row.get("query", ""), calls, total_ms / 1000.0, rows)

    return read_snapshot(path, EXPECTED, row_reader, lambda header: _check_header(path, header))


def _check_header(path: str | Path, header: list[str]) -> None:
    missing = [c for c in ("queryid", "calls") if c not in header]
    if not any(c in header for c in (*TOTAL, *MEAN)):
        missing.append("total_exec_time")
    if missing:
        raise MeasurementError(
            path,
            1,
            f"the header ({', '.join(header[:8])}) lacks {', '.join(missing)}; expected {EXPECTED}",
        )


def import_runs(files: list[str]) -> list[StatementRun]:
    """Each run's statements from its before and after snapshots (RUN.before.csv,
    RUN.after.csv)."""
    out = []
    for run, before, after in pair_files(files, "pg_stat_statements"):
        out += difference(run, SOURCE, read(before), read(after), lock_times=False)
    return out
