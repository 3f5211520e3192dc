"""The rows of an experiment simulated: each published figure beside its simulated mean and
interval, its relative error, and whether it was fitted (its error then measures the fit, not a
prediction).  `tiersim reproduce` prints them; calibration simulates them at its fitted values."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

from sim.present.failures import FAILED_SHARE, is_latency, percent
from sim.studies.experiment import ExperimentError, figures_of, is_fitted
from sim.studies.records import (
    Experiment,
    check_runs,
    experiment_of,
    law_notes,
    model_column,
    published_value,
    row_run,
    run_row,
)
from sim.studies.spec import FigureSpec


@dataclass
class Row:
    experiment: str
    figure: (
        str  # the row's identity, e.g. "jetty-7.4.3 mod_proxy_ajp max_clients=150 keep_alive=no"
    )
    published: float | None  # None for a withheld figure
    simulated: float
    ci_low: float
    ci_high: float
    rel_error: float | None
    fitted: bool
    published_flag: str | None = None
    simulated_flag: str | None = None
    overrides: tuple[str, ...] = ()
    note: str | None = None  # e.g. the row's response-time-law check
    # With parameter uncertainty (tiersim calibrate, reproduce --cross-validate): the 90 %
    # prediction interval of the published figure, its parts as relative sds, whether it holds
    # the published figure, and the parameter that contributes most to it.
    pi_low: float | None = None
    pi_high: float | None = None
    covered: bool | None = None
    sd_parameters: float | None = None
    sd_noise: float | None = None
    sd_model: float | None = None
    sd_measurement: float | None = None
    most_sensitive: str | None = None
    excluded: str | None = None  # why an operational law keeps the figure out of any fit
    metric: str = ""  # the simulated metric compared
    unit: str = ""  # the figure's unit (the published column's: the metric's, scaled)
    # a latency's row: the share of the simulated requests that failed (the latency is of the
    # answered ones only; sim.present.failures); None for other figures, or not recorded
    failed_share: float | None = None

    def as_dict(self) -> dict:
        data = asdict(self)
        data["overrides"] = list(self.overrides)
        return data


def simulate_rows(
    name: str | Experiment, replications: int | None = None, progress=None, extra=None, map_=map
) -> list[Row]:
    """Every mapped row of the experiment's table, simulated.  `extra(record)` may give more
    overrides for a row (e.g. `tiersim calibrate`'s fitted values), applied after its factors'.
    `map_` runs the distinct runs (builtin map, or a process pool's: the same numbers).
    `name` is the experiment's name, or the experiment already read."""
    experiment = experiment_of(name)
    folder, spec, todo, source = (
        experiment.folder,
        experiment.spec,
        experiment.records,
        experiment.source,
    )
    meta, name_column = spec.experiment, model_column(spec)
    name = experiment.name if meta.name is None else meta.name
    notes = law_notes(spec, todo, source)
    # Rows that map onto the same run (seed 002's batches are phases of one run) share it.
    check_runs(folder, spec, todo, extra)  # a bad row fails here, before anything runs
    keys, tasks = [], {}
    for record in todo:
        model_file, overrides = row_run(folder, spec, record, extra(record) if extra else ())
        key = (str(model_file), overrides)
        keys.append(key)
        if key not in tasks:
            tasks[key] = (*key, replications, f"{source}: {record[name_column]}")
    results = {}
    for done, (key, summary) in enumerate(zip(tasks, map_(run_row, tasks.values()))):
        results[key] = summary
        if progress is not None:
            progress(done + 1, len(tasks))
    rows: list[Row] = []
    for record, key in zip(todo, keys):
        summary = results[key]
        flag = None
        if meta.flag_column:
            hit = any(summary[m][0] > 0 for m in meta.flag_metrics if m in summary)
            flag = "yes" if hit else "no"
        # the name's columns
        label_columns = list(spec.factors) if meta.label_columns is None else meta.label_columns
        figure = " ".join([record[name_column]] + [f"{c}={record[c]}" for c in label_columns])
        figures = figures_of(spec, record)
        for wanted in figures:
            column, metric = wanted.column, wanted.metric
            if metric not in summary:
                raise ExperimentError(
                    f"{source}: metric {metric!r} (for column {column!r}) is not produced by "
                    f"{Path(key[0]).name}; one of: {', '.join(sorted(summary))}"
                )
            # published = offset + scale x metric: e.g. scale 1000 for ms, or scale -100 and
            # offset 100 for a %idle compared to a utilisation
            scale, offset = wanted.scale, wanted.offset
            mean, low, high = (offset + v * scale for v in summary[metric][:3])
            low, high = min(low, high), max(low, high)
            published = published_value(record, column)
            rows.append(
                Row(
                    experiment=name,
                    figure=figure if len(figures) == 1 else f"{figure} {column}",
                    published=published,
                    simulated=mean,
                    ci_low=low,
                    ci_high=high,
                    rel_error=None if published is None else (mean - published) / published,
                    fitted=is_fitted(spec, record, column),
                    published_flag=record.get(meta.flag_column, None) if meta.flag_column else None,
                    simulated_flag=flag,
                    overrides=tuple(key[1]),
                    note=notes.get(id(record)),
                    metric=metric,
                    unit=figure_unit(wanted, summary[metric][3]),
                    failed_share=summary[FAILED_SHARE][0]
                    if FAILED_SHARE in summary and is_latency(metric, summary[metric][3])
                    else None,
                )
            )
    return rows


# A [[figures]] `scale` turns the metric's unit into the published column's.
_SCALED_UNITS = {
    ("s", 1000.0): "ms",
    ("s", 1e6): "µs",
    ("s", 1 / 60): "min",
    ("1/s", 60.0): "1/min",
}


def figure_unit(figure: FigureSpec, metric_unit: str) -> str:
    """The unit of a figure: its [[figures]] `unit`, else the metric's, scaled by `scale`."""
    if figure.unit:
        return figure.unit
    scale = figure.scale
    if scale == 1.0:
        return metric_unit
    return _SCALED_UNITS.get((metric_unit, scale), f"{metric_unit} x {scale:g}".strip())


def render_rows(rows: list[Row], console) -> None:
    from rich.table import Table

    from sim.present.tables import plain

    table = Table(header_style="bold")
    for column in (
        "figure",
        "published",
        "simulated",
        "95% interval",
        "unit",
        "failed",
        "rel. error",
        "flag pub/sim",
        "fitted",
    ):
        table.add_column(column, justify="left" if column in ("figure", "unit") else "right")
    for r in rows:
        table.add_row(
            r.figure,
            "withheld" if r.published is None else plain(r.published, 5),
            plain(r.simulated),
            "" if math.isnan(r.ci_low) else f"[{plain(r.ci_low)}, {plain(r.ci_high)}]",
            r.unit,
            "" if r.failed_share is None else percent(r.failed_share),
            "" if r.rel_error is None else f"{r.rel_error:+.0%}",
            "" if r.published_flag is None else f"{r.published_flag}/{r.simulated_flag}",
            "fit" if r.fitted else "",
        )
    console.print(table)
    if any(r.failed_share is not None for r in rows):
        console.print(
            "failed: the share of the simulated requests that failed, beside each latency (of "
            "the answered requests only)",
            markup=False,
        )
    seen = set()
    for r in rows:
        head = r.figure.split(" ")[0]
        if r.note and head not in seen:
            seen.add(head)
            console.print(f"{head}: {r.note}")
    predicted = [r for r in rows if not r.fitted and r.rel_error is not None]
    if predicted:
        worst = max(abs(cast(float, r.rel_error)) for r in predicted)
        inside = sum(abs(cast(float, r.rel_error)) <= 0.2 for r in predicted)
        console.print(f"{len(predicted)} predicted rows: {inside} within ±20 %, worst {worst:.0%}")
