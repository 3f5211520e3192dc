"""Models and runs on the package's face (`import sim`; docs/api.md): each one call of the
library the `tiersim` commands use, returning Python objects and pandas DataFrames instead of
printing.

Metrics are named by the one vocabulary, `<component>.<metric>` (`tomcat1.cpu.utilization`,
`response.p95`), the same as `--set`, sweep columns and `--json`; a frame carries each metric's
unit in `frame.attrs["units"]` (and in a `unit` column where a row is a metric).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api import arguments
from sim.api.frames import answer_frame, summary_frame
from sim.api.placeholders import refuse
from sim.model.load import load_model
from sim.model.schema import Model

if TYPE_CHECKING:
    import pandas as pd

    from sim.run.replications import RunResult
    from sim.run.simulate import Outcome


class SimulationError(RuntimeError):
    """A run that gave no figures: an invalid or unstable model, or a bug (`status` says which)."""

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


def _model(model: Any, overrides: Any, call: str) -> Model:
    """A `Model` as given, or the model file at a path with its `--set`-style overrides; a
    `from-config` model whose placeholders nothing filled is refused, as the commands refuse
    it, given as a path or as the Model `sim.load_model` made of it (`sim.api.placeholders`):
    a demand of 0 s would answer a 0 s response."""
    source = arguments.model_source(model)
    extra = arguments.overrides(overrides)
    if isinstance(source, Model):
        if extra:
            raise arguments.ArgumentError(
                "overrides",
                "a Model is already validated: give overrides to "
                "sim.load_model(path, overrides), or pass the model's path",
            )
        refuse(source, (), call, takes_overrides=False)  # as loaded by sim.load_model
        return source
    loaded = load_model(source, extra)
    refuse(source, extra, call)
    return loaded


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
        """Metric -> its interval at `confidence`, with `share.failed` (and each request
        class's `class.<name>.share.failed`) beside the latencies, as `tiersim run` prints it:
        failed / (completed + failed) of each replication's window, Student-t over the
        replications, within [0, 1] (`sim.present.failures`)."""
        from sim.present.failures import with_failed_share

        result = self.result
        return with_failed_share(
            result.summary,
            [rep.metrics for rep in result.replications],
            [c.name for c in result.model.classes],
            result.confidence,
        )

    @property
    def units(self) -> dict[str, str]:
        """Each metric's unit; a failed share's is `fraction` (of the requests that ended)."""
        from sim.present.failures import FAILED_SHARE

        shares = {name: "fraction" for name in self.summary if name.endswith(FAILED_SHARE)}
        return {**self.result.units, **shares}

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
        """One row per metric (the index): mean, ci_low, ci_high, half_width, unit; the row
        `share.failed` (and `class.<name>.share.failed`) is the share of requests that failed,
        which every latency row is of the answered requests beside."""
        return summary_frame(self.summary, self.units)

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
    simulated: Callable[[float, float], None] | None = None,
) -> Simulation:
    """Run a model (a `Model`, or a model file's path with `--set`-style overrides) as
    `tiersim run` does: the stability check, then the replications (`replications`, `seed`:
    None takes the model's `run.replications`, `run.seed`).  `progress(done, total)` hears of
    each finished replication; `simulated(now_s, until_s)` of the simulated time of the one
    under way, several times a second on either engine (a long replication's progress).
    `timeseries(replication, time_s, metrics)` receives a sample every
    `run.timeseries_interval_s` (`--timeseries`).
    Raises ArgumentError for an argument it cannot use, ModelError for a model file or
    override, SimulationError when there are no figures."""
    from sim.run.simulate import simulate as run_model

    count = arguments.replications(replications)
    root = arguments.seed(seed)
    on_progress = arguments.callback(progress, "progress")
    on_sample = arguments.callback(timeseries, "timeseries")
    on_simulated = arguments.callback(simulated, "simulated")
    outcome = run_model(
        _model(model, overrides, "sim.simulate"),
        replications=count,
        seed=root,
        progress=on_progress,
        timeseries=on_sample,
        simulated=on_simulated,
    )
    if outcome.result is None:
        raise SimulationError(outcome.message, outcome.status.value)
    return Simulation(outcome)


def solve(model: Model | str | Path, overrides: Sequence[str] = ()) -> pd.DataFrame:
    """The analytic answer (`tiersim solve`) as a frame: one row per metric, named as the
    simulation's (`throughput`, `response.mean`, `<station>.utilization`, ...), with `value`
    and `unit`; `attrs` say whether it is exact and why not (`caveats`).  Raises
    `NotProductForm` when the model has no analytic counterpart."""
    from sim.analytic.model_solver import solve_model

    return answer_frame(solve_model(_model(model, overrides, "sim.solve")))
