"""An experiment whose measured figures are an imported measurement table (`tiersim import`)
instead of a hand-typed CSV.

    [experiment]
    table = "measured.csv"      # the tidy table (csv or parquet), docs/measurement-table.md
    class = "total"             # the table's class whose rows are compared (default "total")
    windows = "pool"            # "pool": one row per run (default); "each": one row per window
    warmup_s = 5                # windows starting before this second of a run are left out

    [models]
    model = "planner.toml"      # every run's model; or column = "run" and RUN = "MODEL.toml"

    [factors.users]
    "*" = ["clients.users={value}"]

    [[figures]]
    column = "throughput"       # a table column; `metric` defaults to the same name

    [[fitted]]
    run = "users2"              # or users = 2, window_start_s = ..., class = ...

The table's rows become the rows `tiersim reproduce` and `tiersim calibrate` already read: one
record per run (or window) with the table's columns as text, the model column `run`, and one
`[[figures]]` entry per figure and row carrying that figure's measurement error.

Measurement error (relative standard deviation of a figure), unless `measurement_error` is
declared (in `[experiment]` or in a `[[figures]]` entry):

* a run pooled from three or more windows: the batch-means standard error, the spread of the
  windows' values (throughput weighted by window length, the rest by completed requests) over
  the square root of their number;
* otherwise the run's own measurement error, `sim.measurements.figure_errors` (the one a
  prediction of a measurement of the level adds, `sim.studies.measured_level`): the standard
  error the import measured from the run's samples (`COLUMN.std_error`, docs/measurement-table.md:
  batch means over time), where the table has one, but for a throughput; else that of
  `count.completed` requests whose coefficient of variation is 1 (an exponential's): 1/sqrt(n)
  for a throughput, a mean or a utilisation, and binomial order statistics with an exponential
  tail for a percentile.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from sim.measurements.figure_errors import figure_error
from sim.studies.experiment import ExperimentError
from sim.studies.spec import ExperimentSpec, FigureSpec, ModelsSection

IDENTITY = ("run", "class", "window_start_s", "window_end_s", "users")
DEFAULT_FIGURES = ("throughput", "response.mean")
MODEL_COLUMN = "run"
# a declared measurement error is a relative sd in (0, 1); a derived one is kept inside it
SMALLEST_SD, LARGEST_SD = 1e-4, 0.99
# The fit weighs a throughput by the error of its count, 1/sqrt(n), not by the sub-windows'
# `throughput.std_error` that a prediction of a measurement of the level adds: on a closed
# loop that error is about a third of 1/sqrt(n), and weighing the fit by it moves what the fit
# finds, a change of the fit itself to be made on its own evidence (docs/measurement-table.md).
WEIGHED_BY_COUNT = ("throughput",)


def text(value: Any) -> str:
    """A cell as a record holds it: empty for a missing value, a whole number without a decimal
    point (so `users = 8` in a selector matches), otherwise the shortest exact repr."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    number = float(value)
    if math.isnan(number):
        return ""
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return repr(number)


def _canonical(value: Any) -> Any:
    """A selector value in the records' spelling (8.0 and 8 both select users 8)."""
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return text(value)
    return value


def table_experiment(
    folder: Path, spec: ExperimentSpec, source: Path
) -> tuple[ExperimentSpec, list[dict[str, str]]]:
    """The experiment as `load_experiment` gives a published CSV's: a spec that names the table
    as its published file, and one record per run (or window) of the chosen class."""
    from sim.measurements.errors import MeasurementError
    from sim.measurements.table import read

    meta = spec.experiment
    name = meta.table
    if not name:
        raise ExperimentError(
            f"{source}: [experiment] table = {name!r} must name the measurement table written by "
            "`tiersim import` (a .csv or .parquet file beside experiment.toml)"
        )
    path = folder / name
    if not path.is_file():
        raise ExperimentError(
            f"{source}: [experiment] table = {name!r}: {path} not found; write it with "
            f"`tiersim import FORMAT FILE... -o {name}`"
        )
    try:
        frame = read(path)
    except MeasurementError as exc:
        raise ExperimentError(str(exc)) from None
    except ImportError:
        raise ExperimentError(
            f"{source}: reading the table needs pandas and pyarrow: pip install 'tiersim[measure]'"
        ) from None
    wanted_class, windows, warmup = meta.table_class, meta.windows, meta.warmup_s
    classes = sorted(set(frame["class"]))
    if wanted_class not in classes:
        raise ExperimentError(
            f"{source}: [experiment] class = {wanted_class!r} is not a class of {name} (its "
            f"classes: {', '.join(classes)})"
        )
    frame = frame[frame["class"] == wanted_class]
    kept = frame[frame["window_start_s"] >= float(warmup)]
    for run in sorted(set(frame["run"]) - set(kept["run"])):
        raise ExperimentError(
            f"{source}: [experiment] warmup_s = {warmup:g} leaves no window of run {run!r} in "
            f"{name} (its windows start at "
            f"{', '.join(f'{s:g}' for s in frame[frame['run'] == run]['window_start_s'])} s); "
            "lower warmup_s, or import the run with a shorter --window"
        )
    columns = [c for c in kept.columns if c not in ("run", "class")]
    figures = _figure_entries(spec, columns, name, source)
    groups = [g for _, g in kept.groupby("run", sort=False)]
    rows: list[tuple[dict[str, Any], dict[str, float] | None]]
    if windows == "pool":
        pooled = [_pool(g) for g in groups]
        for figure in figures:
            column = figure.column
            if column.startswith("response.p"):
                several = [r for r, g in zip(pooled, groups) if len(g) > 1]
                if several:
                    raise ExperimentError(
                        f"{source}: figure {column!r}: run {several[0][0]['run']!r} has "
                        f"{len(groups[pooled.index(several[0])])} windows and a percentile cannot "
                        "be pooled from its windows' percentiles; import the runs without --window "
                        '(one window per run), or set [experiment] windows = "each"'
                    )
        rows = pooled
    else:
        rows = [(_one(row), None) for g in groups for _, row in g.iterrows()]
    if windows == "pool" and all(_number(values.get("users")) is not None for values, _ in rows):
        rows.sort(key=lambda pair: _number(pair[0]["users"]) or 0.0)  # a load curve's order
    records = [{k: text(v) for k, v in values.items()} for values, _ in rows]
    for record in records:
        record["class"] = wanted_class
    label_columns = ["window_start_s"] if windows == "each" else []
    update: dict[str, Any] = {
        # what calibration's cache fingerprints: the table's bytes
        "experiment": meta.model_copy(
            update={
                "published": name,
                "label_columns": label_columns
                if meta.label_columns is None
                else meta.label_columns,
            }
        ),
        "models": _models(spec, records),
        "figures": _per_row_figures(figures, rows, records, meta.measurement_error, windows),
        "fitted": [
            e.model_copy(update={"selectors": {k: _canonical(v) for k, v in e.selectors.items()}})
            for e in spec.fitted
        ],
        "calibrate": [_canonical_when(e) for e in spec.calibrate],
        "unknown": [_canonical_when(e) for e in spec.unknown],
    }
    _check_users(spec, records, name, source)
    derived = spec.model_copy(update=update)
    _check_selectors(derived, records, name, source)
    return derived, records


def _canonical_when(entry: Any) -> Any:
    return entry.model_copy(update={"when": {k: _canonical(v) for k, v in entry.when.items()}})


def _figure_entries(
    spec: ExperimentSpec, columns: list[str], name: str, source: Path
) -> list[FigureSpec]:
    entries = spec.figures or [FigureSpec(column=c, metric=c) for c in DEFAULT_FIGURES]
    for i, entry in enumerate(entries):
        if entry.column not in columns:
            raise ExperimentError(
                f"{source}: figures[{i}].column = {entry.column!r} is not a column of {name} (its "
                f"columns: {', '.join(columns)}); name a measured column, e.g. "
                'column = "throughput"'
            )
    return entries


def _pool(group) -> tuple[dict[str, Any], dict[str, float] | None]:
    """One run's windows as one row: completions over time, means weighted by completions,
    utilisations and users by time; and each figure's batch-means relative standard error."""
    import numpy as np

    length = (group["window_end_s"] - group["window_start_s"]).to_numpy(dtype=float)
    count = group["count.completed"].to_numpy(dtype=float)
    row: dict[str, Any] = {
        "run": str(group["run"].iloc[0]),
        "window_start_s": float(group["window_start_s"].min()),
        "window_end_s": float(group["window_end_s"].max()),
    }
    batch: dict[str, float] = {}
    for column in group.columns:
        if column in ("run", "class", "window_start_s", "window_end_s"):
            continue
        values = group[column].to_numpy(dtype=float)
        if column.startswith("count."):
            row[column] = float(np.nansum(values)) if not np.isnan(values).all() else math.nan
            continue
        # rates, utilisations and users are time averages; response figures request averages
        timed = column.endswith(".cpu.utilization") or column in (
            "throughput",
            "users",
            "arrival_rate_per_s",
        )
        weights = length if timed else count
        known = ~np.isnan(values) & (weights > 0)
        if column.startswith("response.p"):
            row[column] = float(values[0]) if len(values) == 1 else math.nan
            continue
        if not known.any():
            row[column] = math.nan
            continue
        w, v = weights[known], values[known]
        mean = float(np.sum(w * v) / np.sum(w))
        row[column] = mean
        k = len(v)
        if k >= 3 and mean != 0:
            spread = float(np.sum(w**2 * (v - mean) ** 2) / np.sum(w) ** 2 * k / (k - 1))
            batch[column] = math.sqrt(spread) / abs(mean)
    if "users" in group.columns and group["users"].notna().any():
        # The run's load level: the median window's users, whole when it is within 0.05 of a
        # whole number (the count clients.users takes).  Not the mean: JMeter stops its
        # threads one by one in the last window, which a mean would carry into the level.
        level = float(group["users"].median())
        nearest = round(level)
        row["users"] = float(nearest) if abs(level - nearest) < 0.05 else level
    return row, batch


def _one(series) -> dict[str, Any]:
    return {k: v for k, v in series.items() if k != "class"}


def _per_row_figures(
    figures: list[FigureSpec],
    rows: list[tuple[dict[str, Any], dict[str, float] | None]],
    records: list[dict[str, str]],
    declared_default: float | None,
    windows: str,
) -> list[FigureSpec]:
    """One [[figures]] entry per figure and row, its `when` the row's identity and its
    `measurement_error` the declared one or the derived one (module docstring)."""
    out = []
    for figure in figures:
        column = figure.column
        for (values, batch), record in zip(rows, records):
            when = {k: _canonical(v) for k, v in figure.when.items()}
            if not all(_selects(record.get(k), v) for k, v in when.items()):
                continue
            identity = {"run": record["run"]}
            if windows == "each":
                identity["window_start_s"] = record["window_start_s"]
            update: dict[str, Any] = {"when": identity}
            if figure.measurement_error is None and declared_default is None:
                sd = (batch or {}).get(column)
                if sd is None:
                    found = figure_error(values, column, column not in WEIGHED_BY_COUNT)
                    sd = LARGEST_SD if found is None else found.relative_sd
                update["measurement_error"] = min(max(sd, SMALLEST_SD), LARGEST_SD)
            out.append(figure.model_copy(update=update))
    return out


def _selects(value: str | None, wanted: Any) -> bool:
    if isinstance(wanted, list):
        return value in [str(w) for w in wanted]
    return value == str(wanted)


def _models(spec: ExperimentSpec, records: list[dict[str, str]]) -> ModelsSection:
    """`[models] model = "X.toml"` (every run), or the usual column -> model mapping with
    column = "run" (sim.studies.spec checked which)."""
    model = spec.models.model
    if model is not None:
        files = {r[MODEL_COLUMN]: model for r in records}
        return ModelsSection(column=MODEL_COLUMN, files=files)
    return spec.models


def _check_selectors(
    spec: ExperimentSpec, records: list[dict[str, str]], name: str, source: Path
) -> None:
    """Every [[fitted]] entry names columns of the rows and selects at least one row."""
    columns = sorted(records[0]) if records else []
    for i, entry in enumerate(spec.fitted):
        keys = entry.selectors
        if not keys:
            raise ExperimentError(
                f'{source}: fitted[{i}] selects no row; name one by its run (run = "...") or '
                "its users (users = N)"
            )
        unknown = [k for k in keys if k not in columns]
        if unknown:
            raise ExperimentError(
                f"{source}: fitted[{i}].{unknown[0]} is not a column of {name}'s rows (select by "
                f"one of: {', '.join(IDENTITY)})"
            )
        if not any(all(r.get(k) == str(v) for k, v in keys.items()) for r in records):
            k = next(iter(keys))
            seen = sorted({r.get(k, "") for r in records}, key=_sort_key)
            raise ExperimentError(
                f"{source}: fitted[{i}] ({', '.join(f'{k} = {v!r}' for k, v in keys.items())}) "
                f"matches no row of {name}; its {k} values: {', '.join(seen)}"
            )
        figure = entry.figure
        if figure is not None and not any(f.column == figure for f in spec.figures):
            raise ExperimentError(
                f"{source}: fitted[{i}].figure = {figure!r} is not one of the [[figures]] "
                f"columns ({', '.join(sorted({f.column for f in spec.figures}))})"
            )


def _sort_key(value: str) -> tuple[int, float | str]:
    try:
        return (0, float(value))
    except ValueError:
        return (1, value)


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _check_users(
    spec: ExperimentSpec, records: list[dict[str, str]], name: str, source: Path
) -> None:
    """A `users` factor needs each row's users as a whole number of threads."""
    if "users" not in spec.factors:
        return
    for record in records:
        value = _number(record.get("users"))
        if value is None:
            raise ExperimentError(
                f"{source}: [factors.users]: run {record['run']!r} of {name} has no users (a JTL "
                "records them in allThreads: save it with jmeter.save.saveservice.thread_counts="
                "true, or set each run's users with [factors.run] entries)"
            )
        if not value.is_integer():
            raise ExperimentError(
                f"{source}: [factors.users]: run {record['run']!r} of {name} has {value:.3g} users "
                "(its windows' median), not a whole number of threads: a ramp-up? leave it out "
                "with [experiment] warmup_s, or import with a shorter --window"
            )
