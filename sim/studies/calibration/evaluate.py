"""One evaluation of a calibration: the fitted figures' rows simulated at a parameter vector
(each distinct run once, common random numbers), their residuals weighted as the fit weighs
them, and the cache of evaluations a rerun replays.

Every finished evaluation is appended to a cache file.  The fit is deterministic, so a rerun after
an interruption replays the cached evaluations at no cost and goes on from where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from sim.studies.calibration.figures import Figure, noise_sd
from sim.studies.calibration.parameters import CalibrationError, FreeParameter
from sim.studies.records import load_row_model, row_run, run_row
from sim.studies.spec import ExperimentSpec


class Evaluator:
    """Simulates the targets' rows at a parameter vector (once per distinct run), with a cache."""

    def __init__(
        self,
        folder: Path,
        spec: ExperimentSpec,
        parameters: list[FreeParameter],
        goals: list[Figure],
        replications: int | None,
        cache: Path | None,
        progress,
        map_=map,
    ) -> None:
        self.folder, self.spec, self.parameters, self.goals = folder, spec, parameters, goals
        self.map = map_  # builtin map, or a process pool's: the numbers are the same either way
        self.replications, self.cache, self.progress = replications, cache, progress
        self.fingerprint = fingerprint(folder, spec, goals, replications)
        self.known: dict[str, dict] = {}
        self.simulated = self.replayed = 0
        self.best: tuple[float, tuple[float, ...]] | None = None
        self.weight_noise_sd: np.ndarray | None = None
        if cache is not None:
            self._replay(cache)

    def _replay(self, cache: Path) -> None:
        """Read the cache's evaluations of this experiment; a line cut short by an interruption
        (or anything else that is not a record) is skipped."""
        from sim.files import FileProblem, read_json_lines

        try:
            entries = read_json_lines(cache, "calibration cache", max_bytes=2**30)
        except FileProblem as exc:
            raise CalibrationError(
                f"--cache {exc}; give another --cache, or --no-cache, or delete it to start again"
            ) from None
        for entry in entries:
            if (
                entry.get("fingerprint") == self.fingerprint
                and isinstance(entry.get("key"), str)
                and complete(entry, len(self.goals))
            ):
                self.known[entry["key"]] = entry

    def extra(self, values: tuple[float, ...], record: dict[str, str]) -> list[str]:
        return free_overrides(self.parameters, values, record)

    def recorded(self, values: tuple[float, ...]) -> dict:
        return self.known[json.dumps([repr(v) for v in values])]

    def __call__(self, values: tuple[float, ...]) -> dict:
        key = json.dumps([repr(v) for v in values])
        entry = self.known.get(key)
        if entry is not None and "noise_sd" in entry:
            self.replayed += 1
        else:
            entry = {
                "fingerprint": self.fingerprint,
                "key": key,
                "values": list(values),
                **self._simulate(values),
            }
            self.known[key] = entry
            self.simulated += 1
            if self.cache is not None:
                append_line(self.cache, json.dumps(entry))
        # The best point is judged as the fit judges it (weighted by each figure's sd, priors
        # included); progress shows the plain sum of squared relative errors, which reads better.
        weighted = self.weighted_cost(values, entry)
        if self.best is None or weighted < self.best[0]:
            self.best = (weighted, values)
        if self.progress is not None:
            cost = float(np.sum(np.square(entry["residuals"])))
            self.progress(self.simulated + self.replayed, cost, values)
        return entry

    @property
    def spent(self) -> int:
        return self.simulated + self.replayed

    def weighted_cost(self, values: tuple[float, ...], entry: dict) -> float:
        u = np.array([p.to_unit(v) for p, v in zip(self.parameters, values)])
        return float(np.sum(np.square(self.whitened(entry, u))))

    def whitened(self, entry: dict, u: np.ndarray) -> np.ndarray:
        """The fit's residuals, weighted by each figure's sd: its measurement error and the
        simulation noise as estimated at the first point evaluated.  The weights stay fixed:
        a noise estimate from a few replications varies by a factor of two from point to point,
        and weights that move with it make the objective favour noisy points."""
        if self.weight_noise_sd is None:
            self.weight_noise_sd = np.asarray(entry["noise_sd"], dtype=float)
        return whitened(entry, self.goals, self.parameters, u, self.weight_noise_sd)

    def _simulate(self, values: tuple[float, ...]) -> dict:
        from sim.model.stability import overloads

        at = ", ".join(f"{p.path} = {v:.6g}" for p, v in zip(self.parameters, values))
        keys, tasks, counts = [], {}, {}
        for goal in self.goals:
            model_file, overrides = row_run(
                self.folder, self.spec, goal.record, self.extra(values, goal.record)
            )
            key = (str(model_file), overrides)
            keys.append(key)
            if key not in tasks:
                model = load_row_model(model_file, overrides)
                counts[key] = self.replications or model.run.replications
                problems = overloads(model)
                if problems:
                    detail = "; ".join(
                        f"{p.path}: utilization {p.utilization:.3g}" for p in problems
                    )
                    raise CalibrationError(
                        f"{goal.label}: at {at} the model is unstable ({detail}); narrow the "
                        "[[calibrate]] bounds to values the system can sustain"
                    )
                tasks[key] = goal.label
        # Each distinct run once; rows sharing a run share its numbers.
        summaries = dict(
            zip(
                tasks,
                self.map(
                    run_row,
                    [
                        (
                            k[0],
                            k[1],
                            self.replications,
                            f"{tasks[k]}: at {at} (narrow the [[calibrate]] bounds)",
                        )
                        for k in tasks
                    ],
                ),
            )
        )
        simulated, lows, highs, noise = [], [], [], []
        for goal, key in zip(self.goals, keys):
            summary = summaries[key]
            if goal.metric not in summary:
                raise CalibrationError(
                    f"{goal.label}: metric {goal.metric!r} is not produced by {Path(key[0]).name}"
                )
            mean, low, high = goal.published_units(*summary[goal.metric][:3])
            simulated.append(mean)
            lows.append(low)
            highs.append(high)
            noise.append(noise_sd(low, high, counts[key]) / abs(goal.published))
        residuals = [(s - g.published) / g.published for s, g in zip(simulated, self.goals)]
        return {
            "simulated": simulated,
            "ci_low": lows,
            "ci_high": highs,
            "residuals": residuals,
            "noise_sd": noise,
        }


def free_overrides(
    parameters: list[FreeParameter], values: tuple[float, ...], record: dict[str, str]
) -> list[str]:
    """The overrides that set the free parameters to `values` on one row."""
    return [f"{p.path}={v!r}" for p, v in zip(parameters, values) if p.applies(record)]


def complete(entry: dict, targets: int) -> bool:
    """A cached evaluation with every list the fit reads, one number per target."""
    return all(
        isinstance(entry.get(name), list)
        and len(entry[name]) == targets
        and all(isinstance(v, (int, float)) for v in entry[name])
        for name in ("simulated", "ci_low", "ci_high", "residuals")
    )


def append_line(cache: Path, line: str) -> None:
    """Append one record on a line of its own: after a torn last line (an interrupted write),
    start on a fresh line, or the record would join the torn one and be lost with it."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    with cache.open("ab") as handle:
        if handle.tell() > 0:
            with cache.open("rb") as reader:
                reader.seek(-1, 2)
                if reader.read(1) != b"\n":
                    handle.write(b"\n")
        handle.write(line.encode("utf-8") + b"\n")


def fingerprint(
    folder: Path, spec: ExperimentSpec, goals: list[Figure], replications: int | None
) -> str:
    """Everything an evaluation depends on besides the parameter values: the experiment, its
    published table, the model files of the targets' rows, the replications, the version and
    the code (`code_digest`: a fix changes the figures, not the version)."""
    from importlib.metadata import version

    from sim.studies.source_digest import code_digest

    digest = hashlib.sha256(code_digest().encode())
    digest.update(spec.fingerprint_text().encode())
    digest.update((folder / str(spec.experiment.published)).read_bytes())
    for model_file in sorted({row_run(folder, spec, g.record)[0] for g in goals}):
        digest.update(model_file.read_bytes())
    digest.update(f"{replications}|{version('tiersim')}".encode())
    return digest.hexdigest()[:16]


def whitened(
    entry: dict,
    goals: list[Figure],
    parameters: list[FreeParameter],
    u: np.ndarray,
    noise_sd: np.ndarray,
) -> np.ndarray:
    """The fit's residuals: each relative error over its sd (measurement and simulation noise),
    so a figure counts by how precisely it is known; then, for each `[[unknown]]`, its distance
    from the middle of its range in prior sds (the range is what is known of it: the figures
    move it only as far as they pin it)."""
    from sim.studies.calibration.linear import UNIFORM_SD

    sd = np.sqrt(np.square([g.measurement_sd for g in goals]) + np.square(noise_sd))
    prior = [(x - p.prior_mean) / UNIFORM_SD for p, x in zip(parameters, u) if p.kind == "unknown"]
    return np.concatenate([np.asarray(entry["residuals"]) / np.maximum(sd, 1e-9), prior])
