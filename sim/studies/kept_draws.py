"""The parameter draws of `tiersim run --calibration`, kept as each finishes, so that a rerun
after Ctrl-C runs only the draws left (in the run's cache, `sim.studies.kept_replications`).

A draw is the model run at one point of the calibration's Gaussian with its own seed and
replications (`sim.studies.predict.DrawRun`); the prediction intervals read of it its status,
its message and each figure's interval (`sim.studies.calibration.propagate`), and that is what
a line holds, keyed by the model as the draw runs it (the drawn values and the user's
overrides applied), its seed, its replications and the code.  The draws run through an
executor's map and come back in draw order; each is kept as it comes back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sim.studies.kept import KeptLines, fingerprint, model_parts
from sim.studies.kept import kept_map as kept_lines_map
from sim.studies.source_digest import code_digest

if TYPE_CHECKING:
    from sim.run.simulate import Outcome


class DrawRun(Protocol):
    """What a draw's key reads of the task that runs it (`sim.studies.predict.DrawRun`,
    which imports this module: named by its fields here, not imported)."""

    @property
    def model_file(self) -> str: ...
    @property
    def user_overrides(self) -> tuple[str, ...]: ...
    @property
    def draw_replications(self) -> int: ...


FORM = "tiersim run calibration draw 1"
INTERVAL = ("mean", "half_width", "low", "high", "n", "level")


@dataclass
class KeptSummary:
    """What the prediction intervals read of a replayed draw's result: its intervals."""

    summary: dict[str, Any]


def kept_map(
    map_: Callable[..., Iterable[Outcome]], kept: KeptLines, run_at: DrawRun
) -> Callable[..., Any]:
    """`map_` (builtin map, or an executor's) over the draws of `run_at` that are not kept;
    the kept ones replayed in their place, in draw order, and each new one kept as it comes
    back."""
    return kept_lines_map(
        map_,
        kept,
        lambda drawn, seed: _fingerprint(kept, run_at, drawn, seed),
        _record_of,
        _outcome_of,
        _whole,
    )


def _fingerprint(kept: KeptLines, run_at: DrawRun, drawn: list[str], seed: int) -> str | None:
    if kept.path is None:
        return None
    from sim.model.load import ModelError, load_model

    try:
        model = load_model(run_at.model_file, (*drawn, *run_at.user_overrides, f"run.seed={seed}"))
    except ModelError:
        return None  # it runs, and says why as it would without a cache
    return fingerprint(
        FORM,
        code_digest(),
        *model_parts(model),
        json.dumps({"seed": seed, "replications": run_at.draw_replications}),
    )


def _record_of(outcome: Outcome) -> dict[str, Any]:
    result = outcome.result
    summary = (
        None
        if result is None
        else {
            name: [_figure(getattr(interval, field)) for field in INTERVAL]
            for name, interval in result.summary.items()
        }
    )
    return {"status": outcome.status.value, "message": outcome.message, "summary": summary}


def _figure(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _whole(record: dict[str, Any]) -> bool:
    from sim.run.simulate import Status

    summary = record.get("summary")
    return (
        record.get("status") in {status.value for status in Status}
        and isinstance(record.get("message"), str)
        and (
            summary is None
            or (
                isinstance(summary, dict)
                and all(
                    isinstance(values, list)
                    and len(values) == len(INTERVAL)
                    and all(_number(value) for value in values)
                    for values in summary.values()
                )
            )
        )
    )


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _outcome_of(record: dict[str, Any]) -> Any:
    from sim.run.simulate import Outcome, Status
    from sim.stats.confidence import Interval

    summary = record["summary"]
    result = None
    if summary is not None:
        result = KeptSummary(
            {
                name: Interval(
                    float(mean), float(half), float(low), float(high), int(n), float(level)
                )
                for name, (mean, half, low, high, n, level) in summary.items()
            }
        )
    return Outcome(Status(record["status"]), record["message"], result=result)  # type: ignore[arg-type]
