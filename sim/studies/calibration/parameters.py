"""The free parameters of a calibration: `[[calibrate]]` entries (a search range) and
`[[unknown]]` entries (a documented range the value lies in, with its provenance), each on a
unit scale u in [1, 2] (log of the value when the range is positive) on which the fit, the
finite differences and the parameter draws all work."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from sim.studies.experiment import ExperimentError, matches
from sim.studies.spec import ExperimentSpec, FreeSpec


class CalibrationError(ExperimentError):
    """A calibration that cannot be set up or run; the message names the entry and the fix."""


@dataclass(frozen=True)
class FreeParameter:
    path: str
    low: float
    high: float
    start: float
    log: bool
    when: dict = field(default_factory=dict)
    # "calibrate": a search range, fitted to the figures; "unknown": a documented range the
    # value lies in (the prior), fitted only as far as the figures pin it
    kind: str = "calibrate"
    provenance: str = ""
    # a count (StartServers, threads): the model takes whole numbers only, so every value
    # tried is rounded; the unit scale stays continuous for the fit's arithmetic
    whole: bool = False

    # A uniform over the range, centred on the unit scale; its Gaussian stand-in is the prior
    # of the linearised fit (sim.studies.calibration.linear).
    prior_mean = 1.5

    def to_unit(self, value: float) -> float:
        if self.log:
            return 1.0 + math.log(value / self.low) / math.log(self.high / self.low)
        return 1.0 + (value - self.low) / (self.high - self.low)

    def from_unit(self, u: float) -> float:
        u = min(max(float(u), 1.0), 2.0)
        if self.log:
            value = self.low * (self.high / self.low) ** (u - 1.0)
        else:
            value = self.low + (u - 1.0) * (self.high - self.low)
        # half up, not Python's half to even: a step of one must always move it by one
        return float(math.floor(value + 0.5)) if self.whole else value

    def min_unit_step(self) -> float:
        """The smallest step on the unit scale that moves a whole parameter by at least one
        anywhere in its range (0 for a continuous one): a finite difference shorter than that
        would round back to the same value and see no derivative at all."""
        if not self.whole:
            return 0.0
        if self.log:
            return math.log((self.low + 1.0) / self.low) / math.log(self.high / self.low)
        return 1.0 / (self.high - self.low)

    def applies(self, record: dict[str, str]) -> bool:
        return all(matches(record.get(k), v) for k, v in self.when.items())


def free_parameters(spec: ExperimentSpec, source: Path) -> list[FreeParameter]:
    """The `[[calibrate]]` parameters, then the `[[unknown]]` ones."""
    if not spec.calibrate and not spec.unknown:
        raise CalibrationError(
            f"{source}: no [[calibrate]] entries; add one per free parameter, e.g.\n"
            '  [[calibrate]]\n  parameter = "backends.0.demand.mean"\n  bounds = [0.001, 0.1]'
        )
    out = [_parameter(entry, "calibrate") for entry in spec.calibrate]
    out += [_parameter(entry, "unknown") for entry in spec.unknown]
    paths = [p.path for p in out]
    duplicated = {p for p in paths if paths.count(p) > 1}
    for p in duplicated:
        whens = [json.dumps(f.when, sort_keys=True) for f in out if f.path == p]
        if len(set(whens)) < len(whens):
            raise CalibrationError(
                f"{source}: parameter {p!r} is calibrated twice for the same rows; give each "
                "entry its own `when`"
            )
    return out


def _parameter(entry: FreeSpec, kind: str) -> FreeParameter:
    """One `[[calibrate]]` (`bounds`: where to search) or `[[unknown]]` (`range`: where the
    value is known to lie, with its `provenance`) entry, as sim.studies.spec validated it."""
    low, high = entry.limits
    log = entry.log
    start = entry.start
    if start is None:
        start = math.sqrt(low * high) if log else (low + high) / 2
    if entry.whole:
        start = float(math.floor(start + 0.5))
    return FreeParameter(
        entry.parameter, low, high, start, log, entry.when, kind, entry.provenance, entry.whole
    )
