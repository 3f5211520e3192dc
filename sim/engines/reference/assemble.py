"""Assemble one replication's components from a validated model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sim.engines.reference import classes
from sim.engines.reference.connect import Parts, connect
from sim.kernel.calendar import Kernel
from sim.kernel.cpu import DedicatedCPU, ProcessorSharingCPU
from sim.kernel.slots import Pool
from sim.model.backend_pools import connects_can_fail
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
from sim.model.shared_lock import shared_lock_part
from sim.observe.classes import ClassStats
from sim.observe.probes import Probe
from sim.random.distributions import Exponential, as_distribution
from sim.random.streams import Streams, sampler
from sim.tiers.appserver.jvm import Jvm
from sim.tiers.balancer.dispatcher import Dispatcher, DispatchProbe
from sim.tiers.balancer.mod_jk_lb import JkDispatcher
from sim.tiers.balancer.sessions import SessionTable
from sim.tiers.clients import populations
from sim.tiers.cluster.session_replication import (
    Network,
    ReplicationProbe,
    Replicator,
)
from sim.tiers.database.disks import Disks
from sim.tiers.database.lock import POOL as LOCK_POOL
from sim.tiers.database.lock import shared_lock
from sim.tiers.proxy.backend_pool import BackendPool, FailingConnectsPool
from sim.tiers.proxy.children import ChildProcesses
from sim.tiers.proxy.client_connections import FrontConnections
from sim.tiers.proxy.mod_jk import POLL_S as JK_POLL_S
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
        lock = shared_lock_part(model)
        if lock is not None:
            database_call = shared_lock(
                kernel, lock, pool(LOCK_POOL, lock.permits), database_call, streams
            )

    stack = plan.stack
    assert stack is not None  # compile_plan always decides the stack
    children = child_processes(model, kernel) if stack.children else None
    nodes: list[Station] = []
    jvms: list[Jvm | None] = []  # per node, None where no JVM is modelled
    entries: list = []  # what the balancer sends to: the node, or the front's connections to it
    weights: list[float] = []
    events: list[tuple[float, int, str, float]] = []
    # the nodes the balancer can reach, in the plan's order (members only)
    for planned, connector_kind, pooled in zip(plan.nodes, stack.connectors, stack.backend_pools):
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
        connector = connector_kind(group, name, lambda path, size, queue: pool(path, size, queue))
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
        # (`sim.model.stack.backend_pool_applies`); the connection pins what the connector says.
        if pooled:
            setup = as_distribution(group.connection_setup)
            backend_pool = make_backend_pool(
                model,
                kernel,
                node,
                connector.pins,
                group,
                children,
                setup=None
                if setup.mean == 0
                else (
                    setup.sampler(streams.generator(f"{name}.connection_setup")),
                    pool(f"{name}.connection_setup", 1),
                ),
                connects_fail=model.proxy is not None
                and connects_can_fail(model.proxy, group, connector_kind),
            )
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
        assembly.dispatcher = dispatcher(model, plan, kernel, entries, weights, events, streams)
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
        front = (
            front_connections(model, kernel, workers, children) if stack.front_connections else None
        )
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
                uptime_s=px.uptime_s,
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
            members=entries,
            writes_session=classes.writes_session(model),
        )
    )
    return assembly, recorder


def dispatcher(
    model: Model,
    plan: Plan,
    kernel: Kernel,
    entries: list,
    weights: list[float],
    events,
    streams: Streams,
) -> Dispatcher:
    """The balancer over `entries` with the model's policy and the parameters its class
    declares; it keeps a session table when the clients keep sessions (cookies), and tracks
    requests in flight when members can crash."""
    spec = model.balancer
    stack = plan.stack
    assert stack is not None
    params = dict(stack.policy_parameters)
    if "response_bytes" in params:  # a distribution, drawn on the balancer's own stream
        params["response_bytes"] = sampler(spec.response_bytes, streams, "balancer.response_bytes")
    names = [entry.name for entry in entries]  # a node, or the front's pool to it
    policy = stack.policy(weights, names, streams.generator("balancer"), **params)
    keeps_sessions = stack.keeps_sessions
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


def child_processes(model: Model, kernel: Kernel) -> ChildProcesses:
    """The front's children, StartServers of them (all when none), when they matter
    (`sim.model.stack.children_matter`)."""
    px = model.proxy
    assert px is not None  # children matter: a proxy with finite workers
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


def make_backend_pool(
    model: Model,
    kernel: Kernel,
    node: Station,
    pins,
    group,
    children: ChildProcesses | None,
    setup: tuple[Any, Pool] | None = None,
    connects_fail: bool = False,
) -> BackendPool:
    """The front's pool of connections to `node`; `setup` is the node's set-up of each new
    connection (`backends.N.connection_setup`: its sampler, and the lock it is serialised on)."""
    assert model.proxy is not None  # built only behind a proxy (stack.backend_pools)
    settings = model.proxy.backend_pool
    per_child = None if children is None else children.threads_per_child
    # mod_proxy_ajp: 503 for an idempotent request; mod_proxy_http: 502 (mod_jk sets no
    # read timeout: see sim.tiers.proxy.mod_jk)
    mod_proxy_ajp = settings.module == "mod_proxy" and settings.scheme == "ajp"
    read_timeout_status = 503 if mod_proxy_ajp else 502
    extra: dict[str, Any] = {}
    kind: type[BackendPool] = BackendPool
    if settings.module == "mod_jk":  # its ajp13 worker: reply_timeout, retries (mod_jk.py)
        kind = JkBackendPool
        extra = dict(jk=JkWorker.of(settings), maintain_s=model.balancer.maintain_s)
    elif connects_fail:
        # a connect can time out: the worker's error state for `retry` (ProxyPass retry=)
        kind = FailingConnectsPool
        extra = dict(retry_s=model.balancer.retry_s)
    return kind(
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
        poll_s=JK_POLL_S if settings.module == "mod_jk" else None,
        disable_reuse=settings.disable_reuse,
        read_timeout_status=read_timeout_status,
        setup=None if setup is None else setup[0],
        setup_lock=None if setup is None else setup[1],
        # mod_proxy connectiontimeout: the worker's timeout unless set apart
        connect_timeout_s=settings.connect_timeout_s if settings.module == "mod_proxy" else None,
        **extra,
    )


def front_connections(
    model: Model, kernel: Kernel, workers: Pool, children: ChildProcesses | None
) -> FrontConnections:
    """The front's connection handling, when it can hold a worker beyond a request
    (`sim.model.stack.connections_matter`)."""
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
