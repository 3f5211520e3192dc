"""The kernel's hooks on the request's path (`kernel/hooks.py`) call every mechanism's module
that takes part in them, found rather than named: checked here on two made-up mechanisms and
on none, with the hooks' own code compiled afresh against them (numba, seconds, not cached),
so that the kernel's cached loop is neither touched nor recompiled.  Each check compiles in a
process of its own: numba keeps what it compiled for the process's life, and the objects it
keeps would change when the tests after it see Python's collector run (`test_kernel_memory`)."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from numba import njit

from sim.engines.compiled.kernel import hooks

HOOKS = ("call", "released", "granted", "next_holder", "on_event")
# each hook's tuple, by the name the hook's code reads it by
GLOBALS = {
    "call": "_CALLS",
    "released": "_RELEASED",
    "granted": "_GRANTED",
    "next_holder": "_NEXT_HOLDER",
    "on_event": "_ON_EVENT",
}


def _compiled(modules: tuple[SimpleNamespace, ...]) -> dict[str, Any]:
    """The hooks' functions as the kernel has them, bound to `modules` instead of the kernel's
    mechanisms, each compiled by numba without its cache."""
    made = hooks.reaches(modules, roles_of=lambda m: m.ROLES)
    bound = {**vars(hooks), **{GLOBALS[name]: made[name] for name in HOOKS}}
    out = {}
    for name in HOOKS:
        code = getattr(hooks, name).py_func.__code__
        out[name] = njit(types.FunctionType(code, bound, name))
    return out


# the state: a float array, a cell per thing a mechanism records
CALLED_A, CALLED_B, RELEASED_A, RELEASED_B, GRANTED_A, EVENT_A, EVENT_B, ORDER_A = range(8)


@njit
def _guards_a(S, target):
    return target == 1


@njit
def _call_a(S, j):
    S[CALLED_A] += j


@njit
def _released_a(S, j):
    S[RELEASED_A] += j


@njit
def _granted_a(S, j):
    S[GRANTED_A] += j


@njit
def _random_order_a(S):
    return S[ORDER_A] > 0.0


@njit
def _next_holder_a(S, waiting):
    return waiting - 1


@njit
def _on_event_a(S, kind, arg, seq, now):
    S[EVENT_A] += kind * arg


@njit
def _guards_b(S, target):
    return target == 1 or target == 2  # station 1 as well: `a`, first, takes its calls


@njit
def _call_b(S, j):
    S[CALLED_B] += j


@njit
def _released_b(S, j):
    S[RELEASED_B] += 10 * j


@njit
def _on_event_b(S, kind, arg, seq, now):
    S[EVENT_B] += kind * arg


# `a` takes part in every hook, with the pool roles 7 and 8; `b` in all but the pool's
A = SimpleNamespace(
    guards=_guards_a,
    call=_call_a,
    released=_released_a,
    granted=_granted_a,
    random_order=_random_order_a,
    next_holder=_next_holder_a,
    EVENTS=(30,),
    on_event=_on_event_a,
    ROLES=(7, 9),
)
B = SimpleNamespace(
    guards=_guards_b,
    call=_call_b,
    released=_released_b,
    EVENTS=(31, 32),
    on_event=_on_event_b,
    ROLES=(0, 0),
)


ROOT = Path(__file__).resolve().parents[2]

# compiled here on their own, not inside the loop, the hooks' loop over the modules' functions
# warns of first-class functions from numba's own files, which `hooks` does not silence (it
# silences the kernel's: there, the warning is put on the kernel's line that calls the hook)
FIRST_CLASS = "First-class function type feature is experimental"


def _in_a_fresh_process(check: str) -> None:
    code = (
        "import warnings\n"
        f"warnings.filterwarnings('ignore', {FIRST_CLASS!r})\n"
        f"from tests.kernel.test_hooks import {check}\n"
        f"{check}()\n"
        "print('checked')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and done.stdout.strip() == "checked", done.stderr[-3000:]


def two_mechanisms() -> None:
    h = _compiled((A, B))
    S = np.zeros(8)
    assert h["call"](S, 5, 1) and h["call"](S, 7, 2) and not h["call"](S, 9, 3)
    assert (S[CALLED_A], S[CALLED_B]) == (5.0, 7.0)  # the first that guards takes it
    h["released"](S, 2)
    assert (S[RELEASED_A], S[RELEASED_B]) == (2.0, 20.0)  # every one
    h["granted"](S, 8, 4)
    h["granted"](S, 9, 100)  # past `a`'s roles
    assert S[GRANTED_A] == 4.0
    assert h["next_holder"](S, 7, 5) == 0  # `a`'s pool, served in order: the oldest
    S[ORDER_A] = 1.0
    assert h["next_holder"](S, 7, 5) == 4 and h["next_holder"](S, 6, 5) == 0
    h["on_event"](S, 30, 2, 0, 0.0)
    h["on_event"](S, 32, 3, 0, 0.0)
    assert (S[EVENT_A], S[EVENT_B]) == (60.0, 96.0)


def no_mechanism() -> None:
    h = _compiled(())
    S = np.zeros(8)
    assert not h["call"](S, 5, 1)
    h["released"](S, 2)
    h["granted"](S, 8, 4)
    h["on_event"](S, 30, 2, 0, 0.0)
    assert h["next_holder"](S, 7, 5) == 0
    assert not S.any()


def test_the_hooks_call_each_mechanism_that_takes_part():
    _in_a_fresh_process("two_mechanisms")


def test_the_hooks_compile_with_no_mechanism():
    _in_a_fresh_process("no_mechanism")
