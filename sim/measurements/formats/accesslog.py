"""Apache httpd access logs, parsed with the `apachelogs` library against the `LogFormat`
the server was configured with (`--log-format`).

The format must time each request: `%D` (microseconds) or `%{ms}T` (milliseconds), or
`%{us}T`; `%T` alone (whole seconds) is too coarse and is refused. `%t` is the time the
request was received (its start); `%>s` (or `%s`) the status, a status of 400 or more being an
error of kind `4xx` / `5xx`; `%r` (or `%U` with `%q`) the request target, whose path is the
sample's label and whose whole text is its URL.
"""

from __future__ import annotations

import math
from pathlib import Path

from sim.measurements.errors import MeasurementError, shorten
from sim.measurements.formats.http import status_kind
from sim.measurements.text import PROGRESS_EVERY, Progress, read_lines
from sim.measurements.windows import SampleLog

# A response time past this is no request's (a download or a WebSocket of days is not a load
# test's sample): a field that is not the one the LogFormat says, e.g. %D read where %T was
MAX_RESPONSE_S = 7 * 86400.0

DURATIONS = (
    ("%D", "request_duration_microseconds", 1e-6),
    ("%{us}T", "request_duration_microseconds", 1e-6),
    ("%{ms}T", "request_duration_milliseconds", 1e-3),
)


class LogFormatError(ValueError):
    """A `--log-format` that apachelogs cannot use, or that does not time requests."""


def parser_for(log_format: str):
    import apachelogs

    try:
        parser = apachelogs.LogParser(log_format)
    except apachelogs.Error as exc:
        raise LogFormatError(f"--log-format {log_format!r}: {exc}") from None
    if not any(directive in log_format for directive, _, _ in DURATIONS):
        raise LogFormatError(
            f"--log-format {log_format!r} has no response time; expected %D (microseconds) "
            "or %{ms}T (milliseconds) in the LogFormat"
        )
    if "%t" not in log_format and "t}" not in log_format:
        raise LogFormatError(f"--log-format {log_format!r} has no %t (the request's time)")
    return parser


def parsed_lines(path: str | Path, parser, expected: str, encoding: str, progress: Progress = None):
    """(line number, `apachelogs` entry) for every non-blank line of the log at `path`; a line
    the format does not match is one `MeasurementError` (FILE:LINE: ... expected ...).  Both
    readers of access logs go through it: the importer's samples (`read`) and the arrival
    profile of `clients.schedule` (`sim.measurements.arrival_profile`)."""
    import apachelogs

    lines = read_lines(path, expected, encoding)
    for number, line in enumerate(lines, start=1):
        if progress is not None and number % PROGRESS_EVERY == 0:
            progress(number, len(lines))
        if not line.strip():
            continue
        try:
            yield number, parser.parse(line)
        except apachelogs.InvalidEntryError:
            raise MeasurementError(
                path, number, f"{shorten(line)} does not match; expected {expected}"
            ) from None
        except ValueError as exc:  # a field that matched but is no value: a date past the 31st
            raise MeasurementError(
                path,
                number,
                f"{shorten(str(exc))} cannot be read as the field the format names there (a %t "
                f"is [day/Mon/year:HH:MM:SS zone]); expected {expected}",
            ) from None


def read(
    path: str | Path, log_format: str, encoding: str = "utf-8", progress: Progress = None
) -> SampleLog:
    import pandas as pd

    parser = parser_for(log_format)
    expected = f"access-log lines in the LogFormat {log_format!r}"
    rows = []
    has_status = any(d in log_format for d in ("%>s", "%s", "%<s"))
    for number, entry in parsed_lines(path, parser, expected, encoding, progress):
        when = entry.request_time
        if when is None:
            raise MeasurementError(path, number, "no request time (%t); expected a timestamp")
        elapsed = math.nan
        for _directive, attribute, scale in DURATIONS:
            value = getattr(entry, attribute, None)
            if value is not None:
                try:
                    elapsed = value * scale
                except OverflowError:  # an integer of hundreds of digits
                    elapsed = math.inf
                break
        if math.isnan(elapsed):
            raise MeasurementError(path, number, "no response time ('-'); expected %D or %{ms}T")
        if elapsed < 0:
            raise MeasurementError(
                path,
                number,
                f"a negative response time ({elapsed:g} s); %D and %{{ms}}T count the time from "
                "the request to the response: check the line",
            )
        if elapsed > MAX_RESPONSE_S:
            raise MeasurementError(
                path,
                number,
                f"a response time of {elapsed:.3g} s (over a week); expected %D in microseconds "
                "or %{ms}T in milliseconds: check that --log-format is the server's LogFormat",
            )
        target = _target(entry)
        status = entry.final_status if entry.final_status is not None else entry.status
        failed = has_status and status is not None and status >= 400
        rows.append(
            (
                when.timestamp(),
                elapsed,
                target.split("?", 1)[0],
                target,
                failed,
                status_kind(status) if failed else "",
                math.nan,
            )
        )
    if not rows:
        raise MeasurementError(path, None, f"no requests; expected {expected}")
    frame = pd.DataFrame.from_records(
        rows, columns=["start_s", "elapsed_s", "label", "url", "failed", "error_kind", "users"]
    )
    return SampleLog(str(path), frame, outcomes_known=has_status, urls_known=True)


def _target(entry) -> str:
    """The request target: from %r ("GET /path?q HTTP/1.1"), else %U and %q."""
    line = getattr(entry, "request_line", None)
    if line:
        parts = line.split()
        return parts[1] if len(parts) >= 2 else line
    uri = getattr(entry, "request_uri", None) or ""
    query = getattr(entry, "request_query", None) or ""
    return uri + query
