"""Every published figure of an experiment, with its measurement error and, where an
operational law rejects it, the reason it cannot be fitted or predicted by one model.

Measurement error (relative standard deviation of a published figure):

* `measurement_error = 0.03` under `[experiment]` (every figure) or in a `[[figures]]` entry
  (that column's figures): what the source says about its repeatability, or a documented
  estimate;
* otherwise the rounding of the printed digits: "80.4" is known to +-0.05, a uniform error whose
  sd is 0.05 / sqrt(3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from sim.studies.experiment import ExperimentError, figures_of, is_fitted
from sim.studies.records import model_column, published_value
from sim.studies.spec import ExperimentSpec


@dataclass(frozen=True)
class Figure:
    record: dict
    column: str
    metric: str
    scale: float
    offset: float
    published: float
    label: str
    fitted: bool  # a [[fitted]] entry names it: the default calibration's target
    measurement_sd: float  # relative
    excluded: str | None = None  # why an operational law keeps it out of any fit

    def published_units(self, mean: float, low: float, high: float) -> tuple[float, float, float]:
        """A simulated metric's mean and interval in the published unit (offset + scale x
        metric; a negative scale swaps the interval's ends)."""
        a, b = self.offset + self.scale * low, self.offset + self.scale * high
        return self.offset + self.scale * mean, min(a, b), max(a, b)


def rounding_sd(text: str) -> float:
    """Relative sd of a figure known only to its printed digits (uniform rounding error)."""
    text = text.strip()
    value = float(text)
    mantissa = text.lower().split("e")[0]
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0**-decimals / math.sqrt(3.0) / abs(value)


def declared_model_error(spec: ExperimentSpec) -> float | None:
    """`[experiment] model_error = {sd = 0.11, provenance = "..."}`: the model's relative error
    beyond noise, as known from elsewhere, for a fit whose own figures leave no degrees of
    freedom to estimate it (the estimate from the residuals is used whenever it exists)."""
    entry = spec.experiment.model_error
    return None if entry is None else entry.sd


def published_figures(
    spec: ExperimentSpec, records: list[dict[str, str]], source: Path
) -> list[Figure]:
    """Every figure with a published value, in table order."""
    name_column = model_column(spec)
    default = spec.experiment.measurement_error
    rejected = law_rejections(spec, records)
    law = spec.response_time_law
    response = law.response_column if law is not None else None
    out = []
    for record in records:
        for wanted in figures_of(spec, record):
            column = wanted.column
            published = published_value(record, column)
            if published is None:
                continue
            declared = wanted.measurement_error
            if published == 0:
                raise ExperimentError(
                    f"{source}: {name_column}={record[name_column]} {column} is 0; errors are "
                    "relative, so a figure of 0 cannot be compared"
                )
            sd = declared or default or rounding_sd(record[column])
            out.append(
                Figure(
                    record=record,
                    column=column,
                    metric=wanted.metric,
                    scale=wanted.scale,
                    offset=wanted.offset,
                    published=published,
                    label=f"{name_column}={record[name_column]} {column}",
                    fitted=is_fitted(spec, record, column),
                    measurement_sd=sd,
                    excluded=rejected.get(id(record)) if column == response else None,
                )
            )
    return out


def law_rejections(spec: ExperimentSpec, records: list[dict[str, str]]) -> dict[int, str]:
    """Rows whose published R and X contradict the reference row's think time under the
    response-time law R = N/X - Z beyond what the figures' measurement errors allow.  A model
    obeys the law exactly; it keeps the reference's Z, so such a row's R cannot follow from its
    X: the R figure is reported, never fitted nor scored."""
    law = spec.response_time_law
    if law is None:
        return {}
    from sim.analytic.operational import implied_think

    default = spec.experiment.measurement_error
    users, unit = law.users, law.response_unit_s
    r_column, x_column = law.response_column, law.throughput_column
    name_column = model_column(spec)

    def implied(record):
        found = implied_think(
            f"{name_column}={record[name_column]}",
            users,
            record.get(r_column, ""),
            unit,
            record.get(x_column, ""),
        )
        if found is None or default is None:
            return found
        # a declared measurement error replaces the rounding tolerance (2 sd of each figure)
        x, r = float(record[x_column]), float(record[r_column]) * unit
        return type(found)(found.key, found.think_s, 2 * default * (users / x + r))

    reference = law.reference
    anchors = [r for r in records if all(r.get(k) == str(v) for k, v in reference.items())]
    anchor = implied(anchors[0]) if anchors else None
    if anchor is None:
        return {}
    out = {}
    for record in records:
        row = implied(record)
        if row is None or row.key == anchor.key:
            continue
        gap = abs(row.think_s - anchor.think_s)
        if gap > row.tolerance_s + anchor.tolerance_s:
            out[id(record)] = (
                f"response-time law: N/X - R = {row.think_s * 1000:.0f} ms against "
                f"{anchor.think_s * 1000:.0f} ms for {anchor.key} (tolerance "
                f"{(row.tolerance_s + anchor.tolerance_s) * 1000:.0f} ms): no one think time "
                "gives this R with this X"
            )
    return out


def noise_sd(low: float, high: float, replications: int) -> float:
    """The simulation noise of a mean as a normal sd: its 95 % Student-t half-width over the
    normal 97.5 % quantile.  Dividing by the t quantile instead would give the sample sd of a
    few replications, itself uncertain (2 degrees of freedom with 3 replications); the t
    half-width carries that uncertainty, so intervals built on it keep their level."""
    half = (high - low) / 2
    if replications < 2 or not math.isfinite(half):
        return 0.0
    return half / 1.959963984540054
