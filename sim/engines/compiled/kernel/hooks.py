"""Where a request's path passes through a mechanism's module (the database's shared lock):
the modules that run the path (`station`, `slots`) and the loop call these hooks, and each
hook calls every mechanism's module that takes part in it.  The modules are found, not named:
a mechanism's module is one that declares itself (`declarations.mechanisms`: a `LAYOUT`,
`FEATURES` or `PARAMETERS` at its top level), and it takes part in a hook by defining its
functions:

* `guards(S, target)`: it stands in front of the calls to station `target`; then
  `call(S, j)`: visit j's call (its JDBC connection taken) goes through it;
* `released(S, j)`: visit j answers its caller (before its JDBC connection goes back);
* `granted(S, j)`: a slot of a pool of one of its roles (`declared(module, "ROLE")`) was
  handed to visit j's call; `random_order(S)` and `next_holder(S, waiting)`: the waiter a
  release of such a pool goes to;
* `EVENTS` and `on_event(S, kind, arg, seq, now)`: its event kinds (`declared(module, "EV")`).

numba binds a call when it compiles the caller, so a hook cannot look a module up as it runs:
it loops over a tuple of the modules' numba functions with `literal_unroll`, which numba
compiles into one copy of the loop's body per module, each calling its function directly (for
one module, the code of a hook written out by hand).  The tuples are constants of the compiled
hooks, cached as any function of the package is: a new module changes the package's stamp
(`cache.source_stamp`), which recompiles them.
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

from numba import literal_unroll, njit
from numba.core.errors import NumbaExperimentalFeatureWarning

from sim.engines.compiled.kernel import declarations
from sim.engines.compiled.kernel.layout import declared

# the loop over two modules' functions asks numba whether their types unify (to decide
# whether to cast them), which warns of first-class functions; none is made: each copy of
# the body calls its own module's function (the warning names the kernel's file that calls
# the hook)
warnings.filterwarnings(
    "ignore",
    "First-class function type feature is experimental",
    NumbaExperimentalFeatureWarning,
    re.escape(str(declarations.PACKAGE)),
)

# the mechanisms' modules, in the order of their names (`layout.declared`'s)
MODULES: tuple[ModuleType, ...] = tuple(
    importlib.import_module(f"{__package__}.{name}") for name in declarations.mechanisms()
)


def roles(module: ModuleType) -> tuple[int, int]:
    """The pool roles `module` declared (`layout.declared`): the first and one past the last."""
    found = declared(module.__name__, "ROLE")
    return found.start, found.stop


@njit(cache=True)
def _none(*args):
    """Takes part in nothing: the one entry of a hook no module takes part in (numba
    unrolls no empty tuple)."""
    return False


def reaches(
    modules: tuple[Any, ...], roles_of: Callable[[Any], tuple[int, int]] = roles
) -> dict[str, tuple[Any, ...]]:
    """Each hook's tuple of what it calls of `modules`: an entry per module that defines the
    hook's functions, in the modules' order (and the pool roles or event kinds it asks
    first), or one entry that takes part in nothing when none does."""

    def taking_part(*functions: str) -> list[Any]:
        return [m for m in modules if all(hasattr(m, f) for f in functions)]

    return {
        "call": tuple((m.guards, m.call) for m in taking_part("guards", "call"))
        or ((_none, _none),),
        "released": tuple(m.released for m in taking_part("released")) or (_none,),
        "granted": tuple((*roles_of(m), m.granted) for m in taking_part("granted"))
        or ((0, 0, _none),),
        "next_holder": tuple(
            (*roles_of(m), m.random_order, m.next_holder)
            for m in taking_part("random_order", "next_holder")
        )
        or ((0, 0, _none, _none),),
        "on_event": tuple((m.EVENTS, m.on_event) for m in taking_part("EVENTS", "on_event"))
        or (((-1,), _none),),
    }


# each hook's tuple (constants of the compiled hooks: bound when numba compiles them)
REACHES = reaches(MODULES)
_CALLS = REACHES["call"]
_RELEASED = REACHES["released"]
_GRANTED = REACHES["granted"]
_NEXT_HOLDER = REACHES["next_holder"]
_ON_EVENT = REACHES["on_event"]

# the event kinds the mechanisms handle (the loop hands them to `on_event`)
EVENTS = tuple(kind for m in MODULES if hasattr(m, "on_event") for kind in m.EVENTS)


@njit(cache=True)
def call(S, j, target):
    """Visit j calls station `target` (its JDBC connection taken): True when a mechanism in
    front of the target takes the call over (the first that guards it), False when the
    caller goes straight on."""
    taken = False
    for guards_call in literal_unroll(_CALLS):
        if not taken and guards_call[0](S, target):
            guards_call[1](S, j)
            taken = True
    return taken


@njit(cache=True)
def released(S, j):
    """Visit j answers its caller: what it holds of a mechanism goes back first."""
    for release in literal_unroll(_RELEASED):
        release(S, j)


@njit(cache=True)
def granted(S, role, j):
    """A slot of a mechanism's pool (of `role`) was handed to visit j's call."""
    for roles_granted in literal_unroll(_GRANTED):
        if roles_granted[0] <= role < roles_granted[1]:
            roles_granted[2](S, j)


@njit(cache=True)
def next_holder(S, role, waiting):
    """The position in a mechanism's pool's queue (0: the oldest) of the waiter a release
    goes to, of `waiting` >= 2 (0, nothing drawn, for a first-come first-served pool)."""
    position = 0
    for roles_order in literal_unroll(_NEXT_HOLDER):
        if roles_order[0] <= role < roles_order[1] and roles_order[2](S):
            position = roles_order[3](S, waiting)
    return position


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """A mechanism's event, to the module whose `EVENTS` hold its kind."""
    for kinds_handler in literal_unroll(_ON_EVENT):
        if kind in kinds_handler[0]:
            kinds_handler[1](S, kind, arg, seq, now)
