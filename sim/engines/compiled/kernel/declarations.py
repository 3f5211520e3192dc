"""What the kernel's mechanism modules declare of themselves at their top level, read from
their source as literals: the one reader of `LAYOUT` (the tables' columns, pool roles and
event kinds a module adds, `layout.declared`), `FEATURES` and `PARAMETERS` (the support
table, `sim.engines.compiled.mechanisms`).  A module that declares any of them is a
mechanism's module, which `hooks` connects to the request's path.

It imports nothing of the kernel, nor numba: the engine's choice loads this file alone
(`sim.engines.compiled.mechanisms`), and `layout` reads the columns before any numba function
is compiled, so that every `N_*` is final when `layout` is imported.  It lives in the kernel
package so that the cache's stamp (`cache.source_stamp`, every file of the package) covers it:
the numbers it gives are compiled into the loop.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent
NAMES = ("LAYOUT", "FEATURES", "PARAMETERS")


@functools.lru_cache(maxsize=4)
def declared(package: Path = PACKAGE) -> dict[str, dict[str, Any]]:
    """Each module of `package` that declares any of `NAMES`, by module name (in the order of
    the names), with what it declares, each a literal read from its source (nothing imported)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(package.glob("*.py")):
        source = path.read_text()
        if not any(f"\n{name} = " in source for name in NAMES):
            continue  # no declaration: not worth parsing (the engine's choice is on every run)
        found: dict[str, Any] = {}
        for node in ast.parse(source, str(path)).body:
            target, value = _assignment(node)
            if target in NAMES and value is not None:
                found[target] = ast.literal_eval(value)
        if found:
            out[path.stem] = found
    return out


def mechanisms(package: Path = PACKAGE) -> tuple[str, ...]:
    """The names of the mechanisms' modules of `package`, in order."""
    return tuple(declared(package))


def _assignment(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return (target.id if isinstance(target, ast.Name) else None), node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None
