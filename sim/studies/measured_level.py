"""The measured level a prediction is to be compared with, and the noise of its figures.

A calibrated prediction (`sim.studies.calibration.propagate`) is by default an interval of
**the stack's mean figure**: where its long-run throughput, mean and p95 lie, over the
parameters, the simulation's noise and the model's error.  A load test does not read the
long-run figure: it reads one window of finite length with a finite count of requests, and a
second run of the same level reads another number.  When the question is "what will this
level's measurement read" -- a held-out level of a measured table, or the next run of a level
of known length -- the interval must also hold that measurement's own noise; with a
`MeasuredLevel` it does, and says so (`interval_of`).  A level no one measured has no window
and no count: its interval stays the mean figure's.

The noise of each figure is the level's own (`sim.measurements.figure_errors`: the import's
batch means over the level's samples, else a stated approximation from its count), the same
measurement error a calibration weighs the level's figures by.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.measurements.figure_errors import FigureError, figure_error, number
from sim.measurements.table import STD_ERROR

# The figures a measurement's noise is added to: what a load test measures of the requests
# themselves, and any figure the table carries with its own standard error (the database's).
# A host's utilisation from sar is a time average of the whole host, not the model's station,
# and has no count to take an error from.
REQUEST_FIGURES = ("throughput", "response.mean")


class MeasuredLevelError(ValueError):
    """A row or table that does not describe one measured level; `str()` is one line."""


@dataclass(frozen=True)
class MeasuredLevel:
    """One measured level: its name, window and requests, and each figure's relative error."""

    name: str
    window_s: float
    requests: float
    errors: dict[str, FigureError] = field(default_factory=dict)

    def relative_sd(self, metric: str) -> float | None:
        found = self.errors.get(metric)
        return None if found is None else found.relative_sd

    def describe(self) -> str:
        return (
            f"a measurement of {self.window_s:g} s with {self.requests:,.0f} requests, as "
            f"{self.name} measured"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "window_s": self.window_s,
            "requests": self.requests,
            "figures": {
                metric: {"relative_sd": e.relative_sd, "method": e.method}
                for metric, e in self.errors.items()
            },
        }


def is_noisy_figure(column: str, row: Mapping[str, Any]) -> bool:
    """A column whose measurement is a figure a prediction adds the level's noise to."""
    if column.endswith(STD_ERROR) or column.startswith("count."):
        return False
    if column in REQUEST_FIGURES or column.startswith("response.p"):
        return True
    return number(row.get(column + STD_ERROR)) is not None


def measured_level(row: Mapping[str, Any], name: str = "the level") -> MeasuredLevel:
    """The level of one measurement-table row (`tiersim import`, a level as one window): its
    window, its `count.completed`, and the error of each figure it holds."""
    requests = number(row.get("count.completed"))
    if requests is None or requests <= 0:
        raise MeasuredLevelError(
            f"{name}: count.completed = {row.get('count.completed')!r}; expected the level's "
            "successful requests, a positive number (a row of a table `tiersim import` wrote)"
        )
    start, end = number(row.get("window_start_s")), number(row.get("window_end_s"))
    if start is None or end is None or not end > start:
        raise MeasuredLevelError(
            f"{name}: window_start_s = {row.get('window_start_s')!r}, window_end_s = "
            f"{row.get('window_end_s')!r}; expected the level's window, end after start"
        )
    errors = {}
    for column in row:
        if isinstance(column, str) and is_noisy_figure(column, row):
            found = figure_error(row, column)
            if found is not None:
                errors[column] = found
    return MeasuredLevel(name, end - start, requests, errors)


def level_from_table(path: str | Path, run: str | None, class_name: str = "total") -> MeasuredLevel:
    """The level `run` of a measurement table (csv or parquet), its class `class_name`: one
    window (a level imported without `--window`).  Errors are one line naming the file."""
    from sim.measurements.table import read

    table = read(path)
    rows = table[table["class"] == class_name]
    runs = list(dict.fromkeys(rows["run"]))
    if run is None:
        if len(runs) != 1:
            raise MeasuredLevelError(
                f"{path}: {len(runs)} runs ({', '.join(runs[:8])}); name the measured level "
                "to compare with, e.g. --measured-run " + (runs[0] if runs else "users10")
            )
        run = runs[0]
    chosen = rows[rows["run"] == run]
    if chosen.empty:
        raise MeasuredLevelError(
            f"{path}: no run {run!r} of class {class_name!r}; its runs: {', '.join(runs)}"
        )
    if len(chosen) > 1:
        raise MeasuredLevelError(
            f"{path}: run {run!r} has {len(chosen)} windows; a measurement of a level is one "
            "window: import the level without --window (its own percentiles and errors)"
        )
    record = chosen.iloc[0].to_dict()
    return measured_level(record, f"run {run} of {Path(path).name}")
