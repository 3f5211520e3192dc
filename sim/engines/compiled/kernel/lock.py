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
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import calendar, slots, station, streams
from sim.engines.compiled.kernel.layout import (
    C_LOCK_POOL,
    C_LOCK_STATION,
    C_ST_LOCK_HOLD,
    C_ST_LOCK_ORDER,
    C_ST_LOCK_SHARE,
    CF_LOCK_SHARE,
    CF_LOCK_WAKE,
    EV_LOCK_HOLD,
    F_NOW,
    GRANTED,
    J_LOCK,
    J_STATION,
    PO_WAITING,
    ST_JDBC,
    ST_TARGET,
)


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
