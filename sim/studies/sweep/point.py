"""One sweep point: a pure function of its task, run wherever a worker is.

The task carries the base model's data (not its path), so a Dask worker on another machine
needs tiersim but not the model file.  A point that cannot run -- an invalid combination of
factors, an unstable configuration, any exception in the model -- comes back as a record
with its error; it never takes the sweep down.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim import __version__
from sim.exit_codes import ExitCode
from sim.present.failures import FAILED_SHARE
from sim.studies.calibration.saved import Calibrated

# Failure kinds, each with the CLI's exit code for it.
FAILURE_EXIT = {
    "internal": ExitCode.INTERNAL,
    "model": ExitCode.MODEL,
    "unstable": ExitCode.UNSTABLE,
    "unfinished": ExitCode.UNFINISHED,
}
# the stored kind of each simulate() outcome that is not ok
FAILURE_KIND = {
    "invalid": "model",
    "unstable": "unstable",
    "unfinished": "unfinished",
    "internal": "internal",
}


@dataclass(frozen=True)
class PointTask:
    point_id: str
    index: int
    values: dict[str, Any]  # factor path -> value
    overrides: tuple[str, ...]  # fixed overrides, then the point's
    seed: int
    replications: int | None  # None: the model's own run control
    metrics: tuple[str, ...]
    raw_model: dict[str, Any]
    source: str
    base_dir: str
    # a calibration: the point runs at its fitted values, then at `draws` parameter draws
    calibrated: Calibrated | None = None
    draws: int = 8
    draw_replications: int = 2

    @property
    def run_overrides(self) -> tuple[str, ...]:
        """The fitted values first, so the sweep's fixed overrides and factors win."""
        fitted = self.calibrated.overrides() if self.calibrated is not None else []
        return (*fitted, *self.overrides)


def run_point(task: PointTask) -> dict[str, Any]:
    """The point's result record: identity, metrics (mean, ci_low, ci_high), provenance."""
    from sim.run.simulate import Status, simulate

    started = time.perf_counter()
    record: dict[str, Any] = {
        "point_id": task.point_id,
        "point_index": task.index,
        **{path: _cell(value) for path, value in task.values.items()},
        "status": "ok",
        "error_kind": None,
        "error": None,
        "seed": task.seed,
        "replications": 0,
        "overrides": list(task.overrides),
        "model": None,
        "tiersim_version": __version__,
        "units": None,  # JSON: each kept metric's unit, as the run declared it
        # what every latency is read beside (sim.present.failures): the requests that failed,
        # the window each replication measured, the warm-up it removed, the run's warnings
        FAILED_SHARE: math.nan,
        f"{FAILED_SHARE}.ci_low": math.nan,
        f"{FAILED_SHARE}.ci_high": math.nan,
        "count.failed": math.nan,
        "count.completed": math.nan,
        "window_s": math.nan,
        "warmup_s": math.nan,
        "warnings": "[]",  # JSON list
    }
    for metric in task.metrics:
        record[metric] = record[f"{metric}.ci_low"] = record[f"{metric}.ci_high"] = math.nan
        if task.calibrated is not None:
            record[f"{metric}.pi_low"] = record[f"{metric}.pi_high"] = math.nan
    available: list[str] = []
    outcome = simulate(
        task.raw_model,
        seed=task.seed,
        replications=task.replications,
        overrides=task.run_overrides,
        source=task.source,
        base_dir=Path(task.base_dir),
    )
    if outcome.status is Status.INTERRUPTED:
        raise KeyboardInterrupt  # a partial point is not a finished point
    if outcome.model is not None:
        record["model"] = outcome.model.model_dump_json()
    result = outcome.result
    if result is not None:
        record["replications"] = len(result.replications)
        available = sorted(result.summary)
        units = result.units
        record["units"] = json.dumps({m: units.get(m) for m in task.metrics}, sort_keys=True)
        for metric in task.metrics:
            interval = result.summary.get(metric)
            if interval is not None:
                record[metric] = interval.mean
                record[f"{metric}.ci_low"] = interval.low
                record[f"{metric}.ci_high"] = interval.high
        _failures_and_window(record, result)
        if task.calibrated is not None and outcome.ok:
            _prediction_intervals(task, record, {k: i.mean for k, i in result.summary.items()})
    if not outcome.ok:
        _failed(record, FAILURE_KIND[outcome.status.value], outcome.message)
    record["runtime_s"] = time.perf_counter() - started
    record["_available_metrics"] = available  # for the sweep's report, not stored
    return record


def _failures_and_window(record: dict[str, Any], result) -> None:
    """The failed share (with its interval), the mean counts per replication, the window's
    length and the warm-up removed, and the run's warnings, beside the point's metrics."""
    from sim.present.failures import failed_share

    replications = [rep.metrics for rep in result.replications]
    share = failed_share(replications, result.confidence)
    if share is not None:
        record[FAILED_SHARE] = share.mean
        record[f"{FAILED_SHARE}.ci_low"] = share.low
        record[f"{FAILED_SHARE}.ci_high"] = share.high
    for name, column in (
        ("count.failed", "count.failed"),
        ("count.completed", "count.completed"),
        ("elapsed", "window_s"),
    ):
        interval = result.summary.get(name)
        if interval is not None:
            record[column] = interval.mean
    if result.replications:
        record["warmup_s"] = sum(rep.warmup_s for rep in result.replications) / len(
            result.replications
        )
    record["warnings"] = json.dumps(list(result.warnings))


def _prediction_intervals(task: PointTask, record: dict[str, Any], nominal: dict) -> None:
    """Each kept metric's 90 % prediction interval over the calibration's parameters
    (sim.studies.calibration.propagate), the point's own overrides after each draw's."""
    from sim.run.simulate import simulate
    from sim.studies.calibration.propagate import propagate

    assert task.calibrated is not None

    def run_at(drawn: list[str], seed: int):
        return simulate(
            task.raw_model,
            seed=seed,
            replications=task.draw_replications,
            overrides=(*drawn, *task.overrides),
            source=task.source,
            base_dir=Path(task.base_dir),
        )

    found = propagate(
        run_at, nominal, task.calibrated, task.draws, task.draw_replications, task.seed
    )
    for metric in task.metrics:
        prediction = found.predictions.get(metric)
        if prediction is not None:
            record[f"{metric}.pi_low"] = prediction.pi_low
            record[f"{metric}.pi_high"] = prediction.pi_high


def _failed(record: dict[str, Any], kind: str, message: str) -> None:
    record["status"], record["error_kind"], record["error"] = "failed", kind, message


def _cell(value: Any) -> Any:
    """Factor values as table cells: scalars as they are, tables (distributions) as JSON text."""
    return (
        value if isinstance(value, (bool, int, float, str)) else json.dumps(value, sort_keys=True)
    )
