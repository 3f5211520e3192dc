"""Cumulative per-statement counters snapshotted before and after a run, and their difference:
what the run itself executed (`pg_stat_statements`, MySQL's
`events_statements_summary_by_digest`). Both count from their last reset, so one snapshot says
nothing about a run; two around it do."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sim.measurements.database.statements import StatementRun, normalise, run_of
from sim.measurements.errors import MeasurementError
from sim.measurements.text import read_lines


@dataclass
class Counters:
    """One statement's cumulative counters in a snapshot (seconds)."""

    text: str
    calls: float
    total_time_s: float
    rows: float = math.nan
    lock_time_s: float = math.nan


Snapshot = dict[str, Counters]
# reads one data row (a dict by lower-cased column) into (id, Counters); `line` for messages
RowReader = Callable[[dict[str, str], int], tuple[str, Counters] | None]


def read_csv(path: str | Path, expected: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """A CSV (psql --csv, \\copy ... csv header) or tab-separated (mysql -B) file's lower-cased
    header and its rows with their line numbers."""
    lines = read_lines(path, expected)
    delimiter = "\t" if "\t" in lines[0] and "," not in lines[0] else ","
    reader = csv.reader(lines, delimiter=delimiter)
    try:
        header = [name.strip().lower() for name in next(reader)]
        rows = []
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise MeasurementError(
                    path,
                    line,
                    f"{len(row)} fields where the header has {len(header)}; expected {expected}",
                )
            rows.append((line, dict(zip(header, row, strict=True))))
    except csv.Error as exc:
        raise MeasurementError(
            path, reader.line_num, f"not CSV ({exc}); expected {expected}"
        ) from None
    return header, rows


def number(path: str | Path, line: int, row: dict[str, str], column: str) -> float:
    """A counter's value: a finite number >= 0 (an empty or NULL cell is NaN)."""
    text = row.get(column, "").strip()
    if text in ("", "NULL", "\\N"):
        return math.nan
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise MeasurementError(
            path, line, f"{column} = {text!r}; expected a cumulative counter (a number >= 0)"
        )
    return value


def read_snapshot(
    path: str | Path,
    expected: str,
    row_reader: RowReader,
    check_header: Callable[[list[str]], None],
) -> Snapshot:
    """A snapshot by statement id; rows of one id (the same statement run by several users or
    databases) are added up, as both snapshots add them alike."""
    header, rows = read_csv(path, expected)
    check_header(header)
    out: Snapshot = {}
    for line, row in rows:
        found = row_reader(row, line)
        if found is None:
            continue
        key, counters = found
        if key in out:
            old = out[key]
            counters = Counters(
                old.text,
                old.calls + counters.calls,
                old.total_time_s + counters.total_time_s,
                old.rows + counters.rows,
                old.lock_time_s + counters.lock_time_s,
            )
        out[key] = counters
    return out


def pair_files(files: list[str], what: str) -> list[tuple[str, str, str]]:
    """(run, before, after) for files named RUN.before.csv and RUN.after.csv, in the order the
    runs are first named."""
    found: dict[str, dict[str, str]] = {}
    for path in files:
        name = Path(path).name
        parts = name.split(".")
        kind = parts[1].lower() if len(parts) > 1 else ""
        if kind not in ("before", "after"):
            # the names in the user's own extension (`mysql -B` writes .tsv, psql --csv .csv)
            ext = ".".join(parts[1:]) or "csv"
            raise MeasurementError(
                path,
                None,
                f"cannot tell which run and snapshot this is; expected {what} snapshots named "
                f"RUN.before.{ext} and RUN.after.{ext}, RUN as the run's JTL is named "
                f"(users20.before.{ext} and users20.after.{ext} for users20.jtl)",
            )
        slot = found.setdefault(run_of(path), {})
        if kind in slot:
            raise MeasurementError(
                path,
                None,
                f"a second {kind} snapshot of run {run_of(path)} (the first: {slot[kind]})",
            )
        slot[kind] = path
    out = []
    for run, slot in found.items():
        for kind in ("before", "after"):
            if kind not in slot:
                other = slot["after" if kind == "before" else "before"]
                ext = ".".join(Path(other).name.split(".")[2:]) or "csv"
                raise MeasurementError(
                    other,
                    None,
                    f"run {run} has no {kind} snapshot; expected {run}.{kind}.{ext} beside it "
                    "(the counters are cumulative: the run's work is after minus before)",
                )
        out.append((run, slot["before"], slot["after"]))
    return out


def difference(
    run: str, source: str, before: Snapshot, after: Snapshot, lock_times: bool
) -> list[StatementRun]:
    """What the run executed: after minus before, per statement (a statement new in `after`
    started from zero). A statement whose counters fell, or that left the view, was evicted
    (`pg_stat_statements.max`, `performance_schema_digests_size`) or reset between the
    snapshots: its row says its calls in the run are unknown, never a guess."""
    out = []
    zero = Counters("", 0.0, 0.0, 0.0, 0.0)
    for key, now in after.items():
        then = before.get(key, zero)
        calls = now.calls - then.calls
        text = normalise(now.text)
        if calls < 0 or now.total_time_s < then.total_time_s:
            out.append(
                StatementRun(
                    run,
                    source,
                    key,
                    text,
                    math.nan,
                    math.nan,
                    complete=False,
                    note=f"its calls fell from {then.calls:g} to {now.calls:g}: evicted and "
                    "re-entered, or the statistics were reset, between the snapshots (snapshot "
                    "right before and right after the run, with no reset between)",
                )
            )
            continue
        if calls == 0:
            continue
        out.append(
            StatementRun(
                run,
                source,
                key,
                text,
                calls,
                now.total_time_s - then.total_time_s,
                rows=now.rows - then.rows,
                lock_wait_s=now.lock_time_s - then.lock_time_s if lock_times else math.nan,
            )
        )
    for key, then in before.items():
        if key not in after:
            out.append(
                StatementRun(
                    run,
                    source,
                    key,
                    normalise(then.text),
                    math.nan,
                    math.nan,
                    complete=False,
                    note="in the before snapshot, not in the after: evicted or reset during the "
                    "run, so its calls in the run are unknown (raise pg_stat_statements.max or "
                    "performance_schema_digests_size)",
                )
            )
    return out
