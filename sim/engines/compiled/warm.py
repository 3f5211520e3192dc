"""Compile the compiled engine's loop ahead of use, if numba's cache does not hold it yet:
`python -m sim.engines.compiled.warm` (the README's set-up runs it; announced as any first
compilation is, `sim.engines.compiled.first_use`)."""

from __future__ import annotations

from sim.engines.compiled.engine import run_trace
from sim.model.load import parse_model
from sim.model.plan import compile_plan


def warm() -> None:
    """Compile the loop now if it is not cached (a tiny run on the compiled engine)."""
    model = parse_model(
        {
            "clients": {"kind": "closed", "users": 2, "think": 0.1},
            "backends": [{"name": "node", "demand": 0.01}],
            "run": {"requests": 10, "engine": "compiled", "warmup": "none"},
        },
        source="<warm-up>",
    )
    run_trace(compile_plan(model), 0, 1)


if __name__ == "__main__":  # the set-up's warm-up
    warm()
