"""Assemble one replication's components from a validated model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sim.kernel.calendar import Kernel
from sim.kernel.cpu import DedicatedCPU, ProcessorSharingCPU
from sim.kernel.slots import Pool
from sim.model.classes import Work
from sim.model.plan import Plan, compile_plan
from sim.model.schema import (
    AbClients,
    Backend,
    ClosedClients,
    Model,
    OpenClients,
    SessionClients,
)
from sim.observe.classes import ClassStats
from sim.observe.probes import Probe
from sim.random.distributions import Exponential, as_distribution
from sim.random.streams import Streams
from sim.run import classes
from sim.run.connect import Parts, connect
from sim.tiers.appserver.connectors import Connector, connector_class
from sim.tiers.appserver.jvm import Jvm
from sim.tiers.balancer.dispatcher import Dispatcher, DispatchProbe
from sim.tiers.balancer.mod_jk_lb import JkDispatcher
from sim.tiers.balancer.policies import make_policy
from sim.tiers.balancer.sessions import SessionTable
from sim.tiers.clients import populations
from sim.tiers.cluster.session_replication import (
    Network,
    ReplicationProbe,
    Replicator,
)
from sim.tiers.database.disks import Disks
from sim.tiers.proxy.backend_pool import BackendPool
from sim.tiers.proxy.children import ChildProcesses
from sim.tiers.proxy.client_connections import FrontConnections, linger_hold_s
from sim.tiers.proxy.mod_jk import JkBackendPool, JkWorker
from sim.tiers.proxy.mpm import mpm as mpm_class
from sim.tiers.proxy.process_management import Spawner
from sim.tiers.station import FrontStation, PooledCall, Station

R = TypeVar("R")  # the recorder the caller's factory makes


@dataclass
class Assembly:
    kernel: Kernel
    clients: populations.Clients
    stations: list[Station] = field(default_factory=list)
    pools: list[Pool] = field(default_factory=list)
    cpus: list[ProcessorSharingCPU | DedicatedCPU] = field(default_factory=list)
    dispatcher: Dispatcher | None = None
    backend_pools: list = field(
        default_factory=list
    )  # BackendPool: the front's connections to a node
    extra_probes: list = field(default_factory=list)  # e.g. ReplicationProbe
    jvms: list[Jvm] = field(default_factory=list)  # backend nodes' JVMs (backends.N.jvm)
    front: FrontConnections | None = None  # the front's client connections, when modelled
    class_stats: ClassStats | None = None  # per-class outcomes ([[classes]])
    _probes: list[Probe] | None = None

    def probes(self) -> list[Probe]:
        """Every component that measures itself, in a fixed order (the recorder's columns)."""
        if self._probes is None:
            self._probes = [
                *self.stations,
                *self.pools,
                *self.cpus,
                *self.extra_probes,
                *self.jvms,
                *self.backend_pools,
            ]
            if self.dispatcher is not None:
                self._probes.append(DispatchProbe(self.dispatcher))
            if self.class_stats is not None:
                self._probes += self.class_stats.probes()
        return self._probes


def sampler(spec, streams: Streams, purpose: str, calls: int = 0):
    """A sampler on its own stream; with `calls` downstream calls it draws one of calls + 1 bursts."""
    distribution = as_distribution(spec)
    if calls:
        distribution = distribution.scaled(1.0 / (calls + 1))
    return distribution.sampler(streams.generator(purpose))


def assemble(
    model: Model,
    streams: Streams,
    recorder_factory: Callable[[Kernel, Assembly], R],
    plan: Plan | None = None,
) -> tuple[Assembly, R]:
    """Build the component graph from the model's compiled plan (compiled here when not
    given); `recorder_factory(kernel, assembly)` makes the recorder."""
    plan = compile_plan(model) if plan is None else plan
    kernel = Kernel()
    # The clients are made last (they need the recorder, which needs the assembly): the
    # placeholder cannot have the field's type.
    assembly = Assembly(kernel=kernel, clients=None)  # type: ignore[arg-type]

    def host(
        name: str, cores: int, speed: float, slots: int | None
    ) -> ProcessorSharingCPU | DedicatedCPU:
        # At most `slots` visits compute at once (each holds a slot while it runs): with no
        # more slots than cores the CPU is never shared, and the cheaper exact form serves.
        kind = DedicatedCPU if slots is not None and slots <= cores else ProcessorSharingCPU
        cpu = kind(kernel, f"{name}.cpu", cores, speed)
        assembly.cpus.append(cpu)
        return cpu

    def pool(name: str, capacity, queue_limit=None) -> Pool:
        made = Pool(kernel, name, capacity, queue_limit)
        assembly.pools.append(made)
        return made

    database_call = None
    if model.database is not None:
        db = model.database
        database = classes.station(
            Station,
            (
                kernel,
                "database",
                pool("database.connections", db.connections) if db.connections else None,
                host("database", db.cores, db.speed, db.connections),
                sampler(db.demand, streams, "database.demand"),
            ),
            {},
            model,
            streams,
            "database.demand",
            lambda work: (work.db_demand(db), 0),
        )
        if as_distribution(db.disk_demand).mean > 0:
            database.post = Disks(
                kernel,
                pool("database.disks", db.disks),
                sampler(db.disk_demand, streams, "database.disk"),
            )
        assembly.stations.append(database)
        database_call = database.serve

    children = child_processes(model, kernel)
    nodes: list[Station] = []
    jvms: list[Jvm | None] = []  # per node, None where no JVM is modelled
    entries: list = []  # what the balancer sends to: the node, or the front's connections to it
    weights: list[float] = []
    events: list[tuple[float, int, str, float]] = []
    # the nodes the balancer can reach, in the plan's order (members only)
    for planned in plan.nodes:
        group = planned.spec
        weights.append(group.weight)
        events += [
            (e.at_s, len(entries), e.kind, e.factor)
            for e in group.events
            if e.node in (None, planned.number)
        ]
        name = planned.name
        io = as_distribution(group.io_wait)
        downstream = None
        if group.db_calls:
            downstream = database_call
            if group.jdbc_pool is not None:
                assert database_call is not None  # validated: db_calls need a [database]
                downstream = PooledCall(pool(f"{name}.jdbc_pool", group.jdbc_pool), database_call)
        connector = connector_class(group.connector)(
            group, name, lambda path, size, queue: pool(path, size, queue)
        )
        # replication work runs beside the request threads: the CPU may be shared; a JVM
        # pauses its CPU, which only the processor-sharing form supports
        shared = model.cluster.active or group.jvm is not None
        cpu = host(name, group.cores, group.speed, None if shared else group.request_threads)
        burst = sampler(group.demand, streams, f"{name}.demand", group.db_calls)
        jvm = None
        if group.jvm is not None:
            jvm = Jvm(kernel, name, cpu, group.jvm)
            assembly.jvms.append(jvm)
            burst = jvm.burst_sampler(burst)

        # a def, not a lambda with a default: mypy cannot infer that lambda (python/mypy#15459)
        def node_work(work: Work, group: Backend = group) -> tuple[Any, int]:
            return work.demand(group), work.db_calls(group)

        node = classes.station(
            Station,
            (kernel, name, connector.request_threads, cpu, burst),
            dict(
                io_wait=None if io.mean == 0 else io.sampler(streams.generator(f"{name}.io_wait")),
                downstream=downstream,
                calls=group.db_calls,
            ),
            model,
            streams,
            f"{name}.demand",
            node_work,
            None if jvm is None else jvm.burst_sampler,
        )
        nodes.append(node)
        jvms.append(jvm)
        # The front's pool of connections to the node, whenever it can change the answer
        # (see backend_pool_applies); the connection pins what the connector says.
        if backend_pool_applies(model, group, connector):
            backend_pool = make_backend_pool(model, kernel, node, connector.pins, group, children)
            assembly.backend_pools.append(backend_pool)
            entries.append(backend_pool)
        else:
            entries.append(node)
    assembly.stations.extend(nodes)
    replicators = (
        replicate(model, kernel, nodes, pool, streams, assembly) if model.cluster.active else []
    )

    entry = None
    if len(entries) == 1 and not events:
        entry = entries[0].serve
    elif entries:
        assembly.dispatcher = dispatcher(model, kernel, entries, weights, events, streams)
        entry = assembly.dispatcher
    if model.proxy is not None:
        px = model.proxy
        processes = px.processes
        capacity = None if processes is None else processes.workers
        if children is not None:
            workers: Pool = children
            assembly.pools.append(children)
        else:
            workers = pool("proxy.workers", capacity, px.listen_backlog)
        args = (
            kernel,
            "proxy",
            workers,
            host("proxy", px.cores, px.speed, capacity),
            sampler(px.demand, streams, "proxy.demand", 1 if px.forward and entry else 0),
        )
        kwargs: dict[str, Any] = dict(downstream=entry, calls=1 if px.forward else 0)
        front = front_connections(model, kernel, workers, children)
        if front is not None and as_distribution(px.connection_demand).mean > 0:
            kwargs["connection_burst"] = sampler(
                px.connection_demand, streams, "proxy.connection_demand"
            )
        if front is not None:
            assembly.front = front
            assembly.extra_probes.extend(front.probes(server_close=model.finite))
        if px.start_servers is not None:
            # validated: start_servers needs finite workers, and then the children matter
            assert children is not None and processes is not None
            Spawner(
                kernel,
                children,
                prefork=mpm_class(px.mpm).single_threaded_children,
                max_children=processes.max_children,
                min_spare=processes.min_spare,
                max_spare=processes.max_spare,
                graceful_restart=px.graceful_restart,
            )
        if front is not None:
            kwargs["front"] = front
        forwards = px.forward and entry is not None
        proxy = classes.station(
            Station if front is None else FrontStation,
            args,
            kwargs,
            model,
            streams,
            "proxy.demand",
            lambda work: (work.proxy_demand(px), 1 if forwards and work.forwarded else 0),
        )
        assembly.stations.insert(0, proxy)
        entry = proxy.serve
        proxy.accepts_clients = True
    else:
        for node in nodes:  # the clients connect to the nodes themselves
            node.accepts_clients = True

    assembly.class_stats = classes.class_stats(model)
    # the load generator's CPU (clients.host), made before the recorder so that it is observed
    client_cpu = None
    if model.clients.host is not None:
        spec = model.clients.host
        client_cpu = host("clients", spec.cores, spec.speed, None)
    recorder = recorder_factory(kernel, assembly)
    assembly.clients = make_clients(model, kernel, entry, recorder, streams, client_cpu)
    if assembly.class_stats is not None:
        assembly.clients.classes = classes.class_choice(
            model, streams, getattr(assembly.clients, "think", None), assembly.class_stats
        )
    tiers = [spec.tier for _, spec in model.cluster.active]
    connect(
        Parts(
            nodes=nodes,
            jvms=jvms,
            replicators=list(zip(tiers, replicators)),
            dispatcher=assembly.dispatcher,
            clients=assembly.clients,
            writes_session=classes.writes_session(model),
        )
    )
    return assembly, recorder


def dispatcher(
    model: Model, kernel: Kernel, entries: list, weights: list[float], events, streams: Streams
) -> Dispatcher:
    """The balancer over `entries` with the model's policy; it keeps a session table when the
    clients keep sessions (cookies), and tracks requests in flight when members can crash."""
    spec = model.balancer
    params = {
        name: getattr(spec, name)
        for name in (
            "choices",
            "decay_s",
            "maintain_s",
            "hash_key",
            "urls",
            "url_zipf_s",
            "ring_points",
            "hash_balance_factor",
        )
    }
    params["response_bytes"] = sampler(spec.response_bytes, streams, "balancer.response_bytes")
    names = [entry.name for entry in entries]  # a node, or the front's pool to it
    policy = make_policy(spec.policy, weights, names, streams.generator("balancer"), **params)
    keeps_sessions = model.clients.kind in ("closed", "sessions")
    jk = (
        model.proxy is not None
        and model.proxy.forward
        and model.proxy.backend_pool.module == "mod_jk"
    )
    extra: dict[str, Any] = {}
    if jk:  # mod_jk's lb worker: its own failover, error state and recovery
        assert model.proxy is not None
        extra = dict(lb=model.proxy.backend_pool.lb, maintain_s=spec.maintain_s)
    made = (JkDispatcher if jk else Dispatcher)(
        kernel,
        entries,
        policy,
        **extra,
        report_interval_s=spec.report_interval_s,
        retry_s=spec.retry_s,
        max_attempts=spec.max_attempts,
        sessions=SessionTable() if keeps_sessions else None,
        sticky=spec.sticky_session,
        sticky_force=spec.sticky_session_force,
        track_failures=any(kind == "crash" for _, _, kind, _ in events),
    )
    made.schedule(events)
    return made


MOD_JK_POLL_S = 0.1  # JK_SLEEP_DEF, jk_util.h: mod_jk's endpoint-acquire polling interval


def replicate(
    model: Model, kernel: Kernel, nodes: list[Station], pool, streams: Streams, assembly
) -> list[Replicator]:
    """Session replication between the backend nodes, after each request (`sim.tiers.cluster.session_replication`)."""
    cluster = model.cluster
    network = Network(
        kernel,
        lambda name: pool(name, 1),
        [node.name for node in nodes],
        switched=cluster.network == "switched",
        multicast=cluster.multicast,
        bandwidth_bps=cluster.bandwidth_bps,
        latency_s=cluster.latency_s,
    )
    replicators = []
    tiers = [r.tier for _, r in cluster.active]  # a tier named twice is told apart by its index
    for index, spec in cluster.active:
        uniform = streams.generator(f"cluster.replication.{index}").random
        replicator = Replicator(kernel, [node.cpu for node in nodes], network, spec, uniform)
        replicators.append(replicator)
        name = f"replication.{spec.tier}" if tiers.count(spec.tier) == 1 else f"replication.{index}"
        assembly.extra_probes.append(ReplicationProbe(name, replicator))
    return replicators


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
            group.connector == "blocking" or group.max_connections is not None
            for group in model.backends
        )
    ):
        return True
    return (
        mpm_class(px.mpm).limits_connections_by_idle_workers
        and px.keep_alive
        and model.clients.keep_alive
    )


def pool_limit_binds(proxy) -> bool:
    """A backend pool `max` below a child's threads can make its requests wait (or, for an
    unbounded front, any `max`); at ThreadsPerChild or above it never can."""
    limit = proxy.backend_pool.max
    if limit is None:
        return False
    processes = proxy.processes
    return processes is None or limit < processes.threads_per_child


def child_processes(model: Model, kernel: Kernel) -> ChildProcesses | None:
    """The front's children, StartServers of them (all when none), when they matter."""
    if not children_matter(model):
        return None
    px = model.proxy
    assert px is not None  # children_matter: a proxy with finite workers
    processes = px.processes
    assert processes is not None
    return ChildProcesses(
        kernel,
        "proxy.workers",
        threads_per_child=processes.threads_per_child,
        children=processes.start,
        queue_limit=px.listen_backlog,
        async_factor=processes.async_factor,
    )


def backend_pool_applies(model: Model, group, connector: Connector) -> bool:
    """The front's pool of connections to a node is built whenever it can change the answer:
    when connections pin a thread or a slot on the node, or when a child's pool (`max`) is
    smaller than the requests the child can send at once (ThreadsPerChild), so that requests
    wait for a connection (`acquire`) or fail.  Otherwise every request finds a connection at once and
    its `ttl`, `acquire` and read `timeout` never act: skipping the pool is exact, and keeps
    the hot path short."""
    proxy = model.proxy
    if proxy is None or not proxy.forward:
        return False
    if connector.pins_per_connection:
        return True
    if jk_acts(model):
        return True
    return pool_limit_binds(proxy)


def jk_acts(model: Model) -> bool:
    """mod_jk's own timeouts and retries can act: a reply_timeout, or members that crash
    (refused connects, retried).  Otherwise its ajp13 worker sends each request once and waits
    for the answer, as the plain pool does."""
    proxy = model.proxy
    if proxy is None or not proxy.forward or proxy.backend_pool.module != "mod_jk":
        return False
    return proxy.backend_pool.reply_timeout_s is not None or any(
        group.events for group in model.backends
    )


def make_backend_pool(
    model: Model, kernel: Kernel, node: Station, pins, group, children: ChildProcesses | None
) -> BackendPool:
    assert model.proxy is not None  # built only behind a proxy (backend_pool_applies)
    settings = model.proxy.backend_pool
    per_child = None if children is None else children.threads_per_child
    # mod_proxy_ajp: 503 for an idempotent request; mod_proxy_http: 502 (mod_jk sets no
    # read timeout: see sim.tiers.proxy.mod_jk)
    mod_proxy_ajp = settings.module == "mod_proxy" and settings.scheme == "ajp"
    read_timeout_status = 503 if mod_proxy_ajp else 502
    jk: dict[str, Any] = {}
    if settings.module == "mod_jk":  # its ajp13 worker: reply_timeout, retries (mod_jk.py)
        jk = dict(jk=JkWorker.of(settings), maintain_s=model.balancer.maintain_s)
    return (JkBackendPool if jk else BackendPool)(
        kernel,
        node,
        pins,
        # mod_proxy max / mod_jk connection_pool_size default to the child's threads
        max_connections=settings.max if settings.max is not None else per_child,
        ttl_s=settings.ttl_s,
        acquire_timeout_s=settings.acquire_timeout_s,
        read_timeout_s=settings.timeout_s,
        idle_timeout_s=group.connection_idle_timeout_s,
        children=children,
        reslist=per_child is None or per_child > 1,
        poll_s=MOD_JK_POLL_S if settings.module == "mod_jk" else None,
        disable_reuse=settings.disable_reuse,
        read_timeout_status=read_timeout_status,
        **jk,
    )


def front_connections(
    model: Model, kernel: Kernel, workers: Pool, children: ChildProcesses | None
) -> FrontConnections | None:
    """The front's connection handling, when it can hold a worker beyond a request (see
    `connections_matter`)."""
    if not connections_matter(model, children is not None):
        return None  # a worker per request, released with the response: the plain station
    px, clients = model.proxy, model.clients
    assert px is not None  # called only with a proxy
    return FrontConnections(
        kernel,
        workers,
        mpm=px.mpm,
        keep_alive=px.keep_alive,
        keep_alive_timeout_s=px.keep_alive_timeout_s,
        max_keep_alive_requests=px.max_keep_alive_requests,
        linger_s=px.linger_s,
        client_close_delay_s=clients.close_delay_s,
        children=children,
    )


def connections_matter(model: Model, children: bool) -> bool:
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
        or as_distribution(px.connection_demand).mean > 0
        or model.finite
    )


def make_clients(
    model: Model, kernel: Kernel, entry, recorder, streams: Streams, client_cpu=None
) -> populations.Clients:
    spec = model.clients
    connect = None
    if spec.connect is not None and as_distribution(spec.connect).mean > 0:
        connect = sampler(spec.connect, streams, "clients.connect")
    host = None
    if spec.host is not None and client_cpu is not None:
        per_connection = None
        if as_distribution(spec.host.connection_demand).mean > 0:
            per_connection = sampler(
                spec.host.connection_demand, streams, "clients.host.connection_demand"
            )
        host = (
            client_cpu,
            sampler(spec.host.demand, streams, "clients.host.demand"),
            per_connection,
        )
    common = dict(
        timeout_s=spec.timeout_s,
        retry=spec.retry,
        connect=connect,
        tcp=spec.tcp,
        keep_alive=spec.keep_alive,
        host=host,
    )
    if isinstance(spec, ClosedClients):
        return populations.ClosedPopulation(
            kernel,
            entry,
            recorder,
            users=spec.users,
            think=sampler(spec.think, streams, "clients.think"),
            ramp=spec.ramp,
            requests_per_user=spec.requests_per_user,
            **common,
        )
    if isinstance(spec, OpenClients):
        interarrival = unit = schedule = None
        if spec.rate_per_s is not None:
            interarrival = Exponential(1.0 / spec.rate_per_s).sampler(
                streams.generator("clients.arrivals")
            )
        elif spec.interarrival is not None:
            interarrival = sampler(spec.interarrival, streams, "clients.arrivals")
        else:
            unit = Exponential(1.0).sampler(streams.generator("clients.arrivals"))
            assert spec.schedule is not None  # validated: exactly one of the three is given
            schedule = [(step.rate_per_s, step.duration_s) for step in spec.schedule]
        return populations.OpenArrivals(
            kernel,
            entry,
            recorder,
            interarrival=interarrival,
            unit_exponential=unit,
            schedule=schedule,
            total=spec.total_requests,
            **common,
        )
    if isinstance(spec, SessionClients):
        return populations.Sessions(
            kernel,
            entry,
            recorder,
            interarrival=Exponential(1.0 / spec.session_rate_per_s).sampler(
                streams.generator("clients.arrivals")
            ),
            think=sampler(spec.think, streams, "clients.think"),
            length=session_length(spec, streams),
            total=spec.total_sessions,
            **common,
        )
    if isinstance(spec, AbClients):
        return populations.ApacheBench(
            kernel,
            entry,
            recorder,
            concurrency=spec.concurrency,
            requests=spec.requests,
            repeat=spec.repeat,
            **common,
        )
    raise TypeError(f"unknown client kind {spec!r}")  # unreachable: the schema is a closed union


def session_length(spec: SessionClients, streams: Streams):
    if spec.requests_per_session is None:
        return None  # the script's path is the session (sim.tiers.clients.scripts)
    if spec.fixed_length:
        n = int(spec.requests_per_session)
        return lambda: n
    rng = streams.generator("clients.session_length")
    p = 1.0 / spec.requests_per_session
    return lambda: int(rng.geometric(p))
