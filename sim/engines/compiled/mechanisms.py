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

The engine's choice reads `FEATURES` and `PARAMETERS` from the modules' source (`literal`), so
that choosing an engine does not import numba; the plan imports the kernel, whose package
imports every module (`kernel.loop`), and asks each one that declares `place` (`placed`).
That is the one place the modules are connected: a new mechanism is a new module.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any

KERNEL = Path(__file__).resolve().parent / "kernel"
DECLARED = ("FEATURES", "PARAMETERS")


@functools.lru_cache(maxsize=1)
def literal() -> dict[str, dict[str, Any]]:
    """Each kernel module's declared `FEATURES` and `PARAMETERS`, by module name, read from
    its source as literals (nothing imported)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(KERNEL.glob("*.py")):
        source = path.read_text()
        if not any(f"\n{name} = " in source for name in DECLARED):
            continue  # no declaration: not worth parsing (the engine's choice is on every run)
        found: dict[str, Any] = {}
        for node in ast.parse(source, str(path)).body:
            target, value = _assignment(node)
            if target in DECLARED and value is not None:
                found[target] = ast.literal_eval(value)
        if found:
            out[path.stem] = found
    return out


def _assignment(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return (target.id if isinstance(target, ast.Name) else None), node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None


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
