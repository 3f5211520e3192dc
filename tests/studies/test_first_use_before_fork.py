"""A process pool's workers start with what their first run needs (`ProcessExecutor`:
`load_engines`, then `first_use_before_fork`): a worker's first replication of the planner's
model compiles nothing with numba and imports no scipy.special, which a fresh process that
has only loaded the engines does at its first run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sim.studies.executor import ProcessExecutor

MODEL = Path(__file__).resolve().parents[2] / "models" / "planner-apache-tomcat.toml"


def first_run() -> tuple[bool, int]:
    """In this process: whether scipy.special was imported before a replication, and how many
    functions numba compiled during it (two replications, as a study's point runs them)."""
    from numba.core import event

    from sim.model.load import load_model
    from sim.run.replications import run

    imported = "scipy.special" in sys.modules
    model = load_model(MODEL, ["clients.users=40", "run.duration_s=30", "run.engine=compiled"])
    with event.install_recorder("numba:compile") as compiled:
        run(model, replications=2)
    return imported, len(compiled.buffer)


@pytest.fixture(scope="module", autouse=True)
def compiled_engine():
    from sim.engines import numba_missing

    if numba_missing() is not None:
        pytest.skip("numba is not installed")
    from sim.engines.compiled import kernel

    if not kernel.is_warm():
        pytest.skip("the compiled loop is not in numba's cache yet")


def test_a_workers_first_run_compiles_and_imports_nothing():
    with ProcessExecutor(1) as executor:
        imported, compiled = executor.pool.submit(first_run).result()
    assert imported
    assert compiled == 0


def test_without_it_a_fresh_process_compiles_at_its_first_run():
    """The control: a process that has only loaded the engines (`load_engines`)."""
    code = (
        "from sim.run.warm import load_engines\n"
        "load_engines()\n"
        "from tests.studies.test_first_use_before_fork import first_run\n"
        "print(*first_run())\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    imported, compiled = out.stdout.split()
    assert imported == "False" and int(compiled) > 0
