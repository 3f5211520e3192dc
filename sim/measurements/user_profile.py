"""A day's closed population from an access log: the users present in each bin, by the
interactive response time law.

A log records arrivals, not users.  Over a bin, every user cycles through a think time and a
request, so Little's law over the cycle (the interactive response time law) gives the users
present as

    N = X × (Z + R)

with X the bin's arrivals per second (the log's), Z the users' mean think time (the model's
`clients.think`) and R the bin's mean response time, measured in the same log: Apache httpd's
`%D` (microseconds; `mod_log_config`) or `%{us}T` / `%{ms}T`, Tomcat's `AccessLogValve` `%D`
(microseconds from Tomcat 10; Tomcat 9 and older write milliseconds there, so give their
pattern with `%{ms}T` in place of `%D`: the same digits, read as milliseconds).  `%T` alone is
refused: httpd and Tomcat 10 write whole seconds (truncated), which for requests of a fraction
of a second reads R as 0.  A request's R is counted in the bin of its arrival, as its X is.

What the conversion assumes (and the model then takes as given):
- the users' think time is the model's Z (the log has none: a think time is the time between
  a user's requests, which a log without user ids cannot see);
- every logged request is one user's cycle: no request is sent without a user behind it, none
  is a retry or a sub-request of another (an embedded resource fetched in parallel would be
  counted as a user of its own);
- the log's response time is the clients' view of the front: the logging server is the front
  the model's clients talk to, and the network between them costs nothing.
With no think time (Z = 0) the law still holds: N = X × R, the users are the requests in
progress (each sends its next request the moment the last is answered).

A closed population is whole users.  Each bin's N is rounded to the nearest whole number and
the rounding error is carried to the next bin as the arrival rate it implies: a bin rounded
down by e users was short of e / (Z + R) requests per second, which the next bin's X is given
(and a bin rounded up takes them from it).  So the whole replay offers the log's arrivals to
within what half a user sends in a bin, rather than losing up to half a user in every bin.  An empty bin
(no arrivals, so no R of its own) takes the R of the last bin that had requests; its N is the
carried rate alone, less than half a user: none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from sim.measurements.arrival_profile import (
    arrival_time,
    httpd_format,
    profile_parser,
    whole_bins,
)
from sim.measurements.errors import MeasurementError
from sim.measurements.formats.accesslog import DURATIONS, MAX_RESPONSE_S, parsed_lines

WHOLE_SECONDS = ("%T", "%{s}T")


@dataclass(frozen=True)
class ResponseProfile:
    """Arrivals and their summed response times per bin from the first arrival, whole bins only
    (as `sim.measurements.arrival_profile.ArrivalProfile`, whose bins these are)."""

    path: str
    first_arrival_s: float  # seconds since the epoch (or the log's clock)
    bin_s: float
    counts: tuple[int, ...]  # arrivals in each whole bin
    response_sums_s: tuple[float, ...]  # the summed response time of those arrivals [s]
    left_out: int  # arrivals after the last whole bin


@dataclass(frozen=True)
class UsersPerBin:
    """The closed population of each bin: the law's N (`exact`, carry included) and the whole
    users that replay it (`users`)."""

    bin_s: float
    think_s: float  # Z
    response_s: tuple[float, ...]  # R of each bin (an empty bin: the last known)
    exact: tuple[float, ...]  # (X + carried rate) × (Z + R)
    users: tuple[int, ...]  # the whole users of each bin


def has_response_time(log_format: str) -> bool:
    """Whether the format times each request finely enough (%D, %{us}T or %{ms}T)."""
    expanded = httpd_format(log_format)
    return any(directive in expanded for directive, _, _ in DURATIONS)


def response_profile(
    path: str | Path, log_format: str, bin_s: float = 60.0, encoding: str = "utf-8"
) -> ResponseProfile:
    """The log's arrivals and summed response times per `bin_s` (whole bins from the first
    arrival); one `MeasurementError` naming the file (and line) for a log that cannot give
    them."""
    if not has_response_time(log_format):
        coarse = any(d in httpd_format(log_format) for d in WHOLE_SECONDS)
        lacks = (
            "its %T is whole seconds, too coarse for a mean response time"
            if coarse
            else "it has no response time (%D or %T)"
        )
        raise MeasurementError(
            path,
            None,
            f"log_format {log_format!r}: {lacks}, which closed clients need (users = arrivals "
            "× (think + response)); add %D to the server's LogFormat (Tomcat: to the "
            'AccessLogValve pattern), or replay the log on open clients (kind = "open", '
            "clients.schedule)",
        )
    parser = profile_parser(log_format)
    expected = f"a line in the format {log_format!r} (the server's LogFormat or pattern)"
    timed: list[tuple[float, float]] = []
    for number, entry in parsed_lines(path, parser, expected, encoding):
        when = arrival_time(entry)
        if when is None:
            raise MeasurementError(
                path, number, "no arrival time; the format needs %t or %{begin:msec}t"
            )
        timed.append((when, _response_s(path, number, entry)))
    if not timed:
        raise MeasurementError(path, None, f"no requests; expected {expected}")
    first = min(when for when, _ in timed)
    whole = whole_bins(path, max(when for when, _ in timed) - first, bin_s)
    counts = [0] * whole
    sums = [0.0] * whole
    left_out = 0
    for when, response in timed:
        index = math.floor((when - first) / bin_s)
        if index < whole:
            counts[index] += 1
            sums[index] += response
        else:
            left_out += 1
    return ResponseProfile(str(path), first, bin_s, tuple(counts), tuple(sums), left_out)


def users_per_bin(profile: ResponseProfile, think_s: float, scale: float = 1.0) -> UsersPerBin:
    """Each bin's users by N = X × (Z + R), X times `scale`, rounded with the error carried
    (the module's docstring); a `MeasurementError` when a bin's cycle takes no time."""
    responses: list[float] = []
    exact: list[float] = []
    users: list[int] = []
    carried_per_s = 0.0
    response_s = 0.0  # the first bin has an arrival (bins start at it), so it sets R
    for index, (count, total) in enumerate(zip(profile.counts, profile.response_sums_s)):
        if count:
            response_s = total / count
        cycle_s = think_s + response_s
        if cycle_s <= 0 and count:
            raise MeasurementError(
                profile.path,
                None,
                f"bin {index} (from {index * profile.bin_s:g} s): every response took 0 s and "
                "clients.think is 0, so its arrivals need no users (N = X × (Z + R) = 0); set "
                "clients.think to the users' think time",
            )
        rate_per_s = scale * count / profile.bin_s + carried_per_s
        wanted = rate_per_s * cycle_s
        whole = max(0, math.floor(wanted + 0.5))
        carried_per_s = (wanted - whole) / cycle_s if cycle_s > 0 else 0.0
        responses.append(response_s)
        exact.append(wanted)
        users.append(whole)
    return UsersPerBin(profile.bin_s, think_s, tuple(responses), tuple(exact), tuple(users))


def _response_s(path: str | Path, number: int, entry) -> float:
    """The request's response time [s] from whichever of %D, %{us}T, %{ms}T the format has."""
    for _directive, attribute, unit_s in DURATIONS:
        value = getattr(entry, attribute, None)
        if value is not None:
            try:
                response = value * unit_s
            except OverflowError:  # an integer of hundreds of digits
                response = math.inf
            if response < 0:
                raise MeasurementError(
                    path,
                    number,
                    f"a negative response time ({value}); %D and %{{ms}}T count the time "
                    "from the request to the response: check the line",
                )
            if response > MAX_RESPONSE_S:
                raise MeasurementError(
                    path,
                    number,
                    f"a response time of {response:.3g} s (over a week); %D is microseconds "
                    "(httpd, Tomcat 10+) and %{ms}T milliseconds (write %{ms}T for a Tomcat 9 "
                    "%D): check that log_format is the server's",
                )
            return response
    raise MeasurementError(
        path, number, "no response time ('-'); expected a number of %D or %{ms}T"
    )
