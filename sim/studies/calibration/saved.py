"""A calibration carried into new predictions: the fitted parameters and their uncertainty, read
from the document `tiersim calibrate EXPERIMENT --save FILE` (or `--json`) writes.

`tiersim run MODEL --calibration FILE` and `tiersim capacity ... --calibration FILE` set the
fitted values, then draw parameter points from the fit's Gaussian (its `posterior`, on each
parameter's unit scale) to propagate what the figures left uncertain.  A parameter fitted for
some rows only (`when`) has no meaning for another model and is left out, and said so; the
others keep their joint distribution (the marginal of the Gaussian).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim.studies.calibration.linearise import draw_units
from sim.studies.calibration.parameters import FreeParameter


class CalibrationFileError(ValueError):
    """A calibration document that cannot be used; the message names the file, the field and
    the fix."""


@dataclass(frozen=True)
class Calibrated:
    source: str
    experiment: str
    parameters: tuple[FreeParameter, ...]  # those that apply to any model (no `when`)
    values: tuple[float, ...]  # their fitted values
    mean: np.ndarray  # (p,) unit scale
    cov: np.ndarray  # (p, p)
    model_error_sd: float  # relative sd of the model's error beyond noise (0 if unknown)
    model_error_estimated: bool
    left_out: tuple[str, ...]  # row-specific parameters, not applied
    chosen: tuple[str, ...] = ()  # [[choose]]'s chosen settings (e.g. backends.0.cores=1)

    def overrides(self, values: tuple[float, ...] | np.ndarray | None = None) -> list[str]:
        """`--set` overrides for `values` (default the fitted ones), after [[choose]]'s
        chosen settings, which the values were fitted with."""
        chosen = self.values if values is None else tuple(float(v) for v in values)
        return [*self.chosen, *(f"{p.path}={v!r}" for p, v in zip(self.parameters, chosen))]

    def draws(self, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """`count` parameter points from the fit's Gaussian: (unit-scale points, values)."""
        units = draw_units(self.mean, self.cov, count, seed)
        values = np.array(
            [[p.from_unit(float(u)) for p, u in zip(self.parameters, row)] for row in units]
        )
        return units, values

    @property
    def names(self) -> list[str]:
        return [p.path for p in self.parameters]

    def describe(self) -> str:
        fitted = ", ".join(f"{p.path} = {v:.6g}" for p, v in zip(self.parameters, self.values))
        text = f"calibration {self.source} ({self.experiment}): {fitted}"
        if self.chosen:
            text += f" (chosen: {', '.join(self.chosen)})"
        if self.left_out:
            text += f"; not applied (fitted for some rows only): {', '.join(self.left_out)}"
        return text


def load_calibration(path: str | Path) -> Calibrated:
    """Read and check a calibration document."""
    path = Path(path)
    where = str(path)
    fix = "write one with `tiersim calibrate EXPERIMENT --save FILE`"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalibrationFileError(f"--calibration {where}: no such file ({fix})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CalibrationFileError(f"--calibration {where}: cannot be read ({exc})") from None
    except ValueError as exc:
        raise CalibrationFileError(
            f"--calibration {where}: not a JSON document ({exc}); {fix}"
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("parameters"), list):
        raise CalibrationFileError(
            f"--calibration {where}: no `parameters` list: not a calibration document ({fix})"
        )
    found = document.get("uncertainty")
    if not isinstance(found, dict) or not isinstance(found.get("posterior"), dict):
        raise CalibrationFileError(
            f"--calibration {where}: no `uncertainty.posterior`: the calibration was run "
            "without its uncertainty (--no-uncertainty) or by an older tiersim; rerun "
            "`tiersim calibrate EXPERIMENT --save FILE` without --no-uncertainty"
        )
    posterior = found["posterior"]
    entries = document["parameters"]
    mean = _array(posterior.get("mean"), (len(entries),), where, "uncertainty.posterior.mean")
    cov = _array(
        posterior.get("cov"), (len(entries), len(entries)), where, "uncertainty.posterior.cov"
    )
    keep, parameters, values, left_out = [], [], [], []
    for i, entry in enumerate(entries):
        parameter, value = _parameter(entry, where, i)
        if parameter.when:
            left_out.append(f"{parameter.path} (when {parameter.when})")
            continue
        keep.append(i)
        parameters.append(parameter)
        values.append(value)
    if not parameters:
        raise CalibrationFileError(
            f"--calibration {where}: every fitted parameter applies to some rows only (`when`), "
            "so none can be set on another model; calibrate parameters without `when`"
        )
    model = found.get("model_error", {})
    sd = model.get("sd", 0.0) if isinstance(model, dict) else 0.0
    if isinstance(sd, bool) or not isinstance(sd, (int, float)) or not math.isfinite(sd) or sd < 0:
        raise CalibrationFileError(
            f"--calibration {where}: uncertainty.model_error.sd = {sd!r} must be a number >= 0"
        )
    index = np.array(keep)
    return Calibrated(
        source=where,
        experiment=str(document.get("experiment", "?")),
        parameters=tuple(parameters),
        values=tuple(values),
        mean=mean[index],
        cov=cov[np.ix_(index, index)],
        model_error_sd=float(sd),
        model_error_estimated=bool(model.get("estimated", False))
        if isinstance(model, dict)
        else False,
        left_out=tuple(left_out),
        chosen=_chosen(document, where),
    )


def _chosen(document: dict, where: str) -> tuple[str, ...]:
    """The settings of the [[choose]] candidate the calibration kept (none without [[choose]])."""
    choices = document.get("choices") or []
    picked = [c for c in choices if isinstance(c, dict) and c.get("chosen")]
    if not choices:
        return ()
    if len(picked) != 1 or not all(isinstance(x, str) for x in picked[0].get("set", [])):
        raise CalibrationFileError(
            f"--calibration {where}: `choices` must mark exactly one candidate as chosen, with its "
            "`set` overrides; write the file again with `tiersim calibrate EXPERIMENT --save FILE`"
        )
    return tuple(picked[0]["set"])


def _array(value, shape: tuple[int, ...], where: str, field: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        array = np.empty(0)
    if array.shape != shape or not np.all(np.isfinite(array)):
        raise CalibrationFileError(
            f"--calibration {where}: {field} must be finite numbers of shape {shape} (one per "
            "parameter); the file was edited or cut short: write it again with "
            "`tiersim calibrate EXPERIMENT --save FILE`"
        )
    return array


def _parameter(entry, where: str, i: int) -> tuple[FreeParameter, float]:
    field = f"parameters[{i}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("parameter"), str):
        raise CalibrationFileError(f"--calibration {where}: {field} has no `parameter` path")
    numbers = {}
    for key in ("value", "low", "high"):
        v = entry.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise CalibrationFileError(
                f"--calibration {where}: {field}.{key} = {v!r} must be a finite number"
            )
        numbers[key] = float(v)
    scale = entry.get("scale", "log" if numbers["low"] > 0 else "linear")
    if scale not in ("log", "linear") or not numbers["low"] < numbers["high"]:
        raise CalibrationFileError(
            f"--calibration {where}: {field} needs low < high and scale log or linear "
            f"(got {numbers['low']}, {numbers['high']}, {scale!r})"
        )
    when = entry.get("when") or {}
    parameter = FreeParameter(
        entry["parameter"],
        numbers["low"],
        numbers["high"],
        numbers["value"],
        scale == "log",
        when if isinstance(when, dict) else {},
        str(entry.get("kind", "calibrate")),
        str(entry.get("provenance", "")),
    )
    return parameter, numbers["value"]
