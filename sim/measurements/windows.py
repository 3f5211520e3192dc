"""Window statistics of per-sample logs (JMeter JTL, ab -g, access logs).

Time zero is the run's first sample start. Window k is [k·w, (k+1)·w); the last window is cut
at the run's last completion. A sample belongs to the window in which it completed
(start + elapsed), so `throughput` counts completions per second, as the operational laws
and tiersim's own `throughput` do; `arrival_rate_per_s` counts the samples that started.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sim.measurements.classes import TOTAL, ClassMap
from sim.measurements.table import ERROR_PREFIX, PERCENTILES, Row

if TYPE_CHECKING:
    import pandas as pd


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


def merge(logs: list[SampleLog]) -> SampleLog:
    import pandas as pd

    frames = [log.frame for log in logs]
    return SampleLog(
        path=", ".join(log.path for log in logs),
        frame=pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0],
        outcomes_known=all(log.outcomes_known for log in logs),
        urls_known=all(log.urls_known for log in logs),
    )


def window_bounds(last_s: float, window_s: float | None) -> list[tuple[float, float]]:
    if window_s is None or last_s <= 0:
        return [(0.0, max(last_s, 0.0))]
    count = max(1, math.ceil(last_s / window_s - 1e-9))
    return [(k * window_s, min((k + 1) * window_s, last_s)) for k in range(count)]


def _statistics(elapsed: np.ndarray, length: float) -> Row:
    n = len(elapsed)
    row: Row = {
        "count.completed": n,
        "throughput": n / length if length > 0 else math.nan,
        "response.mean": float(elapsed.mean()) if n else math.nan,
    }
    values = np.percentile(elapsed, PERCENTILES) if n else [math.nan] * len(PERCENTILES)
    for p, value in zip(PERCENTILES, values):
        row[f"response.p{p}"] = float(value)  # numpy's default: linear interpolation
    return row


def sample_rows(
    log: SampleLog, run: str, window_s: float | None, classes: ClassMap
) -> tuple[list[Row], float]:
    """The table rows of one run and the run's time zero (seconds since the epoch)."""
    frame = log.frame
    start = frame["start_s"].to_numpy(dtype=float)
    elapsed = frame["elapsed_s"].to_numpy(dtype=float)
    zero = float(start.min())
    started = start - zero
    ended = started + elapsed
    bounds = window_bounds(float(ended.max()), window_s)
    width = window_s if window_s is not None else math.inf
    last_index = len(bounds) - 1
    end_index = np.minimum(np.floor(ended / width), last_index).astype(int)
    start_index = np.minimum(np.floor(started / width), last_index).astype(int)
    keys = frame["url" if classes.by == "url" else "label"]
    names = {key: classes.name(key) for key in keys.unique()}
    class_of = keys.map(names).to_numpy(dtype=object)
    class_names = sorted(set(names.values()))
    failed = frame["failed"].to_numpy(dtype=bool)
    kinds_of = frame["error_kind"].to_numpy(dtype=object)
    kinds = sorted({k for k in kinds_of if k}) if log.outcomes_known else []
    users = frame["users"].to_numpy(dtype=float)

    rows: list[Row] = []
    for k, (low, high) in enumerate(bounds):
        done = end_index == k
        begun = start_index == k
        length = high - low
        done_users = users[done & ~np.isnan(users)]
        window_users = float(done_users.mean()) if len(done_users) else math.nan
        for name in [*class_names, TOTAL]:
            member = done if name == TOTAL else done & (class_of == name)
            arrived = begun if name == TOTAL else begun & (class_of == name)
            row: Row = {
                "run": run,
                "window_start_s": low,
                "window_end_s": high,
                "class": name,
                "users": window_users,
                "arrival_rate_per_s": int(arrived.sum()) / length if length > 0 else math.nan,
            }
            row.update(_statistics(elapsed[member], length))
            if log.outcomes_known:
                row["count.errors"] = int(failed[member].sum())
                for kind in kinds:
                    row[f"{ERROR_PREFIX}{kind}"] = int((member & (kinds_of == kind)).sum())
            rows.append(row)
    return rows, zero
