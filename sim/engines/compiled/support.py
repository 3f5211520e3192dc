"""Which models the compiled engine simulates, and for the others, what it lacks.

The compiled engine covers the queueing core: closed, open (Poisson or renewal) and
partly-open session clients with think times, connection set-up, timeouts, retries and SYN
retransmission; the proxy's worker pool (Apache `MaxClients`, `ListenBacklog`) without
connection handling of its own; backend thread pools (Tomcat `maxThreads`, `acceptCount`) on
processor-shared cores with non-CPU waits; JDBC pools; the database's connections, CPU and
FCFS disks; the state-blind balancer policies with sticky sessions.  Everything else
(keep-alive and lingering close, prefork spawning, blocking connectors, JVMs, session
replication, crashes, load-aware policies, finite workloads) runs on the reference engine.
"""

from __future__ import annotations

from sim.model.schema import AbClients, ClosedClients, Model, OpenClients
from sim.random.distributions import as_distribution

# Policies that choose without looking at load or per-client state (and never fail over,
# since members only fail through `backends.N.events`, which the engine does not model).
BLIND_POLICIES = {
    "round_robin": "round_robin",
    "random": "random",
    "lighttpd_round_robin": "random",  # lighttpd 1.5's round-robin is a uniform random pick
    "jboss_random_robin": "random",
    "byrequests": "byrequests",
    "static": "static",
}


def unsupported(model: Model) -> list[str]:
    """What the compiled engine does not model in `model`, by parameter path (empty: all of it)."""
    missing: list[str] = []
    clients = model.clients
    if model.finite:
        missing.append("a finite workload (ab, clients.requests_per_user, clients.total_*)")
    if isinstance(clients, AbClients):
        missing.append("clients.kind = 'ab'")
    if isinstance(clients, ClosedClients) and clients.ramp:
        missing.append("clients.ramp")
    if isinstance(clients, OpenClients) and clients.schedule is not None:
        missing.append("clients.schedule")
    if clients.keep_alive:
        missing.append("clients.keep_alive")
    proxy = model.proxy
    if proxy is not None:
        if proxy.mpm != "event":
            delay = clients.close_delay_s
            linger = proxy.linger_s if delay is None else min(proxy.linger_s, delay)
            if linger > 0:
                missing.append(
                    f"lingering close (proxy.mpm = {proxy.mpm!r} with clients.close_delay_s "
                    f"= {delay} and proxy.linger_s = {proxy.linger_s:g})"
                )
        if as_distribution(proxy.connection_demand).mean > 0:
            missing.append("proxy.connection_demand")
        if proxy.start_servers is not None:
            missing.append("proxy.start_servers (prefork spawning)")
    members = model.balancer.members
    built = [b for b in model.backends if members is None or b.name in members]
    for index, group in enumerate(model.backends):
        if members is not None and group.name not in members:
            continue  # not built: nothing reaches it
        if group.connector == "blocking":
            missing.append(f"backends.{index}.connector = 'blocking'")
        if group.max_connections is not None:
            missing.append(f"backends.{index}.max_connections")
        if group.jvm is not None:
            missing.append(f"backends.{index}.jvm")
        if group.events:
            missing.append(f"backends.{index}.events")
    if model.cluster.active:
        missing.append("cluster.replication")
    if sum(group.count for group in built) > 1 and model.balancer.policy not in BLIND_POLICIES:
        missing.append(f"balancer.policy = {model.balancer.policy!r} (load-aware or per-client)")
    return missing
