"""The stack's decisions, made once: which components a replication builds and with what, and
the set of *features* (mechanisms) the model uses.

Both engines read this: the reference assembler (`sim.engines.reference.assemble`) builds
exactly the components decided here, and an engine runs a model only when the model's features
are a subset of what it implements (`sim.engines.choose`), as LINE checks a solver's feature
set against a model's.  Before, the compiled engine refused only the mechanisms it knew
about, so a connector added by the recipe ran on it as if it were another one.

A feature is a dotted name (`connector.blocking`, `policy.least_outstanding`,
`proxy.children`).  A component class declares its own (`Connector.feature`,
`Policy.feature`, `Clients.feature`, `Mpm.feature`): a class added by a recipe brings a
feature no engine has declared, and runs on the reference engine with a note naming it until
an engine implements it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sim.model.backend_pools import (
    backend_pool_applies,
    connects_can_fail,
    jk_acts,
    pool_limit_binds,
)
from sim.model.parts.autoscale import AutoscaledGroup, autoscaled_groups
from sim.model.parts.balancer import BalancerPart, balancer_part
from sim.model.parts.clients import ClientsPart, clients_part
from sim.model.parts.database import DatabasePart, database_part
from sim.model.parts.front import Front, front_part
from sim.model.parts.hosts import HostCpu, host_cpu
from sim.model.parts.nodes import NodePart, node_parts
from sim.model.parts.offered_load import OfferedLoad, offered_load
from sim.model.parts.probes import ProbeLayout, probe_layout
from sim.model.parts.replication import (
    ClusterNetwork,
    ReplicationPart,
    cluster_network,
    replication_parts,
)
from sim.model.parts.request_classes import RequestClasses, request_classes
from sim.model.parts.run_control import RunControl, run_control
from sim.model.schema import AbClients, ClosedClients, Model, OpenClients
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
    the_front = front_part(model, children)
    front = the_front is not None and connections_matter(model, the_front, children)
    jk = jk_acts(model)
    connectors = tuple(connector_class(node.spec.connector) for node in nodes)
    pools = tuple(
        backend_pool_applies(model, connector.pins_per_connection(node.spec), jk)
        for node, connector in zip(nodes, connectors)
    )
    plan = StackPlan(
        clients=clients,
        keeps_sessions=clients.keeps_sessions,
        policy=policy,
        policy_parameters=model.balancer.parameters_of(policy.parameters),
        children=children,
        front_connections=front,
        jk_acts=jk,
        backend_pools=pools,
        connectors=connectors,
        offered_load=offered_load(model),
        clients_part=clients_part(model),
        request_classes=request_classes(model),
        front=the_front,
        nodes=node_parts(model, nodes, connectors, pools),
        database=database_part(model),
        clients_cpu=_clients_cpu(model),
        replications=replication_parts(model, len(nodes)),
        network=cluster_network(model),
        balancer=balancer_part(model, the_front is not None and the_front.mod_jk),
        autoscaled=autoscaled_groups(model, nodes),
        run=run_control(model),
    )
    plan = replace(plan, probes=probe_layout(model, nodes, plan))
    plan.features.update(_features(model, nodes, plan))
    return plan


def _clients_cpu(model: Model) -> HostCpu | None:
    """The load generator's CPU (`clients.host`: ab's one core), or None."""
    host = model.clients.host
    return None if host is None else host_cpu("clients", host.cores, host.speed, None)


def _features(model: Model, nodes: tuple, plan: StackPlan) -> dict[str, str]:
    """Each mechanism the reference would build for `model`, with the setting behind it."""
    out: dict[str, str] = {}
    clients = model.clients
    out[plan.clients.feature] = f"clients.kind = {clients.kind!r}"
    if model.finite:
        out["clients.finite"] = "a finite workload"
    if isinstance(clients, AbClients) and clients.repeat > 1:
        out["clients.ab.repeat"] = f"clients.repeat = {clients.repeat} (batch.K.* metrics)"
    if isinstance(clients, ClosedClients) and clients.ramp:
        out["clients.ramp"] = "clients.ramp"
    if isinstance(clients, OpenClients) and clients.schedule is not None:
        out["clients.schedule"] = "clients.schedule"
    if model.classes:
        out["classes"] = "request classes ([[classes]])"
    if clients.mix is not None:
        out["clients.mix"] = "clients.mix"
    if clients.script is not None:
        out["clients.script"] = "clients.script"
    if clients.keep_alive:
        out["clients.keep_alive"] = "clients.keep_alive (persistent connections)"
    if clients.host is not None:
        out["clients.host"] = "clients.host (the load generator's CPU)"
    if clients.timeout_s is not None or clients.retry.max_retries:
        out["clients.timeouts"] = "clients.timeout_s / clients.retry"
    if clients.connect is not None and as_distribution(clients.connect).mean > 0:
        out["clients.connect"] = "clients.connect"

    proxy = model.proxy
    if proxy is not None:
        out["proxy"] = "[proxy]"
        out[mpm_class(proxy.mpm).feature] = f"proxy.mpm = {proxy.mpm!r}"
        if linger_hold_s(proxy.mpm, proxy.linger_s, clients.close_delay_s) > 0:
            out["proxy.lingering_close"] = (
                f"a lingering close holds a worker: proxy.mpm = {proxy.mpm!r} with clients.close_delay_s = "
                f"{clients.close_delay_s} and proxy.linger_s = {proxy.linger_s:g}"
            )
        if plan.front is not None and plan.front.connection_demand is not None:
            out["proxy.connection_demand"] = "proxy.connection_demand"
        if proxy.start_servers is not None:
            out["proxy.process_management"] = (
                "proxy.start_servers (httpd's process management: spare servers or threads, "
                "spawning, graceful restart)"
            )
        if plan.children:
            out["proxy.children"] = f"httpd's children as individuals (proxy.mpm = {proxy.mpm!r})"
        if plan.front_connections and _only_finite(model, plan):
            # a finite run counts the front's connections, one per request, to report when
            # the front closed its last (`elapsed.server_close`)
            out["proxy.server_close"] = "a finite run through the proxy"
        elif plan.front_connections:
            out["proxy.client_connections"] = "the front's client connections as entities"
        if plan.front_connections and model.finite and clients.timeout_s is not None:
            # a client that gave up ends its test at its deadline; the front's later closes
            # of its connection are not what it sees (`elapsed.server_close`)
            out["proxy.server_close.clients_view"] = (
                f"clients.timeout_s = {clients.timeout_s:g} with a finite workload through the "
                "proxy (a client that gave up ends at its deadline)"
            )
        if any(plan.backend_pools):
            module = proxy.backend_pool.module
            out[f"proxy.backend_pool.{module}"] = (
                f"the front's backend connection pools (proxy.backend_pool.module = {module!r})"
            )
        failing = [
            node.path
            for node, pooled, connector in zip(nodes, plan.backend_pools, plan.connectors)
            if pooled and connects_can_fail(proxy, node.spec, connector)
        ]
        # (mod_jk's own connects, SYNs dropped and retried, are `mod_jk.ajp13`'s)
        if failing and proxy.backend_pool.module == "mod_proxy":
            out["proxy.backend_pool.connect_failures"] = (
                f"{failing[0]}: more connections from the front than its threads or "
                "max_connections plus accept_queue take: connects wait for SYN retransmissions, "
                "fail after connectiontimeout, and put the worker in error state (retry)"
            )
        if plan.jk_acts:
            timeout = proxy.backend_pool.reply_timeout_s
            out["mod_jk.ajp13"] = (
                f"proxy.backend_pool.reply_timeout_s = {timeout:g}: mod_jk's reply timeout and retries"
                if timeout is not None
                else "backends.N.events: mod_jk's retries of refused connects"
            )
        if proxy.forward and proxy.backend_pool.module == "mod_jk" and len(nodes) > 1:
            # the balancer is mod_jk's lb worker (`JkDispatcher`) whether or not its members'
            # timeouts act: a member's failed or busy answer fails over and can put it in error
            out["mod_jk.lb"] = "mod_jk's lb worker: failover, error state, recovery"
        if proxy.forward and pool_limit_binds(proxy):
            out["proxy.backend_pool.max"] = (
                f"proxy.backend_pool.max = {proxy.backend_pool.max} below the child's threads"
            )
            refusing = [
                node.path
                for node, pooled in zip(nodes, plan.backend_pools)
                if pooled and node.spec.accept_queue is not None
            ]
            # (mod_jk: nobody waits in line for an endpoint, and a connection the node cannot
            # queue has its SYN dropped and retried: no error comes back at once)
            if refusing and proxy.backend_pool.module == "mod_proxy":
                # a request the node refuses answers with an error while others wait for the
                # pool: its connection passes to the next waiting request, whose own refusal
                # nests inside the first
                out["proxy.backend_pool.refusals"] = (
                    f"proxy.backend_pool.max = {proxy.backend_pool.max} with "
                    f"{refusing[0]}.accept_queue: refusals while requests wait for a connection"
                )

    for node, connector in zip(nodes, plan.connectors):
        group = node.spec
        out.setdefault(connector.feature, f"{node.path}.connector = {group.connector!r}")
        if group.max_connections is not None:
            out.setdefault("connector.max_connections", f"{node.path}.max_connections")
        if as_distribution(group.connection_setup).mean > 0:
            out.setdefault("connector.connection_setup", f"{node.path}.connection_setup")
        if group.jvm is not None:
            out.setdefault("appserver.jvm", f"{node.path}.jvm")
            if group.jvm.creates_sessions and plan.keeps_sessions:
                # clients that keep cookies touch their session again at each request; how
                # their sessions are named depends on the client kind
                out.setdefault(
                    f"appserver.jvm_sessions.{clients.kind}",
                    f"{node.path}.jvm.creates_sessions with clients.kind = {clients.kind!r} "
                    "(clients that keep cookies reuse their session)",
                )
        if group.events:
            out.setdefault("backends.events", f"{node.path}.events")
        if group.autoscale is not None:
            out.setdefault("backends.autoscale", f"{node.path}.autoscale")
        if group.db_calls and group.jdbc_pool is not None:
            out.setdefault("appserver.jdbc_pool", f"{node.path}.jdbc_pool")
    if len(nodes) > 1:
        out["balancer"] = "more than one node"
        out[plan.policy.feature] = f"balancer.policy = {model.balancer.policy!r}"
        if model.balancer.sticky_session:
            out["balancer.sticky_session"] = "balancer.sticky_session"
        if model.balancer.report_interval_s is not None and plan.policy.uses_load:
            out["balancer.report_interval_s"] = "balancer.report_interval_s"
    if plan.database is not None:
        out["database"] = "[database]"
        lock = plan.database.lock  # the part both engines build the lock from
        if lock is not None:
            out["database.lock"] = "database.lock"
            if lock.random_order:
                out["database.lock.random_order"] = "database.lock.order = 'random'"
            if lock.waiters_cost:
                out["database.lock.waiters_cost"] = "database.lock.wake_per_waiter_s > 0"
    for index, spec in model.cluster.active:
        out[f"replication.{spec.mode}"] = f"cluster.replication.{index}.mode = {spec.mode!r}"
    return out


def _only_finite(model: Model, plan: StackPlan) -> bool:
    """The front's connections are entities only because the run is finite (it reports when
    the front closed its last one), not for what they hold."""
    assert plan.front is not None  # a question about the front
    return model.finite and not connections_matter(model, plan.front, plan.children, finite=False)


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


def connections_matter(model: Model, front: Front, children: bool, *, finite: bool = True) -> bool:
    """The front's client connections are entities when they can change the answer: clients
    that keep connections alive (keep-alive, closing after an error status), a lingering close
    that waits for clients slow to close, httpd's children as individuals, a CPU cost per
    connection, or a finite run (which reports when the front closed its last connection,
    `elapsed.server_close`)."""
    px, clients = model.proxy, model.clients
    assert px is not None  # a question about the front
    return (
        clients.keep_alive
        or linger_hold_s(px.mpm, px.linger_s, clients.close_delay_s) > 0
        or children
        or front.connection_demand is not None
        or (finite and model.finite)
    )
