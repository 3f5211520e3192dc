"""`run.engine = "auto"` weighs the compiled engine's start: a small run in a fresh process goes
to the reference engine (the same numbers), until the process's small runs add up to what
starting the compiled engine costs; then it loads the compiled engine.  Checked in a fresh
interpreter, since what a process has loaded decides."""

from __future__ import annotations

import json
import subprocess
import sys

from sim.engines import SMALL_RUN_EVENTS


def test_small_runs_go_to_the_reference_engine_until_they_add_up():
    code = (
        "import json, sys\n"
        "from sim.run.replications import run\n"
        "from tests.engines.test_compiled_engine import chain\n"
        "from tests.conftest import model_from\n"
        "small = model_from(chain(requests=2000, warmup='none'))\n"
        "first = run(small, replications=2)\n"
        "loaded_after_first = 'numba' in sys.modules\n"
        "engines = [first.replications[0].engine, first.replications[1].engine]\n"
        "engines += [run(small, replications=2).replications[0].engine for _ in range(8)]\n"
        "print(json.dumps({'loaded_after_first': loaded_after_first, 'engines': engines,\n"
        "                  'notes': first.replications[0].notes[:1]}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    seen = json.loads(out)
    assert not seen["loaded_after_first"]  # numba never imported for the first small run
    assert "costs less here than starting the compiled engine" in seen["notes"][0]
    # each run of 2 x 2000 requests is ~4 000 events: the first few stay on the reference
    # engine, the rest (once the total passes SMALL_RUN_EVENTS) run compiled
    per_run = 2 * 2000
    on_reference = int(SMALL_RUN_EVENTS // per_run)
    engines = seen["engines"]
    assert engines[: 2 * 1] == ["reference", "reference"]  # one run: one engine for both
    assert engines[2:] == ["reference"] * (on_reference - 1) + ["compiled"] * (8 - on_reference + 1)


def test_every_bundled_model_runs_on_the_compiled_engine():
    """The compiled engine implements every feature the bundled models use: `auto` runs each
    of them compiled (once past the small-run rule) and `run.engine = "compiled"` accepts it."""
    from pathlib import Path

    from sim.engines.compiled.support import missing
    from sim.model.load import load_model
    from sim.model.plan import compile_plan

    paths = sorted((Path(__file__).parents[2] / "models").glob("*.toml"))
    assert len(paths) >= 16
    lacking = {path.name: missing(compile_plan(load_model(path))) for path in paths}
    assert {name: what for name, what in lacking.items() if what} == {}
