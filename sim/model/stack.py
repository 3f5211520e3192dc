"""The stack's decisions, made once: which components a replication builds and with what, and
the set of *features* (mechanisms) the model uses.

Both engines read this: the reference assembler (`sim.engines.reference.assemble`) builds
exactly the components decided here, and an engine runs a model only when the model's features
are a subset of what it implements (`sim.engines.choose`), as LINE checks a solver's feature
set against a model's.  Before, the compiled engine refused only the mechanisms it knew
about, so a connector added by the recipe ran on it as if it were another one.

A feature is a dotted name (`connector.blocking`, `policy.least_outstanding`,
`proxy.children`).  The part that owns a mechanism decides when the model uses it and
declares what `solve` does with it, in one place (`sim.model.features.StackPart`: the front
its `proxy.*`, the database's shared lock its own); this module only merges the parts'
features in the order of the request's path.  A component class declares its own
(`Connector.feature`, `Policy.feature`, `Clients.feature`, `Mpm.feature`): a class added by a
recipe brings a feature no engine has declared, and runs on the reference engine with a note
naming it until an engine implements it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sim.model.backend_pools import (
    backend_pool_applies,
    jk_acts,
    pool_limit_binds,
)
from sim.model.parts.autoscale import AutoscaledGroup, autoscaled_groups
from sim.model.parts.balancer import BalancerPart, balancer_part
from sim.model.parts.clients import ClientsPart, clients_part
from sim.model.parts.database import DatabasePart, database_part
from sim.model.parts.front import Front, front_part
from sim.model.parts.hosts import HostCpu, host_cpu
from sim.model.parts.nodes import NodePart, node_parts, nodes_features
from sim.model.parts.offered_load import OfferedLoad, offered_load
from sim.model.parts.probes import ProbeLayout, probe_layout
from sim.model.parts.replication import (
    ClusterNetwork,
    ReplicationPart,
    cluster_network,
    replication_parts,
)
from sim.model.parts.request_classes import RequestClasses
from sim.model.parts.run_control import RunControl, run_control
from sim.model.schema import Model
from sim.random.distributions import as_distribution
from sim.tiers.appserver.connectors import Connector, connector_class
from sim.tiers.balancer.policies import policy_class
from sim.tiers.balancer.policies.base import Policy
from sim.tiers.clients.populations import Clients, client_class
from sim.tiers.proxy.client_connections import linger_hold_s
from sim.tiers.proxy.mpm import mpm as mpm_class


@dataclass(frozen=True)
class StackPlan:
    """Every decision about how a replication is built that is not a table of numbers.

    `features` maps each mechanism the model uses to the model setting that brings it in
    (`backends.0.connector = 'blocking'`), for the engine choice's note."""

    clients: type[Clients]
    keeps_sessions: bool  # the clients carry session cookies (the client class declares it)
    policy: type[Policy]
    # the policy's own `[balancer]` parameters, by the names the class declares
    policy_parameters: dict[str, Any]
    children: bool  # httpd's children as individuals (`children_matter`)
    front_connections: bool  # the front's client connections as entities
    jk_acts: bool  # mod_jk's ajp13 worker's timeouts and retries can act
    # per node of `Plan.nodes`: the front's pool of connections to it is built
    backend_pools: tuple[bool, ...]
    connectors: tuple[type[Connector], ...]  # per node of `Plan.nodes`
    # the clients as a network's customers (`sim.model.parts.offered_load`)
    offered_load: OfferedLoad
    # the clients as the engines build them, and their random streams (`sim.model.parts.clients`)
    clients_part: ClientsPart
    # the request classes and how the clients pick one (`sim.model.parts.request_classes`)
    request_classes: RequestClasses
    # the parts the engines build (`sim.model.parts`): the front, the nodes (per node of
    # `Plan.nodes`), the database, and the load generator's CPU (`clients.host`)
    front: Front | None
    nodes: tuple[NodePart, ...]
    database: DatabasePart | None
    clients_cpu: HostCpu | None
    # session replication (`sim.model.parts.replication`): the active replications, the network
    replications: tuple[ReplicationPart, ...]
    network: ClusterNetwork
    # the balancer's settings (`sim.model.parts.balancer`), for when a dispatcher is built (more
    # than one member, or a node with events)
    balancer: BalancerPart
    # the autoscaled groups of nodes (`sim.model.parts.autoscale`), in the order of `backends`
    autoscaled: tuple[AutoscaledGroup, ...]
    # how a replication is run: the engine, warm-up, horizon, stop rules (`sim.model.parts.run_control`)
    run: RunControl
    # which probes a run records, in which order (`sim.model.parts.probes`), from the parts
    probes: ProbeLayout = field(default_factory=lambda: ProbeLayout(()))
    features: dict[str, str] = field(default_factory=dict)

    @property
    def cpus(self) -> tuple[HostCpu, ...]:
        """Every host's CPU, in the order the engines make them (and probe them): the
        database's, the nodes', the front's, the load generator's."""
        return (
            *(() if self.database is None else (self.database.cpu,)),
            *(node.cpu for node in self.nodes),
            *(() if self.front is None else (self.front.cpu,)),
            *(() if self.clients_cpu is None else (self.clients_cpu,)),
        )


def stack_plan(model: Model, nodes: tuple) -> StackPlan:
    """The decisions for `model`; `nodes` are the plan's nodes (`NodePlan`)."""
    clients = client_class(model.clients.kind)
    policy = policy_class(model.balancer.policy)
    children = children_matter(model)
    jk = jk_acts(model)
    connectors = tuple(connector_class(node.spec.connector) for node in nodes)
    pools = tuple(
        backend_pool_applies(model, connector.pins_per_connection(node.spec), jk)
        for node, connector in zip(nodes, connectors)
    )
    the_clients = clients_part(model)
    the_nodes = node_parts(
        model, nodes, connectors, pools, model.clients.kind if clients.keeps_sessions else None
    )
    the_front = front_part(
        model,
        children,
        (connections_matter(model, children), connections_matter(model, children, finite=False)),
        jk,
        the_nodes,
    )
    database = database_part(model)
    replications = replication_parts(model, len(nodes))
    balancer = balancer_part(model, the_front is not None and the_front.mod_jk, len(nodes))
    plan = StackPlan(
        clients=clients,
        keeps_sessions=clients.keeps_sessions,
        policy=policy,
        policy_parameters=model.balancer.parameters_of(policy.parameters),
        children=children,
        front_connections=the_front is not None and the_front.connections.entities,
        jk_acts=jk,
        backend_pools=pools,
        connectors=connectors,
        offered_load=offered_load(model),
        clients_part=the_clients,
        request_classes=the_clients.classes,
        front=the_front,
        nodes=the_nodes,
        database=database,
        clients_cpu=_clients_cpu(model),
        replications=replications,
        network=cluster_network(model),
        balancer=balancer,
        autoscaled=autoscaled_groups(model, nodes),
        run=run_control(model),
        features=_features(the_clients, the_front, the_nodes, balancer, database, replications),
    )
    return replace(plan, probes=probe_layout(model, nodes, plan))


def _clients_cpu(model: Model) -> HostCpu | None:
    """The load generator's CPU (`clients.host`: ab's one core), or None."""
    host = model.clients.host
    return None if host is None else host_cpu("clients", host.cores, host.speed, None)


def _features(
    clients: ClientsPart,
    front: Front | None,
    nodes: tuple[NodePart, ...],
    balancer: BalancerPart,
    database: DatabasePart | None,
    replications: tuple[ReplicationPart, ...],
) -> dict[str, str]:
    """Each mechanism the model uses, with the setting behind it: the parts' features, in
    the order of the request's path (the clients, the front, the nodes, the balancer over
    them, the database, the replication between the nodes).  Each part decides and declares
    its own (`sim.model.features.StackPart`)."""
    out = clients.features()
    if front is not None:
        out.update(front.features())
    out.update(nodes_features(nodes))
    out.update(balancer.features())
    if database is not None:
        out.update(database.features())
    for replication in replications:
        out.update(replication.features())
    return out


def children_matter(model: Model) -> bool:
    """httpd's children are modelled as individuals when what they hold can change the answer:
    process management (`start_servers`), per-child backend connections that pin something on
    a node or are bounded (`max`), or the event MPM's connection limit (idle keep-alive
    connections count toward it).  Otherwise the front's workers are one pool, which is exact:
    a connection then waits exactly when no child has an idle worker."""
    px = model.proxy
    if px is None or px.workers is None:
        return False
    if px.start_servers is not None:
        return True
    if px.forward and (
        pool_limit_binds(px)
        or any(
            connector_class(group.connector).pins_per_connection(group) for group in model.backends
        )
    ):
        return True
    return (
        mpm_class(px.mpm).limits_connections_by_idle_workers
        and px.keep_alive
        and model.clients.keep_alive
    )


def connections_matter(model: Model, children: bool, *, finite: bool = True) -> bool:
    """The front's client connections are entities when they can change the answer: clients
    that keep connections alive (keep-alive, closing after an error status), a lingering close
    that waits for clients slow to close, httpd's children as individuals (`children`), a CPU
    cost per connection, or a finite run (which reports when the front closed its last
    connection, `elapsed.server_close`)."""
    px, clients = model.proxy, model.clients
    if px is None:
        return False
    return (
        clients.keep_alive
        or linger_hold_s(px.mpm, px.linger_s, clients.close_delay_s) > 0
        or children
        or as_distribution(px.connection_demand).mean > 0
        or (finite and model.finite)
    )
