"""The backend nodes (`[[backends]]`, one per member the balancer reaches) as the engines build
them: each node's CPU, connector, JDBC pool, and the front's pool of connections to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.model.backend_pools import connects_can_fail
from sim.model.parts.hosts import HostCpu, host_cpu
from sim.model.parts.jvm import JvmPart, jvm_part
from sim.random.distributions import as_distribution
from sim.tiers.appserver.connectors import Connector


@dataclass(frozen=True)
class NodePart:
    """One node (`tomcat1`) of `backends.N`."""

    name: str
    # replication work runs beside the request threads, and a JVM pauses the CPU, which only
    # the processor-sharing form supports: the CPU is dedicated only without either, when the
    # request threads (Tomcat `maxThreads`) are no more than the cores
    cpu: HostCpu
    connector: type[Connector]  # `backends.N.connector`: what a connection pins, the threads
    db_calls: int  # database calls per request (`backends.N.db_calls`)
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


def node_parts(
    model: Any,
    nodes: tuple[Any, ...],
    connectors: tuple[type[Connector], ...],
    backend_pools: tuple[bool, ...],
) -> tuple[NodePart, ...]:
    """The parts of the plan's `nodes` (`NodePlan`) of `model` (a `sim.model.schema.Model`)."""
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
                db_calls=group.db_calls,
                jdbc_pool=group.jdbc_pool if group.db_calls else None,
                backend_pool=pooled,
                connects_can_fail=(
                    model.proxy is not None and connects_can_fail(model.proxy, group, connector)
                ),
                connection_setup=(
                    setup if setup is not None and as_distribution(setup).mean > 0 else None
                ),
                jvm=jvm_part(planned.name, group.jvm),
            )
        )
    return tuple(out)
