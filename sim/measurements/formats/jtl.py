"""JMeter results files (JTL): CSV with a header line, or XML.

CSV fields used (JMeter's names): `timeStamp` (ms since the epoch — seconds and microseconds
are told apart by their magnitude, `epoch.py` — the sample's start with
JMeter's shipped `sampleresult.timestamp.start=true`), `elapsed` (ms, the whole sample),
`label`, `success` (true/false), `responseCode`, `URL` (optional: needs
`jmeter.save.saveservice.url=true`), `allThreads` (optional: active threads of all thread
groups, the offered load). XML: `<httpSample>` / `<sample>` elements under `<testResults>` with
the attributes `ts`, `t`, `lb`, `s`, `rc`, `na` and a `<java.net.URL>` child. Sub-samples
(embedded resources, transaction children) are parts of their parent and are not counted.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from xml.parsers import expat

from sim.files import XmlGuard
from sim.measurements.errors import MeasurementError, shorten
from sim.measurements.formats.epoch import Clock
from sim.measurements.formats.http import exception_kind, status_kind
from sim.measurements.text import PROGRESS_EVERY, Progress, csv_records, read_lines
from sim.measurements.windows import SampleLog

EXPECTED_CSV = "a JMeter CSV results file whose first line names the fields (timeStamp,elapsed,...)"
EXPECTED = "a JMeter results file (CSV with a header line, or XML <testResults>)"
REQUIRED = ("timeStamp", "elapsed", "label", "success")
DELIMITERS = ",;\t|"


def read(path: str | Path, encoding: str = "utf-8", progress: Progress = None) -> SampleLog:
    lines = read_lines(path, EXPECTED, encoding)
    first = next(line for line in lines if line.strip())
    if first.lstrip().startswith("<"):
        return _read_xml(path, "\n".join(lines), progress, len(lines))
    return _read_csv(path, lines, progress)


def error_kind(success: bool, code: str, message: str) -> str:
    """JMeter's `responseCode` for a failed sample: an HTTP status, or "Non HTTP response
    code: java.net.SocketTimeoutException" and the like; a failed 2xx/3xx is an assertion."""
    if success:
        return ""
    if code.isdigit():
        status = int(code)
        return "assertion" if status < 400 else status_kind(status)
    return exception_kind(code + " " + message)


def _frame(path, rows: list[tuple], has_url: bool, outcomes: bool = True) -> SampleLog:
    import pandas as pd

    frame = pd.DataFrame.from_records(
        rows, columns=["start_s", "elapsed_s", "label", "url", "failed", "error_kind", "users"]
    )
    return SampleLog(str(path), frame, outcomes_known=outcomes, urls_known=has_url)


def _number(path, line: int, field: str, text: str, expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise MeasurementError(path, line, f"{field} = {shorten(text)}; expected {expected}")
    return value


def _success(path, line: int, field: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise MeasurementError(path, line, f"{field} = {shorten(text)}; expected true or false")
    return lowered == "true"


def _read_csv(path, lines: list[str], progress: Progress = None) -> SampleLog:
    header_index = next(i for i, line in enumerate(lines) if line.strip())
    header_line = lines[header_index]
    delimiter = next((d for d in DELIMITERS if d in header_line), ",")
    header = next(csv.reader([header_line], delimiter=delimiter))
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        if header and header[0].strip().isdigit():
            found = "no header line (the first line is a sample)"
            hint = " (set jmeter.save.saveservice.print_field_names=true)"
        else:
            found = f"the header lacks {', '.join(missing)}"
            hint = ""
        raise MeasurementError(path, header_index + 1, f"{found}; expected {EXPECTED_CSV}{hint}")
    at = {name: header.index(name) for name in header}
    width = len(header)
    url_at = at.get("URL")
    users_at = at.get("allThreads")
    code_at = at.get("responseCode")
    message_at = at.get("responseMessage")
    rows: list[tuple] = []
    # csv.reader over the remaining text: quoted fields (responseMessage, failureMessage) may
    # hold the delimiter or even line breaks, so a record can span lines.
    body = io.StringIO("\n".join(lines[header_index + 1 :]))
    reader = csv.reader(body, delimiter=delimiter)
    previous_end = 0
    clock = Clock(path, "timeStamp")
    for record in csv_records(path, reader, header_index + 2, EXPECTED_CSV):
        line = header_index + 2 + previous_end
        previous_end = reader.line_num
        if progress is not None and len(rows) % PROGRESS_EVERY == 0:
            progress(line, len(lines))
        if not record or (len(record) == 1 and not record[0].strip()):
            continue
        if len(record) != width:
            raise MeasurementError(
                path,
                line,
                f"{len(record)} fields; expected {width} as named on the header line "
                "(a truncated or hand-edited line?)",
            )
        start = _number(
            path,
            line,
            "timeStamp",
            record[at["timeStamp"]],
            "milliseconds since the epoch (jmeter.save.saveservice.timestamp_format=ms)",
        )
        start = clock.seconds(start, line)
        elapsed = _number(path, line, "elapsed", record[at["elapsed"]], "milliseconds >= 0")
        success = _success(path, line, "success", record[at["success"]])
        code = record[code_at] if code_at is not None else ""
        message = record[message_at] if message_at is not None else ""
        users = math.nan
        if users_at is not None:
            users = _number(path, line, "allThreads", record[users_at], "a thread count >= 0")
        rows.append(
            (
                start,
                elapsed / 1000.0,
                record[at["label"]],
                record[url_at] if url_at is not None else None,
                not success,
                error_kind(success, code, message),
                users,
            )
        )
    if not rows:
        raise MeasurementError(
            path, header_index + 2, f"no samples after the header; expected {EXPECTED_CSV}"
        )
    return _frame(path, rows, url_at is not None)


def _read_xml(path, text: str, progress: Progress = None, total_lines: int = 0) -> SampleLog:
    parser = expat.ParserCreate()
    guard = XmlGuard(
        parser, len(text), lambda line, found, fix: MeasurementError(path, line, f"{found}; {fix}")
    )
    rows: list[tuple] = []
    depth = 0
    current: dict | None = None  # the top-level sample being read, with its line
    in_url = False
    url_text: list[str] = []
    has_url = False
    clock = Clock(path, "ts")

    def start(name: str, attributes: dict[str, str]) -> None:
        nonlocal depth, current, in_url, url_text
        guard.text(sum(len(value) for value in attributes.values()))
        depth += 1
        line = parser.CurrentLineNumber
        if depth == 1 and name != "testResults":
            raise MeasurementError(
                path, line, f"root element <{name}>; expected <testResults> ({EXPECTED})"
            )
        if depth == 2 and name in ("httpSample", "sample"):
            current = {"line": line, **attributes}
            url_text = []
        elif depth == 3 and current is not None and name == "java.net.URL":
            in_url = True

    def end(name: str) -> None:
        nonlocal depth, current, in_url, has_url
        if depth == 3 and in_url:
            in_url = False
            assert current is not None  # in_url is set only inside a sample
            current["url"] = "".join(url_text).strip()
            has_url = True
        elif depth == 2 and current is not None:
            rows.append(_xml_row(path, current, clock))
            current = None
            if progress is not None and len(rows) % PROGRESS_EVERY == 0:
                progress(parser.CurrentLineNumber, total_lines)
        depth -= 1

    def characters(data: str) -> None:
        guard.text(len(data))
        if in_url:
            url_text.append(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = characters
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        if exc.code == expat.errors.codes[expat.errors.XML_ERROR_NO_ELEMENTS] and depth > 0:
            raise MeasurementError(
                path,
                exc.lineno,
                "the file ends inside <testResults> (truncated: the test stopped before JMeter "
                f"closed the file?); expected {EXPECTED}",
            ) from None
        raise MeasurementError(
            path,
            exc.lineno,
            f"not well-formed XML ({expat.errors.messages[exc.code]}); expected {EXPECTED}",
        ) from None
    if not rows:
        raise MeasurementError(
            path, None, "no <httpSample> or <sample> elements under <testResults>"
        )
    return _frame(path, rows, has_url)


def _xml_row(path, sample: dict, clock: Clock) -> tuple:
    line = sample["line"]
    for attribute, meaning in (("ts", "timestamp"), ("t", "elapsed time"), ("s", "success")):
        if attribute not in sample:
            raise MeasurementError(
                path,
                line,
                f"a sample without the {attribute}= attribute ({meaning}); expected "
                "JMeter's saved fields ts, t, lb, s",
            )
    start = clock.seconds(
        _number(path, line, "ts", sample["ts"], "milliseconds since the epoch"), line
    )
    elapsed = _number(path, line, "t", sample["t"], "milliseconds >= 0")
    success = _success(path, line, "s", sample["s"])
    users = math.nan
    if "na" in sample:
        users = _number(path, line, "na", sample["na"], "a thread count >= 0")
    return (
        start,
        elapsed / 1000.0,
        sample.get("lb", ""),
        sample.get("url"),
        not success,
        error_kind(success, sample.get("rc", ""), sample.get("rm", "")),
        users,
    )
