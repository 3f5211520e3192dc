"""Where a request's path passes through a mechanism's module (the database's shared lock:
`lock`): the modules that run the path (`station`, `slots`) and the loop call these hooks,
and this is the one module that names the mechanisms' modules.

numba binds a call to its function when it compiles the caller, so each hook is written out
here, a line per mechanism.  What a hook asks of a mechanism's module:

* `guards(S, target)`: it stands in front of the calls to station `target`; then
  `call(S, j)`: visit j's call (its JDBC connection taken) goes through it;
* `released(S, j)`: visit j answers its caller (before its JDBC connection goes back);
* a pool of its role (`declared(module, "ROLE")`): `granted(S, j)`, a slot handed to visit
  j's call; `random_order(S)` and `next_holder(S, waiting)`, the waiter a release goes to;
* `EVENTS` and `on_event(S, kind, arg, seq, now)`: its event kinds (`declared(module, "EV")`).
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import lock

# the mechanisms' modules, and the event kinds they handle
MODULES = (lock,)
EVENTS = lock.EVENTS


@njit(cache=True)
def call(S, j, target):
    """Visit j calls station `target` (its JDBC connection taken): True when a mechanism in
    front of the target takes the call over, False when the caller goes straight on."""
    if lock.guards(S, target):
        lock.call(S, j)
        return True
    return False


@njit(cache=True)
def released(S, j):
    """Visit j answers its caller: what it holds of a mechanism goes back first."""
    lock.released(S, j)


@njit(cache=True)
def granted(S, role, j):
    """A slot of a mechanism's pool (of `role`) was handed to visit j's call."""
    if role == lock.ROLE_LOCK:
        lock.granted(S, j)


@njit(cache=True)
def next_holder(S, role, waiting):
    """The position in a mechanism's pool's queue (0: the oldest) of the waiter a release
    goes to, of `waiting` >= 2 (0, nothing drawn, for a first-come first-served pool)."""
    if role == lock.ROLE_LOCK and lock.random_order(S):
        return lock.next_holder(S, waiting)
    return 0


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """A mechanism's event."""
    if kind in lock.EVENTS:
        lock.on_event(S, kind, arg, seq, now)
