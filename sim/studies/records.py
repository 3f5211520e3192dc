"""An experiment's rows: the published CSV (or the imported measurement table) read and checked
against the experiment file, and the run each row maps onto (its model file and overrides)."""

from __future__ import annotations

import csv
import difflib
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sim.files import FileProblem, read_text, read_toml
from sim.model.load import ModelError, load_model
from sim.present.failures import FAILED_SHARE, failed_share
from sim.studies.experiment import (
    ExperimentError,
    ExperimentSpec,
    factor_overrides,
    figures_of,
    parse_experiment,
)

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


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


def load_experiment(name: str) -> tuple[Path, ExperimentSpec, list[dict[str, str]]]:
    """The experiment's folder, its experiment.toml validated (once, here), and the published
    rows it maps onto a model (rows whose model column has no entry in [models] are skipped).
    Every mapped row is checked here, before anything runs: its cells, and its figures
    (numbers or withheld)."""
    folder = experiment_dir(name)
    source = folder / "experiment.toml"
    try:
        raw = read_toml(source, "experiment file")
    except FileProblem as exc:
        raise ExperimentError(str(exc)) from None
    spec = parse_experiment(raw, source)
    if spec.on_table:
        # an imported measurement table (tiersim import) instead of a published CSV
        from sim.studies.measured_table import table_experiment

        spec, records = table_experiment(folder, spec, source)
        for record in records:
            _check_record(spec, record, list(record), f"{source}: run {record['run']}")
        return folder, spec, records
    assert spec.experiment.published is not None  # parse_experiment: published or table
    table = folder / spec.experiment.published
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
    name_column = model_column(spec)
    _check_columns(spec, columns, source, table.name)
    mapped = []
    for record, line in zip(published_rows, lines):
        if record.get(name_column) in spec.models.files:
            _check_record(spec, record, columns, f"{table}: line {line}")
            mapped.append(record)
    if not mapped:
        values = sorted({r.get(name_column) or "" for r in published_rows})
        raise ExperimentError(
            f"{source}: no row of {table.name} maps onto a model: add [models] entries for the "
            f'{name_column!r} values ({", ".join(values)}) = "MODEL.toml"'
        )
    return folder, spec, mapped


@dataclass(frozen=True, eq=False)
class Experiment:
    """An experiment read from its files once (`read_experiment`) and passed to every step of a
    command: the fit, each `[[choose]]` candidate's fit, the withheld levels' intervals, the
    rows, cross-validation.  The steps only read it; a step that needs another spec (a
    cross-validation fold's targets) makes a `model_copy`.  `candidate` is a `[[choose]]`
    candidate's settings (`backends.0.cores=4`), already in the spec's factors
    (`with_candidate`); `()` for the experiment as its files say."""

    name: str  # as given: a bundled name (experiments/NAME) or a folder
    folder: Path
    spec: ExperimentSpec
    records: list[dict[str, str]]
    candidate: tuple[str, ...] = ()

    @property
    def source(self) -> Path:
        return self.folder / "experiment.toml"


def read_experiment(name: str) -> Experiment:
    """`load_experiment(name)` as one value."""
    folder, spec, records = load_experiment(name)
    return Experiment(name, folder, spec, records)


def experiment_of(experiment: str | Experiment) -> Experiment:
    """An experiment already read, or read now from its name (a step called on its own)."""
    return experiment if isinstance(experiment, Experiment) else read_experiment(experiment)


def with_candidate(experiment: Experiment, settings: tuple[str, ...]) -> Experiment:
    """The experiment with a `[[choose]]` candidate's settings (`backends.0.cores=4`) set on
    every row, before the row's factors: one calibration per candidate (`sim.studies.choose`);
    on an imported table (`sim.studies.measured_table`), the only experiment that takes one.
    The records are the same (a candidate changes the runs, not the measurements); only the
    spec's factors take the settings, on the constant column `class`."""
    if experiment.candidate:
        raise ValueError(f"already the candidate {' '.join(experiment.candidate)}")
    if not settings:
        return experiment
    factors = {"class": {"*": list(settings)}}
    for column, values in experiment.spec.factors.items():
        if column == "class":
            values = {k: [*settings, *v] for k, v in values.items()}
        factors[column] = values
    spec = experiment.spec.model_copy(update={"factors": factors})
    return replace(experiment, spec=spec, candidate=tuple(settings))


def model_column(spec: ExperimentSpec) -> str:
    """The column whose value picks a row's model file (validated: a published CSV has one,
    and a table experiment's is `run`)."""
    assert spec.models.column is not None
    return spec.models.column


def _check_columns(spec: ExperimentSpec, columns: list[str], source: Path, table: str) -> None:
    """Every column the experiment file names is one of the published CSV's: a misspelt one
    would select no row, silently."""
    named: list[tuple[str, str]] = [("models.column", model_column(spec))]
    if not spec.figures:
        named.append(("experiment.value_column", spec.experiment.value_column or ""))
    for i, figure in enumerate(spec.figures):
        named += [(f"figures[{i}].column", figure.column)]
        named += [(f"figures[{i}].when.{k}", k) for k in figure.when]
    for i, fitted in enumerate(spec.fitted):
        named += [(f"fitted[{i}].{k}", k) for k in fitted.selectors]
    for kind, entries in (("calibrate", spec.calibrate), ("unknown", spec.unknown)):
        for i, entry in enumerate(entries):
            named += [(f"{kind}[{i}].when.{k}", k) for k in entry.when]
    law = spec.response_time_law
    if law is not None:
        named += [("response_time_law.response_column", law.response_column)]
        named += [("response_time_law.throughput_column", law.throughput_column)]
        named += [(f"response_time_law.reference.{k}", k) for k in law.reference]
    named += [(f"factors.{k}", k) for k in spec.factors]
    for where, column in named:
        if column not in columns:
            close = difflib.get_close_matches(column, columns, n=1, cutoff=0.6)
            raise ExperimentError(
                f"{source}: {where}: {column!r} is not a column of {table} ("
                + (f"did you mean {close[0]!r}? " if close else "")
                + f"its columns: {', '.join(columns)})"
            )
    compared = {f.column for f in spec.figures} or {spec.experiment.value_column or ""}
    for i, fitted in enumerate(spec.fitted):
        if fitted.figure is not None and fitted.figure not in compared:
            raise ExperimentError(
                f"{source}: fitted[{i}].figure = {fitted.figure!r} is not a compared column "
                f"(one of: {', '.join(sorted(c for c in compared if c))})"
            )


def _check_record(spec: ExperimentSpec, record: dict, columns: list[str], where: str) -> None:
    """A mapped row: all its cells, and each of its figures a number or withheld."""
    label = record.get(model_column(spec))
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
    for figure in figures_of(spec, record):
        column = figure.column
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
    folder: Path, spec: ExperimentSpec, record: dict[str, str], extra: Sequence[str] = ()
) -> tuple[Path, tuple[str, ...]]:
    """The run a published row maps onto: its model file and overrides (the factors', then
    `extra`, e.g. calibrated values)."""
    model_file = folder / spec.models.files[record[model_column(spec)]]
    return model_file, tuple(factor_overrides(spec, record, folder / "experiment.toml")) + tuple(
        extra
    )


def check_runs(
    folder: Path, spec: ExperimentSpec, records: list[dict[str, str]], extra=None
) -> None:
    """Every row's run built without simulating it: its model file and overrides load, and it
    produces the metric of each of its figures.  Called before the first simulation, so that
    a bad row is reported at once, not after minutes of simulating (or fitting) the others."""
    from sim.studies.metrics import metric_names

    source = folder / "experiment.toml"
    name_column = model_column(spec)
    produced: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for record in records:
        model_file, overrides = row_run(folder, spec, record, extra(record) if extra else ())
        key = (str(model_file), overrides)
        if key not in produced:
            produced[key] = metric_names(load_row_model(model_file, overrides))
        for wanted in figures_of(spec, record):
            metric = wanted.metric
            if metric not in produced[key]:
                close = difflib.get_close_matches(metric, sorted(produced[key]), n=3, cutoff=0.6)
                raise ExperimentError(
                    f"{source}: metric {metric!r} (for column {wanted.column!r}) is not "
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
    summary = {
        metric: (i.mean, i.low, i.high, units.get(metric, ""))
        for metric, i in outcome.result.summary.items()
    }
    # the share of requests that failed, shown beside each latency row (sim.present.failures)
    share = failed_share([rep.metrics for rep in outcome.result.replications], 0.95)
    if share is not None:
        summary.setdefault(FAILED_SHARE, (share.mean, share.low, share.high, "fraction"))
    return summary


def law_notes(spec: ExperimentSpec, records: list[dict[str, str]], source: Path) -> dict[int, str]:
    """`[response_time_law]`: users, response_column, response_unit_s, throughput_column and
    `reference` (column values of the row whose implied think time the model uses).  Each row
    gets a note saying whether its R and X agree with the reference under R = N/X - Z."""
    law = spec.response_time_law
    if law is None:
        return {}
    from sim.analytic.operational import implied_think, note

    users, reference = law.users, law.reference
    columns = (law.response_column, law.response_unit_s, law.throughput_column)
    name_column = model_column(spec)

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
