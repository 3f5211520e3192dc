"""A day's load as a web server logged it: the arrivals per minute of an access log.

Each line of an Apache httpd (`mod_log_config`, `LogFormat`) or Tomcat (`AccessLogValve`,
`pattern`) access log is one request; its time field says when it arrived: `%t` ("the time
the request was received" in httpd; Tomcat's `%t` is taken at the beginning of the request's
processing by default) or `%{begin:msec}t` / `%{msec}t` / `%{sec}t`.  Counted per bin (a
minute by default) they give a piecewise-constant arrival rate, which the model file replays
as `clients.schedule`.

The format is the server's own: the nicknames `common` and `combined` (the same patterns in
httpd's default configuration and as Tomcat's `pattern="common"` / `"combined"`), or the
`LogFormat` / `pattern` string itself.  Tomcat's request and session attributes (`%{name}r`,
`%{name}s`) and cookies (`%{name}c`) have no httpd directive of the same letter; they are read
as opaque fields (httpd's `%{name}e` and `%{name}C`), which the profile never uses.  Parsing
is the `apachelogs` library's.

Only whole bins are kept: the bins start at the first arrival, and the arrivals after the last
whole bin (less than one bin of the log) are not replayed, because a rate over a part of a bin
would be read as a rate over the whole of it.  Lines need not be in time order (an access log
is written as requests end, not as they begin).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from sim.measurements.errors import MeasurementError
from sim.measurements.formats.accesslog import LogFormatError, parsed_lines

NICKNAMES = {
    "common": '%h %l %u %t "%r" %>s %b',
    "combined": '%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"',
}
# Tomcat's %{name}r / %{name}s (request / session attribute) and %{name}c (cookie)
_TOMCAT_ATTRIBUTE = re.compile(r"%\{([^}]*)\}([rsc])")
_TIME = re.compile(r"%(\{[^}]*\})?t")


# a year of one-minute bins, a week of one-second bins: more is a wrong bin_s or time stamp
MAX_BINS = 2**20


@dataclass(frozen=True)
class ArrivalProfile:
    """Arrivals counted per bin from the first arrival, whole bins only."""

    path: str
    first_arrival_s: float  # seconds since the epoch (or the log's clock)
    bin_s: float
    counts: tuple[int, ...]  # arrivals in each whole bin
    left_out: int  # arrivals after the last whole bin

    def rates_per_s(self, scale: float = 1.0) -> list[float]:
        """The arrival rate of each bin [requests/s], times `scale` (a growth to plan for)."""
        return [scale * count / self.bin_s for count in self.counts]


def httpd_format(log_format: str) -> str:
    """The log format as `apachelogs` reads it: a nickname expanded, Tomcat's attributes
    renamed to httpd directives that parse the same text."""
    expanded = NICKNAMES.get(log_format.strip().lower(), log_format)

    def opaque(match: re.Match[str]) -> str:
        return "%{" + match.group(1) + "}" + ("C" if match.group(2) == "c" else "e")

    return _TOMCAT_ATTRIBUTE.sub(opaque, expanded)


def profile_parser(log_format: str):
    """The `apachelogs` parser of `log_format`; a `LogFormatError` if it cannot be one or has no
    time field."""
    import apachelogs

    try:
        parser = apachelogs.LogParser(httpd_format(log_format))
    except apachelogs.Error as exc:
        raise LogFormatError(f"log_format {log_format!r}: {exc}") from None
    if not _TIME.search(httpd_format(log_format)):
        raise LogFormatError(
            f"log_format {log_format!r} has no time field; expected %t or %{{begin:msec}}t"
        )
    return parser


def arrival_time(entry) -> float | None:
    """When the request arrived: its `begin:` time (httpd's and Tomcat's default for %t)."""
    for attribute in ("request_time", "begin_request_time"):
        when = getattr(entry, attribute, None)
        if when is not None:
            return when.timestamp()
    return None


def read_arrivals(path: str | Path, log_format: str, encoding: str = "utf-8") -> list[float]:
    """Every line's arrival time [s]; one `MeasurementError` (FILE:LINE: ...) for a bad line."""
    parser = profile_parser(log_format)
    expected = f"a line in the format {log_format!r} (the server's LogFormat or pattern)"
    arrivals = []
    for number, entry in parsed_lines(path, parser, expected, encoding):
        when = arrival_time(entry)
        if when is None:
            # only an end: time, or a time pattern without a full date
            raise MeasurementError(
                path,
                number,
                "no arrival time; the format needs %t or %{begin:msec}t (an end: time is "
                "when the response was logged, not when the request arrived)",
            )
        arrivals.append(when)
    if not arrivals:
        raise MeasurementError(path, None, f"no requests; expected {expected}")
    return arrivals


def whole_bins(path: str | Path, span_s: float, bin_s: float) -> int:
    """The whole bins of `bin_s` in a log whose arrivals span `span_s`; a MeasurementError
    for less than one, or more than `MAX_BINS` (a bin of a nanosecond, or a line of another
    century, would make billions)."""
    whole = math.floor(span_s / bin_s)
    if whole < 1:
        raise MeasurementError(
            path,
            None,
            f"its arrivals span {span_s:.3g} s, less than one bin of {bin_s:g} s; give a "
            "smaller bin_s or a longer log",
        )
    if whole > MAX_BINS:
        raise MeasurementError(
            path,
            None,
            f"its arrivals span {span_s:.3g} s, {whole:.3g} bins of {bin_s:g} s (at most "
            f"{MAX_BINS:,}); give a larger bin_s, or check the log's time stamps (a line of "
            "another day or year?)",
        )
    return whole


def arrival_profile(
    path: str | Path, log_format: str, bin_s: float = 60.0, encoding: str = "utf-8"
) -> ArrivalProfile:
    """The log's arrivals per `bin_s` seconds (whole bins from the first arrival)."""
    if not bin_s > 0:
        raise LogFormatError(f"bin_s = {bin_s!r}: expected a positive number of seconds")
    arrivals = read_arrivals(path, log_format, encoding)
    first = min(arrivals)
    whole = whole_bins(path, max(arrivals) - first, bin_s)
    counts = [0] * whole
    left_out = 0
    for when in arrivals:
        index = math.floor((when - first) / bin_s)
        if index < whole:
            counts[index] += 1
        else:
            left_out += 1
    return ArrivalProfile(str(path), first, bin_s, tuple(counts), left_out)
