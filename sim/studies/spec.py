"""The experiment file (`experiment.toml`) as typed tables; sim.studies.experiment reads and
validates it once, where the file is read.

    [experiment]            name, published (a CSV) or table (an imported measurement table), ...
    [models]                column = "COLUMN" and VALUE = "MODEL.toml" entries; or, on a table,
                            model = "MODEL.toml" (every run)
    [factors.COLUMN]        VALUE = ["path=value", ...] ("MODEL:VALUE" for one model, "*" for any)
    [[figures]]             column, metric, scale, offset, when, measurement_error, unit
    [[fitted]]              the row (column = value, ...) and optionally the figure fitted
    [[calibrate]]           parameter, bounds, start, scale, when
    [[unknown]]             parameter, range, provenance, start, scale, when
    [[choose]]              parameter, values (a table experiment's structural candidates)
    [response_time_law]     users, response_column, response_unit_s, throughput_column, reference

A key the file cannot have is an error, never ignored (extra="forbid", as in model files);
each field's description is the fix an error message gives (sim.studies.spec_errors).
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, field_validator, model_validator


def _selector(value: Any) -> Any:
    values = value if isinstance(value, list) else [value]
    if not values or not all(_is_cell(v) for v in values):
        raise ValueError(
            "must be a column's value (a string or a number) or a list of them, "
            'e.g. config = ["C1", "C2"]'
        )
    return value


def _cell(value: Any) -> Any:
    if not _is_cell(value):
        raise ValueError(
            'must be the row\'s value in that column (a string or a number), e.g. run = "users2"'
        )
    return value


def _is_cell(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _model_file(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError('must be a model file name (a string), e.g. "../../models/demo.toml"')
    return value


def _scale(value: Any) -> float:
    # Negative is meaningful: seed003's proxy %idle is 100 - 100 x utilisation.
    if not _is_cell(value) or isinstance(value, str) or not math.isfinite(value) or value == 0:
        raise ValueError(
            "must be a non-zero number (the published column's value per unit of the metric, "
            "e.g. 1000 for ms, or -100 with offset = 100 for a %idle)"
        )
    return float(value)


def _limits(value: Any) -> list[float]:
    if not (
        isinstance(value, list)
        and len(value) == 2
        and all(_is_cell(v) and not isinstance(v, str) and math.isfinite(v) for v in value)
        and value[0] < value[1]
    ):
        raise ValueError("must be [low, high] with low < high (finite numbers), e.g. [0.001, 0.1]")
    return [float(value[0]), float(value[1])]


# A `when` value or a [[fitted]] selector: compared with a row's cell as text.
Selector = Annotated[str | int | float | list[str | int | float], PlainValidator(_selector)]
Cell = Annotated[str | int | float, PlainValidator(_cell)]
ModelFile = Annotated[str, PlainValidator(_model_file)]
Limits = Annotated[list[float], PlainValidator(_limits)]  # [low, high]
RelativeSd = Annotated[float, Field(gt=0, lt=1)]
MEASUREMENT_ERROR = (
    "a relative standard deviation between 0 and 1, e.g. 0.03 for 3 %: what the source says "
    "about its repeatability, or a documented estimate"
)


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class DeclaredModelError(_Table):
    """`model_error = {sd = 0.11, provenance = "..."}`: the model's relative error beyond noise,
    as known from elsewhere, for a fit whose figures leave no freedom to estimate it."""

    sd: RelativeSd = Field(description="a relative standard deviation between 0 and 1")
    provenance: str = Field(
        description="say where the value comes from: a model error is an unknown carried as a "
        "range, not a number chosen to cover a figure"
    )

    @field_validator("provenance")
    @classmethod
    def _said(cls, value: str) -> str:
        if not value.strip():
            raise ValueError(
                "say where the value comes from: a model error is an unknown carried as a "
                "range, not a number chosen to cover a figure"
            )
        return value


class ExperimentSection(_Table):
    name: str | None = Field(None, description="the experiment's name (default: its folder's)")
    title: str = ""
    source: str = Field("", description="where the published figures come from")
    published: str | None = Field(None, description='the published CSV, e.g. "published.csv"')
    table: str | None = Field(
        None, description='an imported measurement table (tiersim import), e.g. "measured.csv"'
    )
    table_class: str = Field(
        "total", alias="class", description="the table's class whose rows are compared"
    )
    windows: Literal["pool", "each"] = Field(
        "pool", description='"pool": one row per run, "each": one row per window'
    )
    warmup_s: float = Field(
        0.0, ge=0, description="seconds at the start of every run to leave out (a number >= 0)"
    )
    value_column: str | None = Field(
        None, description="the CSV column each row is compared on, without [[figures]]"
    )
    metric: str | None = Field(
        None, description='the simulated metric value_column is compared to, e.g. "throughput"'
    )
    flag_column: str | None = Field(None, description="a published yes/no column")
    flag_metrics: list[str] = Field(
        default_factory=list, description="metrics whose being > 0 is flag_column's yes"
    )
    label_columns: list[str] | None = Field(
        None,
        description="the columns naming a row besides the model column (default: the factors')",
    )
    measurement_error: RelativeSd | None = Field(None, description=MEASUREMENT_ERROR)
    model_error: DeclaredModelError | None = Field(
        None, description='{sd = 0.1, provenance = "where it comes from"}'
    )
    seed: int = Field(20261123, ge=0, description="the parameter draws' seed")


class ModelsSection(_Table):
    """`column` names the CSV column whose value picks the model file (`files`); on an imported
    table, `model` is every run's model instead."""

    column: str | None = Field(
        None, description='the CSV column whose value picks the model, e.g. column = "backend"'
    )
    model: str | None = Field(
        None, description="on an imported table: every run's model file (instead of column)"
    )
    files: dict[str, ModelFile] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _entries(cls, data: Any) -> Any:
        if isinstance(data, dict) and "files" not in data:
            named = {k: v for k, v in data.items() if k in ("column", "model")}
            return {**named, "files": {k: v for k, v in data.items() if k not in named}}
        return data


class FigureSpec(_Table):
    """A published (or measured) column compared to a simulated metric: published = offset +
    scale x metric, on the rows `when` selects."""

    column: str = Field(description="a column of the published CSV (or of the table)")
    metric: str = Field(description='the simulated metric compared, e.g. "response.mean"')
    scale: Annotated[float, PlainValidator(_scale)] = 1.0
    offset: float = Field(0.0, description="published = offset + scale x metric")
    when: dict[str, Selector] = Field(
        default_factory=dict, description="the rows compared: column = value(s)"
    )
    measurement_error: RelativeSd | None = Field(None, description=MEASUREMENT_ERROR)
    unit: str | None = Field(None, description='the published column\'s unit, e.g. "ms"')


class FittedSpec(_Table):
    """A row (its column values) whose figure was used to fit a parameter: its error measures
    the fit, not a prediction.  Without `figure`, every figure of the row."""

    figure: str | None = Field(None, description="the [[figures]] column fitted")
    parameter: str = Field("", description="what the figure was used to fit (a note)")
    selectors: dict[str, Cell] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _row(cls, data: Any) -> Any:
        if isinstance(data, dict) and "selectors" not in data:
            named = {k: v for k, v in data.items() if k in ("figure", "parameter")}
            return {**named, "selectors": {k: v for k, v in data.items() if k not in named}}
        return data


class FreeSpec(_Table):
    """A free parameter of the calibration; `limits` is [[calibrate]]'s bounds (where to search)
    or [[unknown]]'s range (where the value is known to lie)."""

    parameter: str = Field(
        min_length=1,
        description='a model number by its dotted path, e.g. "backends.0.demand.mean"',
    )
    start: float | None = Field(None, description="where the search starts, inside the range")
    scale: Literal["log", "linear"] | None = Field(
        None, description='"log" (the default for a positive range) or "linear"'
    )
    provenance: str = Field("", description="a sentence saying where the range comes from")
    when: dict[str, Selector] = Field(
        default_factory=dict, description="the rows it applies to: column = value(s)"
    )
    whole: bool = Field(
        False,
        description="a count (children, threads, connections): every value the fit, its "
        "finite differences and its draws try is rounded to the nearest whole number",
    )

    LIMITS: ClassVar[str] = "bounds"

    @property
    def limits(self) -> tuple[float, float]:
        low, high = getattr(self, self.LIMITS)
        return low, high

    @property
    def log(self) -> bool:
        return (self.scale or ("log" if self.limits[0] > 0 else "linear")) == "log"

    @model_validator(mode="after")
    def _consistent(self) -> FreeSpec:
        low, high = self.limits
        key = self.LIMITS
        if self.scale == "log" and low <= 0:
            raise ValueError(
                f'{key}: a log scale needs low > 0; use scale = "linear" or raise the lower bound'
            )
        if self.start is not None and not low <= self.start <= high:
            raise ValueError(f"start = {self.start:g} is outside {key} [{low:g}, {high:g}]")
        if self.whole and not (float(low).is_integer() and float(high).is_integer()):
            raise ValueError(f"whole = true needs whole-number {key}; got [{low:g}, {high:g}]")
        return self


class CalibrateSpec(FreeSpec):
    bounds: Limits = Field(description="[low, high]: where to search")


class UnknownSpec(FreeSpec):
    LIMITS: ClassVar[str] = "range"
    range: Limits = Field(description="[low, high]: where the value is known to lie")
    provenance: str = Field(
        description="an unknown needs a sentence saying where its range comes from, e.g. "
        'provenance = "lighttpd 1.5 per-request CPU, 0.05-0.5 ms (strace counts)"'
    )

    @field_validator("provenance")
    @classmethod
    def _said(cls, value: str) -> str:
        if not value.strip():
            raise ValueError(
                "an unknown needs a sentence saying where its range comes from, e.g. "
                'provenance = "lighttpd 1.5 per-request CPU, 0.05-0.5 ms (strace counts)"'
            )
        return value


class ChooseSpec(_Table):
    parameter: str = Field(
        min_length=1, description='a model value by its dotted path, e.g. "backends.0.cores"'
    )
    values: list[str | int | float] = Field(
        min_length=1, description="the candidates, e.g. values = [1, 2, 4, 8]"
    )


class ResponseTimeLaw(_Table):
    """Published rows whose R and X disagree under R = N/X - Z with the reference row's Z."""

    users: int = Field(gt=0, description="N, the closed loop's users")
    response_column: str = Field(description="the column of R")
    response_unit_s: float = Field(1.0, gt=0, description="seconds per unit of R, e.g. 0.001")
    throughput_column: str = Field(description="the column of X")
    reference: dict[str, Cell] = Field(
        description='the row whose implied think time the model uses, e.g. {config = "C1"}'
    )


class ExperimentSpec(_Table):
    experiment: ExperimentSection = Field(
        description='[experiment] with published = "published.csv" (or table = "measured.csv")'
    )
    models: ModelsSection = Field(
        description='[models] with column = "..." and VALUE = "MODEL.toml" entries'
    )
    factors: dict[str, dict[str, list[str]]] = Field(
        default_factory=dict,
        description="[factors.COLUMN]: each value of the column -> its overrides, e.g. "
        'yes = ["clients.keep_alive=true"]',
    )
    figures: list[FigureSpec] = Field(default_factory=list, description="[[figures]] tables")
    fitted: list[FittedSpec] = Field(default_factory=list, description="[[fitted]] tables")
    calibrate: list[CalibrateSpec] = Field(default_factory=list, description="[[calibrate]] tables")
    unknown: list[UnknownSpec] = Field(default_factory=list, description="[[unknown]] tables")
    choose: list[ChooseSpec] = Field(default_factory=list, description="[[choose]] tables")
    response_time_law: ResponseTimeLaw | None = None

    @model_validator(mode="before")
    @classmethod
    def _table_metric(cls, data: Any) -> Any:
        """On a measurement table a figure's metric defaults to its column's name."""
        meta = data.get("experiment") if isinstance(data, dict) else None
        figures = data.get("figures") if isinstance(data, dict) else None
        if isinstance(meta, dict) and "table" in meta and isinstance(figures, list):
            figures = [
                {"metric": f["column"], **f} if isinstance(f, dict) and "column" in f else f
                for f in figures
            ]
            return {**data, "figures": figures}
        return data

    @property
    def on_table(self) -> bool:
        """An experiment on an imported measurement table (`[experiment] table = ...`)."""
        return self.experiment.table is not None

    def fingerprint_text(self) -> str:
        """The whole specification as canonical JSON (what calibration's cache keys on)."""
        return json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True)
