"""An experiment (`experiment.toml`, typed in sim.studies.spec): how each row of a measured or
published table maps onto a model file and parameter overrides, which figures a row is
compared on, and which were used to fit a parameter.  The bottom of the studies: every study
reads experiments through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.studies.spec import ExperimentError, ExperimentSpec, FigureSpec, parse_experiment

__all__ = [
    "ExperimentError",
    "ExperimentSpec",
    "factor_overrides",
    "figures_of",
    "is_fitted",
    "matches",
    "parse_experiment",
]


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
