"""Models, runs and measurements on the package's face (`import sim`; docs/api.md): each one call of the library
the `tiersim` commands use, returning Python objects and pandas DataFrames instead of printing.

Metrics are named by the one vocabulary, `<component>.<metric>` (`tomcat1.cpu.utilization`,
`response.p95`), the same as `--set`, sweep columns and `--json`; a frame carries each metric's
unit in `frame.attrs["units"]` (and in a `unit` column where a row is a metric).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.model.load import load_model
from sim.model.schema import Model

if TYPE_CHECKING:
    import pandas as pd

    from sim.analytic.model_solver import Answer
    from sim.run.replications import RunResult
    from sim.run.simulate import Outcome


class SimulationError(RuntimeError):
    """A run that gave no figures: an invalid or unstable model, or a bug (`status` says which)."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


def _model(model: Model | str | Path, overrides: Sequence[str]) -> Model:
    if isinstance(model, Model):
        if overrides:
            raise TypeError("give overrides to sim.load_model(path, overrides), or pass a path")
        return model
    return load_model(model, tuple(overrides))


def _summary_frame(summary: dict, units: dict[str, str]) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(
        [
            {
                "metric": name,
                "mean": i.mean,
                "low": i.low,
                "high": i.high,
                "half_width": i.half_width,
                "unit": units.get(name, ""),
            }
            for name, i in summary.items()
        ]
    ).set_index("metric")
    frame.attrs["units"] = dict(units)
    return frame


@dataclass
class Simulation:
    """A run's figures: `summary` (metric -> 95 % interval), `units`, and frames of both."""

    outcome: Outcome

    @property
    def result(self) -> RunResult:
        assert self.outcome.result is not None  # simulate() raises when there is none
        return self.outcome.result

    @property
    def status(self) -> str:
        """ "ok", or "unfinished" / "interrupted" (figures of what did run)."""
        return self.outcome.status.value

    @property
    def summary(self) -> dict:
        return self.result.summary

    @property
    def units(self) -> dict[str, str]:
        return self.result.units

    @property
    def replications(self) -> list:
        """Each replication's own metrics (`ReplicationResult`), in order."""
        return self.result.replications

    @property
    def confidence(self) -> float:
        """The intervals' confidence level (`run.confidence`)."""
        return self.result.confidence

    @property
    def warnings(self) -> list[str]:
        return self.result.warnings

    @property
    def seed(self) -> int:
        return self.result.seed

    def to_frame(self) -> pd.DataFrame:
        """One row per metric (the index): mean, low, high, half_width, unit."""
        return _summary_frame(self.summary, self.units)

    @property
    def frame(self) -> pd.DataFrame:
        return self.to_frame()

    def replications_frame(self) -> pd.DataFrame:
        """One row per replication, one column per metric (units in `attrs["units"]`)."""
        import pandas as pd

        frame = pd.DataFrame([rep.metrics for rep in self.result.replications])
        frame.index.name = "replication"
        frame.attrs["units"] = dict(self.units)
        return frame


def simulate(
    model: Model | str | Path,
    overrides: Sequence[str] = (),
    *,
    replications: int | None = None,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    timeseries: Callable[[int, float, dict[str, float]], None] | None = None,
) -> Simulation:
    """Run a model (a `Model`, or a model file's path with `--set`-style overrides) as
    `tiersim run` does: the stability check, then the replications.  `timeseries(replication,
    time_s, metrics)` receives a sample every `run.timeseries_interval_s` (`--timeseries`).
    Raises SimulationError when there are no figures."""
    from sim.run.simulate import simulate as run_model

    outcome = run_model(
        _model(model, overrides),
        replications=replications,
        seed=seed,
        progress=progress,
        timeseries=timeseries,
    )
    if outcome.result is None:
        raise SimulationError(outcome.message, outcome.status.value)
    return Simulation(outcome)


def solve(model: Model | str | Path, overrides: Sequence[str] = ()) -> Answer:
    """The analytic answer (`tiersim solve`); raises `NotProductForm` when there is none."""
    from sim.analytic.model_solver import solve_model

    return solve_model(_model(model, overrides))


def import_measurements(
    format: str, files: Sequence[str | Path], output: str | Path | None = None, **options: Any
) -> pd.DataFrame:
    """Load-test files of `format` (jtl, ab, ab-gnuplot, access-log, locust) as the tidy
    measurement table (`tiersim import`; docs/measurement-table.md), written to `output`
    (.csv or .parquet) when given.  `options` are those of `ImportOptions` (window_s,
    utilisation, run, classes, log_format, encoding), and `tiersim import`'s cut: `warmup_s`,
    `until_s` (seconds after time zero) and `start` (the test's start, time zero)."""
    from sim.measurements import table
    from sim.measurements.importer import ImportOptions, import_files, parse_start
    from sim.measurements.windows import Cut

    cut: dict[str, Any] = {k: options.pop(k) for k in ("warmup_s", "until_s") if k in options}
    if "start" in options:
        start = options.pop("start")
        cut["start_s"] = parse_start(str(start))
    if cut:
        options["cut"] = Cut(**cut)
    rows = import_files(format, [str(f) for f in files], ImportOptions(**options))
    if output is not None:
        table.write(rows, output)
    return table.frame(rows)


def write_measurements(table: pd.DataFrame, path: str | Path) -> None:
    """Write a measurement table as `tiersim import` does (.csv or .parquet by the suffix)."""
    from sim.measurements.table import write

    write(table.to_dict("records"), path)


def read_measurements(path: str | Path) -> pd.DataFrame:
    """A measurement table written by `tiersim import` or `import_measurements`."""
    from sim.measurements.table import read

    return read(path)


def estimate(table: pd.DataFrame | str | Path, **options: Any) -> list:
    """Per-host service demands of a measurement table (`tiersim estimate`): a frame or a
    table file; `options`: host, background, level."""
    from sim.measurements.estimate import estimate as estimate_demands

    frame = read_measurements(table) if isinstance(table, (str, Path)) else table
    return estimate_demands(frame, **options)


def operational_laws(table: pd.DataFrame | str | Path, warmup_s: float = 0.0) -> pd.DataFrame:
    """Each run's operational laws (utilisation, Little, response time: the think time it
    implies), one row per run."""
    import pandas as pd

    from sim.measurements.laws import run_laws

    frame = read_measurements(table) if isinstance(table, (str, Path)) else table
    return pd.DataFrame([law.as_dict() for law in run_laws(frame, warmup_s)])


def plan_experiment(
    table: str | Path, fit: Sequence[str], folder: str | Path, **options: Any
) -> dict:
    """`tiersim plan`: write an experiment folder for a measurement table (the template model,
    the runs in `fit` to fit to, the search placed by the operational laws).  `options`:
    model, cores, warmup_s, duration_s, predict, threads, think (a model-file distribution,
    e.g. '{dist="uniform", low=0.4, high=0.6}') and shape: a light level's JTL (its samples'
    shape, after `warmup_s`; or a fitted `sim.measurements.shape` result)."""
    from sim.studies.planner import scaffold

    shape = options.get("shape")
    if isinstance(shape, (str, Path)):
        from sim.measurements.shape import fit_shape, samples_of_file

        samples = samples_of_file(str(shape), "jtl", options.get("warmup_s", 0.0), None)
        options["shape"] = fit_shape(samples, source=str(shape))
    for key in ("cores", "threads", "predict"):
        if isinstance(options.get(key), int):
            options[key] = (options[key],)
    return scaffold(table, list(fit), folder, **options)
