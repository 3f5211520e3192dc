"""Host CPU utilisation: `sadf -d` output of sysstat's `sar -u`, or a plain `time,host,cpu` CSV.

`sadf -d FILE -- -u` writes `# hostname;interval;timestamp;CPU;%user;...;%idle` and a line per
sample; `timestamp` (UTC) is the end of the sample's `interval` seconds, and the line with
`CPU` = -1 is all processors together. Utilisation = 1 − %idle/100 (so it includes %iowait's
complement as sar defines busy: everything but idle; %steal counts as busy too).

The plain CSV has the header `time,host,cpu`: `time` in seconds since the epoch or ISO 8601
with a UTC offset, `cpu` the utilisation as a fraction 0..1 of all the host's cores, over the
interval since the same host's previous line (the first line of a host only opens it).
Both give intervals (host, begin, end, utilisation) with times in seconds since the epoch.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sim.measurements.errors import MeasurementError, shorten
from sim.measurements.text import read_lines

EXPECTED = (
    "sadf -d output of sar -u (header '# hostname;interval;timestamp;CPU;...;%idle') "
    "or a CSV with the header time,host,cpu"
)
SADF_FIELDS = ("hostname", "interval", "timestamp", "CPU", "%idle")


@dataclass(frozen=True)
class Interval:
    host: str
    begin_s: float
    end_s: float
    utilization: float
    line: int


def read(path: str | Path, encoding: str = "utf-8") -> list[Interval]:
    lines = read_lines(path, EXPECTED, encoding)
    first = lines[0].strip()
    if first.startswith("# hostname;"):
        return _sadf(path, lines)
    if [c.strip() for c in first.split(",")] and {c.strip() for c in first.split(",")} == {
        "time",
        "host",
        "cpu",
    }:
        return _plain(path, lines)
    hint = ""
    if first.startswith("Linux") or ("CPU" in first and "%idle" in first):
        hint = " (this is sar's own text: convert the data file with sadf -d FILE -- -u)"
    raise MeasurementError(path, 1, f"{shorten(first)}; expected {EXPECTED}{hint}")


def _sadf(path, lines: list[str]) -> list[Interval]:
    header = lines[0].lstrip("# ").strip().split(";")
    missing = [f for f in SADF_FIELDS if f not in header]
    if missing:
        raise MeasurementError(
            path, 1, f"header lacks {', '.join(missing)}; expected sadf -d output of sar -u"
        )
    at = {name: i for i, name in enumerate(header)}
    intervals = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip() or line.startswith("#"):
            continue  # a repeated header after a restart or a new day
        parts = line.split(";")
        if len(parts) >= 4 and "RESTART" in parts[3]:
            continue  # sysstat's LINUX-RESTART marker: no sample
        if len(parts) != len(header):
            raise MeasurementError(
                path, number, f"{len(parts)} fields; expected {len(header)} as on the header line"
            )
        if parts[at["CPU"]].strip() != "-1":
            continue  # one processor's line (sar -P): the host's line has CPU = -1
        stamp = parts[at["timestamp"]].strip()
        if not stamp.endswith("UTC"):
            raise MeasurementError(
                path,
                number,
                f"timestamp {shorten(stamp)} has no zone; expected UTC (run sadf without -t)",
            )
        try:
            end = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC)
        except ValueError:
            raise MeasurementError(
                path, number, f"timestamp {shorten(stamp)}; expected YYYY-MM-DD HH:MM:SS UTC"
            ) from None
        interval = _float(path, number, "interval", parts[at["interval"]], "seconds > 0")
        idle = _float(path, number, "%idle", parts[at["%idle"]], "a percentage 0..100")
        if interval <= 0 or not 0 <= idle <= 100:
            bad = (
                ("interval", parts[at["interval"]])
                if interval <= 0
                else ("%idle", parts[at["%idle"]])
            )
            raise MeasurementError(
                path,
                number,
                f"{bad[0]} = {shorten(bad[1])}; expected "
                + ("seconds > 0" if bad[0] == "interval" else "a percentage 0..100"),
            )
        stop = end.timestamp()
        intervals.append(
            Interval(parts[at["hostname"]], stop - interval, stop, 1.0 - idle / 100.0, number)
        )
    if not intervals:
        raise MeasurementError(
            path, None, "no all-processor (CPU -1) samples; expected sadf -d output of sar -u"
        )
    return intervals


def _float(path, line: int, name: str, text: str, expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise MeasurementError(path, line, f"{name} = {shorten(text)}; expected {expected}")
    return value


def _time(path, line: int, text: str) -> float:
    try:
        return _float(path, line, "time", text, "")
    except MeasurementError:
        pass
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise MeasurementError(
            path, line, f"time = {shorten(text)}; expected seconds since the epoch or ISO 8601"
        ) from None
    if moment.tzinfo is None:
        raise MeasurementError(
            path,
            line,
            f"time = {shorten(text)} has no UTC offset; expected e.g. 2024-05-01T12:00:00+00:00",
        )
    return moment.timestamp()


def _plain(path, lines: list[str]) -> list[Interval]:
    reader = csv.DictReader(lines)
    assert reader.fieldnames is not None
    reader.fieldnames = [name.strip() for name in reader.fieldnames]
    previous: dict[str, float] = {}
    intervals = []
    for number, record in enumerate(reader, start=2):
        if None in record or any(record[k] is None for k in ("time", "host", "cpu")):
            raise MeasurementError(
                path, number, "the wrong number of fields; expected time,host,cpu"
            )
        when = _time(path, number, record["time"])
        cpu = _float(path, number, "cpu", record["cpu"], "a utilisation fraction 0..1")
        if not 0 <= cpu <= 1:
            hint = " (a percentage? divide by 100)" if 1 < cpu <= 100 else ""
            raise MeasurementError(
                path, number, f"cpu = {shorten(record['cpu'])}; expected a fraction 0..1{hint}"
            )
        host = record["host"].strip()
        if not host:
            raise MeasurementError(path, number, "empty host; expected the host's name")
        if host in previous:
            if when <= previous[host]:
                raise MeasurementError(
                    path,
                    number,
                    f"time {record['time']!r} is not after {host}'s previous line; "
                    "expected rising times per host",
                )
            intervals.append(Interval(host, previous[host], when, cpu, number))
        previous[host] = when
    if not intervals:
        raise MeasurementError(path, None, "fewer than two lines for every host; expected a series")
    return intervals
