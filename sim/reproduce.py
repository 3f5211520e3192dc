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
import math
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from sim.model.load import ModelError, load_model
from sim.runner import run

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"


class ExperimentError(ValueError):
    """A malformed or missing experiment; the message names the file and the fix."""


@dataclass
class Row:
    experiment: str
    figure: str  # the row's identity, e.g. "jetty-7.4.3 mod_proxy_ajp max_clients=150 keep_alive=no"
    published: float | None  # None for a withheld figure
    simulated: float
    ci_low: float
    ci_high: float
    rel_error: float | None
    fitted: bool
    published_flag: str | None = None
    simulated_flag: str | None = None
    overrides: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        data = asdict(self)
        data["overrides"] = list(self.overrides)
        return data


def experiment_dir(name: str) -> Path:
    folder = EXPERIMENTS / name
    if not (folder / "experiment.toml").is_file():
        known = sorted(p.name for p in EXPERIMENTS.iterdir() if (p / "experiment.toml").is_file())
        raise ExperimentError(f"no experiment {name!r}; known: {', '.join(known) or 'none'}")
    return folder


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
            raise ExperimentError(f"{source}: factors.{column} has no entry for {value!r} (nor '*')")
        out += [t.replace("{value}", value) for t in templates]
    return out


def _is_fitted(spec: dict, row: dict[str, str], column: str) -> bool:
    """A `[[fitted]]` entry names a row by its column values, and optionally one `figure`
    (value column) of it; the others of that row stay predictions."""
    for fitted in spec.get("fitted", []):
        keys = {k: v for k, v in fitted.items() if k not in ("parameter", "figure")}
        if fitted.get("figure", column) == column and all(row.get(k) == str(v) for k, v in keys.items()):
            return True
    return False


def _figures(spec: dict, row: dict[str, str]) -> list[dict]:
    """The figures a row is compared on: `[[figures]]` entries (column, metric, optional
    `when` = column values the row must have), or the experiment's one value column."""
    meta = spec["experiment"]
    figures = spec.get("figures") or [{"column": meta["value_column"], "metric": meta["metric"]}]
    return [f for f in figures if all(row.get(k) == str(v) for k, v in f.get("when", {}).items())]


def reproduce(name: str, replications: int | None = None, progress=None) -> list[Row]:
    folder = experiment_dir(name)
    source = folder / "experiment.toml"
    try:
        spec = tomllib.loads(source.read_text(encoding="utf-8"))
        meta = spec["experiment"]
        models = spec["models"]
        table = folder / meta["published"]
    except (tomllib.TOMLDecodeError, KeyError) as exc:
        raise ExperimentError(f"{source}: {exc}") from None
    with table.open(newline="", encoding="utf-8") as handle:
        published_rows = list(csv.DictReader(handle))
    rows: list[Row] = []
    todo = [r for r in published_rows if r[models["column"]] in models]
    # Rows that map onto the same run (seed 002's batches are phases of one run) share it.
    results: dict[tuple, object] = {}
    for done, record in enumerate(todo):
        overrides = _overrides(spec, record, source)
        model_file = folder / models[record[models["column"]]]
        key = (str(model_file), tuple(overrides))
        if key not in results:
            try:
                model = load_model(model_file, overrides)
            except ModelError as exc:
                raise ExperimentError(str(exc)) from None
            results[key] = run(model, replications=replications)
        result = results[key]
        flag = None
        if meta.get("flag_column"):
            hit = any(result.summary[m].mean > 0 for m in meta.get("flag_metrics", []) if m in result.summary)
            flag = "yes" if hit else "no"
        figure = " ".join(
            [record[models["column"]]] + [f"{c}={record[c]}" for c in spec.get("factors", {})]
        )
        figures = _figures(spec, record)
        for wanted in figures:
            column, metric = wanted["column"], wanted["metric"]
            if metric not in result.summary:
                raise ExperimentError(f"{source}: metric {metric!r} (for column {column!r}) is not produced by "
                                      f"{model_file.name}; one of: {', '.join(sorted(result.summary))}")
            interval = result.summary[metric]
            text = record.get(column, "").strip()
            published = None if text in ("", "HELD OUT", "[HELD OUT]") else float(text)
            rows.append(Row(
                experiment=name, figure=figure if len(figures) == 1 else f"{figure} {column}",
                published=published, simulated=interval.mean, ci_low=interval.low, ci_high=interval.high,
                rel_error=None if published is None else (interval.mean - published) / published,
                fitted=_is_fitted(spec, record, column),
                published_flag=record.get(meta.get("flag_column", ""), None) if meta.get("flag_column") else None,
                simulated_flag=flag, overrides=tuple(overrides),
            ))
        if progress is not None:
            progress(done + 1, len(todo))
    return rows


def render(rows: list[Row], console) -> None:
    from rich.table import Table

    table = Table(header_style="bold")
    for column in ("figure", "published", "simulated", "95% interval", "rel. error", "flag pub/sim", "fitted"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for r in rows:
        table.add_row(
            r.figure, "withheld" if r.published is None else f"{r.published:g}", f"{r.simulated:.3g}",
            "" if math.isnan(r.ci_low) else f"[{r.ci_low:.3g}, {r.ci_high:.3g}]",
            "" if r.rel_error is None else f"{r.rel_error:+.0%}",
            "" if r.published_flag is None else f"{r.published_flag}/{r.simulated_flag}",
            "fit" if r.fitted else "",
        )
    console.print(table)
    predicted = [r for r in rows if not r.fitted and r.rel_error is not None]
    if predicted:
        worst = max(abs(r.rel_error) for r in predicted)
        inside = sum(abs(r.rel_error) <= 0.2 for r in predicted)
        console.print(f"{len(predicted)} predicted rows: {inside} within ±20 %, worst {worst:.0%}")
