"""MySQL's (and MariaDB's) statement evidence: the slow query log, and
`performance_schema.events_statements_summary_by_digest` snapshotted before and after a run.

The slow log (`slow_query_log = ON`, `long_query_time = 0` to log every statement) is read in
MySQL's and MariaDB's formats alike: an entry is its `# Query_time: 0.000215  Lock_time:
0.000081  Rows_sent: 1  Rows_examined: 1` header (with `# Time:`, `# User@Host:`, MariaDB's
`# Thread_id:` and `# Rows_affected:` lines around it) and the statement after it, less the
`SET timestamp=...;` and `use db;` lines the server adds. `Lock_time` is the server's lock
time of the call (table and metadata locks; MySQL 8.0.28+ adds InnoDB row-lock waits).

A digest snapshot is the table saved with a header, as CSV or tab-separated (`mysql -B -e
"select SCHEMA_NAME, DIGEST, DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT, SUM_LOCK_TIME,
SUM_ROWS_SENT, SUM_ROWS_AFFECTED from performance_schema.events_statements_summary_by_digest"
> users20.before.tsv`); its timers are picoseconds. The row whose DIGEST is NULL holds the
statements past `performance_schema_digests_size`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from sim.measurements.database.snapshots import (
    Counters,
    Snapshot,
    difference,
    number,
    pair_files,
    read_snapshot,
)
from sim.measurements.database.statements import StatementRun, normalise, run_of, text_id
from sim.measurements.errors import MeasurementError
from sim.measurements.text import read_lines

SLOW_SOURCE = "mysql_slow_log"
DIGEST_SOURCE = "mysql_digest"
SLOW_EXPECTED = "a MySQL or MariaDB slow query log (# Query_time: ... lines before each statement)"
DIGEST_EXPECTED = (
    "an events_statements_summary_by_digest snapshot: CSV or tab-separated with a header "
    "naming DIGEST, DIGEST_TEXT, COUNT_STAR and SUM_TIMER_WAIT"
)
PICOSECONDS = 1e12
_FIELD = re.compile(r"(\w+): (\S+)")
_ADDED = re.compile(r"^(SET timestamp=\d+;|use \S+;)$", re.I)


@dataclass
class _Tally:
    calls: float = 0.0
    time_s: float = 0.0
    lock_s: float = 0.0
    rows: float = 0.0


def _count_or_seconds(text: str) -> bool:
    """A slow log's time or row count: a finite number >= 0 (a NaN or a negative lock time
    would be summed into the statement's figures unseen)."""
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and value >= 0


def read_slow(path: str | Path, run: str, threshold_ms: float | None) -> list[StatementRun]:
    """The run's statements from one slow log; `threshold_ms`: the server's `long_query_time`
    in ms (0: every statement is logged; None: not known)."""
    lines = read_lines(path, SLOW_EXPECTED)
    tallies: dict[str, _Tally] = {}
    fields: dict[str, str] | None = None
    sql: list[str] = []

    def close() -> None:
        if fields is None or not sql:
            return
        text = normalise(" ".join(sql))
        counted = tallies.setdefault(text, _Tally())
        counted.calls += 1
        counted.time_s += float(fields["Query_time"])
        counted.lock_s += float(fields.get("Lock_time", "nan"))
        counted.rows += float(fields.get("Rows_sent", "0")) + float(
            fields.get("Rows_affected", "0")
        )

    for number_, line in enumerate(lines, 1):
        if line.startswith("# "):
            found = dict(_FIELD.findall(line))
            if "Query_time" in found:
                close()
                sql = []
                for key in ("Query_time", "Lock_time", "Rows_sent", "Rows_examined"):
                    if key in found and not _count_or_seconds(found[key]):
                        unit = "a count" if key.startswith("Rows") else "seconds"
                        raise MeasurementError(
                            path, number_, f"{key} = {found[key]!r}; expected {unit} >= 0"
                        )
                fields = found
            elif fields is not None and "Rows_affected" in found:
                if not _count_or_seconds(found["Rows_affected"]):
                    raise MeasurementError(
                        path,
                        number_,
                        f"Rows_affected = {found['Rows_affected']!r}; expected a count >= 0",
                    )
                fields.update(found)
            elif line.startswith(("# Time:", "# User@Host:")):
                close()
                fields, sql = None, []
            continue
        if fields is not None and line.strip() and not _ADDED.match(line.strip()):
            sql.append(line.strip())
    close()
    if not tallies:
        raise MeasurementError(path, None, f"no logged statement; expected {SLOW_EXPECTED}")
    if threshold_ms == 0:
        complete, note = True, ""
    elif threshold_ms is None:
        complete, note = (
            None,
            "the slow log holds the statements over long_query_time, which it does not name: "
            "give --log-min-duration 0 if the server had long_query_time = 0",
        )
    else:
        complete, note = (
            False,
            f"only the statements over {threshold_ms:g} ms are logged (long_query_time): "
            "their calls and time are not the run's; the digest table counts every call",
        )
    return [
        StatementRun(
            run,
            SLOW_SOURCE,
            text_id(text),
            text,
            counted.calls,
            counted.time_s,
            rows=counted.rows,
            lock_wait_s=counted.lock_s,
            complete=complete,
            note=note,
        )
        for text, counted in tallies.items()
    ]


def import_slow_runs(
    files: list[str], run: str | None, threshold_ms: float | None
) -> list[StatementRun]:
    """One run per slow log (named as `run_of` says), or one file's run `run`."""
    if run is not None and len(files) > 1:
        raise MeasurementError(
            files[1], None, "--run names one file's run; expected one slow log per run, named RUN.*"
        )
    out = []
    for path in files:
        out += read_slow(path, run or run_of(path), threshold_ms)
    return out


def read_digest(path: str | Path) -> Snapshot:
    """One snapshot of the digest table, by schema and digest, times in seconds."""

    def check(header: list[str]) -> None:
        missing = [
            c for c in ("digest", "digest_text", "count_star", "sum_timer_wait") if c not in header
        ]
        if missing:
            raise MeasurementError(
                path,
                1,
                f"the header ({', '.join(header[:8])}) lacks {', '.join(missing)}; expected "
                f"{DIGEST_EXPECTED}",
            )

    def row_reader(row: dict[str, str], line: int) -> tuple[str, Counters]:
        digest = row["digest"].strip()
        overflow = digest in ("", "NULL", "\\N")
        key = "(overflow)" if overflow else f"{row.get('schema_name', '').strip()}:{digest}"
        text = (
            "(statements past performance_schema_digests_size)" if overflow else row["digest_text"]
        )
        rows = sum(
            (
                number(path, line, row, c)
                for c in ("sum_rows_sent", "sum_rows_affected")
                if c in row
            ),
            0.0,
        )
        lock = number(path, line, row, "sum_lock_time") if "sum_lock_time" in row else math.nan
        return key, Counters(
            text,
            number(path, line, row, "count_star"),
            number(path, line, row, "sum_timer_wait") / PICOSECONDS,
            rows if rows == rows else math.nan,
            lock / PICOSECONDS,
        )

    return read_snapshot(path, DIGEST_EXPECTED, row_reader, check)


def import_digest_runs(files: list[str]) -> list[StatementRun]:
    """Each run's statements from its before and after digest snapshots."""
    out = []
    for run, before, after in pair_files(files, "events_statements_summary_by_digest"):
        out += difference(run, DIGEST_SOURCE, read_digest(before), read_digest(after), True)
    return out
