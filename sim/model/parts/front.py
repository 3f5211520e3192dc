"""The front (`[proxy]`: Apache httpd) as the engines build it: its workers and CPU, how it
forwards to the nodes (mod_proxy or mod_jk), its pools of connections to them, and what a
client connection costs it.  Each decision here was made again in each engine before.  Its
children (`sim.model.parts.front_processes`), its client connections
(`sim.model.parts.client_connections`) and its worker for each node
(`sim.model.parts.proxy_worker`) are parts of their own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.backend_pools import pool_limit_binds
from sim.model.features import POOL, Declaration, Hold, StackPart, approximate, exact
from sim.model.parts.client_connections import ClientConnections, client_connections
from sim.model.parts.front_processes import FrontProcesses, front_processes
from sim.model.parts.hosts import HostCpu, host_cpu
from sim.model.parts.nodes import NodePart
from sim.model.parts.proxy_worker import ProxyWorker, proxy_worker
from sim.random.distributions import as_distribution
from sim.tiers.proxy.mpm import mpm as mpm_class


@dataclass(frozen=True)
class Front(StackPart):
    """The proxy in front of the nodes.  Its MPM's feature (`mpm.<name>`) is declared on its
    class (`sim.tiers.proxy.mpm`)."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "proxy": exact("the front's CPU and worker pool (" + POOL + ")"),
        "proxy.lingering_close": approximate(
            "a lingering close holds a worker after the response while the client is slow to close"
        ),
        "proxy.connection_demand": exact(
            "without keep-alive, part of every request's demand; with keep-alive the "
            "approximation `proxy.connection_demand` is named"
        ),
        "proxy.children": exact(
            "children as individuals; what they hold per child is named by its own approximation"
        ),
        "proxy.backend_pool.mod_proxy": exact(
            "the front's connections to a node; what they pin is the connector's feature and "
            "their limit `proxy.backend_pool.max` its own approximation"
        ),
        "proxy.backend_pool.mod_jk": approximate(
            "mod_jk's endpoint acquisition polls (sleeping between tries) instead of queueing"
        ),
        "proxy.backend_pool.connect_failures": approximate(
            "connects that fail after connectiontimeout put the worker in error state; "
            "the network has no failures"
        ),
        "proxy.backend_pool.max": approximate(
            "requests wait for a pooled connection while holding their worker (a nested hold)"
        ),
        "proxy.backend_pool.refusals": approximate(
            "refusals while requests wait for a connection are not modelled"
        ),
        "mod_jk.lb": approximate(
            "mod_jk's lb worker fails over and puts members in error state; the network splits "
            "evenly"
        ),
    }

    # MaxRequestWorkers as httpd runs it (ServerLimit x ThreadsPerChild, AH00316); None:
    # unbounded workers
    workers: int | None
    cpu: HostCpu  # dedicated when the workers are no more than the cores
    # connections waiting for a worker (Apache `ListenBacklog`, `proxy.listen_backlog`);
    # None: unbounded, 0: refused when every worker is busy
    listen_backlog: int | None
    demand: Any  # the front's CPU per request (`proxy.demand`, a distribution spec)
    forwards: bool  # `proxy.forward`: requests go on to the nodes
    # the nodes are reached through mod_jk (JkMount: its lb worker and ajp13 workers), not
    # mod_proxy's balancer (`proxy.backend_pool.module`)
    mod_jk: bool
    # the status a read timeout answers (`ProxyPass timeout=`): mod_proxy_ajp 503, mod_proxy_http
    # 502 (mod_jk sets no read timeout: `sim.tiers.proxy.mod_jk`)
    read_timeout_status: int
    # the front's CPU per client connection (`proxy.connection_demand`, a distribution spec);
    # None when it costs nothing
    connection_demand: Any
    # connections each child keeps to one node (`proxy.backend_pool.max`: mod_proxy `max`,
    # mod_jk `connection_pool_size`), by default ThreadsPerChild when the children are
    # individuals; None: unbounded
    pool_max: int | None
    # a child keeps a reslist (more than one connection per node), where `ttl` and `acquire`
    # act; a prefork child's one cached connection has neither
    reslist: bool
    # httpd's children as httpd runs them (`sim.model.parts.front_processes`); None with
    # unbounded workers
    processes: FrontProcesses | None
    # its client connections (`sim.model.parts.client_connections`)
    connections: ClientConnections
    worker: ProxyWorker  # its worker for each node (`sim.model.parts.proxy_worker`)
    # httpd's children are individuals (`sim.model.stack.children_matter`)
    children: bool
    # the nodes it forwards to (`Plan.nodes`), and the paths (`backends.N`) of those it keeps a
    # pool of connections to: all of them, those whose connects can meet a full accept queue
    # and fail (`NodePart.connects_can_fail`), and those with an accept queue (acceptCount),
    # which refuse what it cannot hold
    members: int
    pooled: tuple[str, ...]
    pooled_failing_connects: tuple[str, ...]
    pooled_refusing: tuple[str, ...]
    # `proxy.backend_pool.max` below a child's threads, on a front that forwards: requests can
    # wait for a pooled connection (`sim.model.backend_pools.pool_limit_binds`)
    pool_limit_binds: bool
    # what httpd logs when it adjusts the process directives at start-up (AH00180, AH00316:
    # MaxRequestWorkers rounded to whole children, ...), a note of every replication's result
    notes: tuple[str, ...] = ()

    def features(self) -> dict[str, str]:
        """The front's features and its parts', in the stack's order."""
        mpm = self.connections.mpm
        connections = self.connections
        out = {"proxy": "[proxy]", mpm_class(mpm).feature: f"proxy.mpm = {mpm!r}"}
        if connections.lingers:
            out["proxy.lingering_close"] = (
                f"a lingering close holds a worker: proxy.mpm = {mpm!r} with "
                f"clients.close_delay_s = {connections.client_close_delay_s} and proxy.linger_s = "
                f"{connections.linger_s:g}"
            )
        if self.connection_demand is not None:
            out["proxy.connection_demand"] = "proxy.connection_demand"
        if self.processes is not None:
            out.update(self.processes.features())
        if self.children:
            out["proxy.children"] = f"httpd's children as individuals (proxy.mpm = {mpm!r})"
        out.update(connections.features())
        module = "mod_jk" if self.mod_jk else "mod_proxy"
        if self.pooled:
            out[f"proxy.backend_pool.{module}"] = (
                f"the front's backend connection pools (proxy.backend_pool.module = {module!r})"
            )
        # (mod_jk's own connects, SYNs dropped and retried, are `mod_jk.ajp13`'s)
        if self.pooled_failing_connects and not self.mod_jk:
            out["proxy.backend_pool.connect_failures"] = (
                f"{self.pooled_failing_connects[0]}: more connections from the front than its "
                "threads or max_connections plus accept_queue take: connects wait for SYN "
                "retransmissions, fail after connectiontimeout, and put the worker in error "
                "state (retry)"
            )
        out.update(self.worker.features())
        if self.mod_jk and self.members > 1:
            # the balancer is mod_jk's lb worker (`JkDispatcher`) whether or not its members'
            # timeouts act: a member's failed or busy answer fails over and can put it in error
            out["mod_jk.lb"] = "mod_jk's lb worker: failover, error state, recovery"
        if self.pool_limit_binds:
            out["proxy.backend_pool.max"] = (
                f"proxy.backend_pool.max = {self.pool_max} below the child's threads"
            )
            # (mod_jk: nobody waits in line for an endpoint, and a connection the node cannot
            # queue has its SYN dropped and retried: no error comes back at once)
            if self.pooled_refusing and not self.mod_jk:
                # a request the node refuses answers with an error while others wait for the
                # pool: its connection passes to the next waiting request, whose own refusal
                # nests inside the first
                out["proxy.backend_pool.refusals"] = (
                    f"proxy.backend_pool.max = {self.pool_max} with "
                    f"{self.pooled_refusing[0]}.accept_queue: refusals while requests wait for "
                    "a connection"
                )
        return out

    def holds(self) -> list[Hold]:
        """A client's request holds one of its workers (MaxRequestWorkers) and computes on its
        CPU, both shared by every node behind it."""
        return [
            Hold("proxy.workers", 1, "the front's workers", shared=True),
            Hold(self.cpu.name, 1, "the front's CPU", shared=True),
        ]


def front_part(
    model: Any,
    children: bool,
    connections: tuple[bool, bool],
    jk_acts: bool,
    nodes: tuple[NodePart, ...],
) -> Front | None:
    """The front of `model` (a `sim.model.schema.Model`), or None without a proxy; `children`:
    httpd's children are individuals (`sim.model.stack.children_matter`); `connections`: its
    client connections are entities, and for what they hold (`sim.model.stack.
    connections_matter`); `jk_acts`: mod_jk's own timeouts and retries can act
    (`sim.model.backend_pools.jk_acts`); `nodes`: the nodes it forwards to."""
    px = model.proxy
    if px is None:
        return None
    processes = px.processes
    workers = None if processes is None else processes.workers
    settings = px.backend_pool
    per_child = processes.threads_per_child if children and processes is not None else None
    mod_proxy_ajp = settings.module == "mod_proxy" and settings.scheme == "ajp"
    mod_jk = px.forward and settings.module == "mod_jk"
    return Front(
        workers=workers,
        cpu=host_cpu("proxy", px.cores, px.speed, workers),
        listen_backlog=px.listen_backlog,
        demand=px.demand,
        forwards=px.forward,
        mod_jk=mod_jk,
        read_timeout_status=503 if mod_proxy_ajp else 502,
        connection_demand=(
            px.connection_demand if as_distribution(px.connection_demand).mean > 0 else None
        ),
        pool_max=settings.max if settings.max is not None else per_child,
        reslist=per_child is None or per_child > 1,
        notes=() if processes is None else tuple(processes.notes),
        processes=front_processes(px),
        connections=client_connections(model, *connections),
        worker=proxy_worker(px, mod_jk, jk_acts),
        children=children,
        members=len(nodes),
        pooled=tuple(node.path for node in nodes if node.backend_pool),
        pooled_failing_connects=tuple(
            node.path for node in nodes if node.backend_pool and node.connects_can_fail
        ),
        pooled_refusing=tuple(
            node.path
            for node in nodes
            if node.backend_pool and node.limits.accept_queue is not None
        ),
        pool_limit_binds=px.forward and pool_limit_binds(px),
    )
