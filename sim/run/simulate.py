"""`simulate(model, seed)`: the one way to run a model, returning an outcome, never raising for a
model's own reasons.

Every caller — `tiersim run`, a sweep point, a reproduction's row, a calibration's evaluation,
a capacity search, a notebook — runs a model the same way: compile its plan once, refuse an
unstable open workload and a run that would not end for hours (`sim.model.workload`) before
simulating it, run the replications, and say how it ended:

* `ok`: the figures, with their intervals;
* `invalid`: the model (or an override, the precision rule, or a forced engine that cannot
  run it) is wrong, or asks for more work than `run.max_events`; the message names it;
* `unstable`: the offered load exceeds a capacity (checked before, or a queue that ran away);
* `unfinished`: a finite workload did not finish within `run.max_duration_s`;
* `interrupted`: Ctrl-C after some replications (their figures are kept);
* `internal`: a bug, with its exception.

Each status carries the CLI's exit code, so every command maps outcomes to codes alike.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from sim.engines import EngineUnavailable
from sim.exit_codes import ExitCode
from sim.model.load import ModelError, parse_model
from sim.model.plan import Plan, compile_plan
from sim.model.schema import Model
from sim.model.stability import Overload, overloads
from sim.model.workload import check, estimate
from sim.run.replication import RunawayQueue, TimeseriesSink
from sim.run.replications import KeptReplications, RunResult, UnknownMetric, run


class Status(Enum):
    OK = "ok"
    INVALID = "invalid"
    UNSTABLE = "unstable"
    UNFINISHED = "unfinished"
    INTERRUPTED = "interrupted"
    INTERNAL = "internal"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self]


# Each outcome's exit code, defined once in `sim.exit_codes` (README "Exit codes")
EXIT_CODES = {
    Status.OK: ExitCode.OK,
    Status.INTERNAL: ExitCode.INTERNAL,
    Status.INVALID: ExitCode.MODEL,
    Status.UNSTABLE: ExitCode.UNSTABLE,
    Status.UNFINISHED: ExitCode.UNFINISHED,
    Status.INTERRUPTED: ExitCode.INTERRUPTED,
}


@dataclass
class Outcome:
    status: Status
    message: str = ""
    model: Model | None = None
    plan: Plan | None = None
    result: RunResult | None = None  # the figures (also kept when unfinished or interrupted)
    overloads: tuple[Overload, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def exit_code(self) -> int:
        return self.status.exit_code


def simulate(
    model: Model | Mapping[str, Any],
    *,
    seed: int | None = None,
    replications: int | None = None,
    overrides: tuple[str, ...] | list[str] = (),
    source: str = "<model>",
    base_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    timeseries: TimeseriesSink | None = None,
    simulated: Callable[[float, float], None] | None = None,
    kept: KeptReplications | None = None,
) -> Outcome:
    """Run a validated model, or a model's data (validated here, with `overrides`).
    `progress(done, total)` hears of each finished replication; `simulated(now_s, until_s)`
    of the simulated time of the one under way, several times a second on either engine (a
    long replication).  `kept`: the replications kept by an earlier run, replayed, and this
    run's kept as each finishes (`sim.run.replications.run`)."""
    try:
        if not isinstance(model, Model):
            model = parse_model(dict(model), source, list(overrides), base_dir)
    except ModelError as exc:
        return Outcome(Status.INVALID, str(exc))
    try:
        plan = compile_plan(model)
        problems = overloads(model, plan)
        if problems:
            detail = "; ".join(
                f"{p.path}: {p.detail} (utilization {p.utilization:.3g} >= 1)" for p in problems
            )
            return Outcome(
                Status.UNSTABLE,
                f"unstable configuration: the offered load exceeds capacity ({detail})",
                model,
                plan,
                overloads=tuple(problems),
            )
        refusal = check(
            estimate(model, plan, replications=replications, timeseries=timeseries is not None),
            model.run.max_events,
        )
        if refusal is not None:
            return Outcome(Status.INVALID, refusal, model, plan)
        result = run(
            model,
            replications=replications,
            seed=seed,
            progress=progress,
            timeseries=timeseries,
            plan=plan,
            simulated=simulated,
            kept=kept,
        )
    except (UnknownMetric, EngineUnavailable) as exc:
        # EngineUnavailable: run.engine = 'compiled' for a model (or a Python) it cannot run
        return Outcome(Status.INVALID, str(exc), model)
    except RunawayQueue as exc:
        return Outcome(Status.UNSTABLE, f"unstable configuration: {exc}", model)
    except KeyboardInterrupt:
        return Outcome(Status.INTERRUPTED, "interrupted before any replication finished", model)
    except Exception as exc:  # a bug: say so, with where it happened
        if _interrupted(exc):
            return Outcome(Status.INTERRUPTED, "interrupted before any replication finished", model)
        where = traceback.format_exc(limit=-1).strip().splitlines()[-3:]
        return Outcome(
            Status.INTERNAL,
            f"internal error (a bug; please report it): {type(exc).__name__}: {exc} "
            f"({' '.join(where)})",
            model,
        )
    if result.stopped_by == "interrupted":
        return Outcome(Status.INTERRUPTED, "interrupted", model, plan, result)
    if not all(rep.finished for rep in result.replications):
        return Outcome(
            Status.UNFINISHED,
            f"the workload did not finish within run.max_duration_s = "
            f"{model.run.max_duration_s:g} s",
            model,
            plan,
            result,
        )
    return Outcome(Status.OK, "", model, plan, result)


def _interrupted(exc: BaseException) -> bool:
    """Ctrl-C that landed inside a C extension's call (numpy's generator taking its lock)
    comes out as a SystemError whose context is the KeyboardInterrupt: an interrupt still."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
