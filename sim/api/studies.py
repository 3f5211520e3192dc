"""Experiments, calibrations and studies on the package's face (`import sim`; docs/api.md):
each one call of the library the `tiersim` commands use."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api.runs import Simulation, SimulationError

if TYPE_CHECKING:
    import pandas as pd

    from sim.studies.calibration.fit import Calibration
    from sim.studies.calibration.propagate import Propagation
    from sim.studies.calibration.saved import Calibrated
    from sim.studies.capacity.search import CapacityResult
    from sim.studies.capacity.uncertain import CapacityRange
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
        text = json.dumps(self.as_dict(), indent=2, allow_nan=False)
        Path(path).write_text(text + "\n", encoding="utf-8")

    def parameters_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.fit.parameters)

    def rows_frame(self) -> pd.DataFrame:
        """Every figure: published, simulated, interval, error, prediction interval, unit."""
        return rows_frame(self.fit.rows)


def rows_frame(rows: list[Row]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([row.as_dict() for row in rows])


def calibrate(experiment: str | Path, **options: Any) -> CalibrationResult:
    """Fit an experiment's `[[calibrate]]` parameters to its `[[fitted]]` figures and predict
    the rest (`tiersim calibrate`), one calibration per candidate of its `[[choose]]` entries.
    `options`: replications, cache (a path; default none), max_evaluations, workers (or executor), analyse,
    draws, draw_replications, progress, row_progress."""
    from sim.studies.calibration.fit import calibrate as fit
    from sim.studies.choose import calibrate_choosing

    best, choices = calibrate_choosing(str(experiment), fit, **options)
    return CalibrationResult(best, choices)


def reproduce(experiment: str, replications: int | None = None) -> pd.DataFrame:
    """An experiment's table simulated beside its published figures (`tiersim reproduce`)."""
    from sim.studies.reproduce import reproduce as run_rows

    return rows_frame(run_rows(experiment, replications=replications))


def load_calibration(path: str | Path) -> Calibrated:
    """A saved calibration (`Calibrated.save`, `tiersim calibrate --save`)."""
    from sim.studies.calibration.saved import load_calibration as read

    return read(path)


@dataclass
class Prediction:
    """A run at a calibration's fitted values and its 90 % prediction intervals."""

    simulation: Simulation
    propagation: Propagation

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: value at the fit, pi_low, pi_high, each part's sd, unit."""
        import pandas as pd

        units = self.simulation.units
        frame = pd.DataFrame(
            [
                {**vars(p), "unit": units.get(p.metric, "")}
                for p in self.propagation.predictions.values()
            ]
        ).set_index("metric")
        frame.attrs["units"] = dict(units)
        return frame


def _calibration(calibration: Calibrated | CalibrationResult | str | Path) -> Calibrated:
    """A saved calibration, from a file or from `calibrate`'s result (saved and read back, so
    that it is exactly what `tiersim run --calibration` would read)."""
    import tempfile

    from sim.studies.calibration.saved import Calibrated as Saved

    if isinstance(calibration, Saved):
        return calibration
    if isinstance(calibration, CalibrationResult):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "calibration.json"
            calibration.save(path)
            return load_calibration(path)
    return load_calibration(calibration)


def predict(
    model_file: str | Path,
    calibration: Calibrated | CalibrationResult | str | Path,
    overrides: Sequence[str] = (),
    *,
    replications: int | None = None,
    seed: int | None = None,
    draws: int = 16,
    draw_replications: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> Prediction:
    """`tiersim run MODEL --calibration FILE`: the model at the calibration's fitted values
    (`overrides` win), then at `draws` parameter draws, each with its own seed."""
    from sim.studies.predict import predict as predict_at

    found = predict_at(
        model_file,
        _calibration(calibration),
        overrides,
        replications,
        seed,
        draws,
        draw_replications,
        progress,
    )
    if found.outcome.result is None or found.propagation is None:
        raise SimulationError(found.outcome.message, found.outcome.status.value)
    return Prediction(Simulation(found.outcome), found.propagation)


@dataclass
class Capacity:
    """A capacity answer: `result` (the search: best value, its neighbour, every evaluation,
    the knee) and, with a calibration, `range` over its parameters' uncertainty."""

    result: CapacityResult
    range: CapacityRange | None = None

    @property
    def best(self) -> float | None:
        return None if self.result.best is None else self.result.best.value

    def as_dict(self) -> dict:
        """The document `tiersim capacity --json` prints."""
        document = self.result.as_dict()
        if self.range is not None:
            document["calibrated_range"] = self.range.as_dict()
        return document

    def to_frame(self) -> pd.DataFrame:
        """Every evaluation of the search: the value tried, whether it met the SLOs, and each
        SLO metric's mean and interval."""
        import pandas as pd

        rows = []
        for e in sorted(self.result.evaluations, key=lambda e: e.value):
            row: dict[str, Any] = {self.result.path: e.value, "met": e.met, "note": e.note}
            for metric, (mean, low, high) in e.metrics.items():
                row |= {metric: mean, f"{metric}.ci_low": low, f"{metric}.ci_high": high}
            rows.append(row)
        return pd.DataFrame(rows)


def capacity(
    source: str | Path,
    slo: str | Sequence[str],
    vary: str,
    *,
    direction: str | None = None,
    overrides: Sequence[str] = (),
    replications: int | None = None,
    seed: int | None = None,
    tolerance: float = 0.02,
    minimum: float | None = None,
    maximum: float | None = None,
    knee_points: int = 8,
    use_analytic: bool = True,
    workers: int | None = 1,
    calibration: Calibrated | CalibrationResult | str | Path | None = None,
    draws: int = 8,
) -> Capacity:
    """`tiersim capacity`: the largest load (or smallest cluster) of a model or sweep file whose
    interval meets every SLO (`"p95<1.0"`, ...), varying `vary`; with a calibration, the search
    again at its parameter draws, as a range.  `workers` = 1 runs in this process."""
    from sim.studies.capacity.question import answer, answer_range, ask
    from sim.studies.executor import ProcessExecutor, SerialExecutor

    slos = [slo] if isinstance(slo, str) else list(slo)
    calibrated = None if calibration is None else _calibration(calibration)
    fixed = (*calibrated.overrides(), *overrides) if calibrated is not None else tuple(overrides)
    question = ask(source, slos, vary, direction, fixed, replications, seed, minimum, maximum)

    with SerialExecutor() if workers == 1 else ProcessExecutor(workers) as pool:
        result = answer(question, pool, pool.slots, tolerance, use_analytic, knee_points)
        spread = None
        if calibrated is not None:
            spread = answer_range(
                question, result, calibrated, draws, pool, tolerance, tuple(overrides)
            )
    return Capacity(result, spread)


def sweep(
    sweep_file: str | Path, results: str | Path | None = None, workers: int | None = 1
) -> pd.DataFrame:
    """`tiersim sweep`: run every point of a sweep file into its results directory (default
    results/<name>; a rerun resumes), and return every point as one row: the factors, each
    metric's mean, ci_low and ci_high, status and provenance (units in `attrs["units"]`)."""
    from sim.studies.executor import ProcessExecutor, SerialExecutor
    from sim.studies.sweep.execute import run_sweep
    from sim.studies.sweep.spec import load_sweep
    from sim.studies.sweep.store import ResultStore, load_results

    plan = load_sweep(sweep_file)
    store = ResultStore(results or Path("results") / Path(sweep_file).stem)
    with SerialExecutor() if workers == 1 else ProcessExecutor(workers) as executor:
        run_sweep(plan, store, executor)
    frame = load_results(store.root)
    units: dict[str, str] = {}
    for text in frame.get("units", []):
        if isinstance(text, str):
            units.update({k: v for k, v in json.loads(text).items() if v})
    frame.attrs["units"] = units
    return frame
