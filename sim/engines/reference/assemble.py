"""Assemble one replication's components from the model's plan: the stack's parts
(`sim.model.stack`, `sim.model.parts`), never the model file's schema."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sim.engines.reference import classes
from sim.engines.reference.connect import Parts, connect
from sim.engines.reference.elastic import elastic_groups
from sim.kernel.calendar import Kernel
from sim.kernel.cpu import DedicatedCPU, ProcessorSharingCPU
from sim.kernel.slots import Pool
from sim.model.classes import node_work
from sim.model.parts.clients import ClientsPart
from sim.model.parts.front import Front
from sim.model.parts.hosts import HostCpu
from sim.model.parts.nodes import NodePart
from sim.model.plan import Plan
from sim.model.stack import StackPlan
from sim.observe.classes import ClassStats
from sim.observe.probes import Probe
from sim.random.distributions import as_distribution
from sim.random.streams import Streams, sampler
from sim.tiers.appserver.jdbc_connections import OpeningPooledCall
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
from sim.tiers.database import AROUND_CALL
from sim.tiers.database.disks import Disks
from sim.tiers.proxy.backend_pool import BackendPool, FailingConnectsPool
from sim.tiers.proxy.children import ChildProcesses
from sim.tiers.proxy.client_connections import FrontConnections
from sim.tiers.proxy.mod_jk import POLL_S as JK_POLL_S
from sim.tiers.proxy.mod_jk import JkBackendPool
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
    plan: Plan, streams: Streams, recorder_factory: Callable[[Kernel, Assembly], R]
) -> tuple[Assembly, R]:
    """Build the component graph from the model's compiled plan;
    `recorder_factory(kernel, assembly)` makes the recorder."""
    kernel = Kernel()
    # The clients are made last (they need the recorder, which needs the assembly): the
    # placeholder cannot have the field's type.
    assembly = Assembly(kernel=kernel, clients=None)  # type: ignore[arg-type]

    def host(cpu: HostCpu) -> ProcessorSharingCPU | DedicatedCPU:
        # the stack decides whether the CPU is ever shared (`sim.model.parts.hosts`)
        kind = DedicatedCPU if cpu.dedicated else ProcessorSharingCPU
        made = kind(kernel, cpu.name, cpu.cores, cpu.speed)
        assembly.cpus.append(made)
        return made

    def pool(name: str, capacity, queue_limit=None) -> Pool:
        made = Pool(kernel, name, capacity, queue_limit)
        assembly.pools.append(made)
        return made

    stack = plan.stack
    assert stack is not None  # compile_plan always decides the stack
    classed = stack.request_classes
    database_call = None
    db = stack.database
    if db is not None:
        database = classes.station(
            Station,
            (
                kernel,
                "database",
                None if db.connections is None else pool("database.connections", db.connections),
                host(db.cpu),
                sampler(db.demand, streams, "database.demand"),
            ),
            {},
            classed,
            streams,
            "database.demand",
            lambda work: (work.db_demand(db), 0),
        )
        if db.disks is not None:
            database.post = Disks(
                kernel,
                pool("database.disks", db.disks),
                sampler(db.disk_demand, streams, "database.disk"),
            )
        assembly.stations.append(database)
        database_call = database.serve
        # the mechanisms around its call (the shared lock), their pools after the database's
        for around in AROUND_CALL:
            database_call = around(kernel, db, pool, database_call, streams)

    children = child_processes(stack.front, kernel) if stack.children else None
    nodes: list[Station] = []
    jvms: list[Jvm | None] = []  # per node, None where no JVM is modelled
    entries: list = []  # what the balancer sends to: the node, or the front's connections to it
    # the JDBC pools that open their connections (`backends.N.jdbc_connect`), by node
    jdbc_pools: dict[int, OpeningPooledCall] = {}
    weights: list[float] = []
    events: list[tuple[float, int, str, float]] = []
    # the nodes the balancer can reach, in the plan's order (members only)
    for part in stack.nodes:
        weights.append(part.weight)
        events += [(e.at_s, len(entries), e.kind, e.factor) for e in part.events]
        name = part.name
        io = part.io_wait
        downstream = None
        if part.db_calls:
            downstream = database_call
            if part.jdbc_pool is not None:
                assert database_call is not None  # validated: db_calls need a [database]
                jdbc = pool(f"{name}.jdbc_pool", part.jdbc_pool)
                if part.jdbc_connect is None:
                    downstream = PooledCall(jdbc, database_call)
                else:
                    opening = OpeningPooledCall(
                        jdbc,
                        database_call,
                        kernel.after,
                        sampler(part.jdbc_connect, streams, f"{name}.jdbc_connect"),
                        part.jdbc_initial_size,
                    )
                    jdbc_pools[len(entries)] = opening
                    downstream = opening
        connector = part.connector(
            part.limits, name, lambda path, size, queue: pool(path, size, queue)
        )
        cpu = host(part.cpu)
        burst = sampler(part.demand, streams, f"{name}.demand", part.db_calls)
        jvm = None
        if part.jvm is not None:
            jvm = Jvm(kernel, name, cpu, part.jvm.settings)
            assembly.jvms.append(jvm)
            burst = jvm.burst_sampler(burst)

        node = classes.station(
            Station,
            (kernel, name, connector.request_threads, cpu, burst),
            dict(
                io_wait=None if io.mean == 0 else io.sampler(streams.generator(f"{name}.io_wait")),
                downstream=downstream,
                calls=part.db_calls,
            ),
            classed,
            streams,
            f"{name}.demand",
            node_work(part),
            None if jvm is None else jvm.burst_sampler,
        )
        nodes.append(node)
        jvms.append(jvm)
        # The front's pool of connections to the node, whenever it can change the answer
        # (`sim.model.stack.backend_pool_applies`); the connection pins what the connector says.
        if part.backend_pool:
            setup = part.connection_setup
            backend_pool = make_backend_pool(
                stack,
                kernel,
                node,
                connector.pins,
                part,
                children,
                setup=None
                if setup is None
                else (
                    as_distribution(setup).sampler(streams.generator(f"{name}.connection_setup")),
                    pool(f"{name}.connection_setup", 1),
                ),
                connects_fail=part.connects_can_fail,
            )
            assembly.backend_pools.append(backend_pool)
            entries.append(backend_pool)
        else:
            entries.append(node)
    assembly.stations.extend(nodes)
    replicators = (
        replicate(stack, kernel, nodes, pool, streams, assembly) if stack.replications else []
    )

    entry = None
    if len(entries) == 1 and not events:
        entry = entries[0].serve
    elif entries:
        assembly.dispatcher = dispatcher(stack, kernel, entries, weights, events, streams)
        entry = assembly.dispatcher
    if stack.front is not None:
        front_part = stack.front
        processes = front_part.processes
        capacity = front_part.workers
        if children is not None:
            workers: Pool = children
            assembly.pools.append(children)
        else:
            workers = pool("proxy.workers", capacity, front_part.listen_backlog)
        args = (
            kernel,
            "proxy",
            workers,
            host(front_part.cpu),
            sampler(
                front_part.demand,
                streams,
                "proxy.demand",
                1 if front_part.forwards and entry else 0,
            ),
        )
        kwargs: dict[str, Any] = dict(downstream=entry, calls=1 if front_part.forwards else 0)
        front = (
            front_connections(front_part, kernel, workers, children)
            if stack.front_connections
            else None
        )
        if front is not None and front_part.connection_demand is not None:
            kwargs["connection_burst"] = sampler(
                front_part.connection_demand, streams, "proxy.connection_demand"
            )
        if front is not None:
            assembly.front = front
            assembly.extra_probes.extend(front.probes(server_close=plan.run.finite))
        management = None if processes is None else processes.management
        if management is not None:
            # validated: start_servers needs finite workers, and then the children matter
            assert children is not None and processes is not None
            Spawner(
                kernel,
                children,
                prefork=management.prefork,
                max_children=processes.max_children,
                min_spare=management.min_spare,
                max_spare=management.max_spare,
                graceful_restart=management.graceful_restart,
                uptime_s=management.uptime_s,
            )
        if front is not None:
            kwargs["front"] = front
        forwards = front_part.forwards and entry is not None
        proxy = classes.station(
            Station if front is None else FrontStation,
            args,
            kwargs,
            classed,
            streams,
            "proxy.demand",
            lambda work: (work.proxy_demand(front_part), 1 if forwards and work.forwarded else 0),
        )
        assembly.stations.insert(0, proxy)
        entry = proxy.serve
        proxy.accepts_clients = True
    else:
        for node in nodes:  # the clients connect to the nodes themselves
            node.accepts_clients = True

    assembly.class_stats = classes.class_stats(classed)
    # autoscaled groups (backends.N.autoscale): their control loops, measured with the rest
    elastic = elastic_groups(
        stack.autoscaled, kernel, nodes, jvms, entries, assembly.dispatcher, jdbc_pools
    )
    assembly.extra_probes.extend(elastic)
    # the load generator's CPU (clients.host), made before the recorder so that it is observed
    client_cpu = None if stack.clients_cpu is None else host(stack.clients_cpu)
    # what the recorder records is the stack's layout, which studies and the compiled engine
    # read without building this assembly
    stack.probes.check(assembly.probes(), "reference")
    recorder = recorder_factory(kernel, assembly)
    assembly.clients = make_clients(stack, kernel, entry, recorder, streams, client_cpu)
    if assembly.class_stats is not None:
        assembly.clients.classes = classes.class_choice(
            classed,
            stack.clients_part.kind,
            streams,
            getattr(assembly.clients, "think", None),
            assembly.class_stats,
        )
    tiers = [part.tier for part in stack.replications]
    connect(
        Parts(
            nodes=nodes,
            jvms=jvms,
            replicators=list(zip(tiers, replicators)),
            dispatcher=assembly.dispatcher,
            clients=assembly.clients,
            members=entries,
            writes_session=classes.writes_session(classed),
            elastic=elastic,
        )
    )
    return assembly, recorder


def dispatcher(
    stack: StackPlan,
    kernel: Kernel,
    entries: list,
    weights: list[float],
    events,
    streams: Streams,
) -> Dispatcher:
    """The balancer over `entries` with the model's policy and the parameters its class
    declares; it keeps a session table when the clients keep sessions (cookies), and tracks
    requests in flight when members can crash."""
    spec = stack.balancer
    params = dict(stack.policy_parameters)
    if "response_bytes" in params:  # a distribution, drawn on the balancer's own stream
        params["response_bytes"] = sampler(spec.response_bytes, streams, "balancer.response_bytes")
    names = [entry.name for entry in entries]  # a node, or the front's pool to it
    policy = stack.policy(weights, names, streams.generator("balancer"), **params)
    keeps_sessions = stack.keeps_sessions
    jk = stack.front is not None and stack.front.mod_jk
    extra: dict[str, Any] = {}
    if jk:  # mod_jk's lb worker: its own failover, error state and recovery
        assert spec.jk_lb is not None  # decided with the front's mod_jk
        extra = dict(lb=spec.jk_lb, maintain_s=spec.maintain_s)
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
    stack: StackPlan, kernel: Kernel, nodes: list[Station], pool, streams: Streams, assembly
) -> list[Replicator]:
    """Session replication between the backend nodes, after each request
    (`sim.tiers.cluster.session_replication`), as the stack's parts say."""
    network = stack.network
    links = Network(
        kernel,
        lambda name: pool(name, 1),
        [node.name for node in nodes],
        switched=network.switched,
        multicast=network.multicast,
        bandwidth_bps=network.bandwidth_bps,
        latency_s=network.latency_s,
    )
    replicators = []
    for part in stack.replications:
        uniform = streams.generator(f"cluster.replication.{part.index}").random
        receivers = [list(each) for each in part.receivers]
        cpus = [node.cpu for node in nodes]
        replicator = Replicator(kernel, cpus, links, part.settings, uniform, receivers)
        replicators.append(replicator)
        assembly.extra_probes.append(ReplicationProbe(part.name, replicator))
    return replicators


def child_processes(front: Front | None, kernel: Kernel) -> ChildProcesses:
    """The front's children, StartServers of them (all when none), when they matter
    (`sim.model.stack.children_matter`)."""
    # children matter: a proxy with finite workers
    assert front is not None and front.processes is not None
    processes = front.processes
    return ChildProcesses(
        kernel,
        "proxy.workers",
        threads_per_child=processes.threads_per_child,
        children=processes.start_children,
        queue_limit=front.listen_backlog,
        async_factor=processes.async_factor,
    )


def make_backend_pool(
    stack: StackPlan,
    kernel: Kernel,
    node: Station,
    pins,
    part: NodePart,
    children: ChildProcesses | None,
    setup: tuple[Any, Pool] | None = None,
    connects_fail: bool = False,
) -> BackendPool:
    """The front's pool of connections to `node` (its `part`); `setup` is the node's set-up of
    each new connection (`backends.N.connection_setup`: its sampler, and the lock it is
    serialised on)."""
    front = stack.front
    assert front is not None  # built only behind a proxy
    settings = front.worker
    extra: dict[str, Any] = {}
    kind: type[BackendPool] = BackendPool
    if front.mod_jk:  # its ajp13 worker: reply_timeout, retries (mod_jk.py)
        kind = JkBackendPool
        extra = dict(jk=settings.jk, maintain_s=stack.balancer.maintain_s)
    elif connects_fail:
        # a connect can time out: the worker's error state for `retry` (ProxyPass retry=)
        kind = FailingConnectsPool
        extra = dict(retry_s=stack.balancer.retry_s)
    return kind(
        kernel,
        node,
        pins,
        # mod_proxy max / mod_jk connection_pool_size default to the child's threads
        max_connections=front.pool_max,
        ttl_s=settings.ttl_s,
        acquire_timeout_s=settings.acquire_timeout_s,
        read_timeout_s=settings.read_timeout_s,
        idle_timeout_s=part.connection_idle_timeout_s,
        children=children,
        reslist=front.reslist,
        poll_s=JK_POLL_S if front.mod_jk else None,
        disable_reuse=settings.disable_reuse,
        read_timeout_status=front.read_timeout_status,
        setup=None if setup is None else setup[0],
        setup_lock=None if setup is None else setup[1],
        # mod_proxy connectiontimeout: the worker's timeout unless set apart (None on mod_jk)
        connect_timeout_s=settings.connect_timeout_s,
        **extra,
    )


def front_connections(
    front: Front, kernel: Kernel, workers: Pool, children: ChildProcesses | None
) -> FrontConnections:
    """The front's connection handling, when it can hold a worker beyond a request
    (`sim.model.stack.connections_matter`)."""
    settings = front.connections
    return FrontConnections(
        kernel,
        workers,
        mpm=settings.mpm,
        keep_alive=settings.keep_alive,
        keep_alive_timeout_s=settings.keep_alive_timeout_s,
        max_keep_alive_requests=settings.max_keep_alive_requests,
        linger_s=settings.linger_s,
        client_close_delay_s=settings.client_close_delay_s,
        children=children,
    )


def make_clients(
    stack: StackPlan, kernel: Kernel, entry, recorder, streams: Streams, client_cpu=None
) -> populations.Clients:
    """The clients the stack decided (`stack.clients`), drawing on the streams its clients
    part names (`sim.model.parts.clients`)."""
    part = stack.clients_part
    connect = None if part.connect is None else sampler(part.connect, streams, "clients.connect")
    host = None
    if part.host_demand is not None and client_cpu is not None:
        per_connection = None
        if part.host_connection_demand is not None:
            per_connection = sampler(
                part.host_connection_demand, streams, "clients.host.connection_demand"
            )
        host = (
            client_cpu,
            sampler(part.host_demand, streams, "clients.host.demand"),
            per_connection,
        )
    common = dict(
        timeout_s=part.timeout_s,
        retry=part.retry,
        connect=connect,
        tcp=part.tcp,
        keep_alive=part.keep_alive,
        host=host,
    )
    kind = stack.clients
    if kind is populations.ClosedPopulation:
        assert part.users is not None and part.think is not None  # a closed population's
        return populations.ClosedPopulation(
            kernel,
            entry,
            recorder,
            users=part.users,
            think=sampler(part.think, streams, "clients.think"),
            ramp=part.ramp,
            requests_per_user=part.requests_per_user,
            **common,
        )
    if kind is populations.OpenArrivals:
        assert part.arrivals is not None  # validated: a rate, interarrivals or a schedule
        arrivals = sampler(part.arrivals, streams, "clients.arrivals")
        scheduled = part.schedule is not None
        return populations.OpenArrivals(
            kernel,
            entry,
            recorder,
            interarrival=None if scheduled else arrivals,
            unit_exponential=arrivals if scheduled else None,
            schedule=None if part.schedule is None else list(part.schedule),
            total=part.total,
            **common,
        )
    if kind is populations.Sessions:
        assert part.arrivals is not None and part.think is not None  # the sessions'
        return populations.Sessions(
            kernel,
            entry,
            recorder,
            interarrival=sampler(part.arrivals, streams, "clients.arrivals"),
            think=sampler(part.think, streams, "clients.think"),
            length=session_length(part, streams),
            total=part.total,
            **common,
        )
    if kind is populations.ApacheBench:
        assert part.users is not None and part.total is not None  # ab -c and -n
        return populations.ApacheBench(
            kernel,
            entry,
            recorder,
            concurrency=part.users,
            requests=part.total,
            repeat=part.repeat,
            **common,
        )
    raise TypeError(f"unknown client kind {part.kind!r}")  # unreachable: a closed union


def session_length(part: ClientsPart, streams: Streams):
    """Each session's length: fixed, geometric on its own stream, or (None) a script's path
    (`sim.tiers.clients.scripts`)."""
    fixed = part.session_length_fixed
    if fixed is not None:
        return lambda: fixed
    p = part.session_length_p
    if p is None:
        return None
    rng = streams.generator("clients.session_length")
    return lambda: int(rng.geometric(p))
