"""The probe layout: which components of a run measure themselves, in which order, with which
counters -- the recorder's columns, decided from the model without building anything.

Both engines record exactly this layout and check it when a run starts (`ProbeLayout.check`):
the reference's assembly (`Assembly.probes`) and the compiled engine's tables list their
probes, and a mismatch stops the run with both lists, where before the order lived in the
reference's build sequence alone ("after the extra probes, before the backend pools") and the
compiled engine repeated it by hand.  Studies learn a model's metric names from the layout's
views (`metric_names`), where they used to build a replication's components to ask them.
The layout also places what each part holds (`StackPart.holds`: its slot pools and CPUs) in
the nesting of holds, for `capacity` to name the bottleneck without a table of its own.

The order is the reference assembler's: stations (the proxy, the database, the nodes), slot
pools in the order they are made (the database's, each node's JDBC pool, connector pools and
connection set-up lock, the replication network's links, the front's workers), CPUs (the
database's, the nodes', the proxy's, the load generator's), the extra probes (replication,
the front's connections and statuses, `elapsed.server_close`, the autoscaled groups), the
JVMs, the front's backend connection pools, the balancer, and the request classes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Protocol

from sim.kernel.cpu import ProcessorSharingCPU
from sim.kernel.slots import INFINITE, Pool
from sim.model.classes import class_names
from sim.model.features import Hold
from sim.model.parts.database import DatabasePart
from sim.model.parts.front import Front
from sim.model.parts.hosts import HostCpu
from sim.model.parts.nodes import NodePart
from sim.model.parts.replication import ClusterNetwork, ReplicationPart
from sim.observe.classes import ClassProbe
from sim.observe.probes import Measures
from sim.observe.recorder import BASE_FIELDS
from sim.tiers.appserver.connectors import Connector
from sim.tiers.appserver.jvm import Jvm
from sim.tiers.balancer.dispatcher import BALANCER_COUNTS, DispatchProbe
from sim.tiers.cluster.elastic_group import ElasticGroup
from sim.tiers.cluster.session_replication import ReplicationProbe
from sim.tiers.proxy.backend_pool import BackendPool, FailingConnectsPool
from sim.tiers.proxy.client_connections import ConnectionsProbe, ServerCloseProbe, StatusProbe
from sim.tiers.proxy.mod_jk import JkBackendPool
from sim.tiers.station import Station


class StackParts(Protocol):
    """What the layout reads of the stack plan (`sim.model.stack.StackPlan`), which imports
    this module."""

    @property
    def database(self) -> DatabasePart | None: ...
    @property
    def nodes(self) -> tuple[NodePart, ...]: ...
    @property
    def front(self) -> Front | None: ...
    @property
    def front_connections(self) -> bool: ...
    @property
    def cpus(self) -> tuple[HostCpu, ...]: ...
    @property
    def clients_cpu(self) -> HostCpu | None: ...
    @property
    def replications(self) -> tuple[ReplicationPart, ...]: ...
    @property
    def network(self) -> ClusterNetwork: ...


class LayoutMismatch(RuntimeError):
    """An engine built probes other than the layout's: its columns would be misread."""


@dataclass(frozen=True)
class ProbeSlot:
    """One component that measures itself: its name (`tomcat1.threads`), the reference class
    whose counters and metrics it has, and what those metrics read of it."""

    name: str
    measures: type  # Station, Pool, ProcessorSharingCPU, BackendPool, ...
    fields: tuple[str, ...]
    capacity: int | None = None  # a slot pool's slots (None: unbounded)
    cores: int = 0  # a CPU's cores
    members: tuple[str, ...] = ()  # the balancer's members, by name


@dataclass(frozen=True)
class ProbeLayout:
    """Every probe of a run, in the recorder's order, and the resources a request holds among
    them, each at its depth in the nesting of holds (`_holds`)."""

    slots: tuple[ProbeSlot, ...]
    holds: tuple[Hold, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """The recorder's columns: the base counters, then each probe's `<name>:<field>`."""
        return (*BASE_FIELDS, *(f"{s.name}:{f}" for s in self.slots for f in s.fields))

    def views(self) -> list[Measures]:
        """A view of each probe with only what its metrics read (no component is built):
        the metric names, units and formulas are the reference class's own."""
        return [_view_class(slot.measures)(slot) for slot in self.slots]

    def check(self, probes: Sequence[Measures], engine: str) -> None:
        """Raise `LayoutMismatch` unless `probes` are the layout's, name for name and field
        for field, in its order."""
        built = [(p.name, tuple(p.fields)) for p in probes]
        planned = [(s.name, s.fields) for s in self.slots]
        if built != planned:
            first = next(
                (i for i, (b, p) in enumerate(zip(built, planned)) if b != p),
                min(len(built), len(planned)),
            )
            raise LayoutMismatch(
                f"the {engine} engine records other probes than the model's layout "
                f"(sim.model.parts.probes), from probe {first} on: it built "
                f"{built[first : first + 3]}, the layout has {planned[first : first + 3]}"
            )


# ------------------------------------------------------------------------------ views
class _FrontAtEnd:
    """What `ServerCloseProbe` reads of the front: no connection watched, no close seen."""

    client_end = math.nan
    watched = 0


def _init_view(view: Any, slot: ProbeSlot) -> None:
    view.name = slot.name
    view.fields = slot.fields
    view.capacity = INFINITE if slot.capacity is None else slot.capacity
    view.cores = slot.cores
    view.members = slot.members
    view.front = _FrontAtEnd()


@cache
def _view_class(measures: type) -> type:
    """A subclass of the reference class whose `__init__` only names the view: its `metrics`
    (and a `super().metrics` it calls) run on the view as on the component."""
    return type(f"{measures.__name__}View", (measures,), {"__init__": _init_view})


# ---------------------------------------------------------------------------- the layout
def probe_layout(model: Any, nodes: Sequence[Any], stack: StackParts) -> ProbeLayout:
    """The layout of `model` (a `sim.model.schema.Model`) from the stack's parts: `nodes` are
    the plan's nodes (`NodePlan`), `stack` the decisions and parts (`sim.model.stack`)."""
    stations: list[ProbeSlot] = []
    pools: list[ProbeSlot] = []

    def pool(name: str, capacity: int | None) -> None:
        pools.append(ProbeSlot(name, Pool, tuple(Pool.fields), capacity=capacity))

    db = stack.database
    if db is not None:
        stations.append(ProbeSlot("database", Station, _STATION_FIELDS))
        if db.connections is not None:
            pool("database.connections", db.connections)
        if db.disks is not None:
            pool("database.disks", db.disks)
        for mechanism in db.mechanisms:  # after the database's own pools, as the engines
            for name, capacity in mechanism.pools():
                pool(name, capacity)

    backend: list[ProbeSlot] = []
    jvms: list[ProbeSlot] = []
    events = False
    front = stack.front
    for planned, node in zip(nodes, stack.nodes):
        group, name = planned.spec, node.name
        events = events or any(e.node in (None, planned.number) for e in group.events)
        if node.jdbc_pool is not None:
            pool(f"{name}.jdbc_pool", node.jdbc_pool)
        for made, size in _connector_pools(node.connector, group, name):
            pool(made, size)
        if node.jvm is not None:
            jvms.append(ProbeSlot(node.jvm.name, Jvm, tuple(Jvm.fields)))
        stations.append(ProbeSlot(name, Station, _STATION_FIELDS))
        if node.backend_pool:
            assert front is not None  # the front's pools exist only behind a proxy
            if node.connection_setup is not None:
                pool(f"{name}.connection_setup", 1)
            kind = _backend_pool_class(front, node)
            backend.append(ProbeSlot(name, kind, tuple(kind.fields)))

    entries = [node.name for node in stack.nodes]
    extra = _replication(stack, pool)
    if front is not None:
        pool("proxy.workers", front.workers)
        stations.insert(0, ProbeSlot("proxy", Station, _STATION_FIELDS))
        if stack.front_connections:
            extra.append(ProbeSlot("proxy.connections", ConnectionsProbe, _FRONT_FIELDS))
            extra.append(ProbeSlot("proxy.responses", StatusProbe, _STATUS_FIELDS))
            if model.finite:
                extra.append(ProbeSlot("elapsed", ServerCloseProbe, ()))
    # the autoscaled groups' control loops (`sim.tiers.cluster.elastic_group`)
    extra += [
        ProbeSlot(f"{group.name}.autoscale", ElasticGroup, tuple(ElasticGroup.fields))
        for group in model.backends
        if group.autoscale is not None
    ]
    cpus = [
        ProbeSlot(cpu.name, ProcessorSharingCPU, _CPU_FIELDS, cores=cpu.cores) for cpu in stack.cpus
    ]

    slots = [*stations, *pools, *cpus, *extra, *jvms, *backend]
    # the balancer: between several nodes, or before one that crashes (`backends.N.events`)
    if len(entries) > 1 or (entries and events):
        members = tuple(entries)
        slots.append(
            ProbeSlot("balancer", DispatchProbe, (*members, *BALANCER_COUNTS), members=members)
        )
    slots += [
        ProbeSlot(f"class.{name}", ClassProbe, tuple(ClassProbe.fields))
        for name in class_names(model)
    ]
    return ProbeLayout(tuple(slots), _holds(stack, {s.name for s in slots}))


_STATION_FIELDS = tuple(Station.fields)
_CPU_FIELDS = tuple(ProcessorSharingCPU.fields)
_FRONT_FIELDS = tuple(ConnectionsProbe.fields)
_STATUS_FIELDS = tuple(StatusProbe.fields)


class _Made:
    """What a connector's `make_pool` returns while the layout only asks which pools it
    makes: nothing is built."""


def _connector_pools(
    connector: type[Connector], group: Any, name: str
) -> list[tuple[str, int | None]]:
    """The pools a node's connector makes (`Connector.__init__` decides which: a thread per
    connection, a request-thread executor, maxConnections' slots), in its order."""
    made: list[tuple[str, int | None]] = []

    def make_pool(path: str, size: int | None, queue: int | None) -> Any:
        made.append((path, size))
        return _Made()

    connector(group, name, make_pool)
    return made


def _backend_pool_class(front: Front, node: NodePart) -> type[BackendPool]:
    """The front's pool class for one node: mod_jk's ajp13 worker, mod_proxy's with connects
    that can fail, or the plain pool."""
    if front.mod_jk:
        return JkBackendPool
    if node.connects_can_fail:
        return FailingConnectsPool
    return BackendPool


def _holds(stack: StackParts, probed: set[str]) -> tuple[Hold, ...]:
    """What each part holds (`StackPart.holds`), at its depth from the outermost resource: the
    load generator's CPU, where every request starts; the front's inside it; each node's
    inside the front's; the database's inside a node's, whose thread calls it.  A hold whose
    pool this model does not make (a connector without a thread pool) is left out."""
    out: list[Hold] = []
    if stack.clients_cpu is not None:
        out.append(Hold(stack.clients_cpu.name, 0, shared=True))
    outer = 0
    for parts in (
        () if stack.front is None else (stack.front,),
        stack.nodes,
        () if stack.database is None else (stack.database,),
    ):
        held = [replace(h, depth=outer + h.depth) for part in parts for h in part.holds()]
        out += held
        outer = max((h.depth for h in held), default=outer)
    return tuple(h for h in out if h.name in probed)


def _replication(stack: StackParts, pool) -> list[ProbeSlot]:
    """The replication network's links (made by `pool`) and each active replication's probe."""
    if not stack.replications:
        return []
    if stack.network.switched:
        for direction in ("tx", "rx"):
            for node in stack.nodes:
                pool(f"net.{node.name}.{direction}", 1)
    else:
        pool("net.segment", 1)
    return [
        ProbeSlot(part.name, ReplicationProbe, tuple(ReplicationProbe.fields))
        for part in stack.replications
    ]
