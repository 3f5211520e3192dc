"""The front (`[proxy]`: Apache httpd) as the engines build it: its workers and CPU, how it
forwards to the nodes (mod_proxy or mod_jk), its pools of connections to them, and what a
client connection costs it.  Each decision here was made again in each engine before.  Its
children (`sim.model.parts.front_processes`), its client connections
(`sim.model.parts.client_connections`) and its worker for each node
(`sim.model.parts.proxy_worker`) are parts of their own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.model.parts.client_connections import ClientConnections, client_connections
from sim.model.parts.front_processes import FrontProcesses, front_processes
from sim.model.parts.hosts import HostCpu, host_cpu
from sim.model.parts.proxy_worker import ProxyWorker, proxy_worker
from sim.random.distributions import as_distribution


@dataclass(frozen=True)
class Front:
    """The proxy in front of the nodes."""

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
    # what httpd logs when it adjusts the process directives at start-up (AH00180, AH00316:
    # MaxRequestWorkers rounded to whole children, ...), a note of every replication's result
    notes: tuple[str, ...] = ()


def front_part(model: Any, children: bool) -> Front | None:
    """The front of `model` (a `sim.model.schema.Model`), or None without a proxy; `children`:
    httpd's children are individuals (`sim.model.stack.children_matter`)."""
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
        connections=client_connections(model),
        worker=proxy_worker(px, mod_jk),
    )
