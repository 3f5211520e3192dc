"""`tiersim reproduce NAME`: run an experiment's published table and set simulated beside published.

An experiment is a folder `experiments/NAME/` with `experiment.toml` (how each row of the
published CSV maps onto a model file and parameter overrides), the model files, and the
published CSV.  A row may carry several figures (`[[figures]]`: a CSV column, the simulated
metric compared to it, and optionally `when`, the column values of the rows it applies to).
Every row is simulated with the model's replications; the row reports the
published figure, the simulated mean and interval, the relative error, whether the published
yes/no flag (e.g. "client timeouts") matches, and whether the row was used to fit a parameter
(`fitted`): errors on fitted rows are not predictions.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

from sim.files import FileProblem, read_text, read_toml
from sim.model.load import ModelError, load_model

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


class ExperimentError(ValueError):
    """A malformed or missing experiment; the message names the file and the fix."""


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

    def as_dict(self) -> dict:
        data = asdict(self)
        data["overrides"] = list(self.overrides)
        return data


def experiment_dir(name: str) -> Path:
    """A bundled experiment's name (`experiments/NAME`), or the path of a folder holding an
    `experiment.toml` (a user's own measurements), or of that file itself."""
    given = Path(name)
    for folder in (
        EXPERIMENTS / name,
        given,
        given.parent if given.name == "experiment.toml" else None,
    ):
        if folder is not None and (folder / "experiment.toml").is_file():
            return folder
    known = sorted(p.name for p in EXPERIMENTS.iterdir() if (p / "experiment.toml").is_file())
    raise ExperimentError(
        f"no experiment {name!r}: give a bundled name ({', '.join(known) or 'none'}) or a folder "
        "with an experiment.toml"
    )


def load_experiment(name: str) -> tuple[Path, dict, list[dict[str, str]]]:
    """The experiment's folder, its parsed experiment.toml, and the published rows it maps onto
    a model (rows whose model column has no entry in [models] are skipped).  Every mapped row
    is checked here, before anything runs: its cells, and its figures (numbers or withheld)."""
    folder = experiment_dir(name)
    source = folder / "experiment.toml"
    try:
        spec = read_toml(source, "experiment file")
    except FileProblem as exc:
        raise ExperimentError(str(exc)) from None
    if isinstance(spec.get("experiment"), dict) and "table" in spec["experiment"]:
        # an imported measurement table (tiersim import) instead of a published CSV
        from sim.studies.from_table import table_experiment

        spec, records = table_experiment(folder, spec, source)
        _check_spec(spec, source)
        for record in records:
            _check_record(spec, record, list(record), f"{source}: run {record['run']}")
        return folder, spec, records
    _check_spec(spec, source)
    table = folder / spec["experiment"]["published"]
    if not table.is_file():
        raise ExperimentError(
            f"{source}: published table {table} not found (set [experiment] published)"
        )
    try:
        text = read_text(table, "published table")
    except FileProblem as exc:
        raise ExperimentError(str(exc)) from None
    reader = csv.DictReader(io.StringIO(text))
    published_rows, lines = [], []
    try:
        for record in reader:
            published_rows.append(record)
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise ExperimentError(f"{table}: not a CSV table ({exc})") from None
    columns = list(reader.fieldnames or [])
    models = spec["models"]
    if models["column"] not in columns:
        raise ExperimentError(
            f"{source}: [models] column = {models['column']!r} is not a column of {table.name} "
            f"(its columns: {', '.join(columns)})"
        )
    if not spec.get("figures") and not (
        "value_column" in spec["experiment"] and "metric" in spec["experiment"]
    ):
        raise ExperimentError(
            f"{source}: say which figure each row is compared on: [experiment] value_column (a column "
            'of the CSV) and metric (a simulated metric, e.g. "throughput"), or [[figures]] entries'
        )
    for figure in spec.get("figures", []):
        if figure.get("column") not in columns or "metric" not in figure:
            raise ExperimentError(
                f"{source}: each [[figures]] entry needs `column` (one of: {', '.join(columns)}) and "
                f"`metric`; got {figure}"
            )
    if spec.get("figures") is None and spec["experiment"]["value_column"] not in columns:
        raise ExperimentError(
            f"{source}: [experiment] value_column = {spec['experiment']['value_column']!r} is not "
            f"a column of {table.name} (its columns: {', '.join(columns)})"
        )
    mapped = []
    for record, line in zip(published_rows, lines):
        if record.get(models["column"]) in models:
            _check_record(spec, record, columns, f"{table}: line {line}")
            mapped.append(record)
    if not mapped:
        values = sorted({r.get(models["column"]) or "" for r in published_rows})
        raise ExperimentError(
            f"{source}: no row of {table.name} maps onto a model: add [models] entries for the "
            f'{models["column"]!r} values ({", ".join(values)}) = "MODEL.toml"'
        )
    return folder, spec, mapped


def _check_spec(spec: dict, source: Path) -> None:
    """The tables experiment.toml needs, with the types the code reads them as."""
    shapes = (
        ("experiment", dict, '[experiment] with published = "published.csv"'),
        ("models", dict, '[models] with column = "..." and VALUE = "MODEL.toml" entries'),
    )
    for key, kind, fix in shapes:
        if not isinstance(spec.get(key), kind):
            raise ExperimentError(f"{source}: missing {key!r} (it needs {fix})")
    for table, key in (("experiment", "published"), ("models", "column")):
        if not isinstance(spec[table].get(key), str):
            raise ExperimentError(
                f"{source}: missing {key!r} ([experiment] needs `published`, [models] needs "
                "`column`, each a string)"
            )
    for value, model in spec["models"].items():
        if value != "column" and not isinstance(model, str):
            raise ExperimentError(
                f"{source}: models.{value} = {model!r} must be a model file name (a string)"
            )
    tables: tuple[tuple[str, type, str], ...] = (
        ("figures", list, "a list of [[figures]] tables"),
        ("fitted", list, "a list of [[fitted]] tables"),
        ("calibrate", list, "a list of [[calibrate]] tables"),
        ("factors", dict, "a table of [factors.COLUMN] tables"),
    )
    for key, expected, what in tables:
        if key in spec and not isinstance(spec[key], expected):
            raise ExperimentError(f"{source}: {key} must be {what}, got {spec[key]!r}")
    for key in ("figures", "fitted", "calibrate"):
        for i, entry in enumerate(spec.get(key, [])):
            if not isinstance(entry, dict):
                raise ExperimentError(f"{source}: {key}[{i}] = {entry!r} must be a table")
    for i, figure in enumerate(spec.get("figures", [])):
        scale = figure.get("scale", 1.0)
        if (
            isinstance(scale, bool)
            or not isinstance(scale, (int, float))
            or not math.isfinite(scale)
            or scale == 0
        ):
            # Negative is meaningful: seed003's proxy %idle is 100 - 100 x utilisation.
            raise ExperimentError(
                f"{source}: figures[{i}].scale = {scale!r} must be a non-zero number (the "
                "published column's value per unit of the metric, e.g. 1000 for ms, or -100 "
                "with offset = 100 for a %idle)"
            )
        if not isinstance(figure.get("when", {}), dict):
            raise ExperimentError(
                f"{source}: figures[{i}].when = {figure['when']!r} must be a table of column = "
                "value(s)"
            )
    for column, values in spec.get("factors", {}).items():
        if not isinstance(values, dict) or not all(
            isinstance(v, list) and all(isinstance(t, str) for t in v) for v in values.values()
        ):
            raise ExperimentError(
                f"{source}: factors.{column} must map each value to a list of overrides, e.g. "
                f'yes = ["clients.keep_alive=true"]'
            )


def _check_record(spec: dict, record: dict, columns: list[str], where: str) -> None:
    """A mapped row: all its cells, and each of its figures a number or withheld."""
    label = record.get(spec["models"]["column"])
    if None in record:  # csv.DictReader keeps surplus cells under the key None
        extra = len(record[None])
        raise ExperimentError(
            f"{where} ({label}): {len(columns) + extra} cells, the header has {len(columns)} "
            f"({', '.join(columns)}): remove the surplus cells (quote a value holding a comma)"
        )
    missing = [c for c in columns if record.get(c) is None]
    if missing:
        cells = len(columns) - len(missing)
        raise ExperimentError(
            f"{where} ({label}): {cells} cells, the header has {len(columns)} "
            f"({', '.join(columns)}): no cell for {', '.join(missing)}; end the row with a comma "
            "per missing cell (an empty cell is a withheld figure)"
        )
    for figure in _figures(spec, record):
        column = figure["column"]
        try:
            published_value(record, column)
        except ValueError as exc:
            raise ExperimentError(f"{where} ({label}): {exc}") from None


def published_value(record: dict[str, str], column: str) -> float | None:
    """A published figure, or None when it is withheld (empty or "[HELD OUT]")."""
    text = (record.get(column) or "").strip()
    if text in ("", "HELD OUT", "[HELD OUT]"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(
            f"{column} = {text!r} is not a number; give the figure, or leave the cell empty "
            "(or [HELD OUT]) for a withheld one"
        ) from None
    if not math.isfinite(value):
        raise ValueError(f"{column} = {text!r}: a published figure is a finite number")
    return value


def row_run(
    folder: Path, spec: dict, record: dict[str, str], extra: Sequence[str] = ()
) -> tuple[Path, tuple[str, ...]]:
    """The run a published row maps onto: its model file and overrides (the factors', then
    `extra`, e.g. calibrated values)."""
    model_file = folder / spec["models"][record[spec["models"]["column"]]]
    return model_file, tuple(_overrides(spec, record, folder / "experiment.toml")) + tuple(extra)


def _overrides(spec: dict, row: dict[str, str], source: Path) -> list[str]:
    """The parameter overrides of one published row.  A factor's entry may be specific to the
    row's model ("MODEL:VALUE", e.g. a connector that is blocking on one backend and not on
    another), else for the value, else for any value ("*", with {value} substituted)."""
    out: list[str] = []
    model_key = row.get(spec["models"]["column"], "")
    for column, values in spec.get("factors", {}).items():
        if column not in row:
            raise ExperimentError(f"{source}: factor column {column!r} is not in the published CSV")
        value = row[column]
        templates = values.get(f"{model_key}:{value}", values.get(value, values.get("*")))
        if templates is None:
            raise ExperimentError(
                f"{source}: factors.{column} has no entry for {value!r} (nor '*')"
            )
        out += [t.replace("{value}", value) for t in templates]
    return out


def _is_fitted(spec: dict, row: dict[str, str], column: str) -> bool:
    """A `[[fitted]]` entry names a row by its column values, and optionally one `figure`
    (value column) of it; the others of that row stay predictions."""
    for fitted in spec.get("fitted", []):
        keys = {k: v for k, v in fitted.items() if k not in ("parameter", "figure")}
        if fitted.get("figure", column) == column and all(
            row.get(k) == str(v) for k, v in keys.items()
        ):
            return True
    return False


def _figures(spec: dict, row: dict[str, str]) -> list[dict]:
    """The figures a row is compared on: `[[figures]]` entries (column, metric, optional
    `when` = column values the row must have), or the experiment's one value column."""
    meta = spec["experiment"]
    figures = spec.get("figures") or [{"column": meta["value_column"], "metric": meta["metric"]}]
    return [
        f for f in figures if all(_matches(row.get(k), v) for k, v in f.get("when", {}).items())
    ]


def _matches(value: str | None, wanted) -> bool:
    """`when` values: one value, or a list of any of them."""
    if isinstance(wanted, list):
        return value in [str(w) for w in wanted]
    return value == str(wanted)


def check_runs(folder: Path, spec: dict, records: list[dict[str, str]], extra=None) -> None:
    """Every row's run built without simulating it: its model file and overrides load, and it
    produces the metric of each of its figures.  Called before the first simulation, so that
    a bad row is reported at once, not after minutes of simulating (or fitting) the others."""
    from sim.studies.capacity.slo import model_metrics

    source = folder / "experiment.toml"
    name_column = spec["models"]["column"]
    produced: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for record in records:
        model_file, overrides = row_run(folder, spec, record, extra(record) if extra else ())
        key = (str(model_file), overrides)
        if key not in produced:
            produced[key] = model_metrics(load_row_model(model_file, overrides))
        for wanted in _figures(spec, record):
            metric = wanted["metric"]
            if metric not in produced[key]:
                close = difflib.get_close_matches(metric, sorted(produced[key]), n=3, cutoff=0.6)
                raise ExperimentError(
                    f"{source}: metric {metric!r} (for column {wanted['column']!r}) is not "
                    f"produced by {model_file.name} (row {name_column}={record[name_column]}); "
                    + (f"did you mean {' or '.join(close)}? " if close else "")
                    + "`tiersim run MODEL --json` lists a model's metrics"
                )


def load_row_model(model_file: Path, overrides: tuple[str, ...]):
    try:
        return load_model(model_file, overrides)
    except ModelError as exc:
        raise ExperimentError(str(exc)) from None


def run_row(task: tuple) -> dict[str, tuple[float, float, float, str]]:
    """One row's run, in this process or a pool's worker: metric -> (mean, 95 % low, high, unit).
    `task` = (model file, overrides, replications, context for an error message)."""
    from sim.run.simulate import Status, simulate

    model_file, overrides, replications, context = task
    # the same run as `tiersim run`: the stability check first, then the replications
    outcome = simulate(load_row_model(Path(model_file), overrides), replications=replications)
    if outcome.status is Status.INTERRUPTED:
        raise KeyboardInterrupt
    if outcome.result is None or outcome.status in (Status.INVALID, Status.INTERNAL):
        raise ExperimentError(f"{context}: {outcome.message}")
    units = outcome.result.units
    return {
        metric: (i.mean, i.low, i.high, units.get(metric, ""))
        for metric, i in outcome.result.summary.items()
    }


def reproduce(
    name: str, replications: int | None = None, progress=None, extra=None, map_=map
) -> list[Row]:
    """Every mapped row of the experiment's table, simulated.  `extra(record)` may give more
    overrides for a row (e.g. `tiersim calibrate`'s fitted values), applied after its factors'.
    `map_` runs the distinct runs (builtin map, or a process pool's: the same numbers)."""
    folder, spec, todo = load_experiment(name)
    source = folder / "experiment.toml"
    meta, models = spec["experiment"], spec["models"]
    name = meta.get("name", name)
    notes = law_notes(spec, todo, source)
    # Rows that map onto the same run (seed 002's batches are phases of one run) share it.
    check_runs(folder, spec, todo, extra)  # a bad row fails here, before anything runs
    keys, tasks = [], {}
    for record in todo:
        model_file, overrides = row_run(folder, spec, record, extra(record) if extra else ())
        key = (str(model_file), overrides)
        keys.append(key)
        if key not in tasks:
            tasks[key] = (*key, replications, f"{source}: {record[models['column']]}")
    results = {}
    for done, (key, summary) in enumerate(zip(tasks, map_(run_row, tasks.values()))):
        results[key] = summary
        if progress is not None:
            progress(done + 1, len(tasks))
    rows: list[Row] = []
    for record, key in zip(todo, keys):
        summary = results[key]
        flag = None
        if meta.get("flag_column"):
            hit = any(summary[m][0] > 0 for m in meta.get("flag_metrics", []) if m in summary)
            flag = "yes" if hit else "no"
        label_columns = meta.get(
            "label_columns", list(spec.get("factors", {}))
        )  # the name's columns
        figure = " ".join([record[models["column"]]] + [f"{c}={record[c]}" for c in label_columns])
        figures = _figures(spec, record)
        for wanted in figures:
            column, metric = wanted["column"], wanted["metric"]
            if metric not in summary:
                raise ExperimentError(
                    f"{source}: metric {metric!r} (for column {column!r}) is not produced by "
                    f"{Path(key[0]).name}; one of: {', '.join(sorted(summary))}"
                )
            # published = offset + scale x metric: e.g. scale 1000 for ms, or scale -100 and
            # offset 100 for a %idle compared to a utilisation
            scale, offset = float(wanted.get("scale", 1.0)), float(wanted.get("offset", 0.0))
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
                    fitted=_is_fitted(spec, record, column),
                    published_flag=record.get(meta.get("flag_column", ""), None)
                    if meta.get("flag_column")
                    else None,
                    simulated_flag=flag,
                    overrides=tuple(key[1]),
                    note=notes.get(id(record)),
                    metric=metric,
                    unit=figure_unit(wanted, summary[metric][3]),
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


def figure_unit(figure: dict, metric_unit: str) -> str:
    """The unit of a figure: its [[figures]] `unit`, else the metric's, scaled by `scale`."""
    if figure.get("unit"):
        return str(figure["unit"])
    scale = float(figure.get("scale", 1.0))
    if scale == 1.0:
        return metric_unit
    return _SCALED_UNITS.get((metric_unit, scale), f"{metric_unit} x {scale:g}".strip())


def law_notes(spec: dict, records: list[dict[str, str]], source: Path) -> dict[int, str]:
    """`[response_time_law]`: users, response_column, response_unit_s, throughput_column and
    `reference` (column values of the row whose implied think time the model uses).  Each row
    gets a note saying whether its R and X agree with the reference under R = N/X - Z."""
    law = spec.get("response_time_law")
    if not law:
        return {}
    from sim.analytic.operational import implied_think, note

    try:
        users, reference = int(law["users"]), law["reference"]
        columns = (
            law["response_column"],
            float(law.get("response_unit_s", 1.0)),
            law["throughput_column"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ExperimentError(
            f"{source}: [response_time_law] needs users, response_column, throughput_column and "
            f"reference ({exc})"
        ) from None
    name_column = spec["models"]["column"]

    def check(record):
        return implied_think(
            f"{name_column}={record[name_column]}",
            users,
            record.get(columns[0], ""),
            columns[1],
            record.get(columns[2], ""),
        )

    matches = [r for r in records if all(r.get(k) == str(v) for k, v in reference.items())]
    if not matches or check(matches[0]) is None:
        raise ExperimentError(
            f"{source}: [response_time_law] reference {reference} names no published row with both "
            "figures"
        )
    anchor = check(matches[0])
    out = {}
    for record in records:
        implied = check(record)
        if implied is not None:
            out[id(record)] = note(implied, anchor, users)
    return out


def render(rows: list[Row], console) -> None:
    from rich.table import Table

    from sim.present.tables import plain

    table = Table(header_style="bold")
    for column in (
        "figure",
        "published",
        "simulated",
        "95% interval",
        "unit",
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
            "" if r.rel_error is None else f"{r.rel_error:+.0%}",
            "" if r.published_flag is None else f"{r.published_flag}/{r.simulated_flag}",
            "fit" if r.fitted else "",
        )
    console.print(table)
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
