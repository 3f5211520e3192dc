"""The two engines and the choice between them (`run.engine`, `tiersim run --engine`).

* reference: the SimPy-calendar engine (`sim.kernel`, `sim.tiers`) — every mechanism;
* compiled: the queueing core as a numba event loop (`sim.engines.compiled`) — the same
  trajectory from the same random numbers, ten times or more the requests per second.

Each engine declares the features it implements (the reference: every feature a component
declares; the compiled engine: `compiled.support.IMPLEMENTS`).  `auto` (the default) runs a
model on the compiled engine when the plan's features (`sim.model.stack`) are a subset of its
set and numba is installed, else on the reference engine; the choice and its reason (the
features it lacks, by name) are a note of the result.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.engines.compiled.support import missing as compiled_lacks
from sim.model.load import ModelError
from sim.model.plan import Plan, compile_plan
from sim.model.schema import Model


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


def choose(model: Model, plan: Plan | None = None) -> EngineChoice:
    """The engine `model.run.engine` asks for, or for `auto`, the fastest that implements
    every feature of the model's plan."""
    requested = model.run.engine
    if requested == "reference":
        return EngineChoice("reference", "engine: reference (run.engine = 'reference')")
    missing = compiled_lacks(compile_plan(model) if plan is None else plan)
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
    # numba (and LLVM, ~70 MB) is imported only when the compiled engine is about to run
    problem = numba_missing()
    if problem is not None:
        return EngineChoice("reference", f"engine: reference ({problem})")
    return EngineChoice(
        "compiled", "engine: compiled (run.engine = 'auto': the model is in its queueing core)"
    )
