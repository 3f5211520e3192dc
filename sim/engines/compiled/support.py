"""Which models the compiled engine simulates, and for the others, what it lacks.

The compiled engine covers the queueing core: closed, open (Poisson or renewal) and
partly-open session clients with think times, connection set-up, timeouts, retries and SYN
retransmission; load that changes over the run (a closed population's ramp, `clients.ramp`,
also an access log replayed as one, and an open schedule of rates, `clients.schedule`, also an
access log's arrivals per bin: `kernel.ramps`); persistent connections
(`clients.keep_alive`, ab -k); finite workloads
(`clients.requests_per_user`, `clients.total_requests`, `clients.total_sessions`, `ab -c -n`
run once), which record from their start and report their `makespan`, and through the proxy
run on until the front has closed its last client connection (`elapsed.server_close`); the
proxy's worker pool (Apache MaxRequestWorkers as httpd runs it, `ListenBacklog`), as one
pool or as httpd's children (the accept line, the event MPM's connection limit, which
keep-alive on a finite event front brings; process management: StartServers, the spare
servers or threads, the doubling spawn rate, graceful restart), with the front's client
connections as entities (KeepAlive, KeepAliveTimeout, MaxKeepAliveRequests, the lingering
close that holds a prefork/worker worker, closing after an error status, a CPU cost per
connection, `proxy.*` counts and statuses); the front's pools of connections to the nodes
(mod_proxy, per child: LIFO idle lists, `max`, `ttl`, `acquire`, the read timeout, the nodes'
idle timeout, disablereuse, a child's connections closed when it exits), each connection
pinning a Tomcat `maxConnections` slot or a blocking connector's thread; mod_jk's ajp13 worker
in front of one node (its endpoint cache per child, looked for every 100 ms until
connection_acquire_timeout, connection_pool_timeout at each child's maintenance,
reply_timeout, retries and recovery_options, connects whose SYNs a full accept queue drops,
the attempts the node serves after mod_jk gave up on them); backend thread pools (Tomcat `maxThreads`,
`acceptCount`; the non-blocking connector, and the blocking one whose threads the pooled
connections hold) on processor-shared cores with non-CPU waits;
JDBC pools; the database's connections, CPU and FCFS disks; the state-blind balancer
policies and the load-aware `sqf` (lighttpd) and `least_outstanding`, with sticky sessions;
the load generator's CPU (`clients.host`: ab's one core queueing its loops' work); synchronous session
replication (`cluster.replication`, mode = sync: serialization on the sender, the cluster
network's links, the receivers' CPU, acknowledgements; total or buddy scope, every trigger,
several tiers); request classes with their own demands and calls at each tier (`[[classes]]`,
a class the proxy serves itself, one that writes the replicated session or never does), picked
by a mix per request or per user (`clients.mix`, `mix_by`) or by a session script, walked in
order or by a Markov chain between its steps, with think times per step (`clients.script`),
and their `class.NAME.*` metrics; `ab` run again (`clients.repeat`, each run's window as
`batch.K.*`); the nodes' JVMs (`backends.N.jvm`: the heap, young and full collections as
stop-the-world pauses of the node's CPU, OutOfMemoryError, the GC overhead limit, JIT warm-up,
the sessions its application creates, per request for clients that keep no cookies, per user
or client session for those that keep them, with their replicas on other nodes, the expiry
sweep); and each mechanism a kernel module declares of itself (its `FEATURES` and
`PARAMETERS`, `sim.engines.compiled.mechanisms`).
Everything else runs on the reference engine: mod_jk's lb worker
(several nodes behind mod_jk), mod_proxy connects that a node's full accept queue leaves
waiting and that fail into the worker's error state (more connections from the front than the
node's threads or `max_connections` plus `accept_queue`), a node's serialised
connection set-up (`backends.N.connection_setup`), asynchronous replication (flow-control
credits), crashes, the other load-aware policies and the per-client ones, and a load-aware
policy's stale view of the load (`balancer.report_interval_s`).

An engine says what it implements (`IMPLEMENTS`, a set of features as the model's components
declare them: `sim.model.stack`); `run.engine = "auto"` runs a model here only when the
plan's features are a subset.  A component added by a recipe brings a feature of its own,
which is not in the set: such a model runs on the reference engine, with a note naming it,
until this engine implements it (with an exact test against the reference).
"""

from __future__ import annotations

from sim.engines.compiled import mechanisms
from sim.model.plan import Plan
from sim.tiers.appserver.connectors import Blocking, NonBlocking
from sim.tiers.balancer.policies.least_load import (
    LeastOutstanding,
    ShortestQueueFirst,
    UniformRandom,
)
from sim.tiers.balancer.policies.rotation import (
    FirstActive,
    SmoothWeightedRoundRobin,
    StrictRoundRobin,
)
from sim.tiers.clients.populations import CLIENTS
from sim.tiers.proxy.mpm import MPMS

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
# The policies that read the live count of requests each member has not answered (lighttpd's
# sqf, HAProxy leastconn), by the reference class: a stale view of that count
# (`balancer.report_interval_s`) is a feature of its own, which stays on the reference engine.
LOAD_CLASSES = {
    ShortestQueueFirst: "sqf",
    LeastOutstanding: "least_outstanding",
}


# Every parameter of the schema (`tiersim schema`), by how the compiled engine treats it: it
# models it, refuses the model when it matters (`unsupported` names it), or it is inert in every
# model the engine accepts (and why).  A refused or inert entry covers its whole subtree; a
# modelled one is a leaf, so that a parameter added to the schema fails
# tests/engines/test_compiled_engine.py until it is placed here -- and, if it can change a supported
# model, modelled or refused.
MODELLED, REFUSED, INERT = "modelled", "refused", "inert"
PARAMETERS: dict[str, tuple[str, str]] = {
    "meta": (INERT, "descriptive"),
    "clients.kind": (MODELLED, "closed, open, sessions, ab"),
    "clients.timeout_s": (MODELLED, ""),
    "clients.retry.max_retries": (MODELLED, ""),
    "clients.retry.backoff_s": (MODELLED, ""),
    "clients.retry.multiplier": (MODELLED, ""),
    "clients.retry.max_backoff_s": (MODELLED, ""),
    "clients.retry.on_timeout": (MODELLED, ""),
    "clients.retry.on_error": (MODELLED, ""),
    "clients.connect": (MODELLED, ""),
    "clients.tcp.syn_retries": (MODELLED, "SYN retransmission"),
    "clients.tcp.initial_rto_s": (MODELLED, "SYN retransmission"),
    "clients.keep_alive": (MODELLED, "persistent connections"),
    "clients.host": (MODELLED, "the load generator's CPU: cores, speed, demand, connection_demand"),
    "clients.close_delay_s": (MODELLED, "how long a lingering close holds a worker"),
    "clients.mix": (MODELLED, "request classes"),
    "clients.mix_by": (MODELLED, "request classes"),
    "clients.script.steps.N.name": (MODELLED, "session scripts"),
    "clients.script.steps.N.class": (MODELLED, "session scripts"),
    "clients.script.steps.N.think": (MODELLED, "session scripts"),
    "clients.script.transitions": (MODELLED, "a Markov chain between the steps"),
    "clients.users": (MODELLED, ""),
    "clients.think": (MODELLED, ""),
    "clients.ramp.N.users": (MODELLED, "users called and retired in the reference's order"),
    "clients.ramp.N.over_s": (MODELLED, ""),
    "clients.ramp.N.hold_s": (MODELLED, ""),
    "clients.requests_per_user": (MODELLED, "a finite workload"),
    "clients.rate_per_s": (MODELLED, ""),
    "clients.schedule.N.rate_per_s": (MODELLED, "a piecewise-constant-rate Poisson process"),
    "clients.schedule.N.duration_s": (MODELLED, "repeated cyclically"),
    "clients.interarrival": (MODELLED, ""),
    "clients.total_requests": (MODELLED, "a finite workload"),
    "clients.session_rate_per_s": (MODELLED, ""),
    "clients.requests_per_session": (MODELLED, ""),
    "clients.fixed_length": (MODELLED, ""),
    "clients.total_sessions": (MODELLED, "a finite workload"),
    "clients.concurrency": (MODELLED, "ab -c"),
    "clients.requests": (MODELLED, "ab -n"),
    "clients.repeat": (MODELLED, "ab run again, batch.K.* metrics"),
    "proxy.cores": (MODELLED, ""),
    "proxy.speed": (MODELLED, ""),
    "proxy.workers": (MODELLED, "MaxRequestWorkers as httpd runs it (Processes.workers)"),
    "proxy.listen_backlog": (MODELLED, ""),
    "proxy.demand": (MODELLED, ""),
    "proxy.forward": (MODELLED, ""),
    "proxy.connection_demand": (MODELLED, "a CPU cost per client connection"),
    "proxy.mpm": (MODELLED, "its workers, children, keep-alive and lingering close"),
    "proxy.threads_per_child": (MODELLED, "MaxRequestWorkers in whole children"),
    "proxy.thread_limit": (MODELLED, "caps ThreadsPerChild"),
    "proxy.server_limit": (MODELLED, "caps the children"),
    "proxy.linger_s": (MODELLED, "when a lingering close holds a worker"),
    "proxy.keep_alive": (MODELLED, "with clients.keep_alive"),
    "proxy.keep_alive_timeout_s": (MODELLED, "with clients.keep_alive"),
    "proxy.max_keep_alive_requests": (MODELLED, "with clients.keep_alive"),
    "proxy.start_servers": (MODELLED, "httpd's process management"),
    "proxy.min_spare_servers": (MODELLED, "with proxy.start_servers"),
    "proxy.max_spare_servers": (MODELLED, "with proxy.start_servers"),
    "proxy.min_spare_threads": (MODELLED, "with proxy.start_servers"),
    "proxy.max_spare_threads": (MODELLED, "with proxy.start_servers"),
    "proxy.graceful_restart": (MODELLED, "with proxy.start_servers"),
    "proxy.uptime_s": (MODELLED, "with proxy.start_servers"),
    "proxy.async_request_worker_factor": (MODELLED, "event's connection limit, with children"),
    "proxy.backend_pool.max": (
        MODELLED,
        "per child; mod_proxy's with an accept queue on the node, refused",
    ),
    "proxy.backend_pool.module": (MODELLED, "mod_proxy; mod_jk (its lb worker is refused)"),
    "proxy.backend_pool.scheme": (MODELLED, "the status of a read timeout"),
    "proxy.backend_pool.ttl_s": (MODELLED, "mod_jk: connection_pool_timeout at the maintenance"),
    "proxy.backend_pool.acquire_timeout_s": (MODELLED, "mod_jk: looked for every 100 ms"),
    "proxy.backend_pool.timeout_s": (
        MODELLED,
        "the read timeout of a connection not accepted (mod_jk: none on Unix)",
    ),
    "proxy.backend_pool.disable_reuse": (MODELLED, ""),
    "proxy.backend_pool.reply_timeout_s": (MODELLED, "mod_jk's reply timeout"),
    "proxy.backend_pool.socket_connect_timeout_s": (MODELLED, "mod_jk: connects with dropped SYNs"),
    "proxy.backend_pool.retries": (MODELLED, "mod_jk's attempts"),
    "proxy.backend_pool.retry_interval_s": (MODELLED, ""),
    "proxy.backend_pool.recovery_options": (MODELLED, "a retry after a reply timeout"),
    "proxy.backend_pool.lb": (INERT, "mod_jk's lb worker: with several nodes, refused"),
    "balancer.policy": (
        MODELLED,
        "the state-blind policies, sqf and least_outstanding; the others are refused",
    ),
    "balancer.members": (MODELLED, ""),
    "balancer.sticky_session": (MODELLED, ""),
    "balancer.report_interval_s": (
        REFUSED,
        "a load-aware policy's stale view; the state-blind policies never read the load",
    ),
    "balancer.sticky_session_force": (INERT, "members never fail without backends.N.events"),
    "balancer.retry_s": (INERT, "members never fail without backends.N.events"),
    "balancer.max_attempts": (INERT, "members never fail without backends.N.events"),
    "balancer.choices": (INERT, "a refused policy's parameter"),
    "balancer.decay_s": (INERT, "a refused policy's parameter"),
    "balancer.maintain_s": (
        MODELLED,
        "mod_jk's worker.maintain: the pools' maintenance (the mod_jk_* policies are refused)",
    ),
    "balancer.hash_key": (INERT, "a refused policy's parameter"),
    "balancer.urls": (INERT, "a refused policy's parameter"),
    "balancer.url_zipf_s": (INERT, "a refused policy's parameter"),
    "balancer.ring_points": (INERT, "a refused policy's parameter"),
    "balancer.hash_balance_factor": (INERT, "a refused policy's parameter"),
    "balancer.response_bytes": (INERT, "a refused policy's parameter"),
    "backends.N.name": (MODELLED, ""),
    "backends.N.count": (MODELLED, ""),
    "backends.N.cores": (MODELLED, ""),
    "backends.N.speed": (MODELLED, ""),
    "backends.N.threads": (MODELLED, ""),
    "backends.N.acceptors": (MODELLED, "less the request threads (the usable budget)"),
    "backends.N.selectors": (MODELLED, "less the request threads (the usable budget)"),
    "backends.N.accept_queue": (MODELLED, ""),
    "backends.N.demand": (MODELLED, ""),
    "backends.N.io_wait": (MODELLED, ""),
    "backends.N.db_calls": (MODELLED, ""),
    "backends.N.jdbc_pool": (MODELLED, ""),
    "backends.N.jdbc_connect": (
        REFUSED,
        "above 0: the JDBC pool opens its connections as they are first needed",
    ),
    "backends.N.jdbc_initial_size": (INERT, "read only with jdbc_connect, which is refused"),
    "backends.N.weight": (MODELLED, ""),
    "backends.N.connector": (MODELLED, "nonblocking, blocking"),
    "backends.N.connection_idle_timeout_s": (MODELLED, "closes an idle pooled connection"),
    "backends.N.max_connections": (MODELLED, "connection slots pinned by backend pools"),
    "backends.N.connection_setup": (REFUSED, "above 0: a new connection's serialised set-up"),
    "backends.N.jvm.heap_mb": (MODELLED, ""),
    "backends.N.jvm.young_mb": (MODELLED, ""),
    "backends.N.jvm.survivor_ratio": (MODELLED, ""),
    "backends.N.jvm.baseline_mb": (MODELLED, ""),
    "backends.N.jvm.creates_sessions": (
        MODELLED,
        "with cookies, per client kind (appserver.jvm_sessions.KIND)",
    ),
    "backends.N.jvm.session_bytes": (MODELLED, "also each replica's size"),
    "backends.N.jvm.session_timeout_s": (MODELLED, ""),
    "backends.N.jvm.expiry_check_s": (MODELLED, ""),
    "backends.N.jvm.allocation_kb": (MODELLED, ""),
    "backends.N.jvm.young_pause_s": (MODELLED, ""),
    "backends.N.jvm.young_s_per_mb": (MODELLED, ""),
    "backends.N.jvm.full_pause_s": (MODELLED, ""),
    "backends.N.jvm.full_s_per_mb": (MODELLED, ""),
    "backends.N.jvm.gc_overhead_limit": (MODELLED, ""),
    "backends.N.jvm.gc_time_limit": (MODELLED, ""),
    "backends.N.jvm.gc_heap_free_limit": (MODELLED, ""),
    "backends.N.jvm.non_heap_mb": (MODELLED, "the resident-memory metric"),
    "backends.N.jvm.jit_cold_factor": (MODELLED, ""),
    "backends.N.jvm.jit_warm_factor": (MODELLED, ""),
    "backends.N.jvm.jit_warmup_requests": (MODELLED, ""),
    "backends.N.events": (REFUSED, ""),
    # the autoscaler's control loop and the nodes' lives run on the reference engine
    # (feature backends.autoscale)
    "backends.N.autoscale": (REFUSED, ""),
    "database.cores": (MODELLED, ""),
    "database.speed": (MODELLED, ""),
    "database.connections": (MODELLED, ""),
    "database.demand": (MODELLED, ""),
    "database.disk_demand": (MODELLED, ""),
    "database.disks": (MODELLED, ""),
    "cluster.replication.N.tier": (MODELLED, "names the probe"),
    "cluster.replication.N.enabled": (MODELLED, ""),
    "cluster.replication.N.mode": (MODELLED, "sync; async (flow-control credits) is refused"),
    "cluster.replication.N.scope": (MODELLED, ""),
    "cluster.replication.N.buddies": (MODELLED, ""),
    "cluster.replication.N.granularity": (MODELLED, ""),
    "cluster.replication.N.trigger": (MODELLED, ""),
    "cluster.replication.N.set_fraction": (MODELLED, ""),
    "cluster.replication.N.non_primitive_get_fraction": (MODELLED, ""),
    "cluster.replication.N.session_bytes": (MODELLED, ""),
    "cluster.replication.N.changed_bytes": (MODELLED, ""),
    "cluster.replication.N.invocations": (MODELLED, ""),
    "cluster.replication.N.serialize_s_per_kb": (MODELLED, ""),
    "cluster.replication.N.apply_s_per_kb": (MODELLED, ""),
    "cluster.replication.N.message_cpu_s": (MODELLED, ""),
    "cluster.replication.N.ack_bytes": (MODELLED, ""),
    "cluster.replication.N.max_credits_bytes": (INERT, "only with mode = async, refused"),
    "cluster.network": (MODELLED, ""),
    "cluster.bandwidth_bps": (MODELLED, ""),
    "cluster.latency_s": (MODELLED, ""),
    "cluster.multicast": (MODELLED, ""),
    # run control: the stop rules, warm-up and windows are the reference's
    "run.duration_s": (MODELLED, ""),
    "run.requests": (MODELLED, ""),
    "run.max_duration_s": (MODELLED, "the horizon of a run of run.requests"),
    "run.warmup": (MODELLED, ""),
    "run.replications": (MODELLED, ""),
    "run.seed": (MODELLED, ""),
    "run.confidence": (MODELLED, ""),
    "run.precision.metric": (MODELLED, "sim.run.replications, for both engines"),
    "run.precision.relative_half_width": (MODELLED, "sim.run.replications"),
    "run.precision.max_replications": (MODELLED, "sim.run.replications"),
    "run.max_in_flight": (MODELLED, ""),
    "run.engine": (MODELLED, ""),
    "run.max_events": (
        MODELLED,
        "sim.run.simulate checks the work estimate before either engine runs",
    ),
    "run.timeseries_interval_s": (MODELLED, "--timeseries"),
    "classes.N.name": (MODELLED, "request classes"),
    "classes.N.served_by": (MODELLED, ""),
    "classes.N.proxy.demand": (MODELLED, ""),
    "classes.N.backend.demand": (MODELLED, ""),
    "classes.N.backend.db_calls": (MODELLED, ""),
    "classes.N.database.demand": (MODELLED, ""),
    "classes.N.writes_session": (MODELLED, "with cluster.replication"),
    # and those of the mechanisms the kernel's modules declare (the database's shared lock)
    **mechanisms.parameters(),
}


def treatment(path: str) -> tuple[str, str] | None:
    """How the compiled engine treats the parameter at `path` (`tiersim schema`'s paths): the
    entry of the path or of its nearest ancestor."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        entry = PARAMETERS.get(".".join(parts[:end]))
        if entry is not None:
            return entry
    return None


# The features this engine implements (`sim.model.stack`): a model whose plan uses any other
# runs on the reference engine.
IMPLEMENTS: frozenset[str] = frozenset(
    {
        *(kind.feature for kind in CLIENTS.values()),  # closed, open, sessions, ab (once)
        "clients.finite",  # requests_per_user, total_*, ab -n: run to completion
        "clients.timeouts",  # timeouts, retries with back-off
        "clients.connect",  # connection set-up, SYN retransmission
        "clients.ramp",  # closed users called and retired over the run (`kernel.ramps`)
        "clients.schedule",  # an open schedule of rates, repeated cyclically
        "proxy",  # the worker pool (MaxRequestWorkers as httpd runs it), ListenBacklog
        *(kind.feature for kind in MPMS.values()),  # as one pool; lingering close refused
        "proxy.server_close",  # a finite run's front connections: when it closed the last
        "clients.keep_alive",  # persistent connections, KeepAliveTimeout, MaxKeepAliveRequests
        "proxy.client_connections",  # the front's client connections (its workers one pool)
        "proxy.lingering_close",  # a lingering close holds a prefork/worker worker
        "proxy.connection_demand",  # the front's CPU per client connection
        "proxy.process_management",  # StartServers, spare servers / threads, spawn rate
        "proxy.children",  # httpd's children as individuals: the accept line, event's limit
        # the front's pools of connections to the nodes, per child (mod_proxy), and max below
        # a child's threads (connects that can fail, and the worker's error state, are not)
        "proxy.backend_pool.mod_proxy",
        # mod_jk's ajp13 worker in front of one node: its endpoint cache per child, looked
        # for every 100 ms, connection_pool_timeout at the maintenance; reply_timeout,
        # retries, connects whose SYNs a full accept queue drops (its lb worker is not)
        "proxy.backend_pool.mod_jk",
        "mod_jk.ajp13",
        "proxy.backend_pool.max",
        "connector.max_connections",  # Tomcat maxConnections: a slot pinned per connection
        NonBlocking.feature,
        Blocking.feature,  # a thread bound to each pooled connection (Tomcat BIO, Jetty)
        "appserver.jdbc_pool",
        "database",
        "balancer",
        "balancer.sticky_session",
        *(kind.feature for kind in BLIND_CLASSES),
        *(kind.feature for kind in LOAD_CLASSES),  # sqf, least_outstanding: the live count
        "clients.host",  # the load generator's CPU, before each request is sent
        "replication.sync",
        # request classes: per-class demands and calls, a mix (per request or per user), a
        # session script, walked in order or by a Markov chain between the steps
        "classes",
        "clients.mix",
        "clients.script",
        "clients.ab.repeat",  # ab run again: each run a window (batch.K.*)
        # the JVM: heap, collections as pauses of the node's CPU, sessions of clients that
        # keep no cookies and their replicas, OutOfMemoryError, JIT warm-up
        "appserver.jvm",
        # the sessions of clients that keep cookies, touched at each request
        "appserver.jvm_sessions.closed",
        "appserver.jvm_sessions.sessions",
        # the mechanisms the kernel's modules declare (the database's shared lock)
        *mechanisms.features(),
    }
)


def missing(plan: Plan) -> list[str]:
    """The features of `plan` this engine does not implement, each with the model setting that
    brings it in (empty: the engine runs the model)."""
    return [
        reason if reason.startswith(feature) else f"{feature} ({reason})"
        for feature, reason in plan.features.items()
        if feature not in IMPLEMENTS
    ]
