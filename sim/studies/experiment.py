"""An experiment file (`experiment.toml`): how each row of a measured or published table maps
onto a model file and parameter overrides, which figures a row is compared on, and which were
used to fit a parameter.  The bottom of the studies: every study reads experiments through it.
"""

from __future__ import annotations

import math
from pathlib import Path


class ExperimentError(ValueError):
    """A malformed or missing experiment; the message names the file and the fix."""


def check_spec(spec: dict, source: Path) -> None:
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


def factor_overrides(spec: dict, row: dict[str, str], source: Path) -> list[str]:
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


def is_fitted(spec: dict, row: dict[str, str], column: str) -> bool:
    """A `[[fitted]]` entry names a row by its column values, and optionally one `figure`
    (value column) of it; the others of that row stay predictions."""
    for fitted in spec.get("fitted", []):
        keys = {k: v for k, v in fitted.items() if k not in ("parameter", "figure")}
        if fitted.get("figure", column) == column and all(
            row.get(k) == str(v) for k, v in keys.items()
        ):
            return True
    return False


def figures_of(spec: dict, row: dict[str, str]) -> list[dict]:
    """The figures a row is compared on: `[[figures]]` entries (column, metric, optional
    `when` = column values the row must have), or the experiment's one value column."""
    meta = spec["experiment"]
    figures = spec.get("figures") or [{"column": meta["value_column"], "metric": meta["metric"]}]
    return [f for f in figures if all(matches(row.get(k), v) for k, v in f.get("when", {}).items())]


def matches(value: str | None, wanted) -> bool:
    """`when` values: one value, or a list of any of them."""
    if isinstance(wanted, list):
        return value in [str(w) for w in wanted]
    return value == str(wanted)
