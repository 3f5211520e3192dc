"""The shared database tier (`[database]`) as the engines build it: its connection pool, CPU,
disks, and the mechanisms around its calls.

A mechanism around the database's call (the database's shared lock) is a `CallMechanism`
part made by a function its module registers in `AROUND_CALL`; the package imports every
module of this folder, so the database's part holds them all, and the probe layout, the
analytic network and the stability check read what each declares (`pools`, `resources`),
naming none."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from sim.model.features import Declaration, Hold, StackPart, exact
from sim.model.parts.hosts import HostCpu, host_cpu
from sim.random.distributions import as_distribution


@dataclass(frozen=True)
class HeldResource:
    """A resource a mechanism's calls hold, as the analytic network (a station of `servers`
    with `share * hold_s` of busy time per database call) and the stability check count it."""

    name: str  # its station's name, and its probe's
    setting: str  # the setting that sizes it (a dotted path of the model file)
    share: float  # the share of the database's calls that hold it
    hold_s: float  # the mean time a call holds it when nothing else is in its way [s]
    servers: int
    # what the stability check says when the calls alone hold it all the time: a format of the
    # busy share `u` (>= 1)
    overloaded: str


class CallMechanism(StackPart):
    """A mechanism around the database's call, held by the database's part (`mechanisms`):
    `NAME` finds it there (`DatabasePart.mechanism`), `pools()` are its slot pools in the
    order the engines build them (after the database's own), `resources(database)` what the
    analytic network and the stability check count of it, `holds()` (`StackPart.holds`) its
    pools' places in the nesting of holds, inside the call's connection."""

    NAME: ClassVar[str] = ""

    def pools(self) -> list[tuple[str, int | None]]:
        return []

    def resources(self, database: DatabasePart) -> list[HeldResource]:
        return []


# name -> the function that makes a mechanism's part from the model (None: the model has none)
AROUND_CALL: dict[str, Callable[[Any], CallMechanism | None]] = {}


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
    # the mechanisms around its calls this model has (`AROUND_CALL`), in the order of their names
    mechanisms: tuple[CallMechanism, ...] = ()

    def features(self) -> dict[str, str]:
        out = {"database": "[database]"}
        for mechanism in self.mechanisms:
            out.update(mechanism.features())
        return out

    def holds(self) -> list[Hold]:
        """A node's call holds one of its connections (PostgreSQL `max_connections`); inside it,
        what each mechanism around the call holds; inside those, the CPU and the disks.  Every
        node's calls share them all."""
        out = []
        if self.connections is not None:
            out.append(Hold("database.connections", 1, "the database's connections", shared=True))
        around = 1  # the connection's depth
        inner = [replace(h, depth=around + h.depth) for m in self.mechanisms for h in m.holds()]
        out += inner
        work = max((h.depth for h in inner), default=around) + 1
        out.append(Hold(self.cpu.name, work, "the database's CPU", shared=True))
        if self.disks is not None:
            out.append(Hold("database.disks", work, "the database's disks", shared=True))
        return out

    def mechanism(self, name: str) -> Any:
        """The mechanism `name` around its calls (a `CallMechanism`), or None: the model has none."""
        return next((m for m in self.mechanisms if name == m.NAME), None)


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
        mechanisms=tuple(
            made for _, make in sorted(AROUND_CALL.items()) if (made := make(model)) is not None
        ),
    )
