"""The shared database tier (`[database]`) as the engines build it: its connection pool, CPU,
disks and shared lock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.features import Declaration, StackPart, exact
from sim.model.parts.hosts import HostCpu, host_cpu
from sim.model.parts.shared_lock import SharedLockPart, shared_lock_part
from sim.random.distributions import as_distribution


@dataclass(frozen=True)
class DatabasePart(StackPart):
    """The database: a station whose visits hold a connection (PostgreSQL `max_connections`,
    `database.connections`; None: no pool), compute on its CPU, then write to its disks."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "database": exact("the database's CPU (processor sharing) and disks (FCFS, exponential)"),
    }

    connections: int | None  # the connection pool's size; None: no pool
    cpu: HostCpu  # dedicated when the connections are no more than the cores
    demand: Any  # CPU demand per call (`database.demand`, a distribution spec)
    # the disks (`database.disks` spindles) and each call's disk work (`database.disk_demand`);
    # None when calls do no disk work, and no disk pool is built
    disks: int | None
    disk_demand: Any
    # the shared lock every node's calls may take (`[database.lock]`); None: none
    lock: SharedLockPart | None = None

    def features(self) -> dict[str, str]:
        out = {"database": "[database]"}
        if self.lock is not None:
            out.update(self.lock.features())
        return out


def database_part(model: Any) -> DatabasePart | None:
    """The database of `model` (a `sim.model.schema.Model`), or None."""
    db = model.database
    if db is None:
        return None
    return DatabasePart(
        connections=db.connections or None,
        cpu=host_cpu("database", db.cores, db.speed, db.connections),
        demand=db.demand,
        disks=db.disks if as_distribution(db.disk_demand).mean > 0 else None,
        disk_demand=db.disk_demand,
        lock=shared_lock_part(model),
    )
