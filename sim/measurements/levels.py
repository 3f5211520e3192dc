"""Each load level's response times with their measurement errors, read from a measurement
table (`tiersim estimate`'s "response times" section), and the check that a level has the
samples a percentile needs before anything is fitted to it.

A run is a level. Its rows of class `total` whose windows lie inside [warm-up, until] are
kept. One window: its mean, percentiles and `.std_error` columns as imported (batch means over
time, docs/measurement-table.md). Several windows: the completion-weighted mean, its error
from the windows' errors as independent parts, √(Σ nᵢ²·seᵢ²)/Σ nᵢ; a percentile cannot be
pooled from windows' percentiles, so it is left empty (import the run without `--window`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sim.measurements import sampling
from sim.measurements.classes import TOTAL
from sim.measurements.errors import MeasurementError
from sim.measurements.table import RESPONSE, STD_ERROR, failed_requests, failed_share, numbers


@dataclass
class LevelResponses:
    run: str
    users: float
    windows: int
    samples: int  # successful responses
    throughput: float
    values: dict[str, float] = field(default_factory=dict)  # response.* column -> seconds
    std_errors: dict[str, float] = field(default_factory=dict)  # the same -> seconds
    failed: float = math.nan  # count.errors + count.timed_out: in no response time; NaN: unsaid

    @property
    def failed_share(self) -> float:
        return failed_share(self.samples, self.failed)

    def as_dict(self) -> dict:
        def clean(value: float) -> float | None:
            return value if math.isfinite(value) else None

        return {
            "run": self.run,
            "users": clean(self.users),
            "windows": self.windows,
            "samples": self.samples,
            "throughput": clean(self.throughput),
            "failed": clean(self.failed),
            "failed_share": clean(self.failed_share),
            **{
                column: {
                    "value": clean(self.values[column]),
                    "std_error": clean(self.std_errors[column]),
                    "needs_samples": sampling.min_samples(_percentile(column)),
                }
                for column in RESPONSE
            },
        }


def _percentile(column: str) -> float | None:
    return None if column == "response.mean" else float(column.rsplit(".p", 1)[1])


def cut_windows(table, warmup_s: float = 0.0, until_s: float | None = None):
    """The table's rows whose windows lie inside [warmup_s, until_s]."""
    keep = table["window_start_s"] >= warmup_s - 1e-9
    if until_s is not None:
        keep &= table["window_end_s"] <= until_s + 1e-9
    return table[keep]


def level_responses(
    table, warmup_s: float = 0.0, until_s: float | None = None
) -> list[LevelResponses]:
    """One entry per run (class `total`), in the table's order."""
    rows = cut_windows(table[table["class"] == TOTAL], warmup_s, until_s)
    out = []
    for run, group in rows.groupby("run", sort=False):
        count = numbers(group, "count.completed")
        length = (group["window_end_s"] - group["window_start_s"]).to_numpy(dtype=float)
        users = numbers(group, "users")
        n = float(np.nansum(count))
        level = LevelResponses(
            run=str(run),
            users=float((users * length).sum() / length.sum()) if length.sum() > 0 else math.nan,
            windows=len(group),
            samples=int(n),
            throughput=n / float(length.sum()) if length.sum() > 0 else math.nan,
            failed=failed_requests(group),
        )
        for column in RESPONSE:
            errors = numbers(group, column + STD_ERROR)
            values = numbers(group, column)
            if len(group) == 1:
                level.values[column], level.std_errors[column] = values[0], errors[0]
            elif column == "response.mean" and n > 0:
                done = count > 0
                level.values[column] = float((values[done] * count[done]).sum() / n)
                level.std_errors[column] = float(
                    math.sqrt(((count[done] * errors[done]) ** 2).sum()) / n
                )
            else:
                level.values[column] = level.std_errors[column] = math.nan
        out.append(level)
    return out


def require(level: LevelResponses, column: str, source: str) -> None:
    """Raise a one-line MeasurementError when `column` (response.mean or response.pNN) of the
    level cannot carry a measurement error: too few samples, or pooled windows."""
    p = _percentile(column)
    needed = sampling.min_samples(p)
    label = "the mean" if p is None else f"p{p:g}"
    if level.samples < needed:
        more = needed / level.throughput if level.throughput > 0 else math.nan
        raise MeasurementError(
            source,
            None,
            f"run {level.run}: {column} rests on {level.samples} successful samples; {label} "
            f"needs at least {needed} (n >= 20/(1 - p), docs/measurement-table.md); expected "
            f"a longer run at this level (about {more:.0f} s at its {level.throughput:.3g} "
            f"req/s) or a lower percentile{' (p90, p50)' if p and p > 90 else ''}",
        )
    if not math.isfinite(level.std_errors.get(column, math.nan)):
        raise MeasurementError(
            source,
            None,
            f"run {level.run}: {column}.std_error is empty ({level.windows} windows cannot "
            "pool a percentile); expected the run imported as one window (tiersim import "
            "without --window, with --warmup and --until)",
        )
