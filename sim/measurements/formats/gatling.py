"""Gatling's `simulation.log`: the text log of Gatling 2 to 3.12, and the entry for both layouts.

Tab-separated records, one a line (Gatling's `LogFileDataWriter` up to 3.12):

- `RUN  <simulation class>  <simulation id>  <start ms>  <description>  <Gatling version>`:
  the simulation's start and Gatling's version, kept as what they are (`GatlingRun`);
- `REQUEST  [<user id>]  <groups>  <name>  <start ms>  <end ms>  OK|KO  <message>`: one
  request; 3.4 and later leave out the user id, Gatling 2 has the scenario before it;
  the response time is end - start (ms), as Gatling's report counts it;
- `USER  <scenario>  [<user id>]  START|END  [<session start ms>]  <time ms>`, `GROUP  ...  <start ms>
  <end ms>  <cumulated ms>  ...  OK|KO`: not requests; their start times count towards the
  run's first injected event (time zero, `gatling_log.InjectStart`);
- `ERROR`, `ASSERTION`: skipped.

Labels, error kinds and time zero are defined once for both layouts in `gatling_log.py`.
Gatling 3.13 and later write a binary log instead (its first byte is the RUN record's header
0, then the int32 length of Gatling's version): `read` recognises it by those bytes and reads
it with `gatling_binary.py`, into the same samples.
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path

from sim.measurements.errors import MeasurementError, shorten
from sim.measurements.formats import gatling_binary
from sim.measurements.formats.gatling_log import (
    COLUMNS,
    GatlingLog,
    GatlingRun,
    InjectStart,
    error_kind,
    request_label,
)
from sim.measurements.text import PROGRESS_EVERY, Progress, read_lines

# GatlingLog and error_kind are this format's names for the importer and the tests
__all__ = ["EXPECTED", "GatlingLog", "GatlingRun", "error_kind", "read"]

EXPECTED = (
    "Gatling's simulation.log (Gatling 2 to 3.12: tab-separated RUN, USER, REQUEST lines; "
    "3.13 and later: binary)"
)
STATUSES = ("OK", "KO")
RECORDS = ("RUN", "REQUEST", "USER", "GROUP", "ERROR", "ASSERTION")


def _is_binary(path: str | Path) -> bool:
    """Whether the file (or the gzip file's content) starts as Gatling's binary log does: the
    RUN header byte 0 and the first bytes of the int32 length of Gatling's version. A text log
    starts with a letter; UTF-16BE text without a byte-order mark starts with 0 and a letter."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False  # read_lines names the problem
    if head.startswith(b"\x1f\x8b"):
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
        except zlib.error:
            return False  # read_lines names the damaged gzip file
    return head[:3] == b"\x00\x00\x00"


def _epoch_ms(text: str) -> bool:
    """A timestamp in ms since the epoch (12 digits or more since 1973): not a request named
    `404` or a user id."""
    return len(text) >= 12 and text.isdigit()


def _request(path, number: int, fields: list[str]) -> tuple:
    """(start_s, elapsed_s, label, failed, kind) of a REQUEST line of any text layout: the
    status follows the timestamps, the name precedes them."""
    for at in range(3, len(fields)):
        if fields[at] in STATUSES and _epoch_ms(fields[at - 1]) and _epoch_ms(fields[at - 2]):
            break
    else:
        raise MeasurementError(
            path,
            number,
            f"a REQUEST line without <start> <end> OK|KO ({shorten(chr(9).join(fields))}); "
            f"expected {EXPECTED}",
        )
    first = at - 2
    # Gatling 2.0 wrote four timestamps (request start/end, response start/end)
    while first - 1 >= 2 and _epoch_ms(fields[first - 1]) and at - (first - 1) <= 4:
        first -= 1
    start_ms, end_ms = int(fields[first]), int(fields[at - 1])
    if end_ms < start_ms:
        raise MeasurementError(
            path,
            number,
            f"the request ends ({end_ms}) before it starts ({start_ms}); expected end >= start",
        )
    name = fields[first - 1]
    groups = fields[first - 2] if first - 2 >= 1 else ""
    # the text writer joins the group path with commas (and writes a comma in a name as a space)
    label = request_label(
        groups.split(",") if groups.strip() and not groups.isdigit() else [], name
    )
    failed = fields[at] == "KO"
    message = fields[at + 1].strip() if at + 1 < len(fields) else ""
    return (
        start_ms / 1000.0,
        (end_ms - start_ms) / 1000.0,
        label,
        failed,
        error_kind(message) if failed else "",
    )


def _user_start_ms(path: str | Path, number: int, fields: list[str]) -> int | None:
    """The time of a USER START record, None for a USER END. The event precedes the first
    timestamp in every text layout (3.4+: scenario, event, time; 2.x to 3.3: scenario, user id,
    event, the session's start, time), and a START's first timestamp is the user's start."""
    at = next((i for i in range(2, len(fields)) if _epoch_ms(fields[i])), None)
    event = fields[at - 1] if at is not None else ""
    if event not in ("START", "END"):
        raise MeasurementError(
            path,
            number,
            f"a USER line without START|END <time ms> ({shorten(chr(9).join(fields))}); "
            "expected USER <scenario> START|END <time ms> as Gatling writes it "
            "(a truncated or hand-edited line?)",
        )
    return int(fields[at]) if event == "START" and at is not None else None


def _group_start_ms(path: str | Path, number: int, fields: list[str]) -> int:
    """A GROUP record's start: the first of its two timestamps (start, end), which follow the
    group path in every text layout."""
    for at in range(2, len(fields) - 1):
        if _epoch_ms(fields[at]) and _epoch_ms(fields[at + 1]):
            return int(fields[at])
    raise MeasurementError(
        path,
        number,
        f"a GROUP line without <start ms> <end ms> ({shorten(chr(9).join(fields))}); "
        "expected GROUP <groups> <start ms> <end ms> <cumulated ms> OK|KO as Gatling writes it "
        "(a truncated or hand-edited line?)",
    )


def read(path: str | Path, encoding: str = "utf-8", progress: Progress = None) -> GatlingLog:
    """The log's requests, and the run's simulation start, version and first injected event;
    a binary log (Gatling 3.13 and later) is read by `gatling_binary.read`. `encoding` is the
    text log's: the binary log says its strings' own encodings."""
    import pandas as pd

    if _is_binary(path):
        return gatling_binary.read(path, progress)
    lines = read_lines(path, EXPECTED, encoding)
    rows: list[tuple] = []
    simulation_start_s: float | None = None
    version = ""
    inject_start = InjectStart()  # in ms, as the log writes its times
    for number, line in enumerate(lines, start=1):
        if progress is not None and number % PROGRESS_EVERY == 0:
            progress(number, len(lines))
        if not line.strip():
            continue
        fields = line.split("\t")
        record = fields[0]
        if record == "REQUEST":
            start, elapsed, label, failed, kind = _request(path, number, fields)
            rows.append((start, elapsed, label, None, failed, kind, math.nan))
            inject_start.request(round(start * 1000))
        elif record == "USER":
            user_start_ms = _user_start_ms(path, number, fields)
            if user_start_ms is not None:
                inject_start.user(True, user_start_ms)
        elif record == "GROUP":
            inject_start.group(_group_start_ms(path, number, fields))
        elif record == "RUN":
            numbers = [f for f in fields[2:] if f.isdigit() and len(f) >= 12]
            simulation_start_s = int(numbers[0]) / 1000.0 if numbers else None
            version = fields[-1].strip()
        elif record not in RECORDS:
            if record.lstrip().startswith("{"):
                raise MeasurementError(
                    path,
                    number,
                    "JSON, not a simulation.log: the report's figures (js/stats.json) are "
                    "imported as gatling-stats",
                )
            if number == 1 or not rows:
                raise MeasurementError(
                    path, number, f"line starts with {shorten(record[:30])}; expected {EXPECTED}"
                )
            raise MeasurementError(
                path,
                number,
                f"unknown record {shorten(record[:30])}; expected {', '.join(RECORDS)} "
                "(a truncated or hand-edited line?)",
            )
    if not rows:
        raise MeasurementError(path, None, f"no REQUEST lines; expected {EXPECTED}")
    frame = pd.DataFrame.from_records(rows, columns=COLUMNS)
    run = GatlingRun(simulation_start_s, version, inject_start.ms / 1000.0)
    return GatlingLog(str(path), frame, outcomes_known=True, urls_known=False, run=run)
