"""An experiment (`experiment.toml`, its tables typed in sim.studies.spec): validated once
(`parse_experiment`, where records.load_experiment reads the file), then how each row of a
measured or published table maps onto a model file and parameter overrides, which figures a
row is compared on, and which were used to fit a parameter.  The bottom of the studies: every
study reads experiments through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sim.studies.spec import ExperimentSpec, FigureSpec
from sim.studies.spec_errors import format_experiment_error, line


class ExperimentError(ValueError):
    """A malformed or missing experiment; the message names the file and the fix."""


def parse_experiment(raw: dict[str, Any], source: Path) -> ExperimentSpec:
    """The parsed TOML of an experiment file, validated: its types, then the rules that tie its
    tables together.  Raises ExperimentError with one line per problem."""
    try:
        spec = ExperimentSpec.model_validate(raw)
    except ValidationError as exc:
        raise ExperimentError(format_experiment_error(exc, source)) from None
    except RecursionError:
        raise ExperimentError(f"{source}: values nested too deeply to be an experiment") from None
    _check_rules(spec, source)
    return spec


def problem(source: Path, location: str, value: Any, message: str) -> ExperimentError:
    """An error in the file's format: `FILE: field.path = value: message`."""
    return ExperimentError(line(source, location, value, message))


def _check_rules(spec: ExperimentSpec, source: Path) -> None:
    """What ties the tables together: a published CSV or an imported table, and the keys that
    belong to each (a key the other kind would silently ignore is refused)."""
    meta, models = spec.experiment, spec.models
    if meta.published is not None and meta.table is not None:
        raise problem(
            source,
            "experiment.published",
            meta.published,
            f"an experiment has either published (a CSV) or table = {meta.table!r} (an "
            "imported measurement table); keep one",
        )
    if meta.published is None and meta.table is None:
        raise problem(
            source,
            "experiment.published",
            None,
            'required: the published CSV (published = "published.csv"), or table = '
            '"measured.csv" for a table written by `tiersim import`',
        )
    if spec.on_table:
        for key in ("value_column", "metric"):
            if key in meta.model_fields_set:
                raise problem(
                    source,
                    f"experiment.{key}",
                    getattr(meta, key),
                    "only for a published CSV; on a table, name the compared columns in "
                    '[[figures]] (column = "throughput")',
                )
        if models.model is not None and (models.column is not None or models.files):
            raise problem(
                source,
                "models.model",
                models.model,
                "model is every run's model: remove `column` and the other entries (model: "
                "every run; column: a model per value of a column)",
            )
        if models.model is None and models.column is None:
            raise problem(
                source,
                "models.model",
                None,
                'required: model = "MODEL.toml" (the model of every run), or column = "run" '
                'with RUN = "MODEL.toml" entries',
            )
        if models.model is None and models.column != "run":
            raise problem(
                source,
                "models.column",
                models.column,
                'with a table, models are chosen by run (column = "run"), or one model for '
                'every run (model = "MODEL.toml")',
            )
        for i, figure in enumerate(spec.figures):
            if figure.scale != 1.0 or figure.offset != 0.0:
                raise ExperimentError(
                    f"{source}: figures[{i}] ({figure.column}): a measurement table's columns "
                    "are in the metrics' own units; remove scale and offset"
                )
        return
    for key, alias in (("table_class", "class"), ("windows", "windows"), ("warmup_s", "warmup_s")):
        if key in meta.model_fields_set:
            raise problem(
                source,
                f"experiment.{alias}",
                getattr(meta, key),
                f'only for an imported measurement table (table = "measured.csv"); a published '
                f"CSV's rows are as printed: remove {alias}",
            )
    if models.column is None:
        raise problem(
            source,
            "models.column",
            None,
            'required: the CSV column whose value picks the model, e.g. column = "backend", '
            'with VALUE = "MODEL.toml" entries',
        )
    if models.model is not None:
        raise problem(
            source,
            "models.model",
            models.model,
            'only for an imported measurement table; map each value: VALUE = "MODEL.toml"',
        )
    if not spec.figures and (meta.value_column is None or meta.metric is None):
        raise ExperimentError(
            f"{source}: say which figure each row is compared on: [experiment] value_column (a "
            'column of the CSV) and metric (a simulated metric, e.g. "throughput"), or '
            "[[figures]] entries"
        )
    if spec.choose:
        raise ExperimentError(
            f"{source}: [[choose]] needs an experiment on an imported table ([experiment] "
            'table = "measured.csv"); for a published CSV, add the value as a factor instead'
        )


def factor_overrides(spec: ExperimentSpec, row: dict[str, str], source: Path) -> list[str]:
    """The parameter overrides of one published row.  A factor's entry may be specific to the
    row's model ("MODEL:VALUE", e.g. a connector that is blocking on one backend and not on
    another), else for the value, else for any value ("*", with {value} substituted)."""
    out: list[str] = []
    model_key = row.get(spec.models.column or "", "")
    for column, values in spec.factors.items():
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


def is_fitted(spec: ExperimentSpec, row: dict[str, str], column: str) -> bool:
    """A `[[fitted]]` entry names a row by its column values, and optionally one `figure`
    (value column) of it; the others of that row stay predictions."""
    for fitted in spec.fitted:
        if (column if fitted.figure is None else fitted.figure) == column and all(
            row.get(k) == str(v) for k, v in fitted.selectors.items()
        ):
            return True
    return False


def figures_of(spec: ExperimentSpec, row: dict[str, str]) -> list[FigureSpec]:
    """The figures a row is compared on: `[[figures]]` entries (column, metric, optional
    `when` = column values the row must have), or the experiment's one value column."""
    meta = spec.experiment
    figures = spec.figures or [FigureSpec(column=meta.value_column or "", metric=meta.metric or "")]
    return [f for f in figures if all(matches(row.get(k), v) for k, v in f.when.items())]


def matches(value: str | None, wanted: Any) -> bool:
    """`when` values: one value, or a list of any of them."""
    if isinstance(wanted, list):
        return value in [str(w) for w in wanted]
    return value == str(wanted)
