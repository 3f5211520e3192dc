"""What a mechanism's kernel module declares of itself besides its numba functions, read by
the compiled engine's generic code, which names no mechanism.

A module of `sim/engines/compiled/kernel/` that implements a mechanism of the stack (the
database's shared lock) declares, at its top level:

* `FEATURES`: a literal set of the stack's features it implements (`support.IMPLEMENTS`);
* `PARAMETERS`: a literal dict of the model's parameters it reads, each `("modelled", why)`,
  `("refused", why)` or `("inert", why)` (`support.PARAMETERS`);
* `place(stack, pool, stream)`: its pools and random streams in the compiled plan, made by
  the plan's `pool(name, capacity, queue_limit, role)` and `stream(purpose, distribution)`,
  called where the reference engine builds it (after the database's pools, before the
  nodes'); it returns what it made (anything; None: nothing, the model has no such part);
* `configure(stack, made, station_row, config, config_float)`: its settings in the kernel's
  configuration, from what `place` made and `station_row(name)` (a station's row, -1: none).

The engine's choice reads `FEATURES` and `PARAMETERS` from the modules' source (`literal`, by
the kernel's own reader, `kernel/declarations.py`, which `layout` reads `LAYOUT` by), so
that choosing an engine does not import numba; the plan imports the kernel, whose package
imports every module (`kernel.loop`), and asks each one that declares `place` (`placed`).
That is the one place the modules are connected: a new mechanism is a new module.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any

KERNEL = Path(__file__).resolve().parent / "kernel"
DECLARED = ("FEATURES", "PARAMETERS")


@functools.lru_cache(maxsize=1)
def _reader() -> ModuleType:
    """The kernel's reader of its modules' declarations (`kernel/declarations.py`), loaded
    from its file alone: imported through its package, it would import the kernel, and numba."""
    spec = importlib.util.spec_from_file_location(
        "_kernel_declarations", KERNEL / "declarations.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=1)
def literal() -> dict[str, dict[str, Any]]:
    """Each kernel module's declared `FEATURES` and `PARAMETERS`, by module name, read from
    its source as literals (nothing imported)."""
    out: dict[str, dict[str, Any]] = {}
    for name, found in _reader().declared(KERNEL).items():
        mine = {key: value for key, value in found.items() if key in DECLARED}
        if mine:
            out[name] = mine
    return out


def features() -> frozenset[str]:
    """The features the kernel's modules declare they implement."""
    return frozenset(f for found in literal().values() for f in found.get("FEATURES", ()))


def parameters() -> dict[str, tuple[str, str]]:
    """The parameters the kernel's modules declare, with how each is treated."""
    out: dict[str, tuple[str, str]] = {}
    for found in literal().values():
        out.update({path: tuple(how) for path, how in found.get("PARAMETERS", {}).items()})
    return out


def placed() -> tuple[ModuleType, ...]:
    """The kernel's modules that place something in the plan (`place` and `configure`), in
    the order of their names (imports the kernel, and numba)."""
    from sim.engines.compiled import kernel

    modules = [
        importlib.import_module(f"{kernel.__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(kernel.__path__), key=lambda info: info.name)
    ]
    return tuple(m for m in modules if hasattr(m, "place") and hasattr(m, "configure"))
