"""The shared database host: CPU (a `Station`) and FCFS disk spindles, and what stands around
its call.

A module of this folder that puts a mechanism around the database's call (the database's
shared lock) registers its builder in `AROUND_CALL`: `builder(kernel, database, pool, call,
streams)` returns the call wrapped (or `call` itself when the stack's `database` part has no
such mechanism), its pools made by the assembler's `pool(name, capacity)`.  Every module of
the folder is imported here, so the reference assembler (`sim.engines.reference.assemble`)
applies them, in the order of their names, without naming one."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

AROUND_CALL: list[Callable[..., Any]] = []

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
