"""Simulating an experiment's figures at parameter values: the linearisation at a fit (finite
differences under common random numbers) and the sampled propagation of the parameters'
uncertainty to every figure.

Costs, in runs of every distinct row: the linearisation p + 1 (the base point is the fit's own
final run, shared through `RunMemo`); sampling `draws` (each with its own seed and few
replications, so the spread holds the simulation noise as well as the parameters').
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim.studies.calibration.figures import Figure, noise_sd
from sim.studies.calibration.linear import UNIFORM_SD, Posterior, Problem
from sim.studies.calibration.sobol import normal_quantile
from sim.studies.calibration.truncated import truncated_gaussian
from sim.studies.experiment import ExperimentError
from sim.studies.records import load_row_model, row_run, run_row
from sim.studies.spec import ExperimentSpec

# Finite-difference step on the unit scale: 5 % of a [[calibrate]] range, wide enough that a
# difference under common random numbers is not one sample path's accident, narrow enough to
# stay local.  An unknown's range is its uncertainty, not a search range: its effect is wanted
# over that range, and a step of a quarter of it keeps a parameter that only reshuffles the
# sample paths from showing a derivative of noise / step.
STEP = 0.05
UNKNOWN_STEP = 0.25
SEED_OFFSET = 100_003  # draw m runs with seed (model seed + SEED_OFFSET * (m + 1))


class RunMemo:
    """A `map` for `run_row` that simulates each distinct run once per process: the fit's last
    evaluation, its rows and the linearisation's base point are the same runs."""

    def __init__(self, map_=map) -> None:
        self.map = map_
        self.done: dict = {}

    def __call__(self, function, tasks) -> Iterator:
        """The results in the tasks' order, each as soon as it and those before it are in (a
        caller shows progress as the runs come)."""
        tasks = list(tasks)
        keys = [(str(t[0]), tuple(t[1]), t[2]) for t in tasks]
        todo: dict = {}
        for key, task in zip(keys, tasks):
            if key not in self.done and key not in todo:
                todo[key] = task
        fresh = zip(todo, self.map(function, list(todo.values())))
        for key in keys:
            while key not in self.done:
                done, result = next(fresh)
                self.done[done] = result
            yield self.done[key]


@dataclass
class Simulated:
    """Figures at one parameter point, in the published units."""

    mean: np.ndarray
    low: np.ndarray  # 95 % simulation interval
    high: np.ndarray
    noise_sd: np.ndarray  # sd of the mean from the replications, relative to the published value


def simulate_figures(
    folder: Path,
    spec: ExperimentSpec,
    parameters: list,
    figures: list[Figure],
    values: tuple[float, ...],
    replications: int | None,
    map_=map,
    extra: tuple[str, ...] = (),
) -> Simulated:
    """Every figure's row simulated at `values` (each distinct run once)."""
    (found,) = simulate_points(
        folder, spec, parameters, figures, [(values, extra)], replications, map_
    )
    return found


def simulate_points(
    folder: Path,
    spec: ExperimentSpec,
    parameters: list,
    figures: list[Figure],
    points: Sequence[tuple[tuple[float, ...], tuple[str, ...]]],
    replications: int | None,
    map_=map,
    progress=None,
) -> list[Simulated]:
    """`simulate_figures` at each point (its values, and overrides of its own such as a seed),
    the runs of every point handed to `map_` at once: on a pool, the workers go from one
    point's runs to the next without waiting for a point's slowest row (the rows of a level
    test differ in length by the load), and the results are the same in any order.
    `progress(k, points)` as each point's runs are in."""
    row_replications = RowReplications()  # each row's model read once for all the points
    planned = [
        _figure_runs(
            folder, spec, parameters, figures, values, replications, extra, row_replications
        )
        for values, extra in points
    ]
    results = iter(map_(run_row, [task for _, tasks, _ in planned for task in tasks.values()]))
    out = []
    for k, (keys, tasks, counts) in enumerate(planned):
        summaries = {key: next(results) for key in tasks}
        out.append(_simulated(figures, keys, summaries, counts))
        if progress is not None:
            progress(k + 1, len(planned))
    return out


class RowReplications:
    """How many replications a row's run makes (`run.replications` of its model as loaded),
    read once per row's model file and own overrides: the parameters' values and a point's
    seed, which differ from one point to the next, do not set it (unless one of them is
    `run.replications` itself, or the whole `run` table), so a linearisation or a set of
    draws loads and validates each row's model once, not once per point and row (a model's
    load is a few milliseconds of pydantic; the simulation of each point loads it again)."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, tuple[str, ...]], int] = {}

    def __call__(
        self, model_file: Path, row: tuple[str, ...], moved: Sequence[str], overrides: tuple
    ) -> int:
        """`run.replications` of `model_file` with `overrides` (= the row's own, `row`, then
        the point's, `moved`)."""
        sets_it = any(_sets_replications(override) for override in moved)
        key = (str(model_file), overrides if sets_it else row)
        if key not in self.known:
            self.known[key] = load_row_model(model_file, overrides).run.replications
        return self.known[key]


def _sets_replications(override: str) -> bool:
    path = override.split("=", 1)[0].strip()
    return path in ("run", "run.replications")


def _figure_runs(
    folder: Path,
    spec: ExperimentSpec,
    parameters: list,
    figures: list[Figure],
    values: tuple[float, ...],
    replications: int | None,
    extra: tuple[str, ...],
    row_replications: RowReplications | None = None,
) -> tuple[list, dict, dict]:
    """Each figure's run (key) at `values`, each distinct run's task, and its replications
    (`row_replications` remembers them across the points of one study)."""
    row_replications = row_replications or RowReplications()
    keys, tasks, counts = [], {}, {}
    for figure in figures:
        applied = [
            f"{p.path}={v!r}" for p, v in zip(parameters, values) if p.applies(figure.record)
        ]
        moved = [*applied, *extra]
        model_file, overrides = row_run(folder, spec, figure.record, moved)
        key = (str(model_file), overrides)
        keys.append(key)
        if key not in tasks:
            row = overrides[: len(overrides) - len(moved)]
            # loaded (and so checked) once per row before any simulation, even when the
            # replications are given
            count = row_replications(model_file, row, moved, overrides)
            counts[key] = replications or count
            tasks[key] = (*key, replications, f"{figure.label}: at {values}")
    return keys, tasks, counts


def _simulated(figures: list[Figure], keys: list, summaries: dict, counts: dict) -> Simulated:
    mean, low, high, noise = [], [], [], []
    for figure, key in zip(figures, keys):
        summary = summaries[key]
        if figure.metric not in summary:
            raise ExperimentError(
                f"{figure.label}: metric {figure.metric!r} is not produced by {Path(key[0]).name}"
            )
        m, lo, hi = figure.published_units(*summary[figure.metric][:3])
        sd = noise_sd(lo, hi, counts[key])
        mean.append(m)
        low.append(lo)
        high.append(hi)
        noise.append(sd / abs(figure.published))
    return Simulated(np.array(mean), np.array(low), np.array(high), np.array(noise))


@dataclass
class Linearisation:
    problem: Problem
    base: Simulated
    values: tuple[float, ...]


def linearise(
    folder: Path,
    spec: ExperimentSpec,
    parameters: list,
    figures: list[Figure],
    values: tuple[float, ...],
    replications: int | None,
    map_=map,
    progress=None,
) -> Linearisation:
    """Every figure and its derivatives in the parameters' unit scales at `values`: forward
    differences of STEP (backward at an upper bound), the same seeds at every point."""
    published = np.array([f.published for f in figures])
    u0 = np.array([p.to_unit(v) for p, v in zip(parameters, values)])
    jacobian = np.zeros((len(figures), len(parameters)))
    points: list[tuple[tuple[float, ...], tuple[str, ...]]] = [(values, ())]
    steps = []
    for j, parameter in enumerate(parameters):
        size = max(UNKNOWN_STEP if parameter.kind == "unknown" else STEP, parameter.min_unit_step())
        step = size if u0[j] + size <= 2.0 else -size
        moved = list(values)
        moved[j] = parameter.from_unit(u0[j] + step)
        # a whole parameter moved to the nearest whole number: divide by the step it took
        steps.append(parameter.to_unit(moved[j]) - u0[j])
        points.append((tuple(moved), ()))

    def moved_done(k: int, _: int) -> None:  # the base point is not a parameter's step
        if progress is not None and k > 1:
            progress(k - 1, len(parameters))

    base, *moved_points = simulate_points(
        folder, spec, parameters, figures, points, replications, map_, moved_done
    )
    for j, (at, step) in enumerate(zip(moved_points, steps)):
        jacobian[:, j] = (at.mean - base.mean) / published / step
    measurement = np.array([f.measurement_sd for f in figures])
    problem = Problem(
        u0=u0,
        residuals=(base.mean - published) / published,
        jacobian=jacobian,
        sigma=np.sqrt(measurement**2 + base.noise_sd**2),
        prior_mean=np.array([p.prior_mean for p in parameters]),
        prior_sd=np.full(len(parameters), UNIFORM_SD),
    )
    return Linearisation(problem, base, tuple(values))


def parameter_intervals(parameters: list, post: Posterior, level: float = 0.95) -> list[dict]:
    """Each parameter's interval (on its own scale, kept in its range) and whether the figures
    pin it."""
    from sim.studies.calibration.linear import PINNED_RATIO

    z = float(normal_quantile(0.5 + level / 2))
    out = []
    for j, p in enumerate(parameters):
        sd = float(post.sd[j])
        out.append(
            {
                "estimate": p.from_unit(float(post.mean[j])),
                "interval": [
                    p.from_unit(float(post.mean[j]) - z * sd),
                    p.from_unit(float(post.mean[j]) + z * sd),
                ],
                "level": level,
                "pinned": sd < PINNED_RATIO * UNIFORM_SD,
                "sd_share_of_range": sd / UNIFORM_SD,
            }
        )
    return out


@dataclass
class Draws:
    """Figures simulated at parameter draws from the posterior."""

    units: np.ndarray  # (draws, p) unit scale
    values: np.ndarray  # (draws, figures) published units
    noise_sd: np.ndarray  # (draws, figures) relative sd of each draw's mean


def sample(
    folder: Path,
    spec: ExperimentSpec,
    parameters: list,
    figures: list[Figure],
    post: Posterior,
    draws: int,
    replications: int,
    seed: int,
    map_=map,
    progress=None,
    units: np.ndarray | None = None,
) -> Draws:
    """`draws` points from the Gaussian posterior truncated to the ranges (`draw_units`), each
    run with its own seed; or the first `draws` of `units`, points already drawn
    (`conditioned.condition`'s)."""
    units = draw_units(post.mean, post.cov, draws, seed) if units is None else units[:draws]
    base_seed = _model_seed(folder, spec, figures)
    points = [
        (
            tuple(p.from_unit(float(x)) for p, x in zip(parameters, u)),
            (f"run.seed={base_seed + SEED_OFFSET * (m + 1)}",),
        )
        for m, u in enumerate(units)
    ]
    found = simulate_points(folder, spec, parameters, figures, points, replications, map_, progress)
    values = [at.mean for at in found]
    noise = [at.noise_sd for at in found]
    return Draws(units, np.array(values), np.array(noise))


def draw_units(mean: np.ndarray, cov: np.ndarray, draws: int, seed: int) -> np.ndarray:
    """`draws` points (draws, p) on the unit scale from the Gaussian (mean, cov) truncated to
    the parameters' ranges [1, 2] (`truncated`: its scrambled-Sobol' points inside them, in
    sequence order; never a point cut to a range's end)."""
    return truncated_gaussian(mean, cov, draws, seed)


def _model_seed(folder: Path, spec: ExperimentSpec, figures: list[Figure]) -> int:
    model_file, overrides = row_run(folder, spec, figures[0].record)
    return int(load_row_model(model_file, overrides).run.seed)


def draw_summary(draws: Draws, figures: list[Figure], level: float = 0.90) -> list[dict]:
    """Per figure: the draws' interval (parameters and noise together), the parameters' share
    of the variance, and the first-order variance index of each parameter (the squared
    correlation of the figure with it across the draws: Var E[y | u_j] / Var y for a linear
    response), from the same draws."""
    tail = (1 - level) / 2
    out = []
    for i, figure in enumerate(figures):
        y = draws.values[:, i]
        total = float(np.var(y, ddof=1)) if len(y) > 1 else 0.0
        noise = float(np.mean((draws.noise_sd[:, i] * figure.published) ** 2))
        indices = []
        for j in range(draws.units.shape[1]):
            x = draws.units[:, j]
            ok = np.std(x) > 0 and np.std(y) > 0
            indices.append(float(np.corrcoef(x, y)[0, 1] ** 2) if ok else 0.0)
        out.append(
            {
                "low": float(np.quantile(y, tail)),
                "high": float(np.quantile(y, 1 - tail)),
                "sd_total": math.sqrt(total),
                "sd_noise": math.sqrt(min(noise, total)),
                "sd_parameters": math.sqrt(max(total - noise, 0.0)),
                "first_order": indices,
            }
        )
    return out
