"""Assemble one replication's components from a validated model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sim.kernel.calendar import Kernel
from sim.kernel.cpu import DedicatedCPU, ProcessorSharingCPU
from sim.kernel.slots import Pool
from sim.model.plan import Plan, compile_plan
from sim.model.schema import AbClients, ClosedClients, Model, OpenClients, SessionClients
from sim.observe.probes import Probe
from sim.random.distributions import Exponential, as_distribution
from sim.random.streams import Streams
from sim.run.connect import Parts, connect
from sim.tiers.appserver.connectors import UNPINNED, Connector, connector_class
from sim.tiers.appserver.jvm import Jvm
from sim.tiers.balancer.dispatcher import Dispatcher, DispatchProbe
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
from sim.tiers.proxy.children import ProcessTable
from sim.tiers.proxy.client_connections import FrontConnections
from sim.tiers.proxy.process_management import PreforkSpawner
from sim.tiers.station import FrontStation, PooledCall, Station

R = TypeVar("R")  # the recorder the caller's factory makes


def _name(entry) -> str:
    return getattr(entry, "name", None) or entry.node.name


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
        database = Station(
            kernel,
            "database",
            pool("database.connections", db.connections) if db.connections else None,
            host("database", db.cores, db.speed, db.connections),
            sampler(db.demand, streams, "database.demand"),
        )
        if as_distribution(db.disk).mean > 0:
            database.post = Disks(
                kernel, pool("database.disk", db.disks), sampler(db.disk, streams, "database.disk")
            )
        assembly.stations.append(database)
        database_call = database.serve

    children = prefork_children(model)
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
                downstream = PooledCall(pool(f"{name}.jdbc", group.jdbc_pool), database_call)
        connector = connector_class(group.connector)(
            group, name, lambda path, size, queue: pool(path, size, queue)
        )
        # replication work runs beside the request threads: the CPU may be shared; a JVM
        # pauses its CPU, which only the processor-sharing form supports
        shared = model.cluster.active or group.jvm is not None
        cpu = host(name, group.cores, group.speed, None if shared else group.threads)
        burst = sampler(group.cpu, streams, f"{name}.demand", group.db_calls)
        jvm = None
        if group.jvm is not None:
            jvm = Jvm(kernel, name, cpu, group.jvm)
            assembly.jvms.append(jvm)
            burst = jvm.burst_sampler(burst)
        node = Station(
            kernel,
            name,
            connector.request_threads,
            cpu,
            burst,
            io_wait=None if io.mean == 0 else io.sampler(streams.generator(f"{name}.io_wait")),
            downstream=downstream,
            calls=group.db_calls,
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
        workers = pool("proxy.workers", px.workers, px.listen_backlog)
        args = (
            kernel,
            "proxy",
            workers,
            host("proxy", px.cores, px.speed, px.workers),
            sampler(px.demand, streams, "proxy.demand", 1 if px.forward and entry else 0),
        )
        kwargs: dict[str, Any] = dict(downstream=entry, calls=1 if px.forward else 0)
        front = front_connections(model, kernel, workers, children)
        if front is not None and as_distribution(px.connection_demand).mean > 0:
            kwargs["connection_burst"] = sampler(
                px.connection_demand, streams, "proxy.connection_demand"
            )
        if px.start_servers is not None:
            assert px.workers is not None  # validated: start_servers needs finite workers
            PreforkSpawner(
                kernel,
                workers,
                max_clients=px.workers,
                start_servers=px.start_servers,
                min_spare=px.min_spare_servers,
                max_spare=px.max_spare_servers,
                children=children,
                graceful_restart=px.graceful_restart,
            )
        proxy = (
            Station(*args, **kwargs)
            if front is None
            else FrontStation(*args, front=front, **kwargs)
        )
        assembly.stations.insert(0, proxy)
        entry = proxy.serve
        proxy.accepts_clients = True
    else:
        for node in nodes:  # the clients connect to the nodes themselves
            node.accepts_clients = True

    recorder = recorder_factory(kernel, assembly)
    assembly.clients = make_clients(model, kernel, entry, recorder, streams)
    tiers = [spec.tier for _, spec in model.cluster.active]
    connect(
        Parts(
            nodes=nodes,
            jvms=jvms,
            replicators=list(zip(tiers, replicators)),
            dispatcher=assembly.dispatcher,
            clients=assembly.clients,
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
    names = [_name(entry) for entry in entries]
    policy = make_policy(spec.policy, weights, names, streams.generator("balancer"), **params)
    keeps_sessions = model.clients.kind in ("closed", "sessions")
    made = Dispatcher(
        kernel,
        entries,
        policy,
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


def prefork_children(model: Model) -> ProcessTable | None:
    """Prefork children as individuals, when they matter: each keeps its own cached
    connection to a backend with a blocking connector."""
    px = model.proxy
    if px is None or px.mpm != "prefork" or px.workers is None:
        return None
    if not any(
        group.connector == "blocking" or group.max_connections is not None
        for group in model.backends
    ):
        return None
    start = px.workers if px.start_servers is None else min(px.start_servers, px.workers)
    return ProcessTable(start)


def backend_pool_applies(model: Model, group, connector: Connector) -> bool:
    """The front's pool of connections to a node is built whenever it can change the answer:
    when connections pin a thread or a slot on the node, or when the pool (`max`) is smaller
    than the requests the front can send at once (`proxy.workers`), so that requests wait for
    a connection (`acquire`) or fail.  Otherwise every request finds a connection at once and
    its `ttl`, `acquire` and read `timeout` never act: skipping the pool is exact, and keeps
    the hot path short."""
    proxy = model.proxy
    if proxy is None or not proxy.forward:
        return False
    if connector.pins_per_connection or connector.pins is not UNPINNED:
        return True
    limit = proxy.backend_pool.max_connections
    return limit is not None and (proxy.workers is None or limit < proxy.workers)


def make_backend_pool(
    model: Model, kernel: Kernel, node: Station, pins, group, children: ProcessTable | None
) -> BackendPool:
    assert model.proxy is not None  # built only behind a proxy (backend_pool_applies)
    settings = model.proxy.backend_pool
    return BackendPool(
        kernel,
        node,
        pins,
        max_connections=settings.max_connections
        if settings.max_connections is not None
        else model.proxy.workers,
        ttl_s=settings.ttl_s,
        acquire_timeout_s=settings.acquire_timeout_s,
        read_timeout_s=settings.timeout_s,
        idle_timeout_s=group.connection_idle_timeout_s,
        children=children,
        poll_s=MOD_JK_POLL_S if settings.module == "mod_jk" else None,
        disable_reuse=settings.disable_reuse,
    )


def front_connections(
    model: Model, kernel: Kernel, workers: Pool, children: ProcessTable | None
) -> FrontConnections | None:
    """The front's connection handling, when it can hold a worker beyond a request: clients that
    keep connections alive, or a lingering close that waits for clients slow to close."""
    px, clients = model.proxy, model.clients
    assert px is not None  # called only with a proxy
    front = FrontConnections(
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
    connection_cost = as_distribution(px.connection_demand).mean > 0
    if (
        not clients.keep_alive
        and front.linger_hold_s == 0
        and children is None
        and not connection_cost
    ):
        return None  # a worker per request, released with the response: the plain station
    return front


def make_clients(
    model: Model, kernel: Kernel, entry, recorder, streams: Streams
) -> populations.Clients:
    spec = model.clients
    connect = None
    if spec.connect is not None and as_distribution(spec.connect).mean > 0:
        connect = sampler(spec.connect, streams, "clients.connect")
    common = dict(
        timeout_s=spec.timeout_s,
        retry=spec.retry,
        connect=connect,
        tcp=spec.tcp,
        keep_alive=spec.keep_alive,
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
    if spec.fixed_length:
        n = int(spec.requests_per_session)
        return lambda: n
    rng = streams.generator("clients.session_length")
    p = 1.0 / spec.requests_per_session
    return lambda: int(rng.geometric(p))
