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
import hashlib
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim.studies.free_parameters import CalibrationError, FreeParameter, free_parameters
from sim.studies.reproduce import (
    ExperimentError,
    Row,
    _figures,
    _is_fitted,
    check_runs,
    load_experiment,
    load_row_model,
    published_value,
    reproduce,
    row_run,
    run_row,
)
from sim.studies.uncertainty.figures import Figure, noise_sd, published_figures
from sim.studies.uncertainty.fit import analyse_fit
from sim.studies.uncertainty.study import Linearisation, RunMemo

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
    uncertainty: dict | None = None  # sim.studies.uncertainty.fit.analyse_fit
    # its Linearisation (not in the JSON): cross-validation uses it
    linearisation: Linearisation | None = None

    def as_dict(self) -> dict:
        return {
            "experiment": self.experiment,
            "converged": self.converged,
            "message": self.message,
            "evaluations": self.evaluations,
            "cached_evaluations": self.cached,
            "parameters": self.parameters,
            "uncertainty": self.uncertainty,
            "targets": self.targets,
            "rows": [r.as_dict() for r in self.rows],
        }


def targets(spec: dict, records: list[dict[str, str]], source: Path) -> list[Figure]:
    """The figures `[[fitted]]` names (a withheld one is an error), with their measurement
    errors; a figure an operational law rejects cannot be fitted (say so)."""
    name_column = spec["models"]["column"]
    for record in records:
        for wanted in _figures(spec, record):
            column = wanted["column"]
            if _is_fitted(spec, record, column) and published_value(record, column) is None:
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


class _Evaluator:
    """Simulates the targets' rows at a parameter vector (once per distinct run), with a cache."""

    def __init__(
        self,
        folder: Path,
        spec: dict,
        parameters: list[FreeParameter],
        goals: list[Figure],
        replications: int | None,
        cache: Path | None,
        progress,
        map_=map,
    ) -> None:
        self.folder, self.spec, self.parameters, self.goals = folder, spec, parameters, goals
        self.map = map_  # builtin map, or a process pool's: the numbers are the same either way
        self.replications, self.cache, self.progress = replications, cache, progress
        self.fingerprint = _fingerprint(folder, spec, goals, replications)
        self.known: dict[str, dict] = {}
        self.simulated = self.replayed = 0
        self.best: tuple[float, tuple[float, ...]] | None = None
        self.weight_noise_sd: np.ndarray | None = None
        if cache is not None:
            self._replay(cache)

    def _replay(self, cache: Path) -> None:
        """Read the cache's evaluations of this experiment; a line cut short by an interruption
        (or anything else that is not a record) is skipped."""
        from sim.files import FileProblem, read_text

        if not cache.exists():
            return
        try:
            text = read_text(cache, "calibration cache", max_bytes=2**30)
        except FileProblem as exc:
            raise CalibrationError(
                f"--cache {exc}; give another --cache, or --no-cache, or delete it to start again"
            ) from None
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):  # JSONDecodeError, a 5 000-digit number
                continue
            if (
                isinstance(entry, dict)
                and entry.get("fingerprint") == self.fingerprint
                and isinstance(entry.get("key"), str)
                and _complete(entry, len(self.goals))
            ):
                self.known[entry["key"]] = entry

    def extra(self, values: tuple[float, ...], record: dict[str, str]) -> list[str]:
        return _extra(self.parameters, values, record)

    def recorded(self, values: tuple[float, ...]) -> dict:
        return self.known[json.dumps([repr(v) for v in values])]

    def __call__(self, values: tuple[float, ...]) -> dict:
        key = json.dumps([repr(v) for v in values])
        entry = self.known.get(key)
        if entry is not None and "noise_sd" in entry:
            self.replayed += 1
        else:
            entry = {
                "fingerprint": self.fingerprint,
                "key": key,
                "values": list(values),
                **self._simulate(values),
            }
            self.known[key] = entry
            self.simulated += 1
            if self.cache is not None:
                _append(self.cache, json.dumps(entry))
        # The best point is judged as the fit judges it (weighted by each figure's sd, priors
        # included); progress shows the plain sum of squared relative errors, which reads better.
        weighted = self.weighted_cost(values, entry)
        if self.best is None or weighted < self.best[0]:
            self.best = (weighted, values)
        if self.progress is not None:
            cost = float(np.sum(np.square(entry["residuals"])))
            self.progress(self.simulated + self.replayed, cost, values)
        return entry

    @property
    def spent(self) -> int:
        return self.simulated + self.replayed

    def weighted_cost(self, values: tuple[float, ...], entry: dict) -> float:
        u = np.array([p.to_unit(v) for p, v in zip(self.parameters, values)])
        return float(np.sum(np.square(self.whitened(entry, u))))

    def whitened(self, entry: dict, u: np.ndarray) -> np.ndarray:
        """The fit's residuals, weighted by each figure's sd: its measurement error and the
        simulation noise as estimated at the first point evaluated.  The weights stay fixed:
        a noise estimate from a few replications varies by a factor of two from point to point,
        and weights that move with it make the objective favour noisy points."""
        if self.weight_noise_sd is None:
            self.weight_noise_sd = np.asarray(entry["noise_sd"], dtype=float)
        return _whitened(entry, self.goals, self.parameters, u, self.weight_noise_sd)

    def _simulate(self, values: tuple[float, ...]) -> dict:
        from sim.model.stability import overloads

        at = ", ".join(f"{p.path} = {v:.6g}" for p, v in zip(self.parameters, values))
        keys, tasks, counts = [], {}, {}
        for goal in self.goals:
            model_file, overrides = row_run(
                self.folder, self.spec, goal.record, self.extra(values, goal.record)
            )
            key = (str(model_file), overrides)
            keys.append(key)
            if key not in tasks:
                model = load_row_model(model_file, overrides)
                counts[key] = self.replications or model.run.replications
                problems = overloads(model)
                if problems:
                    detail = "; ".join(
                        f"{p.path}: utilization {p.utilization:.3g}" for p in problems
                    )
                    raise CalibrationError(
                        f"{goal.label}: at {at} the model is unstable ({detail}); narrow the "
                        "[[calibrate]] bounds to values the system can sustain"
                    )
                tasks[key] = goal.label
        # Each distinct run once; rows sharing a run share its numbers.
        summaries = dict(
            zip(
                tasks,
                self.map(
                    run_row,
                    [
                        (
                            k[0],
                            k[1],
                            self.replications,
                            f"{tasks[k]}: at {at} (narrow the [[calibrate]] bounds)",
                        )
                        for k in tasks
                    ],
                ),
            )
        )
        simulated, lows, highs, noise = [], [], [], []
        for goal, key in zip(self.goals, keys):
            summary = summaries[key]
            if goal.metric not in summary:
                raise CalibrationError(
                    f"{goal.label}: metric {goal.metric!r} is not produced by {Path(key[0]).name}"
                )
            mean, low, high = goal.published_units(*summary[goal.metric][:3])
            simulated.append(mean)
            lows.append(low)
            highs.append(high)
            noise.append(noise_sd(low, high, counts[key]) / abs(goal.published))
        residuals = [(s - g.published) / g.published for s, g in zip(simulated, self.goals)]
        return {
            "simulated": simulated,
            "ci_low": lows,
            "ci_high": highs,
            "residuals": residuals,
            "noise_sd": noise,
        }


def _extra(
    parameters: list[FreeParameter], values: tuple[float, ...], record: dict[str, str]
) -> list[str]:
    """The overrides that set the free parameters to `values` on one row."""
    return [f"{p.path}={v!r}" for p, v in zip(parameters, values) if p.applies(record)]


def _complete(entry: dict, targets: int) -> bool:
    """A cached evaluation with every list the fit reads, one number per target."""
    return all(
        isinstance(entry.get(name), list)
        and len(entry[name]) == targets
        and all(isinstance(v, (int, float)) for v in entry[name])
        for name in ("simulated", "ci_low", "ci_high", "residuals")
    )


def _append(cache: Path, line: str) -> None:
    """Append one record on a line of its own: after a torn last line (an interrupted write),
    start on a fresh line, or the record would join the torn one and be lost with it."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    with cache.open("ab") as handle:
        if handle.tell() > 0:
            with cache.open("rb") as reader:
                reader.seek(-1, 2)
                if reader.read(1) != b"\n":
                    handle.write(b"\n")
        handle.write(line.encode("utf-8") + b"\n")


def _fingerprint(folder: Path, spec: dict, goals: list[Figure], replications: int | None) -> str:
    """Everything an evaluation depends on besides the parameter values: the experiment, its
    published table, the model files of the targets' rows, the replications, the version."""
    from importlib.metadata import version

    digest = hashlib.sha256()
    digest.update(json.dumps(spec, sort_keys=True, default=str).encode())
    digest.update((folder / spec["experiment"]["published"]).read_bytes())
    for model_file in sorted({row_run(folder, spec, g.record)[0] for g in goals}):
        digest.update(model_file.read_bytes())
    digest.update(f"{replications}|{version('tiersim')}".encode())
    return digest.hexdigest()[:16]


def _least_squares(
    evaluate: _Evaluator, budget: int, start_values: tuple[float, ...] | None = None
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
            diff_step=DIFF_STEP,
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


def _whitened(
    entry: dict,
    goals: list[Figure],
    parameters: list[FreeParameter],
    u: np.ndarray,
    noise_sd: np.ndarray,
) -> np.ndarray:
    """The fit's residuals: each relative error over its sd (measurement and simulation noise),
    so a figure counts by how precisely it is known; then, for each `[[unknown]]`, its distance
    from the middle of its range in prior sds (the range is what is known of it: the figures
    move it only as far as they pin it)."""
    from sim.studies.uncertainty.linear import UNIFORM_SD

    sd = np.sqrt(np.square([g.measurement_sd for g in goals]) + np.square(noise_sd))
    prior = [(x - p.prior_mean) / UNIFORM_SD for p, x in zip(parameters, u) if p.kind == "unknown"]
    return np.concatenate([np.asarray(entry["residuals"]) / np.maximum(sd, 1e-9), prior])


def _missed(evaluate: _Evaluator, values: tuple[float, ...]) -> list[str]:
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


def _fit(evaluate: _Evaluator, budget: int) -> tuple[bool, str, tuple[float, ...]]:
    """The local fit from the declared starts.  A fit can stop where a parameter has no effect
    (seed 004's node demand below the database's leaves the one-node throughput set by the
    database: the node's column of the Jacobian is zero), short of the figures: then it says
    which figures it missed and by how many sds, and, when there are no more figures than
    parameters (so each should be met), does not count as converged."""
    converged, message, values = _least_squares(evaluate, budget)
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


def default_cache(folder: Path, spec: dict) -> Path:
    return Path(".tiersim-cache") / f"calibrate-{spec['experiment'].get('name', folder.name)}.jsonl"


def calibrate(
    name: str,
    replications: int | None = None,
    cache: Path | None = None,
    max_evaluations: int | None = None,
    progress=None,
    row_progress=None,
    workers: int = 1,
    analyse: bool = True,
    draws: int = 0,
    draw_replications: int = 2,
) -> Calibration:
    """Fit the experiment's [[calibrate]] parameters to its [[fitted]] figures; simulate every row
    with the fitted values.  `cache=None` keeps no cache; `workers` > 1 runs an evaluation's
    rows in that many processes (each run keeps its own seeds, so the fit is the same).
    `analyse` adds the parameters' intervals and every row's prediction interval (linear, or
    from `draws` sampled parameter points of `draw_replications` replications each)."""
    folder, spec, records = load_experiment(name)
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
    starts = tuple(p.start for p in parameters)
    check_runs(folder, spec, records, lambda record: _extra(parameters, starts, record))
    with contextlib.ExitStack() as stack:
        # the studies' executor: the same numbers serially or in a pool of processes
        from sim.studies.executor import ProcessExecutor, SerialExecutor

        executor = stack.enter_context(
            SerialExecutor() if workers <= 1 else ProcessExecutor(workers)
        )
        map_: Callable[..., Iterator] = executor.map
        evaluate = _Evaluator(folder, spec, parameters, goals, replications, cache, progress, map_)
        converged, message, values = _fit(evaluate, max_evaluations or 30 * (len(parameters) + 1))
        memo = RunMemo(map_)  # the rows and the linearisation's base point are the same runs
        rows = reproduce(
            name,
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
        experiment=spec["experiment"].get("name", folder.name),
        parameters=fitted_parameters,
        targets=fitted_targets,
        rows=rows,
        converged=converged,
        message=message,
        evaluations=evaluate.simulated,
        cached=evaluate.replayed,
        uncertainty=uncertainty,
        linearisation=linearisation,
    )


def render(calibration: Calibration, console) -> None:
    from rich.table import Table

    from sim.model.docs import parameter_unit
    from sim.present.tables import plain
    from sim.studies.reproduce import render as render_rows
    from sim.studies.uncertainty.crossval import render_intervals

    table = Table(header_style="bold", title="fitted parameters")
    for column in ("parameter", "value", "unit", "95% interval", "start", "range", "fitted to"):
        table.add_column(
            column, justify="left" if column in ("parameter", "unit", "fitted to") else "right"
        )
    for p in calibration.parameters:
        value = plain(p["value"], 6) + (" (at a bound)" if p["at_bound"] else "")
        interval = ""
        if "interval" in p:
            low, high = p["interval"]
            interval = f"[{plain(low)}, {plain(high)}]" + ("" if p["pinned"] else " not pinned")
        table.add_row(
            ("unknown " if p["kind"] == "unknown" else "")
            + p["parameter"]
            + (f" when {p['when']}" if p["when"] else ""),
            value,
            parameter_unit(p["parameter"]),
            interval,
            plain(p["start"], 6),
            f"[{plain(p['low'])}, {plain(p['high'])}]",
            "; ".join(p["fitted_to"]) or "none (carried as its range)",
        )
    console.print(table)
    state = "converged" if calibration.converged else "NOT converged"
    console.print(
        f"{state}: {calibration.message} ({calibration.evaluations} evaluations simulated, "
        f"{calibration.cached} from the cache)"
    )
    if any(p["at_bound"] for p in calibration.parameters):
        console.print(
            "a parameter ended at a bound: widen its [[calibrate]] bounds, or the figures cannot be met "
            "by this parameter alone"
        )
    found = calibration.uncertainty
    if found is not None:
        for sentence in found["not_identified"]:
            console.print(f"not identified: {sentence}")
        model = found["model_error"]
        if model["estimated"]:
            text = (
                f"model error beyond noise: {model['sd']:.1%} (relative sd, from the fitted "
                f"figures' residuals, {model['degrees_of_freedom']:.1f} degrees of freedom)"
            )
        elif model.get("declared"):
            text = (
                f"model error beyond noise: {model['sd']:.1%} as declared by the experiment "
                "([experiment] model_error; the fit leaves no degrees of freedom to estimate it)"
            )
        else:
            text = (
                "model error beyond noise: unknown (no degrees of freedom left by the fit; "
                "the intervals below hold parameters, noise and measurement error only)"
            )
        console.print(text)
        render_intervals(calibration.rows, console, f"predictions ({found['method']})")
    else:
        render_rows(calibration.rows, console)
    sets = " ".join(
        f"--set {p['parameter']}={plain(p['value'], 6)}"
        for p in calibration.parameters
        if not p["when"]
    )
    if sets:
        console.print(f"to run a model with these values: tiersim run MODEL {sets}")
