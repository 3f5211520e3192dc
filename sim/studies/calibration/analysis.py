"""After a fit: each parameter's interval, the combinations the fitted figures do not pin, and
every row's prediction interval with its parts (parameters, simulation noise, model error,
measurement error) and the parameter that contributes most to it.

Method (docs/design.md, "Parameter uncertainty"): the figures are linearised at the fit by
finite differences under common random numbers (`study.linearise`); the fitted figures give
the Gauss–Newton covariance of the parameters (`linear.posterior`).  Predictions are then
either linear (J C J', free) or sampled: `draws` parameter points from that covariance
(scrambled Sobol), each simulated with its own seeds, whose spread holds the parameters'
uncertainty and the simulation noise together, through any non-linearity of the model.
"""

from __future__ import annotations

import math

import numpy as np

from sim.studies.calibration.conditioned import KEPT
from sim.studies.calibration.figures import Figure, declared_model_error, published_figures
from sim.studies.calibration.linear import (
    Posterior,
    Problem,
    describe,
    estimated_sd,
    first_order_shares,
    interval_factor,
    model_error_dof,
    model_error_quantile,
    posterior,
    predict,
    unidentified,
)
from sim.studies.calibration.linearise import (
    Linearisation,
    draw_summary,
    draw_units,
    linearise,
    parameter_intervals,
    sample,
    simulate_points,
)
from sim.studies.calibration.screen import Screened, screened_draws
from sim.studies.experiment import figures_of
from sim.studies.rows import Row
from sim.studies.spec import ExperimentSpec

LEVEL = 0.90  # prediction intervals: 90 %, as the cross-validation scores them


def parameter_name(parameter) -> str:
    if not parameter.when:
        return parameter.path
    when = ", ".join(
        f"{k}={'|'.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in parameter.when.items()
    )
    return f"{parameter.path} [{when}]"


def interval_parts(
    problem: Problem, post: Posterior, figure: Figure, index: int, noise_sd: float
) -> dict:
    """Relative sds of the prediction of figure `index` under `post`, and its linear 90 %
    interval in published units."""
    relative, variance = predict(problem, post, index)
    parts = {
        "sd_parameters": math.sqrt(max(variance, 0.0)),
        "sd_noise": float(noise_sd),
        "sd_model": post.discrepancy,
        "sd_measurement": figure.measurement_sd,
    }
    total = math.sqrt(sum(v**2 for v in parts.values()))
    estimated = estimated_sd(variance, post.discrepancy, math.sqrt(post.noise_var))
    z = interval_factor(total, estimated, model_error_dof(post), LEVEL)
    centre = figure.published * (1 + relative)
    low, high = relative_interval(centre, z * total)
    return {"predicted": centre, "pi_low": low, "pi_high": high, **parts}


def relative_interval(centre: float, spread: float) -> tuple[float, float]:
    """The interval around a prediction whose relative sd, times z, is `spread`: log-normal for
    a positive figure (a throughput, a time or a count cannot go below zero, and a relative
    error is symmetric in the logarithm), symmetric otherwise.  Its width scales with the
    prediction, never with the published figure it is scored against (which a left-out fold
    must not see)."""
    if centre > 0:
        return centre * math.exp(-spread), centre * math.exp(spread)
    half = spread * abs(centre)
    return centre - half, centre + half


def analyse_fit(
    folder,
    spec: ExperimentSpec,
    records: list[dict[str, str]],
    parameters: list,
    values: tuple[float, ...],
    rows: list[Row],
    replications: int | None,
    map_=map,
    draws: int = 0,
    draw_replications: int = 2,
    progress=None,
) -> tuple[dict, Linearisation, list[Figure]]:
    """The fit's uncertainty (a JSON-ready report; the linearisation and the figures it is
    made of, for cross-validation); fills each row's prediction-interval fields in place."""
    source = folder / "experiment.toml"
    figures = published_figures(spec, records, source)
    lin = linearise(folder, spec, parameters, figures, values, replications, map_, progress)
    problem = lin.problem
    fitted = [i for i, f in enumerate(figures) if f.fitted]
    found = posterior(problem, fitted, declared_discrepancy=declared_model_error(spec))
    # reported at the fit itself (the simulated point), with the step's covariance
    post = Posterior(
        problem.u0,
        found.cov,
        found.discrepancy,
        found.dof,
        found.discrepancy_known,
        found.discrepancy_declared,
    )
    names = [parameter_name(p) for p in parameters]
    intervals = parameter_intervals(parameters, post)
    seed = spec.experiment.seed
    conditioned = _conditioned(
        folder, spec, parameters, figures, problem, fitted, post, draws, seed, replications, map_
    )
    sampled = None
    if draws:
        sampled = draw_summary(
            sample(
                folder,
                spec,
                parameters,
                figures,
                post,
                draws,
                draw_replications,
                seed,
                map_,
                progress,
                units=None if conditioned is None else conditioned.units,
            ),
            figures,
            LEVEL,
        )
    by_position = {(id(f.record), f.column): i for i, f in enumerate(figures)}
    pairs = [(id(r), w.column) for r in records for w in figures_of(spec, r)]
    for row, pair in zip(rows, pairs):
        i = by_position.get(pair)
        if i is None:
            continue
        figure = figures[i]
        parts = interval_parts(problem, post, figure, i, float(lin.base.noise_sd[i]))
        shares = first_order_shares(problem, post, i)
        if sampled is not None:
            parts = _sampled_parts(parts, sampled[i], figure, row.simulated, post)
            shares = np.asarray(sampled[i]["first_order"])
        _fill(row, figure, parts, shares, names)
    report = {
        "level": LEVEL,
        "method": (
            f"sampled: {draws} draws x {draw_replications} replications"
            + ("" if conditioned is None else f"; {conditioned.sentence()}")
            if draws
            else "linear: Gauss-Newton covariance at the fit"
        ),
        "parameters": [
            {
                "parameter": p.path,
                "when": p.when,
                "kind": p.kind,
                "provenance": p.provenance,
                **interval,
            }
            for p, interval in zip(parameters, intervals)
        ],
        "not_identified": [describe(d, names) for d in unidentified(problem, fitted)],
        "model_error": {
            "sd": post.discrepancy,
            "estimated": post.discrepancy_known,
            "declared": post.discrepancy_declared,
            "degrees_of_freedom": post.dof,
            # the fitted figures' mean known noise (relative sd), estimated with the model error
            "noise_sd": math.sqrt(post.noise_var),
        },
        # The Gaussian the intervals come from, on each parameter's unit scale (1-2 over its
        # range, log or linear as `scale` says): what `tiersim run/capacity --calibration`
        # draws from to carry the fit's uncertainty into new predictions.
        "posterior": {
            "scale": "unit",
            "seed": spec.experiment.seed,
            "mean": [float(x) for x in post.mean],
            "cov": [[float(x) for x in row] for row in post.cov],
            # the Gaussian's first draws, each conditioned on its unknowns
            # (`conditioned`), those the fitted figures rule out screened (`screen`): the
            # points `--calibration` runs, as this fit's own draws did
            **({} if conditioned is None else {"conditioned": conditioned.as_dict()}),
        },
    }
    return report, lin, figures


def _conditioned(
    folder,
    spec: ExperimentSpec,
    parameters: list,
    figures: list[Figure],
    problem: Problem,
    fitted: list[int],
    post: Posterior,
    draws: int,
    seed: int,
    replications: int | None,
    map_,
) -> Screened | None:
    """The Gaussian's first max(draws, KEPT) points conditioned on their unknowns and screened
    by their misfit (a screened one replaced by the next of the sequence), when the fit
    has both [[unknown]] and [[calibrate]] parameters (a combination of the two is what the
    fitted figures pin; without unknowns the draws are the Gaussian's own).  The fitted rows
    run with the fit's seeds at each point."""
    kinds = [p.kind == "calibrate" for p in parameters]
    if all(kinds) or not any(kinds) or not fitted:
        return None
    rows = [figures[i] for i in fitted]
    published = np.array([f.published for f in rows])

    def simulate(points: np.ndarray) -> np.ndarray:
        at = [(tuple(p.from_unit(float(x)) for p, x in zip(parameters, u)), ()) for u in points]
        found = simulate_points(folder, spec, parameters, rows, at, replications, map_)
        return np.array([(f.mean - published) / published for f in found])

    def draw(count: int) -> np.ndarray:
        return draw_units(post.mean, post.cov, count, seed)

    return screened_draws(
        problem, fitted, kinds, draw, max(draws, KEPT), simulate, post.discrepancy
    )


def _sampled_parts(
    parts: dict, summary: dict, figure: Figure, centre: float, post: Posterior
) -> dict:
    """The draws' 90 % interval (parameters and noise, through the model's non-linearity),
    widened by the model and measurement errors, which no simulation holds.  Where the model
    error was estimated, the whole interval takes the Student-t quantile `interval_factor`
    gives the linear one (the draws are Gaussian, so their spread is scaled by its ratio to
    the normal quantile)."""
    scale = abs(figure.published)
    sd_parameters = summary["sd_parameters"] / scale
    total = math.sqrt(
        sd_parameters**2
        + (summary["sd_noise"] / scale) ** 2
        + parts["sd_model"] ** 2
        + parts["sd_measurement"] ** 2
    )
    estimated = estimated_sd(sd_parameters**2, post.discrepancy, math.sqrt(post.noise_var))
    z = interval_factor(total, estimated, model_error_dof(post), LEVEL)
    ratio = z / model_error_quantile(0.5 + LEVEL / 2, None)
    outside = z * math.hypot(parts["sd_model"], parts["sd_measurement"]) * abs(centre)
    below = max(centre - summary["low"], 0.0) * ratio
    above = max(summary["high"] - centre, 0.0) * ratio
    return {
        **parts,
        "pi_low": centre - math.hypot(below, outside),
        "pi_high": centre + math.hypot(above, outside),
        "sd_parameters": sd_parameters,
        "sd_noise": summary["sd_noise"] / scale,
    }


def _fill(row: Row, figure: Figure, parts: dict, shares: np.ndarray, names: list[str]) -> None:
    row.pi_low, row.pi_high = parts["pi_low"], parts["pi_high"]
    row.covered = row.pi_low <= figure.published <= row.pi_high
    row.sd_parameters = parts["sd_parameters"]
    row.sd_noise = parts["sd_noise"]
    row.sd_model = parts["sd_model"]
    row.sd_measurement = parts["sd_measurement"]
    row.excluded = figure.excluded
    if len(shares) and float(np.max(shares)) > 0:
        best = int(np.argmax(shares))
        row.most_sensitive = f"{names[best]} ({float(shares[best]):.0%})"
