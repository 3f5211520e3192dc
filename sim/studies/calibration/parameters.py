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
            return self.low * (self.high / self.low) ** (u - 1.0)
        return self.low + (u - 1.0) * (self.high - self.low)

    def applies(self, record: dict[str, str]) -> bool:
        return all(matches(record.get(k), v) for k, v in self.when.items())


def free_parameters(spec: dict, source: Path) -> list[FreeParameter]:
    """The `[[calibrate]]` parameters, then the `[[unknown]]` ones."""
    if not spec.get("calibrate") and not spec.get("unknown"):
        raise CalibrationError(
            f"{source}: no [[calibrate]] entries; add one per free parameter, e.g.\n"
            '  [[calibrate]]\n  parameter = "backends.0.demand.mean"\n  bounds = [0.001, 0.1]'
        )
    out = [
        _parameter(entry, f"{source}: calibrate[{i}]", "calibrate", "bounds")
        for i, entry in enumerate(spec.get("calibrate", []))
    ]
    out += [
        _parameter(entry, f"{source}: unknown[{i}]", "unknown", "range")
        for i, entry in enumerate(spec.get("unknown", []))
    ]
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


def _parameter(entry: dict, where: str, kind: str, range_key: str) -> FreeParameter:
    """One `[[calibrate]]` (`bounds`: where to search) or `[[unknown]]` (`range`: where the
    value is known to lie, with its `provenance`) entry."""
    path, bounds = entry.get("parameter"), entry.get(range_key)
    if not isinstance(path, str) or not path:
        raise CalibrationError(
            f"{where}: `parameter` must name a model number by its dotted path, "
            'e.g. "backends.0.demand.mean"'
        )
    if not (
        isinstance(bounds, list)
        and len(bounds) == 2
        and all(
            isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b)
            for b in bounds
        )
        and bounds[0] < bounds[1]
    ):
        raise CalibrationError(
            f"{where} ({path}): `{range_key}` must be [low, high] with low < high (finite "
            f"numbers), got {bounds!r}"
        )
    provenance = entry.get("provenance", "")
    if kind == "unknown" and not (isinstance(provenance, str) and provenance.strip()):
        raise CalibrationError(
            f"{where} ({path}): an unknown needs `provenance`, a sentence saying where its range "
            'comes from, e.g. provenance = "lighttpd 1.5 per-request CPU, 0.05-0.5 ms (strace '
            'counts of a proxied request)"'
        )
    low, high = float(bounds[0]), float(bounds[1])
    scale = entry.get("scale", "log" if low > 0 else "linear")
    if scale not in ("log", "linear"):
        raise CalibrationError(
            f'{where} ({path}): `scale` must be "log" or "linear", got {scale!r}'
        )
    if scale == "log" and low <= 0:
        raise CalibrationError(
            f'{where} ({path}): a log scale needs low > 0; use scale = "linear" or raise '
            "the lower bound"
        )
    start = entry.get("start", math.sqrt(low * high) if scale == "log" else (low + high) / 2)
    if isinstance(start, bool) or not isinstance(start, (int, float)):
        raise CalibrationError(f"{where} ({path}): `start` = {start!r} must be a number")
    start = float(start)
    if not low <= start <= high:
        raise CalibrationError(
            f"{where} ({path}): `start` = {start} is outside {range_key} [{low}, {high}]"
        )
    when = entry.get("when", {})
    if not isinstance(when, dict):
        raise CalibrationError(f"{where} ({path}): `when` must be a table of column = value(s)")
    return FreeParameter(path, low, high, start, scale == "log", when, kind, provenance)
