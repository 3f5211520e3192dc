"""Align host utilisation intervals to a run's windows.

A window's `<host>.cpu.utilization` is the time-weighted mean of the intervals overlapping it
(each weighted by the overlap's length). A window that the intervals cover less than half of
is left empty rather than extrapolated from a corner.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from sim.measurements.errors import MeasurementError
from sim.measurements.formats.sar import Interval
from sim.measurements.table import CPU_SUFFIX, Row

MIN_COVERAGE = 0.5


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def attach(rows: list[Row], zero_s: float, intervals: list[Interval], path: str) -> None:
    """Add `<host>.cpu.utilization` to each row of one run whose time zero is `zero_s`."""
    hosts = sorted({i.host for i in intervals})
    windows = sorted({(r["window_start_s"], r["window_end_s"]) for r in rows})
    run_begin, run_end = zero_s + windows[0][0], zero_s + windows[-1][1]
    first, last = min(i.begin_s for i in intervals), max(i.end_s for i in intervals)
    if last <= run_begin or first >= run_end:
        raise MeasurementError(
            path,
            None,
            f"its samples ({_utc(first)} to {_utc(last)}) do not overlap the run "
            f"({_utc(run_begin)} to {_utc(run_end)}); expected the utilisation of the same test",
        )
    values: dict[tuple[str, float, float], float] = {}
    for host in hosts:
        own = [i for i in intervals if i.host == host]
        for low, high in windows:
            begin, end = zero_s + low, zero_s + high
            covered = weighted = 0.0
            for interval in own:
                overlap = min(end, interval.end_s) - max(begin, interval.begin_s)
                if overlap > 0:
                    covered += overlap
                    weighted += overlap * interval.utilization
            enough = end > begin and covered >= MIN_COVERAGE * (end - begin)
            values[(host, low, high)] = weighted / covered if enough else math.nan
    for row in rows:
        for host in hosts:
            row[f"{host}{CPU_SUFFIX}"] = values[(host, row["window_start_s"], row["window_end_s"])]
