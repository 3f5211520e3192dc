"""The database's shared lock (`sim.tiers.database.lock`, `[database.lock]`): a slot pool of
`permits` around the database's call, taken as a JDBC connection is.

A node's call to the database (its JDBC connection taken, if it has a pool) first asks
whether it takes the lock (`share`: a uniform draw below it; every call when the share is 1,
and nothing drawn); one that does waits for a permit (first-come first-served, or in random
order: `next_holder`), holding its
connection and its thread (the caller's job waits in the pool's queue, `slots.enqueue`), then
holds it for `hold` (the statements and round trips between the locking statement and the
`COMMIT`) and `wake_per_waiter_s` for every waiter still queued (the waiters a hot row's
`COMMIT` wakes), then through the database's own visit (its CPU, its disk: the commit's flush).  The
lock is released when the database's visit answers, before the JDBC connection goes back and
before the caller resumes (`station.reply_up`), as the reference's `PooledCall` releases it
in its reply.  The caller's job remembers that its call holds the lock (J_LOCK).

The module declares the rest of the lock's compiled side (`sim.engines.compiled.mechanisms`):
the features and parameters it implements, and `place` / `configure`, its pool, streams and
settings in the plan, by the reference module's names (`sim.tiers.database.lock`).
"""

from __future__ import annotations

from typing import Any

from numba import njit

from sim.engines.compiled.kernel import calendar, slots, station, streams
from sim.engines.compiled.kernel.layout import (
    F_NOW,
    GRANTED,
    J_STATION,
    PO_WAITING,
    ST_JDBC,
    ST_TARGET,
    declared,
)
from sim.random.distributions import Uniform
from sim.tiers.database.lock import HOLD_STREAM, ORDER_STREAM, POOL, SHARE_STREAM

# what the lock adds to the kernel's tables (`layout.declared`): its settings, the job's flag,
# its pool's role and its event
LAYOUT = {"C": 5, "CF": 2, "JI": 1, "ROLE": 1, "EV": 1}
(
    C_LOCK_POOL,  # its slot pool (a POI row), or -1: no lock
    C_LOCK_STATION,  # the station whose calls take it (the database)
    C_ST_LOCK_SHARE,  # the uniform stream that picks the calls that take it, or -1: every call
    C_ST_LOCK_HOLD,  # the stream of its hold before the call's own work, or -1: none
    C_ST_LOCK_ORDER,  # the uniform stream that picks the next holder (order random), or -1: FIFO
) = declared(__name__, "C")
(
    CF_LOCK_SHARE,  # database.lock.share: a call takes the lock when its draw is below it
    CF_LOCK_WAKE,  # database.lock.wake_per_waiter_s: a holder's section per waiter left [s]
) = declared(__name__, "CF")
(J_LOCK,) = declared(__name__, "JI")  # 1: the job's database call under way took the lock
(ROLE_LOCK,) = declared(__name__, "ROLE")  # its pool's: a grant is the caller's (`granted`)
# a call that took the lock has held it `hold`: its own work starts
(EV_LOCK_HOLD,) = declared(__name__, "EV")

# the stack's features this module implements (`sim.engines.compiled.support.IMPLEMENTS`)
FEATURES = {
    "database.lock",  # permits held through the database's call
    "database.lock.random_order",  # a release to a waiter drawn at random (`next_holder`)
    "database.lock.waiters_cost",  # the holder's section grows with the waiters (`granted`)
}

# `[database.lock]`'s parameters (`sim.engines.compiled.support.PARAMETERS`)
PARAMETERS = {
    "database.lock.share": ("modelled", "the same uniform stream as the reference"),
    "database.lock.permits": ("modelled", ""),
    "database.lock.hold": ("modelled", ""),
    "database.lock.order": ("modelled", "the same uniform stream as the reference"),
    "database.lock.wake_per_waiter_s": ("modelled", ""),
}


def place(stack, pool, stream) -> tuple[int, int, int, int] | None:
    """The lock's pool, made by `pool`, the stream that picks the calls that take it, its
    hold's and the one that picks the next holder, made by `stream` (-1: none; every call
    takes it, it is held for the call's own work only, its waiters go first-come first-served)
    -- the reference's (`sim.tiers.database.lock`: its pool's name, its streams' purposes, in
    its order); None: the model has no lock."""
    part = None if stack.database is None else stack.database.mechanism("lock")
    if part is None:
        return None
    permits = pool(POOL, part.permits, None, ROLE_LOCK)
    share = -1 if part.every_call else stream(SHARE_STREAM, Uniform(0.0, 1.0))
    hold = -1 if part.hold is None else stream(HOLD_STREAM, part.hold)
    order = stream(ORDER_STREAM, Uniform(0.0, 1.0)) if part.random_order else -1
    return permits, share, hold, order


def configure(stack, made: Any, station_row, config, config_float) -> None:
    """The lock's settings in the configuration: what `place` `made` (its pool, its streams)
    and the station whose calls take it (the database's); none without a lock."""
    if made is None:
        return
    part = stack.database.mechanism("lock")
    (
        config[C_LOCK_POOL],
        config[C_ST_LOCK_SHARE],
        config[C_ST_LOCK_HOLD],
        config[C_ST_LOCK_ORDER],
    ) = made
    config[C_LOCK_STATION] = station_row("database")
    config_float[CF_LOCK_SHARE] = part.share
    config_float[CF_LOCK_WAKE] = part.wake_per_waiter_s


@njit(cache=True)
def guards(S, target):
    """The lock stands in front of the calls to station `target` (the database's)."""
    C = S.C
    return C[C_LOCK_POOL] >= 0 and target == C[C_LOCK_STATION]


@njit(cache=True)
def call(S, j):
    """Visit j calls the database (`SharedLock.__call__`), its JDBC connection taken: through
    the lock if this call takes it, else straight to the database."""
    C = S.C
    share = C[C_ST_LOCK_SHARE]
    if share >= 0 and not streams.draw(S, share) < S.CF[CF_LOCK_SHARE]:
        S.JI[j, J_LOCK] = 0
        _enter(S, j)
        return
    S.JI[j, J_LOCK] = 1
    # an unbounded queue: granted now, or queued until `slots.release` hands a permit over
    if slots.acquire(S, C[C_LOCK_POOL], j) == GRANTED:
        granted(S, j)


@njit(cache=True)
def granted(S, j):
    """Visit j's call holds a permit: it holds it for `hold` first, and for
    `wake_per_waiter_s` per waiter still queued (`_HoldThen`), if any."""
    hold = S.C[C_ST_LOCK_HOLD]
    wake = S.CF[CF_LOCK_WAKE]
    if hold < 0 and not wake > 0.0:
        _enter(S, j)
        return
    held = streams.draw(S, hold) if hold >= 0 else 0.0
    if wake > 0.0:
        # the new holder has left the queue (`slots.release`): these are the others
        held += wake * S.POI[S.C[C_LOCK_POOL], PO_WAITING]
    calendar.push(S, S.F[F_NOW] + held, EV_LOCK_HOLD, j)


@njit(cache=True)
def _enter(S, j):
    """Visit j's call reaches the database (j + 1 its visit there), with the JDBC connection
    it took (the pool's row, or -1: no pool)."""
    STI = S.STI
    s = S.JI[j, J_STATION]
    station.arrive_queued_target(S, j + 1, STI[s, ST_TARGET], STI[s, ST_JDBC])


@njit(cache=True)
def released(S, j):
    """Visit j answers its caller: if it is the database's visit of a call that took the lock,
    the lock is released (handed to the next waiter) before anything else goes back."""
    if S.C[C_LOCK_POOL] < 0:
        return  # no lock
    if S.JI[j, J_STATION] == S.C[C_LOCK_STATION] and S.JI[j - 1, J_LOCK]:
        S.JI[j - 1, J_LOCK] = 0
        slots.release(S, S.C[C_LOCK_POOL])


@njit(cache=True)
def random_order(S):
    """A release goes to any waiter alike (`[database.lock] order = "random"`)."""
    return S.C[C_ST_LOCK_ORDER] >= 0


@njit(cache=True)
def next_holder(S, waiting):
    """The position in the lock's queue (0: the oldest) of the waiter a release goes to, of
    `waiting` >= 2 (`Pool.serve_in_random_order`: one uniform draw)."""
    return min(int(streams.draw(S, S.C[C_ST_LOCK_ORDER]) * waiting), waiting - 1)


# --------------------------------------------------------------------------- events
EVENTS = (EV_LOCK_HOLD,)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """A call has held the lock for its `hold`: the database's visit starts."""
    _enter(S, arg)
