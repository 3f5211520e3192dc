"""Service, think and inter-arrival time distributions, and their model-file spec.

Each distribution is a small immutable object with analytic `mean` and `variance` (so
tests and the analytic solver can use them), a vectorised `sample(rng, size)`, and a
`sampler(rng)` for the simulation's hot path that draws a block of values with NumPy and
serves them one by one.  A sampler owns its generator: two components never share one,
which keeps common random numbers intact.  All times are in seconds.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

# Random numbers are drawn in blocks of this many per stream (one NumPy call per block instead
# of one per draw).  Both engines draw the same numbers only because they use the same blocks:
# the compiled engine refills its tables block by block (`sim.engines.compiled.engine`).
BLOCK = 4096


def _block_sampler(draw: Callable[[int], np.ndarray], block: int) -> Callable[[], float]:
    buffer: list[float] = []
    pop = buffer.pop

    def sample() -> float:
        if not buffer:
            buffer.extend(draw(block).tolist()[::-1])
        return pop()

    return sample


class _Base:
    if TYPE_CHECKING:  # what every distribution provides (a field or a property)

        @property
        def mean(self) -> float: ...

        @property
        def variance(self) -> float: ...

        def sample(self, rng: np.random.Generator, size: int) -> np.ndarray: ...

    @property
    def scv(self) -> float:
        """Squared coefficient of variation, variance / mean^2."""
        return self.variance / self.mean**2 if self.mean > 0 else 0.0

    def sampler(self, rng: np.random.Generator, block: int = BLOCK) -> Callable[[], float]:
        """A zero-argument callable returning one draw per call; the sequence is exactly
        that of `sample(rng, block)` called repeatedly."""
        return _block_sampler(lambda n: self.sample(rng, n), block)


@dataclass(frozen=True)
class Exponential(_Base):
    mean: float

    @property
    def variance(self) -> float:
        return self.mean**2

    def sample(self, rng, size):
        return rng.exponential(self.mean, size)

    def scaled(self, factor: float) -> Exponential:
        return Exponential(self.mean * factor)

    def describe(self) -> str:
        return f"exponential(mean={self.mean:g} s)"


@dataclass(frozen=True)
class Deterministic(_Base):
    value: float

    @property
    def mean(self) -> float:
        return self.value

    @property
    def variance(self) -> float:
        return 0.0

    def sample(self, rng, size):
        return np.full(size, self.value)

    def sampler(self, rng, block: int = BLOCK):
        value = self.value
        return lambda: value

    def scaled(self, factor: float) -> Deterministic:
        return Deterministic(self.value * factor)

    def describe(self) -> str:
        return f"deterministic({self.value:g} s)"


@dataclass(frozen=True)
class Uniform(_Base):
    low: float
    high: float

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    @property
    def variance(self) -> float:
        return (self.high - self.low) ** 2 / 12

    def sample(self, rng, size):
        return rng.uniform(self.low, self.high, size)

    def scaled(self, factor: float) -> Uniform:
        return Uniform(self.low * factor, self.high * factor)

    def describe(self) -> str:
        return f"uniform({self.low:g}, {self.high:g} s)"


@dataclass(frozen=True)
class Gamma(_Base):
    """Gamma by mean and coefficient of variation: shape 1/cv^2, scale mean*cv^2."""

    mean: float
    cv: float

    @property
    def variance(self) -> float:
        return (self.mean * self.cv) ** 2

    def sample(self, rng, size):
        return rng.gamma(1.0 / self.cv**2, self.mean * self.cv**2, size)

    def scaled(self, factor: float) -> Gamma:
        return Gamma(self.mean * factor, self.cv)

    def describe(self) -> str:
        return f"gamma(mean={self.mean:g} s, cv={self.cv:g})"


@dataclass(frozen=True)
class Lognormal(_Base):
    """Lognormal by mean and cv: sigma^2 = ln(1 + cv^2), mu = ln(mean) - sigma^2 / 2."""

    mean: float
    cv: float

    @property
    def variance(self) -> float:
        return (self.mean * self.cv) ** 2

    def sample(self, rng, size):
        sigma2 = math.log1p(self.cv**2)
        return rng.lognormal(math.log(self.mean) - sigma2 / 2, math.sqrt(sigma2), size)

    def scaled(self, factor: float) -> Lognormal:
        return Lognormal(self.mean * factor, self.cv)

    def describe(self) -> str:
        return f"lognormal(mean={self.mean:g} s, cv={self.cv:g})"


@dataclass(frozen=True)
class HyperExponential(_Base):
    """Two-phase hyperexponential with balanced means (scv >= 1), for high-variance tests."""

    mean: float
    scv_target: float

    @property
    def _phases(self) -> tuple[float, float, float]:
        p = 0.5 * (1 + math.sqrt((self.scv_target - 1) / (self.scv_target + 1)))
        return p, self.mean / (2 * p), self.mean / (2 * (1 - p))

    @property
    def variance(self) -> float:
        return self.scv_target * self.mean**2

    def sample(self, rng, size):
        p, m1, m2 = self._phases
        first = rng.random(size) < p
        return np.where(first, rng.exponential(m1, size), rng.exponential(m2, size))

    def scaled(self, factor: float) -> HyperExponential:
        return HyperExponential(self.mean * factor, self.scv_target)

    def describe(self) -> str:
        return f"hyperexponential(mean={self.mean:g} s, scv={self.scv_target:g})"


@dataclass(frozen=True)
class Empirical(_Base):
    """Resampling, uniformly with replacement, from measured values."""

    samples: tuple[float, ...]

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples))

    @property
    def variance(self) -> float:
        return float(np.var(self.samples))

    def sample(self, rng, size):
        return np.asarray(self.samples)[rng.integers(0, len(self.samples), size)]

    def scaled(self, factor: float) -> Empirical:
        return Empirical(tuple(v * factor for v in self.samples))

    def describe(self) -> str:
        return f"empirical({len(self.samples)} values, mean={self.mean:g} s)"

    @staticmethod
    def from_csv(path: str | Path, column: str) -> Empirical:
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"CSV file {path} not found")
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or column not in reader.fieldnames:
                raise ValueError(
                    f"{path} has no column {column!r}; columns: {', '.join(reader.fieldnames or [])}"
                )
            values = []
            for row_number, row in enumerate(reader, start=2):
                text = (row[column] or "").strip()
                try:
                    value = float(text)
                except ValueError:
                    raise ValueError(
                        f"{path} row {row_number}: {column} = {text!r} is not a number"
                    ) from None
                if value < 0 or not math.isfinite(value):
                    raise ValueError(
                        f"{path} row {row_number}: {column} = {value} must be finite and >= 0"
                    )
                values.append(value)
        if not values:
            raise ValueError(f"{path}: column {column!r} has no values")
        return Empirical(tuple(values))


@dataclass(frozen=True)
class Shifted(_Base):
    """A fixed time every draw pays (`offset`: the network, a constant part of the work) plus a
    varying part: what a light load level's response times look like (`tiersim estimate
    --shape`, `sim.measurements.shape`)."""

    offset: float
    varying: Exponential | Gamma | Lognormal | HyperExponential

    @property
    def mean(self) -> float:
        return self.offset + self.varying.mean

    @property
    def variance(self) -> float:
        return self.varying.variance

    def sample(self, rng, size):
        return self.varying.sample(rng, size) + self.offset

    def scaled(self, factor: float) -> Shifted:
        return Shifted(self.offset * factor, self.varying.scaled(factor))

    def describe(self) -> str:
        return f"{self.offset:g} s + {self.varying.describe()}"


Distribution = (
    Exponential
    | Deterministic
    | Uniform
    | Gamma
    | Lognormal
    | HyperExponential
    | Empirical
    | Shifted
)


def shifted(offset: float, varying):
    """`varying` after a fixed `offset` [s]; the plain distribution when the offset is 0, so a
    spec without one draws exactly the numbers it always did."""
    return Shifted(offset, varying) if offset > 0 else varying


# --------------------------------------------------------------------------- model-file spec
class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    if TYPE_CHECKING:

        def build(self) -> Distribution: ...


OFFSET_DESCRIPTION = (
    "a fixed time every draw pays before the varying part [s] (the least response a load test "
    "measured: network, proxy, constant work; `tiersim estimate --shape`); `mean` and `cv` are "
    "the varying part's"
)


class ExponentialSpec(_Spec):
    dist: Literal["exponential"]
    mean: float = Field(..., ge=0, description="mean [s]")
    offset: float = Field(0.0, ge=0, description=OFFSET_DESCRIPTION)

    def build(self):
        if self.mean == 0:
            return Deterministic(self.offset)
        return shifted(self.offset, Exponential(self.mean))


class DeterministicSpec(_Spec):
    dist: Literal["deterministic"]
    value: float = Field(..., ge=0, description="constant time [s]")

    def build(self):
        return Deterministic(self.value)


class UniformSpec(_Spec):
    dist: Literal["uniform"]
    low: float = Field(..., ge=0, description="lower bound [s]")
    high: float = Field(..., ge=0, description="upper bound [s]")

    @model_validator(mode="after")
    def _ordered(self):
        if self.low > self.high:
            raise ValueError(f"uniform needs low <= high (low = {self.low}, high = {self.high})")
        return self

    def build(self):
        return Uniform(self.low, self.high)


class _MeanCvSpec(_Spec):
    """A shape given by its mean and coefficient of variation (gamma, lognormal)."""

    mean: float = Field(..., gt=0, description="mean [s]")
    cv: float = Field(
        ...,
        gt=0,
        le=100,
        description="coefficient of variation (std / mean); for cv = 0 use deterministic",
    )
    offset: float = Field(0.0, ge=0, description=OFFSET_DESCRIPTION)


class GammaSpec(_MeanCvSpec):
    dist: Literal["gamma"]

    def build(self):
        return shifted(self.offset, Gamma(self.mean, self.cv))


class LognormalSpec(_MeanCvSpec):
    dist: Literal["lognormal"]

    def build(self):
        return shifted(self.offset, Lognormal(self.mean, self.cv))


class HyperExponentialSpec(_Spec):
    dist: Literal["hyperexponential"]
    mean: float = Field(..., gt=0, description="mean [s]")
    scv: float = Field(..., ge=1, le=1e4, description="squared coefficient of variation (>= 1)")
    offset: float = Field(0.0, ge=0, description=OFFSET_DESCRIPTION)

    def build(self):
        return shifted(self.offset, HyperExponential(self.mean, self.scv))


class EmpiricalSpec(_Spec):
    dist: Literal["empirical"]
    samples: list[Annotated[float, Field(ge=0)]] | None = Field(
        None, description="measured values [s]"
    )
    csv: str | None = Field(None, description="CSV file (relative to the model file)")
    column: str | None = Field(None, description="column of the CSV file holding the values [s]")

    @model_validator(mode="after")
    def _one_source(self):
        if (self.samples is None) == (self.csv is None):
            raise ValueError("empirical needs exactly one of `samples` or `csv` (with `column`)")
        if self.csv is not None and not self.column:
            raise ValueError("empirical with `csv` needs `column`")
        if self.samples is not None and not self.samples:
            raise ValueError("empirical `samples` is empty")
        return self

    @field_validator("csv")
    @classmethod
    def _resolve(cls, value: str | None, info: ValidationInfo):
        if value is None:
            return value
        base = (info.context or {}).get("base_dir")
        path = Path(value)
        if not path.is_absolute() and base is not None:
            path = Path(base) / path
        return str(path)

    @model_validator(mode="after")
    def _readable(self):
        if self.csv is not None:
            # fail at validation, with the row named
            Empirical.from_csv(self.csv, cast(str, self.column))
        return self

    def build(self):
        if self.samples is not None:
            return Empirical(tuple(self.samples))
        return Empirical.from_csv(cast(str, self.csv), cast(str, self.column))  # validated


TaggedSpec = Annotated[
    ExponentialSpec
    | DeterministicSpec
    | UniformSpec
    | GammaSpec
    | LognormalSpec
    | HyperExponentialSpec
    | EmpiricalSpec,
    Field(discriminator="dist"),
]
# A bare non-negative number is shorthand for a deterministic time.
DistributionSpec = Annotated[float, Field(ge=0)] | TaggedSpec


def as_distribution(spec: Any) -> Distribution:
    """A distribution object from a spec, a bare number, or a distribution."""
    if isinstance(spec, (int, float)):
        return Deterministic(float(spec))
    if isinstance(spec, BaseModel):
        return cast(_Spec, spec).build()
    return spec
