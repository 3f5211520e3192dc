"""A prediction of a model file that carries a calibration: the model run at the calibration's
fitted values, then at parameter draws from its Gaussian (`tiersim run MODEL --calibration
FILE`; the method is `sim.studies.calibration.propagate`).  Its intervals are of the stack's
mean figures, or, given the measured level they are to be compared with (`--measured`), of a
measurement of them (`sim.studies.measured_level`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sim.model.load import load_model
from sim.run.simulate import Outcome, Status, simulate
from sim.studies.calibration.propagate import Propagation, propagate
from sim.studies.calibration.saved import Calibrated
from sim.studies.kept import KeptLines
from sim.studies.measured_level import MeasuredLevel


@dataclass
class CalibratedPrediction:
    """The run at the fitted values and, when it ran, the prediction intervals of its draws."""

    outcome: Outcome
    propagation: Propagation | None


def draws_at(
    model_file: str | Path,
    calibrated: Calibrated,
    nominal: Outcome,
    user_overrides: Sequence[str] = (),
    draws: int = 16,
    draw_replications: int = 2,
    progress: Callable[[int, int], None] | None = None,
    map_: Callable[..., Iterable[Outcome]] = map,
    measured: MeasuredLevel | None = None,
    kept: KeptLines | None = None,
) -> Propagation:
    """The draws of a calibration around `nominal` (the run at its fitted values): each draw
    sets the drawn values, then the user's own overrides (a parameter the user set is theirs,
    not drawn), and runs with its own seed and `draw_replications` replications, through
    `map_` (builtin map, or an executor's, `sim.studies.executor`: the same numbers).
    `measured`: the level the figures are to be compared with (None: a level no one measured,
    intervals of the mean figures).  `kept`: the draws an earlier run kept, replayed, and each
    new one kept as it finishes (`sim.studies.kept_draws`)."""
    result = nominal.result
    assert result is not None  # only a run with figures is propagated
    run_at = DrawRun(str(model_file), tuple(user_overrides), draw_replications)
    if kept is not None:
        from sim.studies.kept_draws import kept_map

        map_ = kept_map(map_, kept, run_at)
    return propagate(
        run_at,
        {k: i.mean for k, i in result.summary.items()},
        calibrated,
        draws,
        draw_replications,
        result.seed,
        progress,
        map_,
        measured,
    )


@dataclass(frozen=True)
class DrawRun:
    """One draw's run, as a task an executor can send to another process (plain data)."""

    model_file: str
    user_overrides: tuple[str, ...]
    draw_replications: int

    def __call__(self, drawn: list[str], draw_seed: int) -> Outcome:
        return simulate(
            load_model(self.model_file, (*drawn, *self.user_overrides, f"run.seed={draw_seed}")),
            replications=self.draw_replications,
        )


def predict(
    model_file: str | Path,
    calibrated: Calibrated,
    overrides: Sequence[str] = (),
    replications: int | None = None,
    seed: int | None = None,
    draws: int = 16,
    draw_replications: int = 2,
    progress: Callable[[int, int], None] | None = None,
    map_: Callable[..., Iterable[Outcome]] = map,
    measured: MeasuredLevel | None = None,
) -> CalibratedPrediction:
    """Run `model_file` at the calibration's fitted values (the user's `overrides` win), then
    at `draws` parameter draws (through `map_`, as `draws_at`, with `measured`); the
    propagation is None when the nominal run did not succeed."""
    model = load_model(model_file, (*calibrated.overrides(), *overrides))
    outcome = simulate(model, replications=replications, seed=seed)
    if outcome.status is not Status.OK:
        return CalibratedPrediction(outcome, None)
    spread = draws_at(
        model_file,
        calibrated,
        outcome,
        overrides,
        draws,
        draw_replications,
        progress,
        map_,
        measured,
    )
    return CalibratedPrediction(outcome, spread)
