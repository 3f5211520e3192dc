"""Window statistics of per-sample logs (JMeter JTL, ab -g, access logs).

Time zero is the test's start (`Cut.start_s`, `--start`), else the run's first sample start.
The run is observed from `Cut.warmup_s` to `Cut.until_s` (or its last completion), and window k
is [warmup + k·w, warmup + (k+1)·w); the last window is cut at the observation's end. A sample
belongs to the window in which it completed (start + elapsed), so `throughput` counts
completions per second, as the operational laws and tiersim's own `throughput` do;
`arrival_rate_per_s` counts the samples that started.

A failed sample is never a response: `count.completed`, `throughput` and the `response.*`
statistics are the successful samples', as the simulator reports them; the failures are
counted apart, `count.timed_out` (the client gave up waiting) and `count.errors` (any other
failure), with `count.error.<kind>` the failures by kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np

from sim.files import Limit
from sim.measurements import sampling
from sim.measurements.classes import TOTAL, ClassMap
from sim.measurements.errors import MeasurementError
from sim.measurements.table import ERROR_PREFIX, PERCENTILES, STD_ERROR, Row
from sim.measurements.text import Progress

if TYPE_CHECKING:
    import pandas as pd

TIMEOUT = "timeout"  # the error kind the simulator counts apart, as `count.timed_out`


@dataclass
class SampleLog:
    """Samples read from one file, times in seconds since the epoch.

    `frame` columns: `start_s`, `elapsed_s`, `label`, `url` (None where unknown), `failed`
    (bool), `error_kind` (str, "" when the sample succeeded), `users` (NaN where unknown).
    """

    path: str
    frame: pd.DataFrame
    outcomes_known: bool  # the file records success or failure per sample
    urls_known: bool


@dataclass(frozen=True)
class Cut:
    """What part of a run is observed (`tiersim import --start/--warmup/--until`).

    `start_s`: the test's start, seconds since the epoch (time zero); None: the run's first
    sample start. `warmup_s`, `until_s`: seconds after time zero; samples that complete before
    the warm-up (a ramp-up, a cold JIT) or after `until_s` (the drain after the test's end)
    are left out.
    """

    start_s: float | None = None
    warmup_s: float = 0.0
    until_s: float | None = None


def merge(logs: list[SampleLog]) -> SampleLog:
    import pandas as pd

    frames = [log.frame for log in logs]
    return SampleLog(
        path=", ".join(log.path for log in logs),
        frame=pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0],
        outcomes_known=all(log.outcomes_known for log in logs),
        urls_known=all(log.urls_known for log in logs),
    )


MAX_WINDOWS = 100_000  # a day of one-second windows is 86,400


def window_bounds(last_s: float, window_s: float | None) -> list[tuple[float, float]]:
    return observed_bounds(0.0, last_s, window_s)


def observed_bounds(
    first_s: float, last_s: float, window_s: float | None
) -> list[tuple[float, float]]:
    """Windows of `window_s` tiling [first_s, last_s] from its start (one window without)."""
    span = last_s - first_s
    if window_s is None or span <= 0:
        return [(first_s, max(last_s, first_s))]
    windows = span / window_s
    if not windows <= MAX_WINDOWS:  # a row per window and class: a tiny --window fills memory
        raise MeasurementError(
            f"--window {window_s:g}",
            None,
            f"{windows:,.3g} windows over the run's {span:,.6g} s; expected at most "
            f"{MAX_WINDOWS:,} windows: give a longer --window (seconds)",
        )
    count = max(1, math.ceil(windows - 1e-9))
    return [
        (first_s + k * window_s, min(first_s + (k + 1) * window_s, last_s)) for k in range(count)
    ]


def utc(epoch_s: float) -> str:
    try:
        return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"
    except (ValueError, OverflowError, OSError):  # past year 9999 (or before year 1)
        return f"{epoch_s:,.6g} s since the epoch"


def _statistics(elapsed: np.ndarray, completed: np.ndarray, low: float, high: float) -> Row:
    """Statistics of a window [low, high] of successful responses, `elapsed` in the order they
    completed, at the times `completed` (seconds after time zero)."""
    n = len(elapsed)
    length = high - low
    row: Row = {
        "count.completed": n,
        "throughput": n / length if length > 0 else math.nan,
        f"throughput{STD_ERROR}": sampling.throughput_error(completed, low, high),
        "response.mean": float(elapsed.mean()) if n else math.nan,
        f"response.mean{STD_ERROR}": sampling.mean_error(elapsed),
    }
    values = np.percentile(elapsed, PERCENTILES) if n else [math.nan] * len(PERCENTILES)
    grid = sampling.resolution_s(elapsed) if n else 0.0
    for p, value in zip(PERCENTILES, values):
        row[f"response.p{p}"] = float(value)  # numpy's default: linear interpolation
        row[f"response.p{p}{STD_ERROR}"] = sampling.percentile_error(elapsed, p, grid)
    return row


def _observed(log: SampleLog, cut: Cut, ended: np.ndarray, zero: float) -> tuple[float, float]:
    """The observed span [warm-up, end] in seconds after time zero, checked against the run."""
    first_done, last_done = float(ended.min()), float(ended.max())
    high = last_done if cut.until_s is None else min(cut.until_s, last_done)
    if cut.warmup_s >= high or (cut.until_s is not None and cut.until_s <= first_done):
        given = (
            f"--warmup {cut.warmup_s:g} s"
            + (f" and --until {cut.until_s:g} s" if cut.until_s is not None else "")
            + (f" after --start {utc(zero)}" if cut.start_s is not None else "")
        )
        raise MeasurementError(
            log.path,
            None,
            f"{given} leave no sample: the run's samples complete from {first_done:.4g} s to "
            f"{last_done:.4g} s after its start; expected a warm-up and cool-down cut inside "
            "that span",
        )
    return cut.warmup_s, high


# One run's samples, from the first start to the last end: a load test, even a soak test,
# spans hours or days; a stray line (another year's time stamp) or a response time in another
# unit spreads a run over decades, and its throughput over them, silently
MAX_RUN_S = Limit(
    "seconds from a run's first sample to its last (31 days)", 31 * 86400, "TIERSIM_MAX_RUN_SECONDS"
)


def _check_span(log: SampleLog, start, elapsed, zero: float, ended) -> None:
    last = int(np.argmax(ended))
    span_s = float(ended[last])
    if not span_s <= MAX_RUN_S.value:
        longest = int(np.argmax(elapsed))
        culprit = (
            f"a response time of {elapsed[longest]:,.6g} s (the sample started at "
            f"{utc(start[longest])})"
            if elapsed[longest] > span_s / 2
            else f"a sample started at {utc(start[last])}, after the first at {utc(zero)}"
        )
        raise MeasurementError(
            log.path,
            None,
            MAX_RUN_S.refusal(
                f"its samples span {span_s / 86400:,.6g} days (through {culprit}: a stray line, or "
                "a time in another unit?)"
            ),
        )


def sample_rows(
    log: SampleLog,
    run: str,
    window_s: float | None,
    classes: ClassMap,
    cut: Cut | None = None,
    progress: Progress = None,
) -> tuple[list[Row], float]:
    """The table rows of one run and the run's time zero (seconds since the epoch);
    `progress(windows done, windows)` after each window."""
    cut = cut or Cut()
    frame = log.frame
    start = frame["start_s"].to_numpy(dtype=float)
    elapsed = frame["elapsed_s"].to_numpy(dtype=float)
    first = float(start.min())
    if cut.start_s is not None and cut.start_s > first + 1e-6:
        raise MeasurementError(
            log.path,
            None,
            f"--start {utc(cut.start_s)} is {cut.start_s - first:.4g} s after the first sample's "
            f"start ({utc(first)}); expected the test's start, at or before its first sample",
        )
    zero = first if cut.start_s is None else cut.start_s
    started = start - zero
    ended = started + elapsed
    _check_span(log, start, elapsed, zero, ended)
    order = np.argsort(ended, kind="stable")  # completion order: batch means run over time
    by_completion = elapsed[order]
    completion_times = ended[order]
    low, high = _observed(log, cut, ended, zero)
    bounds = observed_bounds(low, high, window_s)
    width = window_s if window_s is not None else math.inf
    last_index = len(bounds) - 1
    inside = (ended >= low) & (ended <= high)
    end_index = np.where(
        inside, np.minimum(np.floor((ended - low) / width), last_index), -1
    ).astype(int)
    began = (started >= low) & (started <= high)
    start_index = np.where(
        began, np.minimum(np.floor((started - low) / width), last_index), -1
    ).astype(int)
    # classes and error kinds as integer codes: comparing codes is many times faster than
    # comparing strings over millions of samples
    key_codes, keys = frame["url" if classes.by == "url" else "label"].factorize()
    key_names = [classes.name(key) for key in keys]
    class_names = sorted(set(key_names))
    class_of = np.array([class_names.index(n) for n in key_names], dtype=int)[key_codes]
    failed = frame["failed"].to_numpy(dtype=bool)
    kind_codes, kind_names = frame["error_kind"].factorize()
    kinds = sorted(k for k in kind_names if k) if log.outcomes_known else []
    timeout_code = list(kind_names).index(TIMEOUT) if TIMEOUT in list(kind_names) else -2
    users = frame["users"].to_numpy(dtype=float)
    if log.outcomes_known and not (inside & ~failed).any():
        raise no_success(log.path, frame["error_kind"].to_numpy(dtype=object)[inside])

    rows: list[Row] = []
    for k, (window_low, window_high) in enumerate(bounds):
        done = end_index == k
        begun = start_index == k
        length = window_high - window_low
        done_users = users[done & ~np.isnan(users)]
        window_users = float(done_users.mean()) if len(done_users) else math.nan
        for code, name in [*enumerate(class_names), (-1, TOTAL)]:
            member = done if name == TOTAL else done & (class_of == code)
            arrived = begun if name == TOTAL else begun & (class_of == code)
            row: Row = {
                "run": run,
                "window_start_s": window_low,
                "window_end_s": window_high,
                "class": name,
                "users": window_users,
                "arrival_rate_per_s": int(arrived.sum()) / length if length > 0 else math.nan,
            }
            responded = (member & ~failed)[order]
            row.update(
                _statistics(
                    by_completion[responded],
                    completion_times[responded],
                    window_low,
                    window_high,
                )
            )
            if log.outcomes_known:
                timed_out = member & failed & (kind_codes == timeout_code)
                row["count.timed_out"] = int(timed_out.sum())
                row["count.errors"] = int((member & failed).sum()) - row["count.timed_out"]
                for kind in kinds:
                    of_kind = kind_codes == list(kind_names).index(kind)
                    row[f"{ERROR_PREFIX}{kind}"] = int((member & of_kind).sum())
            rows.append(row)
        if progress is not None:
            progress(k + 1, len(bounds))
    return rows, zero


def no_success(path: str, kinds_of: np.ndarray) -> MeasurementError:
    """The error for a run whose samples (`kinds_of`: their error kinds) all failed."""
    kinds, counts = np.unique(kinds_of.astype(str), return_counts=True)
    found = ", ".join(f"{count} {kind}" for kind, count in zip(kinds, counts))
    return MeasurementError(
        path,
        None,
        f"success: no sample succeeded ({len(kinds_of)} samples, all failed: {found}); "
        "expected successful responses to measure (the server was down or every request "
        "timed out: check the test's target and the server's log, then test again)",
    )
