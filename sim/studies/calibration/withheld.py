"""Prediction intervals for the withheld figures of an experiment on an imported measurement
table: the load levels no run measured (`tiersim plan --predict`).

With draws (the default on a table: `DRAWS`), a withheld row is predicted exactly as `tiersim
run MODEL --calibration FILE --draws N` predicts it (`sim.studies.predict`): the same runs, the
same parameter points, the same seeds, so `calibrate` and `run --calibration` print the same
interval for the same figure.  Without draws, it is linearised at the fit."""

from __future__ import annotations

import math

import numpy as np

from sim.studies.calibration.analysis import relative_interval
from sim.studies.calibration.linear import estimated_sd, interval_factor
from sim.studies.calibration.linearise import STEP, UNKNOWN_STEP
from sim.studies.calibration.parameters import free_parameters
from sim.studies.calibration.saved import saved_model_error_dof
from sim.studies.calibration.sobol import normal_quantile
from sim.studies.experiment import figures_of
from sim.studies.records import Experiment, model_column, row_run, run_row

# Parameter draws a calibration on an imported table (the planner's path) makes by default:
# its intervals then come through the simulation, as `run --calibration` makes them (its
# default is the same), and hold where a linearisation does not, at the knee and past it.
DRAWS = 16


def default_draws(spec) -> int:
    """`--draws` when not given: sampled on an imported table, linear on a published seed (whose
    cross-validation refits every fold)."""
    return DRAWS if spec.on_table else 0


def withheld_intervals(
    fit,
    experiment: Experiment,
    replications: int | None,
    draws: int = 0,
    draw_replications: int = 2,
    map_=map,
) -> None:
    """A 90 % prediction interval for each withheld figure of a table experiment (a load level
    no run measured: `tiersim plan --predict`), which the fit's own analysis leaves empty
    because its intervals are relative to a measured figure.  The row is linearised at the fit
    as the published figures are (`sim.studies.calibration.linearise`): one run per parameter that
    applies to it, a step of STEP on its unit scale (UNKNOWN_STEP for an unknown), common random
    numbers; the gradient g gives the parameters' variance g' C g under the fit's covariance C
    (their correlations included), added to the simulation's noise and the fit's model error;
    the interval is log-normal, as the others (`sim.studies.calibration.analysis`).  `map_`
    runs the rows' runs (builtin map, an executor's: the same numbers).  `experiment` is the
    one `fit` was fitted on (a [[choose]] candidate's: its settings go with the fit)."""
    uncertainty = getattr(fit, "uncertainty", None)
    todo = [r for r in fit.rows if r.published is None and r.pi_low is None]
    if uncertainty is None or not todo:
        return
    folder, spec, records = experiment.folder, experiment.spec, experiment.records
    chosen = experiment.candidate
    if not spec.on_table:
        return
    if draws:
        _sampled(
            fit, folder, spec, records, todo, replications, draws, draw_replications, chosen, map_
        )
        return
    parameters = free_parameters(spec, folder / "experiment.toml")
    values = [p["value"] for p in fit.parameters]  # in the order of `parameters`
    mean = np.asarray(uncertainty["posterior"]["mean"], dtype=float)
    cov = np.asarray(uncertainty["posterior"]["cov"], dtype=float)
    model = uncertainty["model_error"]
    model_sd = model["sd"] if model["estimated"] or model.get("declared") else 0.0
    dof = saved_model_error_dof(model)
    noise_sd = float(model.get("noise_sd", 0.0))  # absent in fits saved before it was kept
    z95 = normal_quantile(0.975)
    # every row's runs first, then all of them at once on `map_` (the same numbers in any order)
    todo_rows, steps, tasks = [], [], []
    for record, wanted, rows in withheld_rows(spec, records, todo, "column"):
        head = row_label(spec, record)
        todo_rows.append((wanted, rows))
        for j, parameter in enumerate(parameters):
            if not parameter.applies(record):
                continue  # it does not act on this row: no gradient
            step = UNKNOWN_STEP if parameter.kind == "unknown" else STEP
            moved = mean[j] + step if mean[j] + step <= 2.0 else mean[j] - step
            settings = [
                f"{p.path}={(p.from_unit(moved) if i == j else v)!r}"
                for i, (p, v) in enumerate(zip(parameters, values))
                if p.applies(record)
            ]
            model_file, overrides = row_run(folder, spec, record, settings)
            steps.append((len(todo_rows) - 1, j, moved))
            tasks.append((str(model_file), overrides, replications, head))
    gradients = [{c: np.zeros(len(parameters)) for c in rows} for _, rows in todo_rows]
    for (k, j, moved), found in zip(steps, map_(run_row, tasks)):
        wanted, rows = todo_rows[k]
        for w in wanted:
            if w.column in rows:
                base = rows[w.column].simulated
                gradients[k][w.column][j] = (found[w.metric][0] - base) / (moved - mean[j])
    for (_, rows), gradient in zip(todo_rows, gradients):
        for col, row in rows.items():
            noise = (row.ci_high - row.ci_low) / 2 / z95
            g = gradient[col]
            parameter_var = float(g @ cov @ g)
            sd = math.sqrt(parameter_var + noise**2 + (model_sd * row.simulated) ** 2)
            scale = abs(row.simulated) if row.simulated else 1.0
            estimated = estimated_sd(parameter_var / scale**2, model_sd, noise_sd)
            factor = interval_factor(sd / scale, estimated, dof, 0.90)
            row.pi_low, row.pi_high = relative_interval(row.simulated, factor * sd / scale)


def _sampled(
    fit, folder, spec, records, todo, replications, draws, draw_replications, chosen, map_
):
    """Each withheld row run as `tiersim run MODEL --calibration FILE --draws N` runs it: the
    model at the fit's settings and values, the row's own overrides (its load) after them."""
    from dataclasses import replace

    from sim.studies.calibration.saved import from_document
    from sim.studies.predict import predict

    calibrated = replace(from_document(fit.as_dict(), fit.experiment), chosen=tuple(chosen))
    shared = {*calibrated.settings, *calibrated.chosen}
    for record, _, rows in withheld_rows(spec, records, todo, "metric"):
        model_file, overrides = row_run(folder, spec, record)
        own = [o for o in overrides if o not in shared]
        found = predict(
            model_file,
            calibrated,
            own,
            replications,
            None,
            draws,
            draw_replications,
            map_=map_,
        )
        if found.propagation is None:
            continue
        for metric, row in rows.items():
            p = found.propagation.predictions.get(metric)
            if p is None:
                continue
            scale = abs(row.simulated) if row.simulated else 1.0
            row.pi_low, row.pi_high = p.pi_low, p.pi_high
            row.sd_parameters = p.sd_parameters / scale
            row.sd_noise = p.sd_noise / scale
            row.sd_model = p.sd_model / scale
            row.most_sensitive = p.most_sensitive


def withheld_rows(spec, records, todo, key: str):
    """(record, its figures, {figure's `key` ("column" or "metric"): row}) for each record with
    a withheld row still to be given an interval."""
    for record in records:
        head = row_label(spec, record)
        wanted = figures_of(spec, record)
        rows = {
            getattr(w, key): r
            for w in wanted
            for r in todo
            if r.figure in (head, f"{head} {w.column}")
        }
        if rows:
            yield record, wanted, rows


def row_label(spec, record) -> str:
    """A row's name as its figures carry it: the model column's value and the label columns'."""
    labels = spec.experiment.label_columns or []
    return " ".join([record[model_column(spec)]] + [f"{c}={record[c]}" for c in labels])
