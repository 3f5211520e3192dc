"""The sweep file: a base model, fixed overrides, factors, a design, replications and the
metrics to keep.  Validated once, here; every error names the field and the fix.

    [sweep]
    base = "../../models/demo.toml"     # relative to this file
    set = ["run.duration_s=120"]        # fixed overrides, the `--set` syntax
    design = "grid"                     # grid | zip | lhs | sobol
    replications = 3                    # default: the model's run.replications
    seed = 1
    metrics = ["throughput", "response.mean", "p95"]

    [factors]
    "clients.users" = [100, 200, 300]            # grid / zip: the values
    "backends.0.threads" = { low = 10, high = 200, integer = true }   # lhs / sobol: a range

Factor names are the dotted parameter paths of the model file and `--set`.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sim.files import FileProblem, read_toml
from sim.model.load import ModelError, load_model
from sim.studies.calibration.saved import Calibrated
from sim.studies.capacity.slo import SloError, parse_slo
from sim.studies.metrics import metric_name

MAX_POINTS = 1_000_000  # lhs and sobol's sweep.points
# a grid's product of the factors' values, counted before it is expanded (a few lines of
# factors can ask 10^12 points): 100,000 points expand in about 2 s and 60 MB
MAX_GRID_POINTS = 100_000


class SweepError(ValueError):
    """A sweep file that cannot be used, explained for a person."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Range(_Strict):
    """A continuous (or whole-number) range for a space-filling design."""

    low: float
    high: float
    integer: bool = Field(False, description="round to whole numbers (users, threads, nodes)")
    scale: Literal["linear", "log"] = Field(
        "linear", description="log: spread evenly over orders of magnitude"
    )

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low:g}) must be below high ({self.high:g})")
        if self.scale == "log" and self.low <= 0:
            raise ValueError("a log scale needs low > 0")
        return self


class Sweep(_Strict):
    name: str = Field("sweep", description="shown in reports")
    description: str = ""
    base: str = Field(..., description="base model file, relative to the sweep file")
    set: list[str] = Field(
        default_factory=list, description="fixed overrides PATH=VALUE for every point"
    )
    design: Literal["grid", "zip", "lhs", "sobol"] = "grid"
    points: int | None = Field(
        None, ge=1, le=MAX_POINTS, description="number of points (lhs, sobol)"
    )
    replications: int | None = Field(
        None, ge=1, le=10_000, description="per point; default run.replications"
    )
    seed: int = Field(1, ge=0, lt=2**63, description="the sweep's root seed")
    random_numbers: Literal["independent", "common"] = Field(
        "independent",
        description="independent: a seed per point from the sweep seed and the point's values; "
        "common: the sweep seed at every point (common random numbers, sharper comparisons)",
    )
    metrics: list[str] = Field(
        default_factory=lambda: ["throughput", "response.mean", "response.p95"],
        min_length=1,
        description="metrics to keep (mean and interval of each)",
    )
    error_budget: float = Field(
        0.01,
        ge=0,
        lt=1,
        description="the share of requests that may fail (refused, errors, timeouts) at a point "
        "that meets an SLO: `tiersim capacity` on this file judges with it, and the report marks "
        "the points beyond it",
    )
    slo: str | None = Field(
        None,
        description="with `cheapest`: the objective, e.g. 'p95<0.5'; the sweep then names the "
        "cheapest point meeting it on its interval, its failed share within error_budget",
    )
    cheapest: str | None = Field(
        None,
        description="with `slo`: the cost metric to minimise, e.g. 'web.autoscale.node_seconds' "
        "(an autoscaled group's node-seconds)",
    )
    calibration: str | None = Field(
        None,
        description="a calibration file (`tiersim calibrate EXPERIMENT --save FILE`, relative to "
        "the sweep file): every point runs at its fitted values (a factor's value wins) and "
        "adds each metric's 90 % prediction interval over its parameters (`METRIC.pi_low`, "
        "`METRIC.pi_high`)",
    )
    draws: int = Field(8, ge=2, le=4096, description="with calibration: parameter draws per point")
    draw_replications: int = Field(
        2, ge=2, le=10_000, description="with calibration: replications per draw"
    )

    @model_validator(mode="after")
    def _objective(self) -> Sweep:
        if (self.slo is None) != (self.cheapest is None):
            given, missing = ("slo", "cheapest") if self.cheapest is None else ("cheapest", "slo")
            raise ValueError(
                f"sweep.{given} needs sweep.{missing}: the cheapest point (cheapest = a cost "
                "metric, e.g. 'web.autoscale.node_seconds') that meets the slo (e.g. 'p95<0.5')"
            )
        if self.slo is not None:
            try:
                parse_slo(self.slo)
            except SloError as exc:
                raise ValueError(str(exc).replace("--slo", "sweep.slo =", 1)) from None
        return self

    def objective_metrics(self) -> list[str]:
        """The SLO's metric and the cost, kept at every point beside `metrics`."""
        if self.slo is None or self.cheapest is None:
            return []
        return [parse_slo(self.slo).metric, metric_name(self.cheapest)]


class SweepFile(_Strict):
    sweep: Sweep
    factors: dict[str, list[Any] | Range] = Field(..., min_length=1)

    @model_validator(mode="after")
    def _design_fits_factors(self) -> SweepFile:
        design = self.sweep.design
        lists = {p: v for p, v in self.factors.items() if isinstance(v, list)}
        ranges = [p for p, v in self.factors.items() if isinstance(v, Range)]
        for path, values in lists.items():
            if not values:
                raise ValueError(f"factors.{path!r} has no values; give at least one")
        if design in ("grid", "zip"):
            if ranges:
                raise ValueError(
                    f"design = {design!r} takes lists of values, but {', '.join(ranges)} "
                    "is a range; give a list, or use design = 'lhs' / 'sobol'"
                )
            if self.sweep.points is not None:
                raise ValueError(
                    f"sweep.points is for lhs/sobol; a {design} has as many points as its values give"
                )
            if design == "zip" and len({len(v) for v in lists.values()}) > 1:
                lengths = ", ".join(f"{p}: {len(v)}" for p, v in lists.items())
                raise ValueError(
                    f"design = 'zip' needs lists of one length ({lengths}); or use design = 'grid'"
                )
        else:
            if lists:
                raise ValueError(
                    f"design = {design!r} takes ranges {{low = .., high = ..}}, but {', '.join(lists)} "
                    "is a list; give a range, or use design = 'grid'"
                )
            if self.sweep.points is None:
                raise ValueError(
                    f"design = {design!r} needs sweep.points (how many points to draw)"
                )
            points = self.sweep.points
            if design == "sobol" and points & (points - 1):
                lower = 1 << (points.bit_length() - 1)
                raise ValueError(
                    f"a Sobol design keeps its balance only with a power of two points; "
                    f"set sweep.points = {lower} or {lower * 2} (not {points})"
                )
        return self


@dataclass(frozen=True)
class SweepPlan:
    """A validated sweep: the definition plus the base model's raw data."""

    source: Path
    spec: SweepFile
    base_path: Path
    base_raw: dict[str, Any]
    metrics: tuple[str, ...] = field(default=())
    calibrated: Calibrated | None = None

    @property
    def factor_paths(self) -> list[str]:
        return list(self.spec.factors)

    def fingerprint(self, point_ids: list[str]) -> str:
        """Identity of everything that decides the results: refuse to mix two sweeps in one store."""
        sweep = self.spec.sweep
        definition = {
            "base": self.base_raw,
            "set": sweep.set,
            "design": sweep.design,
            "points": point_ids,
            "replications": sweep.replications,
            "seed": sweep.seed,
            "random_numbers": sweep.random_numbers,
            "metrics": list(self.metrics),
        }
        if self.calibrated is not None:  # a new calibration is a new sweep
            definition["calibration"] = {
                "values": list(self.calibrated.values),
                "parameters": self.calibrated.names,
                "mean": self.calibrated.mean.tolist(),
                "cov": self.calibrated.cov.tolist(),
                "model_error_sd": self.calibrated.model_error_sd,
                "draws": sweep.draws,
                "draw_replications": sweep.draw_replications,
            }
        text = json.dumps(definition, sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:20]


def load_sweep(path: str | Path) -> SweepPlan:
    path = Path(path)
    raw = read_sweep_toml(path, "sweep file")
    if "sweep" not in raw and "clients" in raw:
        raise SweepError(
            f"{path}: this is a model file, not a sweep file; a sweep file has [sweep] and [factors]"
        )
    try:
        spec = SweepFile.model_validate(raw)
    except ValidationError as exc:
        raise SweepError(format_sweep_error(exc, str(path))) from None
    return plan_from(spec, source=path, base_path=(path.parent / spec.sweep.base))


def plan_from(spec: SweepFile, source: Path, base_path: Path) -> SweepPlan:
    """Check the base model, its fixed overrides and the factor paths against the model."""
    try:
        base = load_model(base_path, spec.sweep.set)
    except ModelError as exc:
        hint = (
            ""
            if base_path.is_file()
            else f" (sweep.base = {spec.sweep.base!r} is relative to {source.parent}/)"
        )
        raise SweepError(f"{source}: sweep.base/sweep.set: {exc}{hint}") from None
    if spec.sweep.design == "grid":
        count = math.prod(
            len(values) for values in spec.factors.values() if isinstance(values, list)
        )
        if count > MAX_GRID_POINTS:
            raise SweepError(
                f"{source}: factors: a grid of {count:,} points (the product of the factors' "
                f"values); expected at most {MAX_GRID_POINTS:,}: fewer values, or "
                'design = "lhs" with sweep.points'
            )
    dumped = base.model_dump()
    for factor in spec.factors:
        if not has_path(dumped, factor.split(".")):
            raise SweepError(
                f"{source}: factors.{factor!r}: the base model has no parameter {factor} "
                "(a dotted path as in --set, list items by index, e.g. backends.0.threads; `tiersim schema` lists them)"
            )
    objective = spec.sweep.objective_metrics()
    if objective:
        from sim.studies.metrics import metric_names

        known = metric_names(base)
        for name, metric in zip(("slo", "cheapest"), objective, strict=True):
            if metric not in known:
                raise SweepError(
                    f"{source}: sweep.{name}: the base model has no metric {metric!r}; "
                    "`tiersim run --json` lists its metrics (an autoscaled group's cost is "
                    "GROUP.autoscale.node_seconds)"
                )
    calibrated = None
    if spec.sweep.calibration is not None:
        from sim.studies.calibration.saved import CalibrationFileError, load_calibration

        try:
            calibrated = load_calibration(source.parent / spec.sweep.calibration)
        except CalibrationFileError as exc:
            raise SweepError(
                f"{source}: sweep.calibration: {str(exc).removeprefix('--calibration ')}"
            ) from None
    return SweepPlan(
        source=source,
        spec=spec,
        base_path=base_path,
        base_raw=read_sweep_toml(base_path, "model file"),
        metrics=tuple(
            dict.fromkeys(
                [*(metric_name(m) for m in spec.sweep.metrics), *spec.sweep.objective_metrics()]
            )
        ),
        calibrated=calibrated,
    )


def read_sweep_toml(path: Path, what: str) -> dict[str, Any]:
    """A sweep's (or a capacity search's) TOML file; a problem reading it is a SweepError."""
    try:
        return read_toml(path, what)
    except FileProblem as exc:
        raise SweepError(str(exc)) from None


def has_path(node: Any, keys: list[str]) -> bool:
    """Whether a model's data has the dotted path `keys` (list items by index)."""
    for key in keys:
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                return False
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return False
    return True


_FIXES = {
    "extra_forbidden": "unknown field (a sweep file has [sweep]: base, set, design, points, replications, seed, "
    "random_numbers, metrics, error_budget, slo, cheapest, calibration, draws, draw_replications, "
    "name, description; "
    "and [factors])",
    "missing": "required",
}


def format_sweep_error(exc: ValidationError, source: str) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        # A factor is "a list or a range": name the branch the user wrote, not both.
        loc = [str(p) for p in error["loc"]]
        value = error.get("input")
        if len(loc) >= 3 and loc[0] == "factors":
            if (loc[2] == "list[any]") != isinstance(value, list) and not (
                loc[2] == "Range" and isinstance(value, dict)
            ):
                continue
            loc = [loc[0], repr(loc[1]), *loc[3:]]
        location = ".".join(loc) or "(top level)"
        message = _FIXES.get(error["type"], error["msg"].removeprefix("Value error, "))
        shown = "" if error["type"] == "missing" or isinstance(value, dict) else f" = {value!r}"
        line = f"  {location}{shown}: {message}"
        if line not in problems:
            problems.append(line)
    count = len(problems)
    return "\n".join(
        [f"{source}: invalid sweep file ({count} problem{'s' if count != 1 else ''})", *problems]
    )
