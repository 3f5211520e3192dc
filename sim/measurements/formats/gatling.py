"""Gatling's `simulation.log`, the text log of Gatling 2 and 3 up to 3.11.

Tab-separated records, one a line (Gatling's `LogFileDataWriter`):

- `RUN  <simulation class>  <simulation id>  <start ms>  <description>  <Gatling version>`:
  the simulation's start and Gatling's version, kept as what they are (`GatlingRun`);
- `REQUEST  [<user id>]  <groups>  <name>  <start ms>  <end ms>  OK|KO  <message>`: one
  request; 3.4 and later leave out the user id, Gatling 2 has the scenario before it;
  the response time is end - start (ms), as Gatling's report counts it;
- `USER  <scenario>  [<user id>]  START|END  [<session start ms>]  <time ms>`, `GROUP  ...  <start ms>
  <end ms>  <cumulated ms>  ...  OK|KO`: not requests; their start times count towards the
  run's first injected event, below;
- `ERROR`, `ASSERTION`: skipped.

Time zero is Gatling's own: the run's first injected event, the earliest REQUEST start, USER
START or GROUP start of the log (`injectStart` of gatling-charts' first pass over the log,
`LogFileReader.firstPass` in 3.8, `FirstPassParser` of `LogFileReader.scala` in 3.12 and
later). Gatling's report counts from it: its `ResultsHolder` is built over
[`injectStart`, `injectEnd`], and each `GeneralStatsBuffer`'s mean requests per second is the
count over `ceil((injectEnd - injectStart) / 1000)` seconds. The RUN record's start precedes it
by the simulation's start-up and any `nothingFor` (6.7 s on the committed 229-s run), which
would read the rate 2.8 % low; an explicit `--start` still wins.

The label is the request's name, prefixed with its group path (`group/name`) when it is in a
group, as the report names it. A KO's message (a failed check, `j.n.ConnectException: ...`,
`Request timeout to ...`) gives its error kind.

Gatling 3.12 and later write a binary log instead (its first byte is the RUN record's header
0, not text); tiersim does not read it, and says so.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from sim.measurements.errors import MeasurementError, shorten
from sim.measurements.formats.http import exception_kind, status_kind
from sim.measurements.text import PROGRESS_EVERY, Progress, read_lines
from sim.measurements.windows import SampleLog

EXPECTED = (
    "Gatling's text simulation.log (Gatling 2 to 3.11: tab-separated RUN, USER, REQUEST lines)"
)
BINARY = (
    "a binary simulation.log: Gatling 3.12 and later write their log in a binary format "
    "that tiersim does not read; expected the text log of Gatling 3.11 or earlier, or import "
    "the run's HTML report figures (its js/stats.json) as gatling-stats"
)
STATUSES = ("OK", "KO")
RECORDS = ("RUN", "REQUEST", "USER", "GROUP", "ERROR", "ASSERTION")
_STATUS_IN_MESSAGE = re.compile(r"\b(?:status|found)\D{0,20}([1-5]\d\d)\b")


@dataclass(frozen=True)
class GatlingRun:
    """What the log says of the run as a whole (seconds since the epoch).

    `simulation_start_s`, `version`: the RUN record's simulation start and Gatling version
    (None, "" without a RUN record). `first_injected_s`: Gatling's `injectStart`, the earliest
    REQUEST start, USER START or GROUP start, where Gatling's report starts the run.
    """

    simulation_start_s: float | None
    version: str
    first_injected_s: float


@dataclass
class GatlingLog(SampleLog):
    """The requests of a simulation.log, with what the log says of the run."""

    run: GatlingRun


def _sniff_binary(path: str | Path) -> None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return  # read_lines names the problem
    if head.startswith(b"\x1f\x8b"):
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
        except zlib.error:
            return
    if head[:1] == b"\x00":
        raise MeasurementError(path, 1, BINARY)


def error_kind(message: str) -> str:
    """The kind of a KO from Gatling's message: a check on the status names the status's
    class (`status.find.in(200,...), but actually found 503` -> 5xx); a timeout or a
    connection failure is named as JMeter's exceptions are."""
    lowered = message.lower()
    if "status" in lowered:
        found = _STATUS_IN_MESSAGE.findall(lowered)
        if found:
            return status_kind(int(found[-1]))
    if "timeout" in lowered or "timed out" in lowered:
        return "timeout" if "connect" not in lowered else "connect"
    kind = exception_kind(message)
    return kind if kind != "other" else ("assertion" if "check" in lowered else "other")


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
    label = (
        f"{groups.replace(',', '/')}/{name}" if groups.strip() and not groups.isdigit() else name
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
    """The log's requests, and the run's simulation start, version and first injected event."""
    import pandas as pd

    _sniff_binary(path)
    lines = read_lines(path, EXPECTED, encoding)
    rows: list[tuple] = []
    simulation_start_s: float | None = None
    version = ""
    # Gatling's injectStart, in ms as the log writes it (min over the records, as its first pass)
    first_injected_ms = math.inf
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
            first_injected_ms = min(first_injected_ms, round(start * 1000))
        elif record == "USER":
            user_start_ms = _user_start_ms(path, number, fields)
            if user_start_ms is not None:
                first_injected_ms = min(first_injected_ms, user_start_ms)
        elif record == "GROUP":
            first_injected_ms = min(first_injected_ms, _group_start_ms(path, number, fields))
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
    frame = pd.DataFrame.from_records(
        rows, columns=["start_s", "elapsed_s", "label", "url", "failed", "error_kind", "users"]
    )
    run = GatlingRun(simulation_start_s, version, first_injected_ms / 1000.0)
    return GatlingLog(str(path), frame, outcomes_known=True, urls_known=False, run=run)
