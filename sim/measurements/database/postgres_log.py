"""PostgreSQL's statement log: each statement's duration (`log_min_duration_statement`) and the
lock waits (`log_lock_waits`), per run, from the stderr log or the csvlog.

The stderr log is read with any `log_line_prefix` that holds the process id as `[%p]` (the
default `%m [%p] `, Debian's `%m [%p] %q%u@%d `): a line is `... [pid] ... SEVERITY:  text`, a
`DETAIL:`, `CONTEXT:` or `STATEMENT:` line belongs to its process's last message, and a line
without the prefix continues the one before (a statement over several lines). The csvlog is
read by its columns (PostgreSQL 13+: `message` is the 14th, `query` the 20th, `query_id` the
26th from 14 on).

* `duration: 4.2 ms  statement: UPDATE ...` and `... execute <name>: ...` are one call each;
  `parse` and `bind` durations (the extended protocol JDBC uses) add to the statement's time,
  not to its calls. A call's time is what the server measured, lock waits included.
* `process 9202 still waiting for ShareLock on transaction 1029 after 1.914 ms` starts a wait,
  `process 9202 acquired ShareLock on transaction 1029 after 2.984 ms` ends it: one wait of
  2.984 ms, charged to the statement the message names. A wait still open at the log's end
  counts with its last "still waiting" time. Only waits longer than `deadlock_timeout` are
  logged, so the waits and their time are a lower bound; a run whose log holds no lock wait
  says nothing about them (the cells stay empty).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from sim.measurements.database.statements import StatementRun, normalise, run_of, text_id
from sim.measurements.errors import MeasurementError
from sim.measurements.text import read_lines

SOURCE = "postgres_log"
EXPECTED = (
    "a PostgreSQL log: stderr lines with [pid] in log_line_prefix (the default '%m [%p] '), "
    "or the csvlog"
)
SEVERITIES = (
    "LOG|ERROR|WARNING|FATAL|PANIC|NOTICE|INFO|DEBUG[1-5]?|DETAIL|CONTEXT|STATEMENT|HINT|QUERY"
)
_PREFIXED = re.compile(rf"^.*?\[(\d+)\].*?\b({SEVERITIES}):  (.*)$")
_DURATION = re.compile(
    r"^duration: (\d+(?:\.\d+)?) ms(?:  (statement|execute|parse|bind)( [^:]*)?: (.*))?$", re.S
)
_LOCK = re.compile(
    r"^process (\d+) (still waiting for|acquired) (\S+) on (.+?) after (\d+(?:\.\d+)?) ms"
)
CSV_MESSAGE, CSV_QUERY, CSV_QUERY_ID, CSV_SEVERITY, CSV_PID = 13, 19, 25, 11, 3
CSV_MIN_FIELDS = 23  # PostgreSQL 13's csvlog (24 with backend_type, 26 from 14 on)


@dataclass
class _Entry:
    pid: str
    message: str
    statement: str = ""
    query_id: str = ""


@dataclass
class _Tally:
    calls: float = 0.0
    time_ms: float = 0.0
    waits: float = 0.0
    wait_ms: float = 0.0
    ids: set[str] = field(default_factory=set)


def _stderr_entries(path: str | Path, lines: list[str]) -> list[_Entry]:
    entries: list[_Entry] = []
    last: dict[str, _Entry] = {}  # each process's last primary message
    owner: tuple[_Entry, str] | None = None
    recognised = 0
    for number, line in enumerate(lines, 1):
        match = _PREFIXED.match(line)
        if match is None:
            if owner is not None and line.startswith(("\t", " ")):
                entry, part = owner
                setattr(entry, part, getattr(entry, part) + "\n" + line.strip())
            elif line.strip() and recognised == 0 and number >= 20:
                break
            continue
        recognised += 1
        pid, severity, text = match.groups()
        if severity in ("DETAIL", "CONTEXT", "HINT", "QUERY"):
            owner = None
            continue
        if severity == "STATEMENT":
            message = last.get(pid)
            if message is not None:
                message.statement = text
                owner = (message, "statement")
            continue
        entry = _Entry(pid, text)
        entries.append(entry)
        last[pid] = entry
        owner = (entry, "message")
    if recognised == 0:
        raise MeasurementError(path, 1, f"no line with a [pid] and a severity; expected {EXPECTED}")
    return entries


def _csv_entries(path: str | Path, lines: list[str]) -> list[_Entry]:
    entries = []
    reader = csv.reader(lines)
    try:
        for row in reader:
            if len(row) < CSV_MIN_FIELDS:
                raise MeasurementError(
                    path,
                    reader.line_num,
                    f"{len(row)} fields; expected a csvlog record ({CSV_MIN_FIELDS} fields or more)",
                )
            query_id = row[CSV_QUERY_ID] if len(row) > CSV_QUERY_ID else ""
            entries.append(_Entry(row[CSV_PID], row[CSV_MESSAGE], row[CSV_QUERY], query_id.strip()))
    except csv.Error as exc:
        raise MeasurementError(path, reader.line_num, f"not a csvlog ({exc})") from None
    return entries


def _is_csvlog(lines: list[str]) -> bool:
    try:
        first = next(csv.reader(lines[:1]), [])
    except csv.Error:  # a first line that is no CSV record (a quote left open): not a csvlog
        return False
    return (
        len(first) >= CSV_MIN_FIELDS and re.fullmatch(SEVERITIES, first[CSV_SEVERITY]) is not None
    )


def read(path: str | Path, run: str, min_duration_ms: float | None) -> list[StatementRun]:
    """The run's statements from one log file. `min_duration_ms`: the server's
    `log_min_duration_statement` (0: every statement is logged; None: not known)."""
    lines = read_lines(path, EXPECTED)
    entries = _csv_entries(path, lines) if _is_csvlog(lines) else _stderr_entries(path, lines)
    tallies: dict[str, _Tally] = {}
    pending: dict[tuple[str, str, str], tuple[float, str]] = {}
    any_wait = False

    def tally(sql: str, query_id: str) -> _Tally:
        text = normalise(sql)
        found = tallies.setdefault(text, _Tally())
        if query_id and query_id != "0":
            found.ids.add(query_id)
        return found

    for entry in entries:
        duration = _DURATION.match(entry.message)
        if duration is not None:
            ms, kind, _name, sql = duration.groups()
            if kind is None:  # log_duration without the statement: nothing to charge it to
                continue
            counted = tally(sql, entry.query_id)
            counted.time_ms += float(ms)
            if kind in ("statement", "execute"):
                counted.calls += 1
            continue
        lock = _LOCK.match(entry.message)
        if lock is None:
            continue
        any_wait = True
        pid, state, mode, target, ms = lock.groups()
        key = (pid, mode, target)
        if state == "acquired":
            pending.pop(key, None)
            waited = tally(entry.statement, entry.query_id)
            waited.waits += 1
            waited.wait_ms += float(ms)
        else:
            pending[key] = (float(ms), entry.statement)
            # the call's own tally exists even when the wait never ends in this log
            tally(entry.statement, entry.query_id)
    for ms, statement in pending.values():  # still waiting at the log's end: a lower bound
        waited = tally(statement, "")
        waited.waits += 1
        waited.wait_ms += ms
    if not tallies:
        raise MeasurementError(
            path,
            None,
            "no statement duration and no lock wait in the log; expected the server run with "
            "log_min_duration_statement = 0 (or a threshold) and log_lock_waits = on",
        )
    if min_duration_ms == 0:
        complete, note = True, ""
    elif min_duration_ms is None:
        complete, note = (
            None,
            "the log holds the statements over log_min_duration_statement, which it does not "
            "name: give --log-min-duration 0 if the server logged every statement",
        )
    else:
        complete, note = (
            False,
            f"only the statements over {min_duration_ms:g} ms are logged "
            "(log_min_duration_statement): their calls and time are not the run's; "
            "pg_stat_statements counts every call",
        )
    out = []
    for text, counted in tallies.items():
        ids = sorted(counted.ids)
        out.append(
            StatementRun(
                run,
                SOURCE,
                ids[0] if len(ids) == 1 else text_id(text),
                text or "(statement not logged)",
                counted.calls,
                counted.time_ms / 1000.0,
                lock_waits=counted.waits if any_wait else math.nan,
                lock_wait_s=counted.wait_ms / 1000.0 if any_wait else math.nan,
                complete=complete,
                note=note,
            )
        )
    return out


def import_runs(
    files: list[str], run: str | None, min_duration_ms: float | None
) -> list[StatementRun]:
    """One run per file (named as `run_of` says), or all files one run `run`."""
    if run is not None and len(files) > 1:
        raise MeasurementError(
            files[1], None, "--run names one file's run; expected one log per run, named RUN.*"
        )
    out = []
    for path in files:
        out += read(path, run or run_of(path), min_duration_ms)
    return out
