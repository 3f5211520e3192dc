"""`python bench/engine_clock.py ARGS` is `python -m sim ARGS` with the engines' time counted.

The compiled engine's own work is its kernel's `run_events` (the numba loop); everything else a
command does -- interpreter, imports, parsing the model, compiling its plan, building the
tables, windowing each replication, the fit, the search, the output -- is what a planner waits
for beyond the simulation.  This wrapper times, in the command's process and in every worker
process it forks, without changing a line of tiersim:

* `kernel`: each call of `sim.engines.compiled.kernel.run_events`;
* `compiled`: each compiled replication's `run_trace` (the kernel, its tables and the trace),
  with the requests it completed (over the whole recording, warm-up included) and its events;
* `reference`: each reference replication's `run_trace`, with its requests and events;
* `finish`: each replication's windowing (`sim.run.finish.finish`: its warm-up and metrics).

Each call appends one line `kind wall_seconds cpu_seconds requests events` to the file named by
the environment variable ENGINE_CLOCK, with O_APPEND, so that the pool's workers can share it
(the CPU seconds are the calling thread's: on a shared machine a call's wall time also holds
the time the process waited for a core); `bench/process_times.py` sums it.  The wrappers are
installed when each module is first imported (an import hook), so a command that never loads
the compiled engine is not made to.
"""

from __future__ import annotations

import importlib.abc
import os
import runpy
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

CLOCK = os.environ.get("ENGINE_CLOCK")


def _note(kind: str, wall: float, cpu: float, requests: float = 0.0, events: int = 0) -> None:
    if CLOCK is None:
        return
    line = f"{kind} {wall:.6f} {cpu:.6f} {requests:.0f} {events}\n".encode()
    handle = os.open(CLOCK, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(handle, line)
    finally:
        os.close(handle)


def _timed(kind: str, fn: Callable, counted: bool = False) -> Callable:
    def wrapper(*args, **kwargs):
        started, used = time.perf_counter(), time.thread_time()
        out = fn(*args, **kwargs)
        wall, cpu = time.perf_counter() - started, time.thread_time() - used
        if counted:  # a Trace: its requests over the whole recording and its events
            _note(kind, wall, cpu, out.metrics.get("count.completed", 0.0), out.events)
        else:
            _note(kind, wall, cpu)
        return out

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _wrap(name: str, kind: str, counted: bool = False) -> Callable[[ModuleType], None]:
    def patch(module: ModuleType) -> None:
        setattr(module, name, _timed(kind, getattr(module, name), counted))

    return patch


PATCHES: dict[str, Callable[[ModuleType], None]] = {
    # engine.py calls `k.run_events(...)` through the package: the package's attribute is it
    "sim.engines.compiled.kernel": _wrap("run_events", "kernel"),
    "sim.engines.compiled.engine": _wrap("run_trace", "compiled", counted=True),
    "sim.engines.reference.replication": _wrap("run_trace", "reference", counted=True),
    # run_replication calls the name it imported from sim.run.finish
    "sim.run.replication": _wrap("finish", "finish"),
}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds the modules of PATCHES as the other finders do, and patches each once loaded."""

    def find_spec(self, fullname, path, target=None):
        patch = PATCHES.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader: Any = spec.loader
        load = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            patch(module)

        loader.exec_module = exec_module
        return spec


def main() -> None:
    sys.meta_path.insert(0, _AfterImport())
    sys.argv = ["tiersim", *sys.argv[1:]]
    runpy.run_module("sim", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
