"""The backend nodes (`[[backends]]`, one per member the balancer reaches) as the engines build
them: each node's CPU, connector, work, JDBC pool, events, and the front's pool of connections
to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.backend_pools import connects_can_fail
from sim.model.features import POOL, Declaration, Hold, StackPart, approximate, exact, refused
from sim.model.parts.hosts import HostCpu, host_cpu
from sim.model.parts.jvm import JvmPart, jvm_part
from sim.random.distributions import Distribution, as_distribution
from sim.tiers.appserver.connectors import Connector


@dataclass(frozen=True)
class ConnectorLimits:
    """What a connector reads of its group (`sim.tiers.appserver.connectors.ConnectorSettings`):
    Tomcat `maxThreads` (less acceptors and selectors), `acceptCount`, `maxConnections`."""

    request_threads: int | None  # `backends.N.threads` less `acceptors` and `selectors` (Jetty)
    accept_queue: int | None  # `backends.N.accept_queue` (acceptCount)
    max_connections: int | None  # `backends.N.max_connections` (maxConnections)


@dataclass(frozen=True)
class NodeEvent:
    """Something that happens to this node at a time (`backends.N.events`, the ones whose
    `node` is this node or every node of the group)."""

    at_s: float  # when [s]
    kind: str  # crash, recover, slow
    factor: float  # slow: how many times longer each CPU burst takes


@dataclass(frozen=True)
class NodePart(StackPart):
    """One node (`tomcat1`) of `backends.N`.  Its connector's feature (`connector.<kind>`) is
    declared on its class (`sim.tiers.appserver.connectors`), its JVM's on `JvmPart`."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "connector.max_connections": exact("Tomcat maxConnections: " + POOL),
        "connector.connection_setup": approximate(
            "each new backend connection is set up one at a time per node (a serialised "
            "section); the network leaves the wait out, so the answer is optimistic when "
            "connections open often"
        ),
        "backends.events": approximate("crashes and slow-downs make the load time-varying"),
        "backends.autoscale": refused(
            "an autoscaled group changes its size over time, which no steady state has: "
            "solve each fixed count (--set backends.N.autoscale=none --set backends.N.count=K)"
        ),
        "appserver.jdbc_pool": exact("the JDBC pool (maxTotal): " + POOL),
        "appserver.jdbc_pool.opening": approximate(
            "the pool opens its connections as they are first needed (jdbc_connect): a start-up "
            "transient the steady state leaves out"
        ),
    }

    name: str
    # replication work runs beside the request threads, and a JVM pauses the CPU, which only
    # the processor-sharing form supports: the CPU is dedicated only without either, when the
    # request threads (Tomcat `maxThreads`) are no more than the cores
    cpu: HostCpu
    connector: type[Connector]  # `backends.N.connector`: what a connection pins, the threads
    limits: ConnectorLimits  # what the connector sizes its pools from
    # a request's CPU work (`backends.N.demand`, a distribution spec) and its database calls
    # (`backends.N.db_calls`): the tier's default work (`sim.model.classes.node_work` reads
    # both, a class's own values over them)
    demand: Any
    db_calls: int
    io_wait: Distribution  # `backends.N.io_wait`: waiting off the CPU per request (0: none)
    weight: float  # `backends.N.weight` (mod_proxy_balancer `loadfactor`, mod_jk `lbfactor`)
    events: tuple[NodeEvent, ...]  # this node's crashes, recoveries, slow-downs, in order
    # the JDBC pool (`backends.N.jdbc_pool`, DBCP `maxTotal`) of a node that calls the database
    jdbc_pool: int | None
    # the front keeps a pool of connections to the node (`sim.model.stack.backend_pools`)
    backend_pool: bool
    # a connect from the front can meet a full accept queue and fail after connectiontimeout
    # (`sim.model.backend_pools.connects_can_fail`)
    connects_can_fail: bool
    # the node's set-up of each new connection from the front (`backends.N.connection_setup`,
    # a distribution spec), serialised per node; None when it costs nothing or no pool is kept
    connection_setup: Any
    jvm: JvmPart | None  # the node's JVM (`backends.N.jvm`); None: not modelled
    # the node closes a pooled connection idle this long (`backends.N.connection_idle_timeout_s`:
    # Tomcat `connectionTimeout` on an idle keep-alive connection); None: never
    connection_idle_timeout_s: float | None = None
    path: str = ""  # its group in the model file (`backends.N`)
    # its group is autoscaled (`backends.N.autoscale`: `sim.model.parts.autoscale`)
    autoscaled: bool = False
    # its group has events (`backends.N.events`), this node's or another's: the feature is the
    # group's, named where the group's first node stands among the nodes' features
    group_events: bool = False
    # the time to open one JDBC connection (`backends.N.jdbc_connect`, a distribution spec) and
    # the connections open from the node's start (`jdbc_initial_size`, DBCP `initialSize`);
    # None: opening costs nothing
    jdbc_connect: Any = None
    jdbc_initial_size: int = 0

    def features(self) -> dict[str, str]:
        out = {self.connector.feature: f"{self.path}.connector = {self.connector.kind!r}"}
        if self.limits.max_connections is not None:
            out["connector.max_connections"] = f"{self.path}.max_connections"
        if self.connection_setup is not None:
            out["connector.connection_setup"] = f"{self.path}.connection_setup"
        if self.jvm is not None:
            out.update(self.jvm.features())
        if self.group_events:
            out["backends.events"] = f"{self.path}.events"
        if self.autoscaled:
            out["backends.autoscale"] = f"{self.path}.autoscale"
        if self.jdbc_pool is not None:
            out["appserver.jdbc_pool"] = f"{self.path}.jdbc_pool"
        if self.jdbc_connect is not None:
            out["appserver.jdbc_pool.opening"] = f"{self.path}.jdbc_connect"
        return out

    def holds(self) -> list[Hold]:
        """A request holds one of its threads (Tomcat `maxThreads`, where its connector makes
        them a pool), and while the thread runs, its CPU and a connection of its JDBC pool
        (DBCP `maxTotal`).  maxConnections' slots (`<node>.connections`) are not ranked: an
        idle pooled connection from the front holds one, so a full pool of them need not bound
        the node; nor is the connection set-up lock, as `capacity` never has."""
        out = [Hold(f"{self.name}.threads", 1), Hold(self.cpu.name, 2)]
        if self.jdbc_pool is not None:
            out.append(Hold(f"{self.name}.jdbc_pool", 2))
        return out


def nodes_features(nodes: tuple[NodePart, ...]) -> dict[str, str]:
    """The nodes' features, each with the setting of the first node that brings it."""
    out: dict[str, str] = {}
    for node in nodes:
        for feature, setting in node.features().items():
            out.setdefault(feature, setting)
    return out


def node_parts(
    model: Any,
    nodes: tuple[Any, ...],
    connectors: tuple[type[Connector], ...],
    backend_pools: tuple[bool, ...],
    sessions_of: str | None,
) -> tuple[NodePart, ...]:
    """The parts of the plan's `nodes` (`NodePlan`) of `model` (a `sim.model.schema.Model`);
    `sessions_of`: the clients' kind when they keep session cookies (`Clients.keeps_sessions`),
    else None."""
    replicated = bool(model.cluster.active)
    out = []
    for planned, connector, pooled in zip(nodes, connectors, backend_pools):
        group = planned.spec
        shared = replicated or group.jvm is not None
        setup = group.connection_setup if pooled else None
        out.append(
            NodePart(
                name=planned.name,
                cpu=host_cpu(
                    planned.name,
                    group.cores,
                    group.speed,
                    None if shared else group.request_threads,
                ),
                connector=connector,
                limits=ConnectorLimits(
                    group.request_threads, group.accept_queue, group.max_connections
                ),
                demand=group.demand,
                db_calls=group.db_calls,
                io_wait=as_distribution(group.io_wait),
                weight=group.weight,
                events=tuple(
                    NodeEvent(event.at_s, event.kind, event.factor)
                    for event in group.events
                    if event.node in (None, planned.number)
                ),
                jdbc_pool=group.jdbc_pool if group.db_calls else None,
                backend_pool=pooled,
                connects_can_fail=(
                    model.proxy is not None and connects_can_fail(model.proxy, group, connector)
                ),
                connection_setup=(
                    setup if setup is not None and as_distribution(setup).mean > 0 else None
                ),
                jvm=jvm_part(planned.name, group.jvm, f"{planned.path}.jvm", sessions_of),
                connection_idle_timeout_s=group.connection_idle_timeout_s,
                path=planned.path,
                autoscaled=group.autoscale is not None,
                group_events=bool(group.events),
                jdbc_connect=(
                    group.jdbc_connect
                    if group.db_calls
                    and group.jdbc_connect is not None
                    and as_distribution(group.jdbc_connect).mean > 0
                    else None
                ),
                jdbc_initial_size=group.jdbc_initial_size,
            )
        )
    return tuple(out)
