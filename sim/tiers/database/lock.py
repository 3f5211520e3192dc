"""A serialised section of the shared database: a hot row, a sequence, a table lock
(`[database.lock]`).

Every node's database calls reach one database; a call that updates the hot row waits for the
transaction before it to commit.  PostgreSQL takes the row's lock at the `UPDATE` and releases
it at the end of the transaction, after the `COMMIT`'s WAL flush (`synchronous_commit = on`):
a second `UPDATE` of the row sleeps on the first transaction's id ("still waiting for
ShareLock on transaction", `log_lock_waits`), holding its JDBC connection and its request
thread.  So the section's length is the work between the locking statement and the commit
(`hold`) plus the commit's own CPU and flush; its throughput is bounded by permits / length
whatever the number of nodes, which is why a second Tomcat in front of such a database buys
little (the database's own statistics show it: the `UPDATE`'s `mean_exec_time` in
`pg_stat_statements` grows with the load while the statements outside the lock do not).

The lock is a `Pool` (one class for every slot pool: its probe gives `database.lock.*` —
utilisation, wait, holders, waiters) wrapped around the database's call.  Who gets it next is
the part's `order`.  First-come first-served (`fifo`) is a lock manager's queue: PostgreSQL's
`LOCK TABLE`, or `SELECT ... FOR UPDATE` of a row nobody updates.  A hot row that every
transaction *updates* is not served in order (`random`): each holder's `UPDATE` makes a new
version of the row; when it commits, the waiter at the head of the old version's queue returns
from `heap_update` with `TM_Updated` and gives up its place (`heapam.c`: `UnlockTupleTuplock`
on that path), and every waiter then re-locks the newest version through `EvalPlanQual`
(`ExecUpdate`, READ COMMITTED) in whatever order the scheduler wakes them -- the race
`README.tuplock` describes for waiters that are all released at once.  The mean wait is the
same either way; the tail is not: served in random order, a waiter is passed over while
others wait, so the p95 grows with the number of waiters (the connections a node adds).

The waiters also cost the holder (`wake_per_waiter_s`): at a hot row's `COMMIT` PostgreSQL
wakes the old version's waiters one after another, each returning `TM_Updated`, giving up its
place (`UnlockTupleTuplock`) and re-locking the newest version (`heap_lock_tuple` through
`EvalPlanQual`), on the cores the new holder's statements and round trips need.  The new
holder's section is longer by `wake_per_waiter_s` for every waiter still queued when it is
granted the lock (a count, nothing drawn), so a lock with more waiters turns over more slowly:
a third node can cost throughput, not only add queueing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sim.kernel.request import Reply, Request
from sim.kernel.slots import Pool
from sim.random.distributions import Distribution, Uniform
from sim.random.streams import Streams
from sim.tiers.database import AROUND_CALL
from sim.tiers.station import Call, PooledCall

POOL = "database.lock"  # the lock's slot pool (its probe: database.lock.*)
SHARE_STREAM = "database.lock"  # uniform [0, 1) numbers: which calls take the lock
HOLD_STREAM = "database.lock.hold"  # the hold's draws
ORDER_STREAM = "database.lock.order"  # uniform [0, 1) numbers: which waiter goes next (random)


class LockPart(Protocol):
    """What the lock reads of the stack's decision (`sim.model.parts.shared_lock.SharedLockPart`,
    which the model's layer above makes)."""

    @property
    def share(self) -> float: ...

    @property
    def hold(self) -> Distribution | None: ...

    @property
    def every_call(self) -> bool: ...

    @property
    def random_order(self) -> bool: ...

    @property
    def wake_per_waiter_s(self) -> float: ...


def shared_lock(kernel, part: LockPart, pool: Pool, target: Call, streams: Streams) -> SharedLock:
    """The lock the stack decided (`part`: share, permits, hold) around the database's call
    `target`, with its own random streams: `SHARE_STREAM` decides which calls take it (none
    drawn when every call does), `HOLD_STREAM` draws the hold, `ORDER_STREAM` the waiter a
    release goes to when the order is random (none drawn while fewer than two wait).  The compiled engine draws from
    the same streams (`sim.engines.compiled.plan`)."""
    takes = None
    if not part.every_call:
        draw = Uniform(0.0, 1.0).sampler(streams.generator(SHARE_STREAM))
        share = part.share

        def takes() -> bool:
            return draw() < share

    hold = None
    if part.hold is not None:
        hold = part.hold.sampler(streams.generator(HOLD_STREAM))
    if part.random_order:
        pool.serve_in_random_order(Uniform(0.0, 1.0).sampler(streams.generator(ORDER_STREAM)))
    return SharedLock(kernel, pool, target, takes, hold, part.wake_per_waiter_s)


def around_call(kernel, database, pool, call: Call, streams: Streams) -> Call:
    """The database's `call` behind the lock of the stack's `database` part (its `lock`), its
    pool made by the assembler's `pool(name, capacity)` after the database's own; `call`
    itself when the model has no lock.  Registered in `AROUND_CALL`, which the reference
    assembler applies."""
    part = database.mechanism("lock")
    if part is None:
        return call
    return shared_lock(kernel, part, pool(POOL, part.permits), call, streams)


AROUND_CALL.append(around_call)


class SharedLock:
    """`target` (the database's call) behind the lock, for the calls that take it.

    `takes()` says whether this call takes the lock (None: every call does); `hold()` draws the
    time held before the call's own work [s] (None: no such time).  The lock is taken as a
    JDBC connection is (`PooledCall`): held for the whole call, released before the caller
    resumes, so it is released after the commit's flush."""

    __slots__ = ("locked", "takes", "target")

    def __init__(
        self,
        kernel,
        pool: Pool,
        target: Call,
        takes: Callable[[], bool] | None,
        hold: Callable[[], float] | None,
        wake_per_waiter_s: float = 0.0,
    ) -> None:
        self.target = target
        self.takes = takes
        held = hold is not None or wake_per_waiter_s > 0
        self.locked = PooledCall(
            pool, _HoldThen(kernel, hold, target, pool, wake_per_waiter_s) if held else target
        )

    def __call__(self, request: Request, reply: Reply) -> None:
        if self.takes is None or self.takes():
            self.locked(request, reply)
        else:
            self.target(request, reply)


class _HoldThen:
    """Holding the lock for `hold()` before the call's own work: the statements and round
    trips between the locking statement and the commit, and `wake_per_waiter_s` for every
    waiter still queued at the grant (the pool's live waiters: the new holder has left the
    queue when it is called)."""

    __slots__ = ("hold", "kernel", "pool", "target", "wake_per_waiter_s")

    def __init__(
        self,
        kernel,
        hold: Callable[[], float] | None,
        target: Call,
        pool: Pool,
        wake_per_waiter_s: float,
    ) -> None:
        self.kernel = kernel
        self.hold = hold
        self.target = target
        self.pool = pool
        self.wake_per_waiter_s = wake_per_waiter_s

    def __call__(self, request: Request, reply: Reply) -> None:
        held = 0.0 if self.hold is None else self.hold()
        if self.wake_per_waiter_s > 0:
            held += self.wake_per_waiter_s * self.pool.waiting
        self.kernel.call_after(held, self._work, (request, reply))

    def _work(self, pair: tuple[Request, Reply]) -> None:
        self.target(*pair)
