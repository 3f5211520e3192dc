"""ApacheBench: its text report (stdout) and its `-g` gnuplot file.

The report is aggregated: one row for the whole run. Used lines: `Document Path`,
`Concurrency Level` (users), `Time taken for tests` (the window), `Complete requests`,
`Failed requests` with its `(Connect: , Receive: , Length: , Exceptions: )` breakdown,
`Non-2xx responses`, `Requests per second`, the `Total:` row of `Connection Times (ms)` (its
mean) and the `Percentage of the requests served within a certain time (ms)` table. ab prints
those times in whole milliseconds and takes percentile p as the sorted value at index
⌊n·p/100⌋; the table keeps ab's figures as they are.

The `-g` file has one line per request: `starttime` (text), `seconds` (start, whole seconds
since the epoch), `ctime` (connect), `dtime` (processing), `ttime` (total) and `wait`, all in
whole milliseconds. It says nothing of success or failure, nor of the URL: each file's
requests are labelled with the file's name, and its error counts are left empty.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from sim.measurements.classes import TOTAL
from sim.measurements.errors import MeasurementError, shorten
from sim.measurements.table import Row, successes_only
from sim.measurements.text import PROGRESS_EVERY, Progress, read_lines
from sim.measurements.windows import SampleLog

EXPECTED_REPORT = (
    "an ab report (the text ab prints: 'Complete requests:', 'Time taken for tests:', ...)"
)
EXPECTED_GNUPLOT = "an ab -g file (tab-separated, header starttime seconds ctime dtime ttime wait)"
GNUPLOT_HEADER = ["starttime", "seconds", "ctime", "dtime", "ttime", "wait"]

_FIELD = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9 \-]*?):\s+(?P<value>.*)$")
_NUMBER = re.compile(r"^[-+]?\d+(\.\d+)?")
_BREAKDOWN = re.compile(r"\((?:Connect|Receive|Length|Exceptions): ")
_PERCENT = re.compile(r"^\s*(\d+)%\s+(\d+)")
ERROR_KINDS = {
    "Connect": "connect",
    "Receive": "receive",
    "Length": "length",
    "Exceptions": "exception",
}
REQUIRED = (
    "Document Path",
    "Concurrency Level",
    "Time taken for tests",
    "Complete requests",
    "Failed requests",
)


def _value(path, line: int, name: str, text: str) -> float:
    match = _NUMBER.match(text.strip())
    if not match:
        raise MeasurementError(path, line, f"{name}: {shorten(text.strip())}; expected a number")
    return float(match.group(0))


def read_report(path: str | Path, encoding: str = "utf-8") -> tuple[Row, str]:
    """The report as one aggregate row (times in seconds) and its document path (the label)."""
    lines = read_lines(path, EXPECTED_REPORT, encoding)
    fields: dict[str, tuple[int, str]] = {}
    kinds: dict[str, float] = {}
    percentiles: dict[int, float] = {}
    total_mean: float | None = None
    in_percentiles = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if in_percentiles:
            match = _PERCENT.match(line)
            if match:
                percentiles[int(match.group(1))] = float(match.group(2)) / 1000.0
                continue
            in_percentiles = False
        if stripped.startswith("Percentage of the requests served"):
            in_percentiles = True
            continue
        if _BREAKDOWN.search(stripped):
            for item in stripped.strip("()").split(","):
                name, _, value = item.strip().partition(":")
                if name in ERROR_KINDS:
                    kinds[ERROR_KINDS[name]] = _value(path, number, name, value)
            continue
        if stripped.startswith("Total:"):
            parts = stripped.split()
            if len(parts) >= 3:  # min mean [+/-sd median] max, in whole ms
                total_mean = _value(path, number, "Total mean", parts[2]) / 1000.0
            continue
        match = _FIELD.match(stripped)
        if match and match.group("name") not in fields:
            fields[match.group("name")] = (number, match.group("value"))
    if "Complete requests" not in fields and not any("ApacheBench" in line for line in lines[:3]):
        raise MeasurementError(path, 1, f"{shorten(lines[0])}; expected {EXPECTED_REPORT}")
    missing = [name for name in REQUIRED if name not in fields]
    if missing:
        raise MeasurementError(
            path,
            len(lines),
            f"the report ends without {', '.join(repr(m + ':') for m in missing)}; expected "
            f"{EXPECTED_REPORT} (truncated, or ab stopped on an error?)",
        )

    def figure(name: str) -> float:
        line, text = fields[name]
        return _value(path, line, name, text)

    completed = figure("Complete requests")
    failed = figure("Failed requests")
    non2xx = figure("Non-2xx responses") if "Non-2xx responses" in fields else 0.0
    if non2xx:
        kinds["non2xx"] = non2xx
    duration = figure("Time taken for tests")
    if duration <= 0:
        where, text = fields["Time taken for tests"]
        raise MeasurementError(path, where, f"Time taken for tests: {text}; expected > 0 seconds")
    row: Row = {
        "window_start_s": 0.0,
        "window_end_s": duration,
        "users": figure("Concurrency Level"),
        "arrival_rate_per_s": math.nan,  # ab is a closed loop: no arrival rate is offered
        # ab's own figure: it divides by the unrounded duration that the report prints rounded
        "throughput": (
            figure("Requests per second")
            if "Requests per second" in fields
            else completed / duration
        ),
        "response.mean": total_mean if total_mean is not None else math.nan,
        "count.completed": completed,  # failures included: successes_only() takes them out
        # ab counts connect, receive, length and exception failures as "Failed requests" and
        # non-2xx answers apart; both are errors to a capacity planner.
        "count.errors": failed + non2xx,
    }
    for p in (50, 90, 95, 99):
        row[f"response.p{p}"] = percentiles.get(p, math.nan)
    for kind, count in kinds.items():
        row[f"count.error.{kind}"] = count
    return row, fields["Document Path"][1].strip()


def aggregate_rows(path: str | Path, run: str, classes, encoding: str = "utf-8") -> list[Row]:
    row, document = read_report(path, encoding)
    row = successes_only(row)
    name = classes.name(document)
    return [{"run": run, "class": name, **row}, {"run": run, "class": TOTAL, **row}]


def read_gnuplot(path: str | Path, encoding: str = "utf-8", progress: Progress = None) -> SampleLog:
    import pandas as pd

    lines = read_lines(path, EXPECTED_GNUPLOT, encoding)
    header = lines[0].split("\t")
    if header != GNUPLOT_HEADER:
        raise MeasurementError(path, 1, f"header {shorten(lines[0])}; expected {EXPECTED_GNUPLOT}")
    label = Path(path).stem
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if progress is not None and number % PROGRESS_EVERY == 0:
            progress(number, len(lines))
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != len(GNUPLOT_HEADER):
            raise MeasurementError(
                path,
                number,
                f"{len(parts)} tab-separated fields; expected 6 ({', '.join(GNUPLOT_HEADER)})",
            )
        values = []
        for name, text in zip(GNUPLOT_HEADER[1:], parts[1:]):
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not math.isfinite(value) or value < 0:
                raise MeasurementError(
                    path,
                    number,
                    f"{name} = {shorten(text)}; expected a number >= 0"
                    + (" (seconds since the epoch)" if name == "seconds" else " (milliseconds)"),
                )
            values.append(value)
        seconds, _connect, _processing, total, _wait = values
        rows.append((seconds, total / 1000.0, label, None, False, "", math.nan))
    if not rows:
        raise MeasurementError(
            path, 2, f"no requests after the header; expected {EXPECTED_GNUPLOT}"
        )
    frame = pd.DataFrame.from_records(
        rows, columns=["start_s", "elapsed_s", "label", "url", "failed", "error_kind", "users"]
    )
    return SampleLog(str(path), frame, outcomes_known=False, urls_known=False)
