"""A calibration carried into new predictions: the fitted parameters and their uncertainty, read
from the document `tiersim calibrate EXPERIMENT --save FILE` (or `--json`) writes.

`tiersim run MODEL --calibration FILE` and `tiersim capacity ... --calibration FILE` set the
fitted values, then draw parameter points from the fit's Gaussian (its `posterior`, on each
parameter's unit scale) to propagate what the figures left uncertain.  A parameter fitted for
some rows only (`when`) has no meaning for another model and is left out, and said so; the
others keep their joint distribution (the marginal of the Gaussian).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim.files import FileProblem, read_text
from sim.studies.calibration.linear import model_error_quantile
from sim.studies.calibration.linearise import draw_units
from sim.studies.calibration.parameters import FreeParameter


class CalibrationFileError(ValueError):
    """A calibration document that cannot be used; the message names the file, the field and
    the fix."""


@dataclass(frozen=True)
class Alternative:
    """A `[[choose]]` candidate the figures did not rule out: its settings, its weight (its share
    of the draws: exp(-cost / 2) normalised over the candidates, the fit's likelihood) and its
    own fit's Gaussian over the same parameters."""

    chosen: tuple[str, ...]
    weight: float
    mean: np.ndarray
    cov: np.ndarray
    conditioned: np.ndarray | None = None  # its own fit's conditioned draws (`Calibrated`)
    sequence: np.ndarray | None = None  # their places in its Gaussian's sequence (`Calibrated`)


@dataclass(frozen=True)
class FittedFigure:
    """A figure the calibration was fitted to (`rows[]` with `fitted`): the run's overrides
    (its load level, its node count), the metric, and the published figure's relative
    measurement sd (None when the fit saved none): what a new measurement of the same kind
    would be known to."""

    overrides: tuple[str, ...]
    metric: str
    measurement_sd: float | None


@dataclass(frozen=True)
class Point:
    """One draw: the overrides that run it, its parameters on the unit scale, the structure it
    belongs to (a candidate's settings, empty without `[[choose]]`) and a standard-normal
    quantile for the model's error at this draw (stratified over the draws)."""

    overrides: list[str]
    units: np.ndarray
    values: np.ndarray
    structure: tuple[str, ...]
    model_error_z: float


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
    # the degrees of freedom it was estimated from, also of an estimate of zero (None: taken
    # as known, declared, or not estimable):
    # its quantiles are Student-t's (`linear.model_error_quantile`)
    model_error_dof: float | None = None
    # the fitted figures' mean known noise (relative sd), estimated together with the model
    # error: its share of an interval is as uncertain as the model error's
    residual_noise_sd: float = 0.0
    chosen: tuple[str, ...] = ()  # [[choose]]'s chosen settings (e.g. backends.0.cores=1)
    # the settings every row of the experiment was run with (its think time, threads, the
    # shape of a wait): the values were fitted with them
    settings: tuple[str, ...] = ()
    # the Sobol seed of the parameter draws: the calibration's own (`[experiment] seed`), so
    # that a run at a calibration draws the same points its intervals were made of
    draw_seed: int | None = None
    # the other [[choose]] candidates the figures did not rule out, and the chosen one's weight
    alternatives: tuple[Alternative, ...] = ()
    weight: float = 1.0
    # what the fitted figures could not tell: combinations they fix only together, parameters
    # they do not pin (carried over their ranges), and what would separate them
    caveats: tuple[str, ...] = ()
    # the figures it was fitted to, with their runs' overrides (none in a document from before
    # the rows were saved): `capacity --what-next` finds the fitted levels and node count there
    fitted: tuple[FittedFigure, ...] = ()
    # the fit's first draws, each conditioned on its unknowns (`conditioned`: its calibrated
    # parameters moved until its fitted figures are where the Gaussian places them); the
    # draws are these first, then the Gaussian's own (None: a document from before them)
    conditioned: np.ndarray | None = None
    # each conditioned draw's place in the Gaussian's sequence: the places between two are
    # draws the fitted figures ruled out (`calibration.screen`; None: none were screened, or
    # a document from before the screen)
    sequence: np.ndarray | None = None

    def overrides(self, values: tuple[float, ...] | np.ndarray | None = None) -> list[str]:
        """`--set` overrides for `values` (default the fitted ones), after the experiment's
        settings and [[choose]]'s chosen ones, which the values were fitted with."""
        chosen = self.values if values is None else tuple(float(v) for v in values)
        return [
            *self.settings,
            *self.chosen,
            *(f"{p.path}={v!r}" for p, v in zip(self.parameters, chosen)),
        ]

    def draws(self, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """`count` parameter points from the fit's Gaussian: (unit-scale points, values); from
        the calibration's own draw seed when it has one, else from `seed`; the conditioned
        ones first."""
        units = _units(
            self.mean,
            self.cov,
            self.conditioned,
            count,
            seed if self.draw_seed is None else self.draw_seed,
            self.sequence,
        )
        values = np.array(
            [[p.from_unit(float(u)) for p, u in zip(self.parameters, row)] for row in units]
        )
        return units, values

    def points(self, count: int, seed: int) -> list[Point]:
        """`count` draws over the structures the figures left open, each structure's share of
        them by its weight (largest remainder; the chosen one first, drawn as `draws` draws
        it), and within each from that structure's own fit.  Each point also gets a model-error
        quantile, stratified over the draws and shuffled by `seed`, so that M draws hold the
        model's error as evenly as they hold the parameters."""
        structures = [
            (self.chosen, self.weight, self.mean, self.cov, self.conditioned, self.sequence)
        ] + [
            (a.chosen, a.weight, a.mean, a.cov, a.conditioned, a.sequence)
            for a in self.alternatives
        ]
        counts = _shares(count, [s[1] for s in structures])
        base = seed if self.draw_seed is None else self.draw_seed
        rng = np.random.default_rng(base)
        z = [
            model_error_quantile(float(u), self.model_error_dof)
            for u in (rng.permutation(count) + 0.5) / count
        ]
        out: list[Point] = []
        for k, ((chosen, _, mean, cov, conditioned, sequence), n) in enumerate(
            zip(structures, counts)
        ):
            if n == 0:
                continue
            # a candidate's conditioned points are its own fit's (drawn from the experiment's
            # seed); past them, its Gaussian's from this structure's seed
            units = _units(mean, cov, conditioned, n, base + k, sequence)
            for row in units:
                values = np.array([p.from_unit(float(u)) for p, u in zip(self.parameters, row)])
                overrides = [
                    *self.settings,
                    *chosen,
                    *(f"{p.path}={float(v)!r}" for p, v in zip(self.parameters, values)),
                ]
                out.append(Point(overrides, row, values, chosen, float(z[len(out)])))
        return out

    def screened(self, count: int) -> int:
        """How many draws the fitted figures ruled out ahead of the first `count` (each
        structure's share of them, as `points` draws them): replaced by the next of their
        sequence when the calibration was saved."""
        structures = [(self.weight, self.conditioned, self.sequence)] + [
            (a.weight, a.conditioned, a.sequence) for a in self.alternatives
        ]
        total = 0
        for (_, conditioned, sequence), n in zip(
            structures, _shares(count, [s[0] for s in structures])
        ):
            if conditioned is None or sequence is None or n == 0:
                continue
            kept = min(n, len(sequence))
            total += int(sequence[kept - 1]) + 1 - kept
        return total

    @property
    def structures(self) -> str:
        """The structures the draws cover, with their weights ("" without alternatives)."""
        if not self.alternatives:
            return ""
        parts = [(self.chosen, self.weight)] + [(a.chosen, a.weight) for a in self.alternatives]
        return "; ".join(f"{' '.join(c)} ({w:.0%})" for c, w in parts)

    @property
    def names(self) -> list[str]:
        return [p.path for p in self.parameters]

    def describe(self) -> str:
        fitted = ", ".join(f"{p.path} = {v:.6g}" for p, v in zip(self.parameters, self.values))
        text = f"calibration {self.source} ({self.experiment}): {fitted}"
        if self.chosen:
            text += f" (chosen: {', '.join(self.chosen)})"
        if self.settings:
            text += f"; with the experiment's settings: {', '.join(self.settings)}"
        if self.left_out:
            text += f"; not applied (fitted for some rows only): {', '.join(self.left_out)}"
        for caveat in self.caveats:
            text += f"\n  the figures cannot tell: {caveat}"
        if self.alternatives:
            text += (
                f"\n  structures the figures left open, drawn by weight: {self.structures} "
                "(a load level past the knee would decide)"
            )
        return text


def _units(
    mean: np.ndarray,
    cov: np.ndarray,
    conditioned: np.ndarray | None,
    count: int,
    seed: int,
    sequence: np.ndarray | None = None,
) -> np.ndarray:
    """`count` unit-scale draws: the conditioned ones first, then the Gaussian's own (the same
    Sobol' sequence, so draw m is the same point either way until it is conditioned), from the
    place past the last conditioned one (`sequence`: past the draws screened among them)."""
    if conditioned is None:
        return draw_units(mean, cov, count, seed)
    kept = min(count, len(conditioned))
    if kept == count:
        return conditioned[:count]
    start = len(conditioned) if sequence is None else int(sequence[-1]) + 1
    units = draw_units(mean, cov, start + count - kept, seed)
    return np.vstack([conditioned[:kept], units[start:]])


def saved_model_error_dof(model: dict) -> float | None:
    """The degrees of freedom a saved fit's model error (`uncertainty.model_error`) was
    estimated from (also when the estimate is zero); None when it was declared or could not
    be estimated."""
    dof = model.get("degrees_of_freedom")
    if not model.get("estimated") or model.get("declared"):
        return None
    if isinstance(dof, bool) or not isinstance(dof, (int, float)) or not dof > 0:
        return None
    return float(dof)


def load_calibration(path: str | Path) -> Calibrated:
    """Read and check a calibration document."""
    path = Path(path)
    where = str(path)
    fix = "write one with `tiersim calibrate EXPERIMENT --save FILE`"
    if not path.exists() and not path.is_symlink():
        raise CalibrationFileError(f"--calibration {where}: no such file ({fix})")
    try:
        # a regular file of bounded size: a device or a pipe is refused, not read forever
        text = read_text(path, "calibration")
    except FileProblem as exc:
        raise CalibrationFileError(f"--calibration {exc} ({fix})") from None
    try:
        document = json.loads(text)
    except RecursionError:
        # past the depth Python's decoder follows (about a thousand brackets): no calibration
        # document nests more than a few levels
        raise CalibrationFileError(
            f"--calibration {where}: JSON nested a thousand levels deep or more, not a "
            f"calibration document; {fix}"
        ) from None
    except ValueError as exc:
        raise CalibrationFileError(
            f"--calibration {where}: not a JSON document ({exc}); {fix}"
        ) from None
    return from_document(document, where)


def from_document(document, where: str) -> Calibrated:
    """A calibration document (as `tiersim calibrate --json` prints it) checked and read; `where`
    names it in errors."""
    fix = "write one with `tiersim calibrate EXPERIMENT --save FILE`"
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
    mean, cov = _gaussian(posterior, len(entries), where, "uncertainty.posterior")
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
        model_error_dof=saved_model_error_dof(model) if isinstance(model, dict) else None,
        residual_noise_sd=_residual_noise_sd(model, where),
        left_out=tuple(left_out),
        chosen=_chosen(document, where),
        settings=_settings(document, where),
        draw_seed=_draw_seed(posterior, where),
        alternatives=_alternatives(document, where, index, len(entries)),
        weight=_chosen_weight(document),
        caveats=_caveats(document, found),
        fitted=_fitted(document, where),
        conditioned=_conditioned(posterior, where, "uncertainty.posterior", index, len(entries)),
        sequence=_sequence(posterior, where, "uncertainty.posterior"),
    )


def _conditioned(
    posterior: dict, where: str, field: str, index: np.ndarray, p: int
) -> np.ndarray | None:
    """`conditioned.draws` of a posterior, the kept parameters' columns (None when absent: a
    document from before the draws were conditioned, or a fit without unknowns)."""
    found = posterior.get("conditioned")
    if found is None:
        return None
    draws = found.get("draws") if isinstance(found, dict) else None
    array = _array(
        draws,
        (len(draws) if isinstance(draws, list) else 0, p),
        where,
        f"{field}.conditioned.draws",
    )
    if len(array) == 0 or np.any((array < 1.0) | (array > 2.0)):
        raise CalibrationFileError(
            f"--calibration {where}: {field}.conditioned.draws must be points on the unit "
            "scale, within [1, 2]; write the file again with `tiersim calibrate EXPERIMENT "
            "--save FILE`"
        )
    return array[:, index]


def _sequence(posterior: dict, where: str, field: str) -> np.ndarray | None:
    """`conditioned.sequence` of a posterior: each draw's place in the Gaussian's sequence,
    increasing from 0, one a draw (None when absent: a document from before the screen)."""
    found = posterior.get("conditioned")
    if not isinstance(found, dict) or found.get("sequence") is None:
        return None
    sequence, draws = found["sequence"], found.get("draws")
    whole = isinstance(sequence, list) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in sequence
    )
    if (
        not whole
        or not isinstance(draws, list)
        or len(sequence) != len(draws)
        or any(b <= a for a, b in itertools.pairwise(sequence))
        or (sequence and sequence[0] < 0)
    ):
        raise CalibrationFileError(
            f"--calibration {where}: {field}.conditioned.sequence must be increasing whole "
            "numbers from 0, one for each of conditioned.draws; write the file again with "
            "`tiersim calibrate EXPERIMENT --save FILE`"
        )
    return np.array(sequence, dtype=int)


def _fitted(document: dict, where: str) -> tuple[FittedFigure, ...]:
    """The fitted rows of `rows` (absent in an older document: none)."""
    rows = document.get("rows") or []
    fix = "write the file again with `tiersim calibrate EXPERIMENT --save FILE`"
    if not isinstance(rows, list):
        raise CalibrationFileError(f"--calibration {where}: `rows` must be a list; {fix}")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not row.get("fitted"):
            continue
        overrides, metric, sd = (
            row.get("overrides", []),
            row.get("metric", ""),
            row.get("sd_measurement"),
        )
        if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
            raise CalibrationFileError(
                f"--calibration {where}: rows[{i}].overrides must be a list of PATH=VALUE; {fix}"
            )
        if sd is not None and (
            isinstance(sd, bool)
            or not isinstance(sd, (int, float))
            or not math.isfinite(sd)
            or sd < 0
        ):
            raise CalibrationFileError(
                f"--calibration {where}: rows[{i}].sd_measurement = {sd!r} must be a number "
                f">= 0 or null; {fix}"
            )
        out.append(FittedFigure(tuple(overrides), str(metric), None if sd is None else float(sd)))
    return tuple(out)


def _residual_noise_sd(model: object, where: str) -> float:
    """`uncertainty.model_error.noise_sd`; 0 in a fit saved before it was kept."""
    sd = model.get("noise_sd", 0.0) if isinstance(model, dict) else 0.0
    if isinstance(sd, bool) or not isinstance(sd, (int, float)) or not math.isfinite(sd) or sd < 0:
        raise CalibrationFileError(
            f"--calibration {where}: uncertainty.model_error.noise_sd = {sd!r} must be a "
            "number >= 0 (or absent)"
        )
    return float(sd)


def _caveats(document: dict, found: dict) -> tuple[str, ...]:
    """The fit's own sentences on what its figures do not determine, and each parameter they
    leave unpinned with the provenance of the range it is carried over."""
    out = [str(x) for x in found.get("not_identified") or [] if isinstance(x, str)]
    for entry in document["parameters"]:
        if isinstance(entry, dict) and entry.get("pinned") is False:
            why = f" ({entry['provenance']})" if entry.get("provenance") else ""
            out.append(
                f"{entry['parameter']} is not pinned: carried over its range "
                f"[{entry.get('low'):.4g}, {entry.get('high'):.4g}]{why}"
            )
    return tuple(out)


def _shares(count: int, weights: list[float]) -> list[int]:
    """`count` split by `weights` (largest remainder; ties to the earlier, the chosen first)."""
    total = sum(weights)
    exact = [count * w / total for w in weights]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in order[: count - sum(counts)]:
        counts[i] += 1
    return counts


def _chosen_weight(document: dict) -> float:
    for choice in document.get("choices") or []:
        if isinstance(choice, dict) and choice.get("chosen"):
            weight = choice.get("weight", 1.0)
            return float(weight) if isinstance(weight, (int, float)) and weight > 0 else 1.0
    return 1.0


def _alternatives(document: dict, where: str, index: np.ndarray, p: int) -> tuple[Alternative, ...]:
    """The candidates `tiersim calibrate` kept beside the chosen one (a `weight` and their own
    `posterior`); none in a document from before they were saved."""
    out = []
    for i, choice in enumerate(document.get("choices") or []):
        if not isinstance(choice, dict) or choice.get("chosen") or not choice.get("weight"):
            continue
        field = f"choices[{i}]"
        posterior = choice.get("posterior")
        if not isinstance(posterior, dict):
            raise CalibrationFileError(
                f"--calibration {where}: {field} has a weight but no `posterior`; write the "
                "file again with `tiersim calibrate EXPERIMENT --save FILE`"
            )
        mean, cov = _gaussian(posterior, p, where, f"{field}.posterior")
        out.append(
            Alternative(
                tuple(str(x) for x in choice.get("set", [])),
                float(choice["weight"]),
                mean[index],
                cov[np.ix_(index, index)],
                _conditioned(posterior, where, f"{field}.posterior", index, p),
                _sequence(posterior, where, f"{field}.posterior"),
            )
        )
    return tuple(out)


def _draw_seed(posterior: dict, where: str) -> int | None:
    seed = posterior.get("seed")
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise CalibrationFileError(
            f"--calibration {where}: uncertainty.posterior.seed = {seed!r} must be a whole "
            "number >= 0; write the file again with `tiersim calibrate EXPERIMENT --save FILE`"
        )
    return seed


def _settings(document: dict, where: str) -> tuple[str, ...]:
    """The experiment's settings shared by every row (none in a document from before they
    were saved)."""
    found = document.get("settings") or []
    if not isinstance(found, list) or not all(isinstance(s, str) and "=" in s for s in found):
        raise CalibrationFileError(
            f"--calibration {where}: `settings` must be a list of PATH=VALUE overrides; write "
            "the file again with `tiersim calibrate EXPERIMENT --save FILE`"
        )
    return tuple(found)


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


def _gaussian(posterior: dict, p: int, where: str, field: str) -> tuple[np.ndarray, np.ndarray]:
    """A posterior's mean and covariance, checked: the mean on the unit scale (the fit's values
    lie within their ranges, [1, 2]) and the covariance symmetric and positive semi-definite
    (a Gaussian's; the draws factor it), so that an edited file is refused by name rather than
    drawn from wrongly or failing inside the draws."""
    fix = "write the file again with `tiersim calibrate EXPERIMENT --save FILE`"
    mean = _array(posterior.get("mean"), (p,), where, f"{field}.mean")
    cov = _array(posterior.get("cov"), (p, p), where, f"{field}.cov")
    if np.any((mean < 1.0 - 1e-9) | (mean > 2.0 + 1e-9)):
        raise CalibrationFileError(
            f"--calibration {where}: {field}.mean must be points on the unit scale, within "
            f"[1, 2] (the fitted values inside their ranges); {fix}"
        )
    scale = max(1.0, float(np.max(np.abs(cov)))) if p else 1.0
    if p and (
        not np.allclose(cov, cov.T, rtol=0.0, atol=1e-12 * scale)
        or float(np.min(np.linalg.eigvalsh((cov + cov.T) / 2))) < -1e-9 * scale
    ):
        raise CalibrationFileError(
            f"--calibration {where}: {field}.cov is not a covariance (symmetric, positive "
            f"semi-definite); {fix}"
        )
    return mean, cov


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
    if scale == "log" and numbers["low"] <= 0:
        raise CalibrationFileError(
            f"--calibration {where}: {field} has scale log and low = {numbers['low']}: a log "
            "scale needs low > 0 (give a positive low, or scale linear)"
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
        bool(entry.get("whole", False)),
    )
    return parameter, numbers["value"]
