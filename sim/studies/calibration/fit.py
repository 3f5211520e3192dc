"""`tiersim calibrate EXPERIMENT`: fit an experiment's free parameters to the figures it marks
as fitted, then predict the rest.

`experiment.toml` declares each free parameter:

    [[calibrate]]
    parameter = "backends.0.demand.mean"   # a number in the model, by its dotted path (unit: the model's)
    bounds = [0.0002, 0.005]            # the search range
    start = 0.0007                      # optional; default the middle of the range
    scale = "log"                       # optional; "log" (default when low > 0) or "linear"
    when = { scenario = "fast-alone" }  # optional; the rows it applies to (default every row)

and the targets are the figures its `[[fitted]]` entries name (a row by its column values, and
optionally one `figure` column).  The fit minimises the sum of squared relative errors over the
targets (`scipy.optimize.least_squares`: trust region within the bounds, forward differences) with
common random numbers: every evaluation simulates each row with the same seeds, so the objective
is a deterministic function of the parameters and a step's effect is not drowned by sampling
noise.  Then every row is simulated with the fitted values: the fitted figures' errors measure the
fit, the others' errors measure the model (prediction).  A withheld figure is never a target.

Every finished evaluation is appended to a cache file.  The fit is deterministic, so a rerun after
an interruption replays the cached evaluations at no cost and goes on from where it stopped.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sim.studies.calibration.analysis import analyse_fit
from sim.studies.calibration.evaluate import Evaluator, free_overrides
from sim.studies.calibration.figures import Figure, published_figures
from sim.studies.calibration.linearise import Linearisation, RunMemo
from sim.studies.calibration.parameters import CalibrationError, free_parameters
from sim.studies.executor import Executor, ProcessExecutor, SerialExecutor
from sim.studies.experiment import ExperimentError, factor_overrides, figures_of, is_fitted
from sim.studies.records import (
    Experiment,
    check_runs,
    experiment_of,
    model_column,
    published_value,
)
from sim.studies.rows import Row, simulate_rows
from sim.studies.spec import ExperimentSpec, FittedSpec

# The search runs on u in [1, 2] for every parameter, so that least_squares' relative
# difference step (DIFF_STEP x |u|) is a fixed share of each parameter's range (1-2 %), wide
# enough to step over the small discontinuities of a simulated objective.
DIFF_STEP = 0.01
TOLERANCE = 1e-4  # relative change of cost or parameters that ends the fit
# The fit also ends once every target is within this share of its own 95 % half-width of the
# published figure: closer than that, the replications cannot tell one value from the next.
RESOLVED = 0.25
# A fit that stops with a fitted figure further than this many sds (measurement and simulation
# noise) from its published value has not converged, whatever the optimiser says.
MISFIT = 3.0


@dataclass
class Calibration:
    experiment: str
    parameters: list[dict]  # path, value, start, low, high, at_bound, applies_to
    targets: list[dict]  # figure, published, simulated, ci_low, ci_high, rel_error
    rows: list[Row]  # every row, simulated with the fitted values
    converged: bool
    message: str
    evaluations: int  # simulated this time
    cached: int  # replayed from the cache
    uncertainty: dict | None = None  # sim.studies.calibration.analysis.analyse_fit
    # its Linearisation (not in the JSON): cross-validation uses it
    linearisation: Linearisation | None = None
    # the settings every row was run with (the experiment's factors that are the same on all
    # rows: a think time, a thread count, the shape of a wait): the fitted values mean
    # something only with them, so `tiersim run/capacity --calibration` sets them first
    settings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "experiment": self.experiment,
            "converged": self.converged,
            "message": self.message,
            "evaluations": self.evaluations,
            "cached_evaluations": self.cached,
            "parameters": self.parameters,
            "settings": self.settings,
            "uncertainty": self.uncertainty,
            "targets": self.targets,
            "rows": [r.as_dict() for r in self.rows],
        }


def targets(spec: ExperimentSpec, records: list[dict[str, str]], source: Path) -> list[Figure]:
    """The figures `[[fitted]]` names (a withheld one is an error), with their measurement
    errors; a figure an operational law rejects cannot be fitted (say so)."""
    name_column = model_column(spec)
    for record in records:
        for wanted in figures_of(spec, record):
            column = wanted.column
            if is_fitted(spec, record, column) and published_value(record, column) is None:
                raise CalibrationError(
                    f"{source}: [[fitted]] names {name_column}={record[name_column]} {column}, "
                    "which is withheld; a withheld figure is predicted, never fitted: remove it "
                    "from [[fitted]]"
                )
    try:
        out = [f for f in published_figures(spec, records, source) if f.fitted]
    except ExperimentError as exc:
        raise CalibrationError(str(exc)) from None
    for figure in out:
        if figure.excluded:
            raise CalibrationError(
                f"{source}: [[fitted]] names {figure.label}, which no one model can meet "
                f"({figure.excluded}); remove it from [[fitted]]"
            )
    if not out:
        raise CalibrationError(
            f"{source}: no [[fitted]] entry names a published figure: add one per figure the "
            "parameters are fitted to (the row's column values, and `figure` = its column)"
        )
    return out


def _least_squares(
    evaluate: Evaluator, budget: int, start_values: tuple[float, ...] | None = None
) -> tuple[bool, str, tuple[float, ...]]:
    """Run the fit from `start_values` (default the parameters' starts).  Returns (converged,
    why it stopped, the values to keep): the first resolved point, else the lowest-cost point
    evaluated."""
    from scipy.optimize import least_squares

    parameters, goals = evaluate.parameters, evaluate.goals

    class _Stop(Exception):
        pass

    def residuals(u: np.ndarray) -> np.ndarray:
        if evaluate.spent >= budget:
            assert evaluate.best is not None  # the budget (>= 1) is spent: a point was evaluated
            raise _Stop(
                False,
                f"stopped after {budget} evaluations without converging (the best point is shown)",
                evaluate.best[1],
            )
        values = tuple(p.from_unit(float(x)) for p, x in zip(parameters, u))
        entry = evaluate(values)
        if all(
            abs(s - g.published) <= RESOLVED * (hi - lo) / 2
            for g, s, lo, hi in zip(goals, entry["simulated"], entry["ci_low"], entry["ci_high"])
        ):
            raise _Stop(
                True,
                f"every fitted figure is within {RESOLVED:g} of its 95 % half-width of the published "
                "value (as close as the replications resolve)",
                values,
            )
        return evaluate.whitened(entry, u)

    if start_values is None:
        start_values = tuple(p.start for p in parameters)
    start = np.array([p.to_unit(v) for p, v in zip(parameters, start_values)])
    try:
        fit = least_squares(
            residuals,
            start,
            bounds=(1.0, 2.0),
            # a whole parameter's difference must move it by one at least
            diff_step=np.array([max(DIFF_STEP, p.min_unit_step()) for p in parameters]),
            ftol=TOLERANCE,
            xtol=TOLERANCE,
            gtol=TOLERANCE,
            method="trf",
            x_scale=1.0,
        )
    except _Stop as stop:
        return stop.args
    assert evaluate.best is not None  # least_squares evaluates at least its start
    return bool(fit.status > 0), str(fit.message), evaluate.best[1]


def _missed(evaluate: Evaluator, values: tuple[float, ...]) -> list[str]:
    """The fitted figures further than MISFIT sds (measurement and this point's own simulation
    noise) from their published values at `values`, each with its error and distance."""
    entry = evaluate.recorded(values)
    sd = np.sqrt(
        np.square([g.measurement_sd for g in evaluate.goals]) + np.square(entry["noise_sd"])
    )
    return [
        f"{g.label} {r:+.1%} ({abs(r) / max(s, 1e-9):.1f} sd)"
        for g, r, s in zip(evaluate.goals, entry["residuals"], sd)
        if abs(r) > MISFIT * max(s, 1e-9)
    ]


def _fit(
    evaluate: Evaluator, budget: int, start_values: tuple[float, ...] | None = None
) -> tuple[bool, str, tuple[float, ...]]:
    """The local fit from `start_values` (default the declared starts).  A fit can stop where
    a parameter has no effect (seed 004's node demand below the database's leaves the one-node
    throughput set by the database: the node's column of the Jacobian is zero), short of the
    figures: then it says which figures it missed and by how many sds, and, when there are no
    more figures than parameters (so each should be met), does not count as converged."""
    converged, message, values = _least_squares(evaluate, budget, start_values)
    missed = _missed(evaluate, values)
    if not missed:
        return converged, message, values
    # With as many parameters as figures every figure should be met; with more figures, a
    # compromise between them is the fit's answer (the model error term measures it).
    exact = len(evaluate.goals) <= len(evaluate.parameters)
    return (
        converged and not exact,
        f"{message.rstrip('.')}; but the fit stopped short of {'; '.join(missed)}: a parameter may have "
        "no effect where it stopped (give [[calibrate]] starts from the operational laws, "
        "e.g. `tiersim estimate`), or no values of these parameters meet every figure",
        values,
    )


def default_cache(folder: Path, spec: ExperimentSpec) -> Path:
    return Path(".tiersim-cache") / f"calibrate-{experiment_name(folder, spec)}.jsonl"


def experiment_name(folder: Path, spec: ExperimentSpec) -> str:
    """`[experiment] name`, else the folder's."""
    return folder.name if spec.experiment.name is None else spec.experiment.name


def calibrate(
    name: str | Experiment,
    replications: int | None = None,
    cache: Path | None = None,
    max_evaluations: int | None = None,
    progress=None,
    row_progress=None,
    workers: int = 1,
    analyse: bool = True,
    draws: int = 0,
    draw_replications: int = 2,
    executor: Executor | None = None,
    fitted: list[FittedSpec] | None = None,
    starts: tuple[float, ...] | None = None,
) -> Calibration:
    """Fit the experiment's [[calibrate]] parameters to its [[fitted]] figures; simulate every row
    with the fitted values.  `cache=None` keeps no cache.  An evaluation's rows run on
    `executor` (`sim.studies.executor`: processes, a Dask cluster; the caller closes it), else
    in `workers` processes (1: here); each run keeps its own seeds, so the fit is the same.
    `analyse` adds the parameters' intervals and every row's prediction interval (linear, or
    from `draws` sampled parameter points of `draw_replications` replications each).
    `fitted` replaces the experiment's [[fitted]] entries (the targets; an exact
    cross-validation fold names every figure but the one it leaves out), and `starts` the
    parameters' declared starts (the fold's one-step estimate, free of the figure it leaves
    out, where a declared start may have been read off that very figure).  `name` is the
    experiment's name, or the experiment already read (`sim.studies.records.Experiment`: a
    [[choose]] candidate's, a command's that read it once)."""
    experiment = experiment_of(name)
    folder, spec, records = experiment.folder, experiment.spec, experiment.records
    if fitted is not None:
        # another set of targets than the file's [[fitted]] (an exact leave-one-out fold):
        # the fit, its model error and its intervals all read the spec, so it is replaced whole
        spec = spec.model_copy(update={"fitted": fitted})
    source = folder / "experiment.toml"
    parameters = free_parameters(spec, source)
    goals = targets(spec, records, source)
    # An unknown no fitted figure touches is carried as its range; a [[calibrate]] parameter
    # has no range of its own to fall back on, so it needs figures.
    searched = [p for p in parameters if p.kind == "calibrate"]
    for p in searched:
        if not any(p.applies(g.record) for g in goals):
            raise CalibrationError(
                f"{source}: parameter {p.path!r} (when {p.when}) applies to none of the fitted "
                "figures' rows, so no figure can fix it (declare it as an [[unknown]] with its "
                "range if no figure can)"
            )
    if len(goals) < len(searched):
        raise CalibrationError(
            f"{source}: {len(searched)} free parameters but only {len(goals)} fitted figures; "
            "each parameter needs at least one figure of its own ([[fitted]])"
        )
    # every row's run, at the start values, before the fit: not after it
    start_values = starts if starts is not None else tuple(p.start for p in parameters)
    check_runs(
        folder, spec, records, lambda record: free_overrides(parameters, start_values, record)
    )
    with contextlib.ExitStack() as stack:
        # the studies' executor: the same numbers serially, in processes or on a cluster
        if executor is None:
            executor = stack.enter_context(
                SerialExecutor() if workers <= 1 else ProcessExecutor(workers)
            )
        map_: Callable[..., Iterator] = executor.map
        evaluate = Evaluator(folder, spec, parameters, goals, replications, cache, progress, map_)
        converged, message, values = _fit(
            evaluate, max_evaluations or 30 * (len(parameters) + 1), start_values
        )
        memo = RunMemo(map_)  # the rows and the linearisation's base point are the same runs
        rows = simulate_rows(
            experiment,
            replications=replications,
            progress=row_progress,
            extra=lambda record: evaluate.extra(values, record),
            map_=memo,
        )
        uncertainty = linearisation = None
        if analyse:
            uncertainty, linearisation, _ = analyse_fit(
                folder,
                spec,
                records,
                parameters,
                values,
                rows,
                replications,
                memo,
                draws=draws,
                draw_replications=draw_replications,
                progress=row_progress,
            )
    best = evaluate.recorded(values)
    fitted_parameters = []
    for p, v in zip(parameters, values):
        span = math.log(p.high / p.low) if p.log else p.high - p.low
        gap = (
            min(math.log(v / p.low), math.log(p.high / v)) if p.log else min(v - p.low, p.high - v)
        )
        fitted_parameters.append(
            {
                "parameter": p.path,
                "value": v,
                "start": p.start,
                "low": p.low,
                "high": p.high,
                "scale": "log" if p.log else "linear",
                "whole": p.whole,
                "at_bound": gap <= 1e-3 * span,
                "when": p.when,
                "fitted_to": [g.label for g in goals if p.applies(g.record)],
                "kind": p.kind,
                "provenance": p.provenance,
            }
        )
    if uncertainty is not None:
        for entry, found in zip(fitted_parameters, uncertainty["parameters"]):
            entry["interval"], entry["pinned"] = found["interval"], found["pinned"]
    fitted_targets = [
        {
            "figure": g.label,
            "published": g.published,
            "simulated": s,
            "ci_low": lo,
            "ci_high": hi,
            "rel_error": (s - g.published) / g.published,
        }
        for g, s, lo, hi in zip(goals, best["simulated"], best["ci_low"], best["ci_high"])
    ]
    return Calibration(
        experiment=experiment_name(folder, spec),
        parameters=fitted_parameters,
        targets=fitted_targets,
        rows=rows,
        converged=converged,
        message=message,
        evaluations=evaluate.simulated,
        cached=evaluate.replayed,
        uncertainty=uncertainty,
        linearisation=linearisation,
        settings=shared_settings(experiment),
    )


def shared_settings(experiment: Experiment) -> list[str]:
    """The settings every row's run has in common (in the first row's order): a factor's `"*"`
    entries that are not the row's own value (no `{value}`), such as `tiersim plan` writes for a
    think time, a thread count or a wait's shape.  The fitted values were fitted with them,
    beside the load that varies from row to row.  A `[[choose]]` candidate's setting is not
    among them: the document's `choices` holds it."""
    spec, records, source = experiment.spec, experiment.records, experiment.source
    constant = {
        template
        for values in spec.factors.values()
        for template in values.get("*", [])
        if "{value}" not in template
    } - set(experiment.candidate)
    runs = [factor_overrides(spec, record, source) for record in records]
    if not runs or not constant:
        return []
    common = constant.intersection(*map(set, runs))
    return [setting for setting in runs[0] if setting in common]
