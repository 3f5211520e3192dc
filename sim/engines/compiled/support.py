"""Which models the compiled engine simulates, and for the others, what it lacks.

The compiled engine covers the queueing core: closed, open (Poisson or renewal) and
partly-open session clients with think times, connection set-up, timeouts, retries and SYN
retransmission; the proxy's worker pool (Apache MaxRequestWorkers as httpd runs it,
`ListenBacklog`) as one pool, without connection handling of its own; backend thread pools
(Tomcat `maxThreads`, `acceptCount`, the non-blocking connector) on processor-shared cores
with non-CPU waits; JDBC pools; the database's connections, CPU and FCFS disks; the
state-blind balancer policies with sticky sessions.  Everything else runs on the reference
engine: finite workloads, ramps and rate schedules, request classes, mixes and scripts,
client connections as entities (keep-alive, closing after an error status, lingering close,
a CPU cost per connection), httpd's children as individuals (process management, per-child
backend pools, the event MPM's connection limit), the front's backend connection pools,
blocking connectors and connection limits, JVMs, session replication, crashes, and the
load-aware or per-client policies.

The reasons are read from the reference's own builder (`sim.run.assemble`): a model is
accepted only when the reference would build nothing but the components above for it.
"""

from __future__ import annotations

from sim.model.schema import ClosedClients, Model, OpenClients
from sim.random.distributions import as_distribution
from sim.run.assemble import children_matter, connections_matter, pool_limit_binds
from sim.tiers.balancer.policies import policy_class
from sim.tiers.balancer.policies.least_load import UniformRandom
from sim.tiers.balancer.policies.rotation import (
    FirstActive,
    SmoothWeightedRoundRobin,
    StrictRoundRobin,
)
from sim.tiers.proxy.client_connections import linger_hold_s

# The policies that choose without looking at load or per-client state (and never fail over,
# since members only fail through `backends.N.events`, which the engine does not model), by
# the reference class that implements them: every name registered for the class is covered
# (lighttpd's round robin and JBoss's RandomRobin are uniform random picks).
BLIND_CLASSES = {
    StrictRoundRobin: "round_robin",
    UniformRandom: "random",
    SmoothWeightedRoundRobin: "byrequests",
    FirstActive: "static",
}


def blind_policy(name: str) -> str | None:
    """The compiled engine's policy for `balancer.policy`, or None if it has none."""
    return BLIND_CLASSES.get(policy_class(name))


def unsupported(model: Model) -> list[str]:
    """What the compiled engine does not model in `model`, by parameter path (empty: all of it)."""
    missing: list[str] = []
    clients = model.clients
    if model.finite:
        missing.append(
            "a finite workload (ab, clients.requests_per_user, clients.total_*: makespan, "
            "elapsed.server_close)"
        )
    if isinstance(clients, ClosedClients) and clients.ramp:
        missing.append("clients.ramp")
    if isinstance(clients, OpenClients) and clients.schedule is not None:
        missing.append("clients.schedule")
    if model.classes:
        missing.append("request classes ([[classes]])")
    if clients.mix is not None:
        missing.append("clients.mix")
    if clients.script is not None:
        missing.append("clients.script")
    if clients.keep_alive:
        missing.append("clients.keep_alive (persistent connections, closing after an error status)")

    proxy = model.proxy
    if proxy is not None:
        delay = clients.close_delay_s
        if linger_hold_s(proxy.mpm, proxy.linger_s, delay) > 0:
            missing.append(
                f"lingering close (proxy.mpm = {proxy.mpm!r} with clients.close_delay_s "
                f"= {delay} and proxy.linger_s = {proxy.linger_s:g})"
            )
        if as_distribution(proxy.connection_demand).mean > 0:
            missing.append("proxy.connection_demand")
        if proxy.start_servers is not None:
            missing.append(
                "proxy.start_servers (httpd's process management: spare servers or threads, "
                "spawning, graceful restart)"
            )
        if proxy.forward and pool_limit_binds(proxy):
            missing.append(
                f"proxy.backend_pool.max = {proxy.backend_pool.max} below the child's threads "
                f"(proxy.mpm = {proxy.mpm!r}, threads_per_child: per-child backend pools)"
            )

    members = model.balancer.members
    built = [b for b in model.backends if members is None or b.name in members]
    for index, group in enumerate(model.backends):
        if members is not None and group.name not in members:
            continue  # not built: nothing reaches it
        if group.connector == "blocking":
            missing.append(
                f"backends.{index}.connector = 'blocking' (the front's backend connection pools)"
            )
        if group.max_connections is not None:
            missing.append(
                f"backends.{index}.max_connections (the front's backend connection pools)"
            )
        if group.jvm is not None:
            missing.append(f"backends.{index}.jvm")
        if group.events:
            missing.append(f"backends.{index}.events")
    if model.cluster.active:
        missing.append("cluster.replication")
    policy = model.balancer.policy
    if sum(group.count for group in built) > 1 and blind_policy(policy) is None:
        missing.append(f"balancer.policy = {policy!r} (load-aware or per-client)")
    if not missing and proxy is not None and connections_matter(model, children_matter(model)):
        # the reference would build the front's client connections or its children: a safety
        # net for a mechanism added there and not named above
        missing.append(
            f"the front's client connections or child processes (proxy.mpm = {proxy.mpm!r})"
        )
    return missing
