"""The database's shared lock (`[database.lock]`) as a part of the stack: what both engines
build, decided once from the model.

The reference engine wraps the database's call in it (`sim.tiers.database.lock`), the compiled
engine lays it out as a slot pool and a few settings and runs it (`kernel/lock.py`); both read
this part (the database part's mechanism "lock") and nothing else of `[database.lock]`, so
they cannot disagree on which calls take the lock, how many hold it at once, or how long it is
held before the call's own work -- nor draw those from different random streams (their
purposes are the reference module's).  The part also says what the probe layout records of
it (its pool), where that pool sits in the nesting of holds and what a planner calls it
(`holds`: `capacity` names the bottleneck by it), and what `solve` and the stability check
count (`resources`: its hold as one more station).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.features import Declaration, Hold, approximate, exact
from sim.model.parts.database import AROUND_CALL, CallMechanism, DatabasePart, HeldResource
from sim.random.distributions import Distribution, as_distribution


@dataclass(frozen=True)
class SharedLockPart(CallMechanism):
    """A serialised section every node's database calls share (PostgreSQL's row lock from the
    `UPDATE` to the end of the `COMMIT`, a sequence, a table lock).

    `share` of the calls take it (1: every call, and no number is drawn); they wait for one of
    `permits`, then hold it for `hold` (None: no time besides the call's own CPU and disk
    work) and through the database's call, releasing it before the caller resumes.  A release
    goes to the oldest waiter, or to any waiter alike (`order`: "fifo", "random"); the new
    holder holds it `wake_per_waiter_s` longer for every waiter still queued (no draw).  Its pool's
    name and its random streams' purposes are the reference module's
    (`sim.tiers.database.lock`: POOL, SHARE_STREAM, HOLD_STREAM, ORDER_STREAM)."""

    permits: int
    share: float
    hold: Distribution | None
    order: str = "fifo"  # `[database.lock] order`: "fifo" or "random"
    # `[database.lock] wake_per_waiter_s`: added to a holder's section per waiter still queued
    # when it is granted (a hot row's waiters all woken at each COMMIT) [s]
    wake_per_waiter_s: float = 0.0

    NAME: ClassVar[str] = "lock"
    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "database.lock": approximate(
            "a serialised section shared by every node, holding the database's own CPU and "
            "disk work inside it (simultaneous possession): the network counts its hold as one "
            "more FCFS station, which is optimistic when the lock is busy"
        ),
        "database.lock.random_order": exact(
            "the waiters served in random order: the same means as in arrival order (the "
            "network answers means only; the wait's longer tail is the simulation's)"
        ),
        "database.lock.waiters_cost": approximate(
            "a holder's section grows with the waiters left at its grant: the network counts "
            "the lock's hold at its fitted length, without the waiters' cost, which is "
            "optimistic exactly where the lock is busy"
        ),
    }

    def features(self) -> dict[str, str]:
        out = {"database.lock": "database.lock"}
        if self.random_order:
            out["database.lock.random_order"] = "database.lock.order = 'random'"
        if self.waiters_cost:
            out["database.lock.waiters_cost"] = "database.lock.wake_per_waiter_s > 0"
        return out

    def pools(self) -> list[tuple[str, int | None]]:
        return [("database.lock", self.permits)]

    def holds(self) -> list[Hold]:
        """A call waits for the lock holding its database connection (a second `UPDATE` of the
        row sleeps in its backend), and holds it through the database's CPU and disk work.
        Its wait is measured on the real database (PostgreSQL's `pg_stat_statements` mean time
        of the locking `UPDATE` less the statement's own, or the waits `log_lock_waits`
        logs), and pins its hold."""
        return [
            Hold(
                "database.lock",
                1,
                "the database's shared lock",
                shared=True,
                measured="database.lock.wait",
                measured_title="the database's lock wait",
            )
        ]

    def resources(self, database: DatabasePart) -> list[HeldResource]:
        """The lock held through the call's own CPU and disk work (an approximation the feature
        declares: simultaneous possession counted as one more station): its mean hold when
        nothing else is in its way is its `hold`, the call's CPU demand and its disk work (the
        commit's flush)."""
        hold_s = (
            (0.0 if self.hold is None else self.hold.mean)
            + as_distribution(database.demand).mean / database.cpu.speed
            + as_distribution(database.disk_demand).mean
        )
        overloaded = (
            "the database's shared lock is held {u:.3g} of the time by its calls alone "
            f"({self.permits} permit(s)): no number of nodes serves this load"
        )
        return [
            HeldResource(
                "database.lock",
                "database.lock.permits",
                self.share,
                hold_s,
                self.permits,
                overloaded,
            )
        ]

    @property
    def every_call(self) -> bool:
        """Every database call takes the lock (no draw decides)."""
        return self.share >= 1

    @property
    def waiters_cost(self) -> bool:
        """The holder's section grows with the waiters left when it is granted."""
        return self.wake_per_waiter_s > 0

    @property
    def random_order(self) -> bool:
        """A release goes to any waiter alike, not the oldest (a hot row's updaters race)."""
        return self.order == "random"


def shared_lock_part(model: Any) -> SharedLockPart | None:
    """The part of `model`'s `[database.lock]` (a `sim.model.schema.Model`), or None: the model
    has no lock.  The database's part holds it (`sim.model.parts.database.AROUND_CALL`)."""
    if model.database is None or model.database.lock is None:
        return None
    spec = model.database.lock
    hold = as_distribution(spec.hold)
    return SharedLockPart(
        permits=spec.permits,
        share=spec.share,
        hold=hold if hold.mean > 0 else None,
        order=spec.order,
        wake_per_waiter_s=spec.wake_per_waiter_s,
    )


AROUND_CALL[SharedLockPart.NAME] = shared_lock_part
