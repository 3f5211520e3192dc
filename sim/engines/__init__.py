"""The two engines and the choice between them (`run.engine`, `tiersim run --engine`).

* reference: the SimPy-calendar engine (`sim.kernel`, `sim.tiers`) — every mechanism;
* compiled: the queueing core as a numba event loop (`sim.engines.compiled`) — the same
  trajectory from the same random numbers, ten times or more the requests per second.

Each engine declares the features it implements (the reference: every feature a component
declares; the compiled engine: `compiled.support.IMPLEMENTS`).  `auto` (the default) runs a
model on the compiled engine when the plan's features (`sim.model.stack`) are a subset of its
set and numba is installed, else on the reference engine; the choice and its reason (the
features it lacks, by name) are a note of the result.

`auto` also weighs the compiled engine's fixed cost: a process pays about half a second of
CPU to start numba and load the loop's cached machine code, which the reference engine spends
on some 30 000 requests.  So while a process has not loaded the compiled engine, a run of at
most `SMALL_RUN_EVENTS` (the estimate of `sim.model.workload`, an upper bound) goes to the
reference engine, until the small runs of the process add up to that many: then loading the
compiled engine pays for itself (a study's thousand small runs still run compiled).  Both
engines give the same numbers, bit for bit; only the wall time and the note differ.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from sim.engines.compiled.support import missing as compiled_lacks
from sim.model.load import ModelError
from sim.model.plan import Plan

# Events (requests and periodic events) the reference engine simulates in about the time a fresh
# process takes to load the compiled engine (numba's start and the cached loop: ~0.5 s of CPU;
# the reference engine runs 50 000-60 000 requests a second on the Apache and demo models).
SMALL_RUN_EVENTS = 20_000.0

# The small runs this process has sent to the reference engine, in estimated events.
_small_runs_events = 0.0


class EngineUnavailable(ModelError):
    """`run.engine = "compiled"` for a model (or a Python) the compiled engine cannot run:
    a model error (exit code 3), named with what is missing."""


@dataclass(frozen=True)
class EngineChoice:
    engine: str  # "reference" or "compiled"
    note: str  # which engine ran and why, for the result's notes


def numba_missing() -> str | None:
    """Why numba cannot be used here, or None if it can."""
    try:
        import numba  # noqa: F401
    except ImportError as exc:  # the pure-Python fallback: the reference engine
        return f"numba is not installed ({exc})"
    return None


def compiled_loaded() -> bool:
    """This process has already paid the compiled engine's start (numba and the loop)."""
    return "sim.engines.compiled.kernel" in sys.modules


def choose(plan: Plan, events: float = math.inf) -> EngineChoice:
    """The engine the model's `run.engine` asks for (the plan's run control), or for `auto`,
    the fastest that implements every feature of the plan.  `events` bounds the run's size
    (`sim.run.replications` passes the estimate of all its replications): a small run in a
    process that has not loaded the compiled engine runs on the reference engine."""
    global _small_runs_events
    requested = plan.run.engine
    if requested == "reference":
        return EngineChoice("reference", "engine: reference (run.engine = 'reference')")
    missing = compiled_lacks(plan)
    if requested == "compiled":
        problem = numba_missing()
        if problem is not None:
            raise EngineUnavailable(f"run.engine = 'compiled', but {problem}")
        if missing:
            raise EngineUnavailable(
                "run.engine = 'compiled', but the compiled engine does not implement "
                + "; ".join(missing)
                + ": use run.engine = 'auto' or 'reference'"
            )
        return EngineChoice("compiled", "engine: compiled (run.engine = 'compiled')")
    if missing:
        return EngineChoice(
            "reference",
            "engine: reference (the compiled engine does not implement " + "; ".join(missing) + ")",
        )
    if not compiled_loaded() and _small_runs_events + events <= SMALL_RUN_EVENTS:
        _small_runs_events += events
        return EngineChoice(
            "reference",
            f"engine: reference (run.engine = 'auto': a run of at most {events:,.0f} events "
            "costs less here than starting the compiled engine; the numbers are the same)",
        )
    # numba (and LLVM, ~70 MB) is imported only when the compiled engine is about to run
    problem = numba_missing()
    if problem is not None:
        return EngineChoice("reference", f"engine: reference ({problem})")
    return EngineChoice(
        "compiled", "engine: compiled (run.engine = 'auto': the model is in its queueing core)"
    )
