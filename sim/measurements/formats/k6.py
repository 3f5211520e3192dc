"""k6 results: `k6 run --out json=FILE` (NDJSON) and `--out csv=FILE` per-request samples.

Each HTTP request is the point of metric `http_req_duration` (ms): k6 stamps it with the
request's end (`Trail.EndTime`), and the duration is k6's `sending + waiting + receiving`
(it leaves out `http_req_blocked` and `http_req_connecting`, the wait for a connection), so
the sample starts `duration` before its time. Its tags say the outcome: `expected_response`
("true" when the status is one the script's `responseCallback` expects, 200-399 by default)
and `status` (0 when no response came, with k6's `error_code`: 1050 a request timeout,
1100-1299 a failed DNS look-up or TCP connect). The label is the `name` tag (the URL unless
the script names it), the URL the `url` tag. Other metrics (`http_reqs`, `iterations`,
`vus`, ...) are skipped.

NDJSON lines are `{"type":"Point","metric":NAME,"data":{"time":RFC3339,"value":V,"tags":{}}}`
(and `"type":"Metric"` declarations). CSV has the header
`metric_name,timestamp,metric_value,...,expected_response,...,name,...,status,...,url,...`;
its `timestamp` is whole seconds since the epoch by default (`K6_CSV_TIME_FORMAT=unix`),
or `unix_milli`, `unix_micro`, `unix_nano`, `rfc3339`, `rfc3339_nano`: whole seconds put
every window edge and the run's span on a 1 s grid, so prefer `unix_milli`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import datetime
from pathlib import Path

from sim.measurements.errors import MeasurementError, shorten
from sim.measurements.formats.http import status_kind
from sim.measurements.text import (
    PROGRESS_EVERY,
    Progress,
    csv_records,
    nested_too_deep,
    read_lines,
)
from sim.measurements.windows import SampleLog

EXPECTED = "k6 results: `k6 run --out json=FILE` (NDJSON) or `--out csv=FILE`"
DURATION = "http_req_duration"
CSV_REQUIRED = ("metric_name", "timestamp", "metric_value")
SUMMARY_HINT = (
    "k6's end-of-test summary (--summary-export or handleSummary), one aggregate without "
    "samples; import it as k6-summary, or import the run's --out json or --out csv file as k6"
)


def read(path: str | Path, encoding: str = "utf-8", progress: Progress = None) -> SampleLog:
    lines = read_lines(path, EXPECTED, encoding)
    first_index = next(i for i, line in enumerate(lines) if line.strip())
    first = lines[first_index].lstrip()
    if first.startswith("{"):
        return _read_ndjson(path, lines, progress)
    if first.split(",")[0].strip() == "metric_name":
        return _read_csv(path, lines, first_index, progress)
    raise MeasurementError(
        path, first_index + 1, f"line starts with {shorten(first[:40])}; expected {EXPECTED}"
    )


def error_kind(expected: str, status: str, error_code: str) -> str:
    """The failure's kind: `5xx`/`4xx` by HTTP status, or by k6's error code when no response
    came (1050 request timeout; 1100-1299 DNS and TCP dial errors)."""
    if expected == "true":
        return ""
    if status.isdigit() and int(status) > 0:
        return status_kind(int(status))
    code = int(error_code) if error_code.isdigit() else 0
    if code == 1050:
        return "timeout"
    if 1100 <= code < 1300:
        return "connect"
    return "other"


def _outcome(path, line: int, tags: dict) -> tuple[bool, str]:
    expected = str(tags.get("expected_response", ""))
    if expected not in ("true", "false"):
        raise MeasurementError(
            path,
            line,
            f"{DURATION} without the expected_response tag (found {shorten(expected)}); "
            "expected k6's system tags (leave --system-tags at its default, or include "
            "expected_response and status)",
        )
    kind = error_kind(expected, str(tags.get("status", "")), str(tags.get("error_code", "")))
    return expected == "false", kind


def _row(path, line: int, end_s: float, duration_ms: float, tags: dict) -> tuple:
    if not math.isfinite(duration_ms) or duration_ms < 0:
        raise MeasurementError(
            path, line, f"{DURATION} = {duration_ms!r}; expected milliseconds >= 0"
        )
    failed, kind = _outcome(path, line, tags)
    elapsed = duration_ms / 1000.0
    url = tags.get("url")
    return (end_s - elapsed, elapsed, str(tags.get("name", url or "")), url, failed, kind, math.nan)


def _time(path, line: int, text: str) -> float:
    try:
        when = datetime.fromisoformat(_trim_nanoseconds(text).replace("Z", "+00:00"))
    except (ValueError, TypeError, AttributeError):
        when = None
    if when is None or when.tzinfo is None:  # a time without its zone would be read as local
        raise MeasurementError(
            path, line, f"time = {shorten(str(text))}; expected an RFC 3339 time with its zone"
        )
    return when.timestamp()


def _trim_nanoseconds(text: str) -> str:
    """Go writes nanoseconds (`.319581852Z`); Python's ISO parser takes at most microseconds."""
    if "." not in text:
        return text
    head, tail = text.split(".", 1)
    digits = len(tail) - len(tail.lstrip("0123456789"))
    return f"{head}.{tail[: min(digits, 6)]}{tail[digits:]}"


def _read_ndjson(path, lines: list[str], progress: Progress) -> SampleLog:
    rows: list[tuple] = []
    for number, text in enumerate(lines, start=1):
        if progress is not None and number % PROGRESS_EVERY == 0:
            progress(number, len(lines))
        if not text.strip():
            continue
        if number > 1 and DURATION not in text and text.rstrip().endswith("}"):
            # most lines are other metrics' points: parsing only the requests' lines makes a
            # long run's file several times faster to read (a cut-off line is still named)
            continue
        try:
            record = json.loads(text)
        except RecursionError:
            raise nested_too_deep(path, number, EXPECTED) from None
        except json.JSONDecodeError as exc:
            if number == 1 and text.strip() == "{":
                raise MeasurementError(
                    path, 1, f"a JSON document, not NDJSON; {SUMMARY_HINT}"
                ) from None
            raise MeasurementError(
                path,
                number,
                f"not a JSON line ({exc.msg}); expected one k6 JSON record per line "
                "(a truncated file? the test stopped before k6 closed it)",
            ) from None
        if not isinstance(record, dict):
            raise MeasurementError(
                path, number, f"a JSON {type(record).__name__}; expected {EXPECTED}"
            )
        if number == 1 and "metrics" in record and "type" not in record:
            raise MeasurementError(path, 1, SUMMARY_HINT)
        if record.get("type") != "Point" or record.get("metric") != DURATION:
            continue
        data = record.get("data")
        if not isinstance(data, dict) or "time" not in data or "value" not in data:
            raise MeasurementError(
                path,
                number,
                f"a {DURATION} point without data.time and data.value; expected {EXPECTED}",
            )
        tags = data.get("tags") or {}
        try:
            value = float(data["value"])
        except (TypeError, ValueError):
            value = math.nan
        rows.append(_row(path, number, _time(path, number, data["time"]), value, tags))
    if not rows:
        raise MeasurementError(
            path,
            None,
            f"no {DURATION} points; expected {EXPECTED} of a test that made HTTP requests",
        )
    return _frame(path, rows)


CSV_TIME_UNITS = {10: 1.0, 13: 1e-3, 16: 1e-6, 19: 1e-9}  # digits of an epoch now -> seconds


def _csv_time(path, line: int, text: str) -> float:
    digits = text.strip()
    if digits.isdigit():
        scale = CSV_TIME_UNITS.get(len(digits))
        if scale is not None:
            return int(digits) * scale
    elif digits:
        return _time(path, line, digits)
    raise MeasurementError(
        path,
        line,
        f"timestamp = {shorten(text)}; expected K6_CSV_TIME_FORMAT unix, unix_milli, unix_micro, "
        "unix_nano or rfc3339",
    )


def _read_csv(path, lines: list[str], header_index: int, progress: Progress) -> SampleLog:
    header = next(csv.reader([lines[header_index]]))
    missing = [name for name in CSV_REQUIRED if name not in header]
    if missing:
        raise MeasurementError(
            path, header_index + 1, f"the header lacks {', '.join(missing)}; expected {EXPECTED}"
        )
    at = {name: header.index(name) for name in header}
    width = len(header)
    reader = csv.reader(io.StringIO("\n".join(lines[header_index + 1 :])))
    rows: list[tuple] = []
    for offset, record in enumerate(csv_records(path, reader, header_index + 2, EXPECTED)):
        number = header_index + 2 + offset
        if progress is not None and number % PROGRESS_EVERY == 0:
            progress(number, len(lines))
        if not record:
            continue
        if len(record) != width:
            raise MeasurementError(
                path,
                number,
                f"{len(record)} fields; expected {width} as named on the header line "
                "(a truncated file?)",
            )
        if record[at["metric_name"]] != DURATION:
            continue
        tags = {
            name: record[at[name]]
            for name in ("expected_response", "status", "error_code", "name", "url")
            if name in at
        }
        try:
            value = float(record[at["metric_value"]])
        except ValueError:
            raise MeasurementError(
                path,
                number,
                f"metric_value = {shorten(record[at['metric_value']])}; expected milliseconds",
            ) from None
        rows.append(
            _row(path, number, _csv_time(path, number, record[at["timestamp"]]), value, tags)
        )
    if not rows:
        raise MeasurementError(
            path,
            None,
            f"no {DURATION} lines; expected {EXPECTED} of a test that made HTTP requests",
        )
    return _frame(path, rows)


def _frame(path, rows: list[tuple]) -> SampleLog:
    import pandas as pd

    frame = pd.DataFrame.from_records(
        rows, columns=["start_s", "elapsed_s", "label", "url", "failed", "error_kind", "users"]
    )
    return SampleLog(str(path), frame, outcomes_known=True, urls_known=frame["url"].notna().all())
