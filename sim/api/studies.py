"""Experiments, calibrations and studies on the package's face (`import sim`; docs/api.md):
each one call of the library the `tiersim` commands use."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api import arguments
from sim.api.arguments import ArgumentError
from sim.api.frames import parameters_frame
from sim.api.runs import Simulation, SimulationError
from sim.model.schema import Model
from sim.present.json_text import json_text

if TYPE_CHECKING:
    import pandas as pd

    from sim.run.simulate import Outcome
    from sim.studies.calibration.fit import Calibration
    from sim.studies.calibration.propagate import Propagation
    from sim.studies.calibration.saved import Calibrated
    from sim.studies.executor import Executor
    from sim.studies.rows import Row


@dataclass
class CalibrationResult:
    """A calibration (`tiersim calibrate`): `fit` (parameters, targets, rows, uncertainty),
    and, for `[[choose]]`, each candidate's score."""

    fit: Calibration
    choices: list[dict] = field(default_factory=list)

    @property
    def converged(self) -> bool:
        return self.fit.converged

    @property
    def message(self) -> str:
        return self.fit.message

    def as_dict(self) -> dict:
        """The document `tiersim calibrate --json` prints (and `--save` writes)."""
        return self.fit.as_dict() | ({"choices": self.choices} if self.choices else {})

    def save(self, path: str | Path) -> None:
        """Write the calibration for `predict`, `capacity` and `tiersim run --calibration`."""
        text, _ = json_text(self.as_dict())  # a value one replication cannot give: null
        Path(path).write_text(text + "\n", encoding="utf-8")

    def parameters_frame(self) -> pd.DataFrame:
        """One row per fitted parameter: `parameter`, `value`, `start`, `range_low` /
        `range_high` (the range searched), `ci_low` / `ci_high` (its 95 % interval, with
        uncertainty), `at_bound`, ..."""
        return parameters_frame(self.fit.parameters)

    def rows_frame(self) -> pd.DataFrame:
        """Every figure: published, simulated, interval, error, prediction interval, unit."""
        return rows_frame(self.fit.rows)


def rows_frame(rows: list[Row]) -> pd.DataFrame:
    """Rows of an experiment (`reproduce`, a calibration's `rows`) as a frame, one per figure:
    `published`, `simulated`, `ci_low`, `ci_high`, `rel_error`, `pi_low`, `pi_high`, `unit`,
    and beside a latency `share.failed`, the share of the simulated requests that failed (the
    `--json` rows' `failed_share`; NaN beside other figures)."""
    import pandas as pd

    from sim.studies.rows import Row as Figure

    if not isinstance(rows, Sequence) or not all(isinstance(r, Figure) for r in rows):
        raise ArgumentError(
            "rows", "expected a list of an experiment's rows (sim.studies.rows.Row)"
        )
    from sim.present.failures import FAILED_SHARE

    # one name from `tiersim run` to this frame: the rows' `failed_share` is `share.failed`
    frame = pd.DataFrame([row.as_dict() for row in rows])
    return frame.rename(columns={"failed_share": FAILED_SHARE})


def _experiment(value: Any) -> str:
    """A bundled experiment's name (`seed003`) or a folder with an `experiment.toml`."""
    return str(arguments.path(value, "experiment", "experiment folder"))


def calibrate(
    experiment: str | Path,
    *,
    replications: int | None = None,
    cache: str | Path | None = None,
    max_evaluations: int | None = None,
    workers: int | None = 1,
    executor: Executor | None = None,
    analyse: bool = True,
    draws: int | None = None,
    draw_replications: int = 2,
    progress: Callable | None = None,
    row_progress: Callable | None = None,
) -> CalibrationResult:
    """Fit an experiment's `[[calibrate]]` parameters to its `[[fitted]]` figures and predict
    the rest (`tiersim calibrate`), one calibration per candidate of its `[[choose]]` entries.
    `cache`: a file of finished evaluations (none by default); `workers`: processes (1: this
    one, None: one per core) unless an `executor` of `sim.studies.executor` is given (you close
    it); `analyse=False`: no intervals; `draws`: sampled parameter points for the intervals
    (None: the experiment's default; 0: linear)."""
    from sim.studies.calibration.fit import calibrate as fit
    from sim.studies.choose import calibrate_choosing
    from sim.studies.executor import Executor as Base

    if executor is not None and not isinstance(executor, Base):
        raise ArgumentError(
            "executor", f"expected a sim.studies.executor executor, not {executor!r}"
        )
    pool = arguments.workers(workers)
    options: dict[str, Any] = {
        "replications": arguments.replications(replications),
        "cache": arguments.optional_path(cache, "cache", "cache file"),
        "max_evaluations": arguments.optional_integer(max_evaluations, "max_evaluations", 1),
        "analyse": arguments.flag(analyse, "analyse"),
        "draws": arguments.optional_integer(draws, "draws", 0),
        "draw_replications": arguments.integer(draw_replications, "draw_replications", 1),
        "progress": arguments.callback(progress, "progress"),
        "row_progress": arguments.callback(row_progress, "row_progress"),
    }
    if executor is not None:
        options["executor"] = executor
    else:
        options["workers"] = pool or os.cpu_count() or 1
    best, choices = calibrate_choosing(_experiment(experiment), fit, **options)
    return CalibrationResult(best, choices)


def reproduce(experiment: str | Path, replications: int | None = None) -> pd.DataFrame:
    """An experiment's table simulated beside its published figures (`tiersim reproduce`):
    one row per figure, `published`, `simulated`, `ci_low`, `ci_high`, `rel_error`, `unit`."""
    from sim.studies.reproduce import reproduce as run_rows

    count = arguments.replications(replications)
    return rows_frame(run_rows(_experiment(experiment), replications=count))


def load_calibration(path: str | Path) -> Calibrated:
    """A saved calibration (`Calibrated.save`, `tiersim calibrate --save`)."""
    from sim.studies.calibration.saved import load_calibration as read

    return read(arguments.path(path, "path", "calibration file"))


@dataclass
class Prediction:
    """A run at a calibration's fitted values and its 90 % prediction intervals: of the stack's
    mean figures, or, for the figures of a `measured` level, of a measurement of them."""

    simulation: Simulation
    propagation: Propagation

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: value at the fit, pi_low, pi_high, each part's sd (with
        `sd_measurement`, the measured level's own noise), `interval_of` (`mean`: the stack's
        mean figure; `measurement`: a measurement of it, its noise added), unit.
        `attrs["interval_of"]` says it in words.

        The row `share.failed` (unit `fraction`), beside the latencies (which are of the answered
        requests only): `value` is the run at the fit's share of requests that failed (as
        `tiersim run` gives it), and `pi_low` / `pi_high` are the **least and the most share over
        the parameter draws**, `interval_of` `draws` -- not a 90 % prediction interval: the
        draws' intervals are their summary metrics' quantiles, widened by the calibration's
        relative model error, and the share is no summary metric and has no relative model
        error (a share of 0 would be widened by nothing); its sds are NaN."""
        import pandas as pd

        from sim.present.failures import FAILED_SHARE

        units = self.simulation.units
        rows = [
            {**vars(p), "unit": units.get(p.metric, "")}
            for p in self.propagation.predictions.values()
        ]
        share = self.simulation.summary.get(FAILED_SHARE)
        over_draws = self.propagation.failed_share
        if share is not None or over_draws is not None:
            least, most = over_draws if over_draws is not None else (math.nan, math.nan)
            rows.append(
                {
                    "metric": FAILED_SHARE,
                    "value": math.nan if share is None else share.mean,
                    "pi_low": least,
                    "pi_high": most,
                    "sd_parameters": math.nan,
                    "sd_noise": math.nan,
                    "sd_model": math.nan,
                    "most_sensitive": "",
                    "sd_measurement": math.nan,
                    "interval_of": DRAWS,
                    "unit": "fraction",
                }
            )
        frame = pd.DataFrame(rows).set_index("metric")
        frame.attrs["units"] = dict(units)
        frame.attrs["interval_of"] = self.propagation.interval_of
        return frame


# `Prediction.to_frame()`'s `interval_of` of the failed share: least and most over the draws
DRAWS = "draws"


def as_calibration(calibration: Any, parameter: str = "calibration") -> Calibrated:
    """A saved calibration: as given, read from its file, or read from `calibrate`'s result
    (its document, checked exactly as `tiersim run --calibration` checks the file)."""
    from sim.studies.calibration.saved import Calibrated as Saved
    from sim.studies.calibration.saved import from_document

    if isinstance(calibration, Saved):
        return calibration
    if isinstance(calibration, CalibrationResult):
        return from_document(calibration.as_dict(), "calibrate()'s result")
    if isinstance(calibration, (str, Path)):
        return load_calibration(calibration)
    raise ArgumentError(
        parameter,
        "expected calibrate()'s result, a load_calibration() value or a saved calibration's "
        f"path, not {type(calibration).__name__}",
    )


def model_data(model: Model) -> dict[str, Any]:
    """The model's data as written (the fields a file or an override set): parsed again with
    more overrides it gives the same model, plus them."""
    return model.model_dump(exclude_unset=True)


def model_label(model: Model) -> str:
    return f"<model {model.meta.name}>" if model.meta.name else "<model>"


@dataclass(frozen=True)
class _ModelDraw:
    """One parameter draw's run of a `Model` (plain data, for any executor)."""

    raw: dict[str, Any]
    source: str
    user_overrides: tuple[str, ...]
    draw_replications: int

    def __call__(self, drawn: list[str], draw_seed: int) -> Outcome:
        from sim.model.load import parse_model
        from sim.run.simulate import simulate

        at = (*drawn, *self.user_overrides, f"run.seed={draw_seed}")
        return simulate(parse_model(self.raw, self.source, at), replications=self.draw_replications)


def predict(
    model: Model | str | Path,
    calibration: Calibrated | CalibrationResult | str | Path,
    overrides: Sequence[str] = (),
    *,
    replications: int | None = None,
    seed: int | None = None,
    draws: int = 16,
    draw_replications: int = 2,
    progress: Callable[[int, int], None] | None = None,
    measured: Any = None,
) -> Prediction:
    """`tiersim run MODEL --calibration FILE`: the model (a `Model` or its file) at the
    calibration's fitted values (`overrides` win), then at `draws` parameter draws, each with
    its own seed and `draw_replications` replications.

    The intervals are of the stack's mean figures.  `measured`, the level the prediction is to
    be compared with -- a row of a measurement table (`sim.import_measurements`, a level
    imported as one window: a pandas Series or a dict) -- makes the intervals of the figures
    it measured intervals of a measurement of them: its own noise (a window of its length, its
    count of requests) is added (`--measured`); the frame's `interval_of` says which."""
    from sim.api.placeholders import refuse
    from sim.studies.predict import CalibratedPrediction
    from sim.studies.predict import predict as predict_at

    source = arguments.model_source(model)
    extra = arguments.overrides(overrides)
    calibrated = as_calibration(calibration)
    count = arguments.replications(replications)
    root = arguments.seed(seed)
    points = arguments.integer(draws, "draws", 2, fix=" (an interval needs two draws or more)")
    each = arguments.integer(draw_replications, "draw_replications", 1)
    on_progress = arguments.callback(progress, "progress")
    level = _measured_level(measured)
    refuse(source, (*calibrated.overrides(), *extra), "sim.predict")  # a calibration fills some
    if isinstance(source, Model):
        from sim.model.load import parse_model
        from sim.run.simulate import Status, simulate
        from sim.studies.calibration.propagate import propagate

        raw, name = model_data(source), model_label(source)
        nominal = simulate(
            parse_model(raw, name, (*calibrated.overrides(), *extra)),
            replications=count,
            seed=root,
        )
        spread = None
        if nominal.status is Status.OK and nominal.result is not None:
            means = {k: i.mean for k, i in nominal.result.summary.items()}
            draw = _ModelDraw(raw, name, extra, each)
            spread = propagate(
                draw,
                means,
                calibrated,
                points,
                each,
                nominal.result.seed,
                on_progress,
                measured=level,
            )
        found = CalibratedPrediction(nominal, spread)
    else:
        found = predict_at(
            source, calibrated, extra, count, root, points, each, on_progress, measured=level
        )
    if found.outcome.result is None or found.propagation is None:
        raise SimulationError(found.outcome.message, found.outcome.status.value)
    return Prediction(Simulation(found.outcome), found.propagation)


def _measured_level(value: Any):
    """`measured=`: None, a `MeasuredLevel`, or one row of a measurement table."""
    from collections.abc import Mapping

    from sim.studies.measured_level import MeasuredLevel, MeasuredLevelError, measured_level

    if value is None or isinstance(value, MeasuredLevel):
        return value
    if hasattr(value, "to_dict") and not hasattr(value, "columns"):  # a pandas Series
        name = getattr(value, "name", None)
        value = value.to_dict()
        label = f"run {value['run']}" if "run" in value else f"row {name}"
    elif isinstance(value, Mapping):
        label = f"run {value['run']}" if "run" in value else "the row"
    else:
        raise ArgumentError(
            "measured",
            "expected one row of a measurement table (a pandas Series or a dict, e.g. "
            f"table.set_index('users').loc[10]), not {type(value).__name__}",
        )
    try:
        return measured_level(value, label)
    except MeasuredLevelError as exc:
        raise ArgumentError("measured", str(exc)) from None


def sweep(
    sweep_file: str | Path, results: str | Path | None = None, workers: int | None = 1
) -> pd.DataFrame:
    """`tiersim sweep`: run every point of a sweep file into its results directory (default
    results/<name>; a rerun resumes), and return every point as one row: the factors, each
    metric's mean, `.ci_low` and `.ci_high`, status and provenance (units in
    `attrs["units"]`).  `workers` = 1 runs in this process, None one process per core."""
    from sim.studies.executor import ProcessExecutor, SerialExecutor
    from sim.studies.sweep.execute import run_sweep
    from sim.studies.sweep.spec import load_sweep
    from sim.studies.sweep.store import ResultStore, load_results

    path = arguments.path(sweep_file, "sweep_file", "sweep file")
    folder = arguments.optional_path(results, "results", "results folder")
    pool = arguments.workers(workers)
    plan = load_sweep(path)
    store = ResultStore(folder or Path("results") / path.stem)
    with SerialExecutor() if pool == 1 else ProcessExecutor(pool) as executor:
        run_sweep(plan, store, executor)
    frame = load_results(store.root)
    units: dict[str, str] = {}
    for text in frame.get("units", []):
        if isinstance(text, str):
            units.update({k: v for k, v in json.loads(text).items() if v})
    frame.attrs["units"] = units
    return frame
