"""The compiled engine's plan of a model: flat tables of stations, pools, CPUs, balancer
members and random streams, in the reference engine's order, and a probe view per component.

The order is the reference's (`sim.engines.reference.assemble`): stations proxy, database, nodes; pools and
CPUs in the order they are built there; the balancer last.  The recorder's columns are those
the reference's probes declare (`fields`), and each component's metrics are computed by a
view that borrows the reference class's own `metrics` method (a pool's view needs only its
capacity, a CPU's its cores): metric names, values and units are the reference's, their
formulas written once.  The random streams have the reference's purposes
(`Streams.generator(purpose)`), so both engines draw the same numbers.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate

import numpy as np

from sim.engines.compiled import kernel as k
from sim.engines.compiled.classes import ClassView, client_tables, station_tables
from sim.engines.compiled.jvm_plan import JvmTables, jvm_tables
from sim.engines.compiled.mechanisms import placed
from sim.engines.compiled.support import BLIND_CLASSES, LOAD_CLASSES
from sim.kernel.cpu import ProcessorSharingCPU
from sim.kernel.slots import INFINITE, Pool
from sim.model.classes import Work, node_work
from sim.model.parts.clients import ClientsPart
from sim.model.parts.database import DatabasePart
from sim.model.parts.front import Front
from sim.model.parts.hosts import HostCpu
from sim.model.parts.nodes import ConnectorLimits
from sim.model.parts.proxy_worker import ProxyWorker
from sim.model.plan import Plan as ModelPlan
from sim.model.stack import StackPlan
from sim.observe.probes import Measures
from sim.observe.recorder import BASE_FIELDS
from sim.random.distributions import Deterministic, Distribution, as_distribution
from sim.tiers.appserver.connectors import Blocking
from sim.tiers.balancer.dispatcher import BALANCER_COUNTS, DispatchProbe
from sim.tiers.balancer.policies.base import Policy
from sim.tiers.clients.populations import ramp_changes
from sim.tiers.cluster.session_replication import ReplicationProbe
from sim.tiers.proxy.backend_pool import SYN_RETRIES, SYN_RTO_S, BackendPool
from sim.tiers.proxy.client_connections import (
    ConnectionsProbe,
    ServerCloseProbe,
    StatusProbe,
    linger_hold_s,
)
from sim.tiers.proxy.mod_jk import POLL_S as JK_POLL_S
from sim.tiers.proxy.mod_jk import JkBackendPool
from sim.tiers.proxy.mpm import mpm as mpm_class
from sim.tiers.proxy.process_management import GRACEFUL_HOLD_OFF
from sim.tiers.station import Station

# The counters the compiled recorder writes for each component, in this order (`kernel.
# _snapshot`): they must be the reference probes' fields, or the metrics would read the wrong
# columns.  A field added to a reference probe stops the compiled engine here until the
# kernel records it too.
STATION_FIELDS = ("visits", "wait_sum", "residence_sum", "downstream_sum", "failed", "in_progress")
POOL_FIELDS = ("busy_area", "queue_area", "acquired", "refused", "wait_sum", "in_use", "waiting")
CPU_FIELDS = ("busy_area", "jobs_area", "completed")
FRONT_FIELDS = ("opened", "closed", "closed_after_error", "closed_no_worker", "open")
STATUS_FIELDS = ("500", "502", "503", "504")
REPLICATION_FIELDS = ("replicated", "bytes", "wait_sum", "credit_waits")
BACKEND_FIELDS = (
    "read_timeouts",
    "acquire_timeouts",
    "idle_closes",
    "ttl_closes",
    "exit_closes",
    "open",
    "idle_pinned",
    "awaiting_thread",
    "awaiting_connection",
)
JK_FIELDS = ("attempts", "reply_timeouts", "connect_failures", "abandoned", "abandoned_served")
DISPATCH_COUNTS = (
    "failovers",
    "refused_down",
    "unavailable",
    "sticky_refused",
    "sessions_created",
    "sessions_lost",
)
for _kernel, _reference in (
    (STATION_FIELDS, Station.fields),
    (POOL_FIELDS, Pool.fields),
    (CPU_FIELDS, ProcessorSharingCPU.fields),
    (FRONT_FIELDS, ConnectionsProbe.fields),
    (STATUS_FIELDS, StatusProbe.fields),
    (REPLICATION_FIELDS, ReplicationProbe.fields),
    (BACKEND_FIELDS, BackendPool.fields),
    ((*BACKEND_FIELDS, *JK_FIELDS), JkBackendPool.fields),
    (DISPATCH_COUNTS, BALANCER_COUNTS),
):
    if _kernel != tuple(_reference):
        raise RuntimeError(
            f"the compiled recorder writes {_kernel} but the reference probe declares "
            f"{tuple(_reference)}: record the new fields in sim.engines.compiled.kernel.recorder.snapshot"
        )

POLICY_CODES = {
    "round_robin": k.POLICY_ROUND_ROBIN,
    "random": k.POLICY_RANDOM,
    "byrequests": k.POLICY_BYREQUESTS,
    "static": k.POLICY_STATIC,
    "sqf": k.POLICY_SQF,
    "least_outstanding": k.POLICY_LEAST_OUTSTANDING,
}


# --------------------------------------------------------------------------- probe views
class StationView:
    """A station's probe over the compiled counters: `Station`'s fields and metrics."""

    fields: tuple[str, ...] = Station.fields
    metrics = Station.metrics

    def __init__(self, name: str) -> None:
        self.name = name


class PoolView:
    """A slot pool's probe: `Pool`'s fields and metrics (which read its capacity)."""

    fields: tuple[str, ...] = Pool.fields
    metrics = Pool.metrics

    def __init__(self, name: str, capacity: int | None) -> None:
        self.name = name
        self.capacity = INFINITE if capacity is None else capacity


class CpuView:
    """A host CPU's probe: the CPU's fields and metrics (which read its cores); both of the
    reference's CPU forms have the same."""

    fields: tuple[str, ...] = ProcessorSharingCPU.fields
    metrics = ProcessorSharingCPU.metrics

    def __init__(self, name: str, cores: int) -> None:
        self.name = name
        self.cores = cores


class ConnectionsView:
    """`proxy.connections.*` of a finite run through the proxy: `ConnectionsProbe`'s."""

    name = "proxy.connections"
    fields: tuple[str, ...] = FRONT_FIELDS
    metrics = ConnectionsProbe.metrics


class StatusView:
    """`proxy.responses.<status>`: `StatusProbe`'s."""

    name = "proxy.responses"
    fields: tuple[str, ...] = STATUS_FIELDS
    metrics = StatusProbe.metrics


class FrontState:
    """The front's state at the end of a run, as `ServerCloseProbe` reads it."""

    def __init__(self) -> None:
        self.last_close = float("nan")
        self.open = 0
        # What a client saw: without clients that give up (a finite run with
        # `clients.timeout_s` through the front runs on the reference engine, feature
        # `proxy.server_close.clients_view`), every open connection is one a client waits on,
        # and its last close is the last a client saw.
        self.client_end = float("nan")
        self.watched = 0


class ServerCloseView:
    """`elapsed.server_close`: `ServerCloseProbe`'s, over the state the engine leaves in
    `front` after the run."""

    name = "elapsed"
    fields: tuple[str, ...] = ()
    metrics = ServerCloseProbe.metrics

    def __init__(self) -> None:
        self.front = FrontState()


class ReplicationView:
    """`replication.<tier>.*`: `ReplicationProbe`'s fields and metrics."""

    fields: tuple[str, ...] = REPLICATION_FIELDS
    metrics = ReplicationProbe.metrics

    def __init__(self, name: str) -> None:
        self.name = name


class BackendPoolView:
    """The front's pools of connections to one node: `BackendPool`'s fields and metrics."""

    fields: tuple[str, ...] = BACKEND_FIELDS
    metrics = BackendPool.metrics

    def __init__(self, name: str) -> None:
        self.name = name


class JkBackendPoolView(JkBackendPool):
    """The front's mod_jk pools to one node: `JkBackendPool`'s fields and metrics (the class
    itself, so that its metrics' `super()` reaches `BackendPool`'s; nothing else is set)."""

    def __init__(self, name: str) -> None:  # (no pool is built)
        self.name = name


class BalancerView:
    """The balancer's probe: `DispatchProbe`'s fields and metrics (which read the members)."""

    metrics = DispatchProbe.metrics

    def __init__(self, members: Sequence[str]) -> None:
        self.name = "balancer"
        self.members = tuple(members)
        self.fields: tuple[str, ...] = (*self.members, *BALANCER_COUNTS)


# --------------------------------------------------------------------------- the plan
@dataclass
class Stream:
    """One random stream: `purpose` names its generator; `reverse` serves each block back to
    front (the balancer's `UniformDraws` pops its block from the end)."""

    purpose: str
    distribution: Distribution | None  # None: uniform [0, 1) numbers
    reverse: bool = False
    geometric_p: float | None = None  # session lengths: numpy's geometric(p)


@dataclass
class Plan:
    levels: int
    stations: np.ndarray  # int table (kernel ST_*), statistics zeroed
    pools: np.ndarray  # int table (kernel PO_*)
    cpus_int: np.ndarray  # kernel CP_*
    cpus_float: np.ndarray  # kernel CPF_*
    members: np.ndarray  # kernel B_*
    weights: np.ndarray
    streams: list[Stream]
    constants: list[float | None]  # per stream: its constant, or None if drawn
    config: np.ndarray
    config_float: np.ndarray
    columns: list[str]
    probes: list[Measures] = field(default_factory=list)
    server_close: ServerCloseView | None = None  # the front's end state (finite runs)
    replication: np.ndarray = field(default_factory=lambda: np.zeros((1, k.N_RP)))
    users: int = 0
    children: int = 0  # httpd's children at most (MaxRequestWorkers / ThreadsPerChild), if modelled
    hold_off: int = 0  # process management: forking ticks at rate 1 (a graceful restart)
    # the front's workers, whose capacity the children's forks and stops change
    workers_view: PoolView | None = None
    # per node: the front's pool of connections to it (kernel BN_*, BNF_*)
    backend: np.ndarray = field(default_factory=lambda: np.zeros((1, k.N_BN), dtype=np.int64))
    backend_float: np.ndarray = field(default_factory=lambda: np.zeros((1, k.N_BNF)))
    # request classes (`sim.engines.compiled.classes`): kernel KST, KSTEP, KF
    class_stations: np.ndarray = field(default_factory=lambda: np.zeros((1, 2), dtype=np.int64))
    class_steps: np.ndarray = field(default_factory=lambda: np.zeros((1, k.N_STEP), dtype=np.int64))
    class_table: np.ndarray = field(default_factory=lambda: np.zeros((1, k.N_KF)))
    jvms: JvmTables = field(default_factory=JvmTables)  # the nodes' JVMs (backends.N.jvm)
    # a closed ramp's changes and an open schedule's steps (`load_tables`): kernel RAMP, RATES
    ramp: np.ndarray = field(default_factory=lambda: np.zeros((1, k.N_RAMP)))
    rates: np.ndarray = field(default_factory=lambda: np.zeros((1, k.N_RATE)))


@functools.cache
def _mechanisms() -> tuple:
    """The kernel's modules that place something (`mechanisms.placed`), listed once a process:
    they cannot change while it runs, and listing the package's files took 2 ms a plan, a third of
    what the kernel takes for a short replication (a calibration builds hundreds of plans)."""
    return placed()


def build_plan(model_plan: ModelPlan) -> Plan:
    """The tables of a model whose features the engine implements (`support.IMPLEMENTS`),
    laid out from the model's plan (`sim.model.plan.compile_plan`): its stack's parts
    (`model_plan.stack`), never the model file's schema."""
    stack = model_plan.stack
    assert stack is not None
    streams: list[Stream] = []
    constants: list[float | None] = []

    def stream(purpose: str, distribution: Distribution, calls: int = 0) -> int:
        if calls:
            distribution = distribution.scaled(1.0 / (calls + 1))
        streams.append(Stream(purpose, distribution))
        constants.append(distribution.value if isinstance(distribution, Deterministic) else None)
        return len(streams) - 1

    stations: list[dict] = []
    names: list[str] = []
    pools: list[tuple] = []  # (name, capacity, queue limit, role)
    cpus: list[tuple] = []  # (name, cores, speed, dedicated)

    def pool(name: str, capacity, queue_limit, role: int) -> int:
        pools.append((name, capacity, queue_limit, role))
        return len(pools) - 1

    def cpu(part: HostCpu) -> int:
        # the stack decides whether it is ever shared (`sim.model.parts.hosts`: the
        # reference's DedicatedCPU when it is not)
        cpus.append((part.name, part.cores, part.speed, part.dedicated))
        return len(cpus) - 1

    def station(name: str, **fields) -> int:
        record = {
            "pool": -1,
            "io": -1,
            "calls": 0,
            "down": k.DOWN_NONE,
            "target": -1,
            "jdbc": -1,
            "disk_pool": -1,
            "disk_stream": -1,
            "accepts": 0,
            "node": -1,
            "work": None,  # request classes: (its stream's purpose, Work -> (demand, calls))
            "jvm": -1,
        }
        record.update(fields)
        stations.append(record)
        names.append(name)
        return len(stations) - 1

    database = _database(stack.database, pool, cpu, stream, station, stations)
    # the kernel modules' mechanisms (the database's shared lock): after the database's pools,
    # before the nodes', as the reference builds them (`sim.engines.compiled.mechanisms`)
    mechanisms = [(module, module.place(stack, pool, stream)) for module in _mechanisms()]

    nodes: list[int] = []
    weights: list[float] = []
    pins: list[int] = []  # per node: the pool of what a backend connection pins, or -1
    for part in stack.nodes:
        weights.append(part.weight)
        name = part.name
        fields: dict = {"calls": 0}
        if part.db_calls:
            fields.update(calls=part.db_calls, down=k.DOWN_STATION, target=database)
            if part.jdbc_pool is not None:
                fields["jdbc"] = pool(f"{name}.jdbc_pool", part.jdbc_pool, None, k.ROLE_JDBC)
        threads_pool, pin = _connector_pools(name, part.limits, part.connector, pool)
        if threads_pool >= 0:
            fields["pool"] = threads_pool
        pins.append(pin)
        fields["cpu"] = cpu(part.cpu)
        fields["burst"] = stream(f"{name}.demand", as_distribution(part.demand), part.db_calls)
        fields["work"] = (f"{name}.demand", node_work(part))
        io = part.io_wait
        if io.mean != 0:
            fields["io"] = stream(f"{name}.io_wait", io)
        nodes.append(station(name, **fields))

    for index, node in enumerate(nodes):
        stations[node]["node"] = index
    jvms = jvm_tables(model_plan, [stations[node]["cpu"] for node in nodes])
    for node, v in zip(nodes, jvms.station_jvm):
        stations[node]["jvm"] = v
    replication, replication_probes, replication_links = _replication(
        stack, names, nodes, pool, streams, constants
    )

    dispatcher = len(nodes) > 1
    keeps_sessions = dispatcher and stack.keeps_sessions  # the client class declares it
    policy, balancer_stream = _balancer(stack.policy, dispatcher, streams, constants)

    proxy_workers = -1
    entry_kind, entry_target = k.ENTRY_STATION, nodes[0] if nodes else -1
    if dispatcher:
        entry_kind, entry_target = k.ENTRY_BALANCER, -1
    front_part = stack.front
    if front_part is not None:
        proxy, proxy_workers = _proxy_station(
            front_part, nodes, dispatcher, pool, cpu(front_part.cpu), stream, station
        )
        entry_kind, entry_target = k.ENTRY_STATION, proxy
        # the reference lists the proxy first
        order = [proxy, *range(len(stations) - 1)]
    else:
        for node in nodes:
            stations[node]["accepts"] = 1
        order = list(range(len(stations)))
    stations, names, nodes, renumber = _reordered(stations, names, nodes, order)
    if entry_kind == k.ENTRY_STATION:
        entry_target = renumber[entry_target]

    # the load generator's CPU (clients.host): made after the proxy's, as the reference makes it
    host_cpu = -1 if stack.clients_cpu is None else cpu(stack.clients_cpu)

    levels = _levels(front_part is not None, stations, nodes)

    station_table = _station_table(stations, host_cpu)

    pool_table = _pool_table(pools)

    cpus_int, cpus_float = _cpu_tables(cpus, jvms)
    member_table = _member_table(nodes)

    # The reference's probes, in its order (`Assembly.probes`): stations, pools, CPUs, then
    # the balancer.
    probes: list[Measures] = [StationView(name) for name in names]
    pool_views = [PoolView(name, capacity) for name, capacity, *_ in pools]
    probes += pool_views
    probes += [CpuView(name, cores) for name, cores, *_ in cpus]
    probes += replication_probes
    # the front's client connections, when they can change the answer (`sim.model.stack.
    # connections_matter`: keep-alive, a lingering close, a CPU cost per connection, or a
    # finite run, which reports when the front closed its last one)
    front = front_part is not None and stack.front_connections
    server_close = ServerCloseView() if front and model_plan.run.finite else None
    if front:
        probes += [ConnectionsView(), StatusView()]
    if server_close is not None:
        probes.append(server_close)
    probes += jvms.views  # after the extra probes, before the backend pools (Assembly.probes)
    backend, backend_float = _backend_pools(model_plan, pins)
    jk = front_part is not None and front_part.mod_jk
    view = JkBackendPoolView if jk else BackendPoolView
    probes += [view(names[n]) for i, n in enumerate(nodes) if backend[i, k.BN_POOLED]]
    if dispatcher:
        probes.append(BalancerView([names[n] for n in nodes]))
    probes += [ClassView(name) for name in stack.request_classes.names]
    columns = list(BASE_FIELDS)
    for probe in probes:
        columns += [f"{probe.name}:{f}" for f in probe.fields]

    config, config_float, users = _clients(stack.clients_part, streams, constants)
    ramp, rates = load_tables(stack.clients_part, config)

    def uniforms(purpose: str) -> int:
        streams.append(Stream(purpose, None))
        constants.append(None)
        return len(streams) - 1

    class_table, class_steps = client_tables(
        stack.request_classes, stack.clients_part.kind, config, stream, uniforms
    )
    if stack.clients_cpu is not None:  # the request's work on the generator's CPU (`host_run`)
        _host(stack.clients_part, len(stations), config, stream)
    class_stations = station_tables(
        stack.request_classes,
        [record["work"] for record in stations],
        [record["down"] != k.DOWN_NONE for record in stations],
        [record["burst"] for record in stations],
        stream,
    )
    config[k.C_LEVELS] = levels
    config[k.C_N_STATIONS] = len(stations)
    config[k.C_N_POOLS] = len(pools)
    config[k.C_N_CPUS] = len(cpus)
    config[k.C_N_MEMBERS] = len(nodes)
    config[k.C_ST_BALANCER] = balancer_stream
    config[k.C_ENTRY_KIND] = entry_kind
    config[k.C_ENTRY_TARGET] = entry_target
    config[k.C_POLICY] = POLICY_CODES[policy]
    config[k.C_STICKY] = int(stack.balancer.sticky_session)
    config[k.C_KEEPS_SESSIONS] = int(keeps_sessions)
    config[k.C_HAS_DISPATCHER] = int(dispatcher)
    config[k.C_MAX_CORES] = max((c[1] for c in cpus), default=1)
    config[k.C_FRONT] = entry_target if front else -1
    _front_pools(stack, config)
    _front(stack.clients_part, front_part, config, config_float, stream if front else None)
    children, hold_off = _children(front_part, stack.children, config, config_float)
    if (
        stack.children
    ):  # the children's threads are the workers: the pool starts empty, each fork adds
        pool_table[proxy_workers, k.PO_CAPACITY] = 0
    config[k.C_N_TIERS] = len(replication_probes)
    config[k.C_SAMPLE] = 0  # --timeseries: the engine switches it on with a sink
    config[k.C_N_NODES] = len(nodes)
    config[k.C_N_JVMS] = jvms.count
    config[k.C_JVM_COOKIES] = int(jvms.cookies)
    _configure(stack, mechanisms, names, config, config_float)
    if replication_probes:
        _network(stack, config, config_float, replication_links, len(nodes))
    return Plan(
        levels=levels,
        stations=station_table,
        pools=pool_table,
        cpus_int=cpus_int,
        cpus_float=cpus_float,
        members=member_table,
        weights=np.asarray(weights if nodes else [1.0], dtype=np.float64),
        streams=streams,
        constants=constants,
        config=config,
        config_float=config_float,
        columns=columns,
        probes=probes,
        users=users,
        children=children,
        hold_off=hold_off,
        workers_view=pool_views[proxy_workers] if proxy_workers >= 0 else None,
        backend=backend,
        backend_float=backend_float,
        server_close=server_close,
        replication=replication,
        class_stations=class_stations,
        class_steps=class_steps,
        class_table=class_table,
        jvms=jvms,
        ramp=ramp,
        rates=rates,
    )


def _configure(
    stack: StackPlan,
    mechanisms: list,
    names: list[str],
    config: np.ndarray,
    config_float: np.ndarray,
) -> None:
    """The settings of the kernel modules' mechanisms (`sim.engines.compiled.mechanisms`): what
    each one's `place` made, and the rows of the stations it names (in the reference's order)."""
    rows = {name: row for row, name in enumerate(names)}
    for module, made in mechanisms:
        module.configure(stack, made, lambda name: rows.get(name, -1), config, config_float)


def _database(part: DatabasePart | None, pool, cpu, stream, station, stations: list[dict]) -> int:
    """The database's station (the stack's part: its connections, CPU and disks, made by
    `pool`, `cpu`, `stream` and `station`), or -1: none."""
    if part is None:
        return -1
    connections = (
        -1
        if part.connections is None
        else pool("database.connections", part.connections, None, k.ROLE_STATION)
    )
    database = station(
        "database",
        pool=connections,
        cpu=cpu(part.cpu),
        burst=stream("database.demand", as_distribution(part.demand)),
        work=("database.demand", lambda work, db=part: (work.db_demand(db), 0)),
    )
    if part.disks is not None:
        stations[database]["disk_pool"] = pool("database.disks", part.disks, None, k.ROLE_DISK)
        stations[database]["disk_stream"] = stream(
            "database.disk", as_distribution(part.disk_demand)
        )
    return database


def _connector_pools(name: str, group: ConnectorLimits, connector, pool) -> tuple[int, int]:
    """A node's connector (`sim.tiers.appserver.connectors`) as slot pools, made by `pool`:
    (its request threads' pool or -1, the pool of what an open connection pins or -1)."""
    if connector is Blocking:
        # Tomcat BIO, Jetty's SocketConnector (`connectors.Blocking`): a thread is bound to
        # each open connection for its whole life, acceptCount queues the connections
        # beyond them, and a request holds nothing more
        return -1, pool(f"{name}.threads", group.request_threads, group.accept_queue, k.ROLE_PIN)
    else:
        # the non-blocking connector's request threads (`connectors.NonBlocking`): no pool
        # when both the threads and their queue are unbounded; with maxConnections each
        # open connection pins a slot, acceptCount is the backlog of connections beyond
        # them, and requests wait for a thread without limit
        limited = group.max_connections is not None
        thread_queue = None if limited else group.accept_queue
        threads = -1
        if group.request_threads is not None or thread_queue is not None:
            threads = pool(f"{name}.threads", group.request_threads, thread_queue, k.ROLE_STATION)
        pin = (
            pool(f"{name}.connections", group.max_connections, group.accept_queue, k.ROLE_PIN)
            if limited
            else -1
        )
        return threads, pin


def _proxy_station(
    front: Front, nodes: list[int], dispatcher: bool, pool, cpu: int, stream, station
):
    """The front's station (`proxy`) on its `cpu`, made by `pool`, `stream` and `station`:
    (the station, its workers' pool)."""
    forwards = front.forwards and bool(nodes)
    proxy_workers = pool("proxy.workers", front.workers, front.listen_backlog, k.ROLE_STATION)
    fields = {
        "pool": proxy_workers,
        "cpu": cpu,
        "burst": stream("proxy.demand", as_distribution(front.demand), 1 if forwards else 0),
        "accepts": 1,
        "work": ("proxy.demand", _proxy_work(front, forwards)),
    }
    if forwards:
        fields["calls"] = 1
        if dispatcher:
            fields["down"] = k.DOWN_BALANCER
        else:
            fields.update(down=k.DOWN_STATION, target=nodes[0])
    return station("proxy", **fields), proxy_workers


def _reordered(
    stations: list[dict], names: list[str], nodes: list[int], order: list[int]
) -> tuple[list[dict], list[str], list[int], dict[int, int]]:
    """The stations in the reference's `order`, their targets and the nodes renumbered:
    (stations, names, nodes, old number -> new)."""
    renumber = {old: new for new, old in enumerate(order)}
    stations = [stations[old] for old in order]
    names = [names[old] for old in order]
    for record in stations:
        if record["target"] >= 0:
            record["target"] = renumber[record["target"]]
    nodes = [renumber[n] for n in nodes]
    return stations, names, nodes, renumber


def _host(clients: ClientsPart, row: int, config: np.ndarray, stream) -> None:
    """The load generator's CPU (`clients.host`): its station past the probed ones (`row`),
    its demand's streams, made by `stream`."""
    assert clients.host_demand is not None  # a load generator with a host
    config[k.C_HOST_STATION] = row
    config[k.C_ST_HOST_DEMAND] = stream("clients.host.demand", clients.host_demand)
    if clients.host_connection_demand is not None:
        config[k.C_ST_HOST_CONNECTION] = stream(
            "clients.host.connection_demand", clients.host_connection_demand
        )


def _levels(proxied: bool, stations: list[dict], nodes: list[int]) -> int:
    """A request's levels in the stack: the front (`proxied`), the nodes, the database they
    call."""
    levels = (1 if proxied else 0) + (1 if nodes else 0)
    if any(stations[n]["calls"] for n in nodes):
        levels += 1
    return max(levels, 1)


def _balancer(
    policy_class: type[Policy],
    dispatcher: bool,
    streams: list[Stream],
    constants: list[float | None],
) -> tuple[str, int]:
    """The balancer's policy class (`static` without a dispatcher), and the random policy's
    stream (appended to `streams`), or -1."""
    policies = {**BLIND_CLASSES, **LOAD_CLASSES}
    policy = (policies.get(policy_class) if dispatcher else None) or "static"
    if not (dispatcher and policy == "random"):
        return policy, -1
    streams.append(Stream("balancer", None, reverse=True))
    constants.append(None)
    return policy, len(streams) - 1


def _station_table(stations: list[dict], host_cpu: int) -> np.ndarray:
    """The stations' rows (ST_*), the load generator's past them (`_host_station`)."""
    station_table = np.zeros((len(stations), k.N_STI), dtype=np.int64)
    for s, record in enumerate(stations):
        row = station_table[s]
        row[k.ST_POOL] = record["pool"]
        row[k.ST_CPU] = record["cpu"]
        row[k.ST_BURST] = record["burst"]
        row[k.ST_IO] = record["io"]
        row[k.ST_CALLS] = record["calls"]
        row[k.ST_DOWN] = record["down"]
        row[k.ST_TARGET] = record["target"]
        row[k.ST_JDBC] = record["jdbc"]
        row[k.ST_DISK_POOL] = record["disk_pool"]
        row[k.ST_DISK_STREAM] = record["disk_stream"]
        row[k.ST_ACCEPTS] = record["accepts"]
        row[k.ST_NODE] = record["node"]
        row[k.ST_JVM] = record["jvm"]
    if host_cpu >= 0:
        station_table = _host_station(station_table, host_cpu)
    return station_table


def _pool_table(pools: list[tuple]) -> np.ndarray:
    """The slot pools' rows (PO_*): (name, capacity, queue limit, role) each, None unbounded."""
    pool_table = np.zeros((len(pools), k.N_POI), dtype=np.int64)
    for p, (_name, capacity, queue_limit, role) in enumerate(pools):
        row = pool_table[p]
        row[k.PO_CAPACITY] = -1 if capacity is None else capacity
        row[k.PO_QUEUE_LIMIT] = -1 if queue_limit is None else queue_limit
        row[k.PO_HEAD] = -1
        row[k.PO_TAIL] = -1
        row[k.PO_ROLE] = role
    return pool_table


def _cpu_tables(cpus: list[tuple], jvms: JvmTables) -> tuple[np.ndarray, np.ndarray]:
    """The CPUs' rows (CP_*, CPF_*): (name, cores, speed, dedicated) each, and the JVM whose
    collections pause each."""
    cpus_int = np.zeros((len(cpus), k.N_CPI), dtype=np.int64)
    cpus_float = np.zeros((len(cpus), k.N_CPF), dtype=np.float64)
    for c, (_name, cores, speed, dedicated) in enumerate(cpus):
        cpus_int[c, k.CP_CORES] = cores
        cpus_int[c, k.CP_DEDICATED] = int(dedicated)
        cpus_int[c, k.CP_UNSHARED] = 1
        cpus_int[c, k.CP_WAKEUP] = -1
        cpus_int[c, k.CP_RUN_HEAD] = -1
        cpus_int[c, k.CP_RUN_TAIL] = -1
        cpus_float[c, k.CPF_SPEED] = speed
    cpus_int[:, k.CP_JVM] = -1
    for v in range(jvms.count):
        cpus_int[jvms.jv[v, k.JV_CPU], k.CP_JVM] = v
    return cpus_int, cpus_float


def _member_table(nodes: list[int]) -> np.ndarray:
    """The balancer's members (B_*): a node's station each (one row at least)."""
    member_table = np.zeros((max(len(nodes), 1), k.N_BI), dtype=np.int64)
    for m, node in enumerate(nodes):
        member_table[m, k.B_STATION] = node
    return member_table


def _children(
    front: Front | None, individuals: bool, config: np.ndarray, config_float: np.ndarray
) -> tuple[int, int]:
    """httpd's children as individuals (`sim.tiers.proxy.children`), when the stack has them:
    their settings in `config`; (ServerLimit's children, the graceful restart's hold-off)."""
    children = 0
    if individuals:  # validated: children need a proxy with finite workers
        assert front is not None and front.processes is not None
        processes = front.processes
        children = processes.max_children
        config[k.C_CHILDREN] = 1
        config[k.C_THREADS_PER_CHILD] = processes.threads_per_child
        config[k.C_ASYNC_FACTOR] = processes.async_factor or 0
        config[k.C_START_CHILDREN] = processes.start_children
        config[k.C_MAX_CHILDREN] = processes.max_children
        # httpd's process management (Spawner): StartServers given
        management = processes.management
        config[k.C_MANAGED] = int(management is not None)
        hold_off = 0
        if management is not None:
            config[k.C_MIN_SPARE] = management.min_spare
            config[k.C_MAX_SPARE] = management.max_spare
            config[k.C_SPARE_CHILDREN] = int(management.prefork)
            config_float[k.CF_UPTIME] = management.uptime_s
            hold_off = GRACEFUL_HOLD_OFF if management.graceful_restart else 0
    else:
        config[k.C_CHILDREN] = 0
        config[k.C_MANAGED] = 0
        hold_off = 0
    return children, hold_off


def _network(
    stack: StackPlan, config: np.ndarray, config_float: np.ndarray, first: int, nodes: int
) -> None:
    """Session replication's network (`cluster.network`): its links are the pools from
    `first` on."""
    network = stack.network
    switched = network.switched
    config[k.C_NET_SWITCHED] = int(switched)
    config[k.C_MULTICAST] = int(network.multicast)
    config[k.C_NET_TX0] = first
    config[k.C_NET_RX0] = first + nodes if switched else first
    config_float[k.CF_NET_S_PER_BYTE] = 8.0 / network.bandwidth_bps
    # full duplex: the latency is split between the sender's and the receiver's link
    config_float[k.CF_NET_LATENCY] = network.latency_s / 2 if switched else network.latency_s


def _host_station(station_table: np.ndarray, host_cpu: int) -> np.ndarray:
    """The station table with a row for the load generator's CPU past the probed stations
    (kernel C_HOST_STATION): no pool, no probe, no calls; the loop reads its CPU from it."""
    row = np.full((1, k.N_STI), -1, dtype=np.int64)
    row[0, k.ST_CPU] = host_cpu
    row[0, k.ST_CALLS] = 0
    row[0, k.ST_DOWN] = k.DOWN_NONE
    row[0, k.ST_ACCEPTS] = 0
    row[0, k.ST_VISITS] = 0
    row[0, k.ST_FAILED] = 0
    row[0, k.ST_IN_PROGRESS] = 0
    return np.concatenate([station_table, row])


def _proxy_work(front: Front, forwards: bool):
    """The proxy's work for a request class: a class it serves itself makes no call."""

    def work(each: Work) -> tuple:
        return each.proxy_demand(front), 1 if forwards and each.forwarded else 0

    return work


def _replication(
    stack: StackPlan,
    names: list[str],
    nodes: list[int],
    pool,
    streams: list[Stream],
    constants: list,
) -> tuple[np.ndarray, list[Measures], int]:
    """Session replication between the nodes (`sim.model.parts.replication`, as the reference's
    `assemble.replicate` builds it): the network's links as pools of one frame (created after
    the nodes' pools, as the reference does), each tier's row of settings, its uniform stream
    and its probe; and the index of the first link's pool."""
    active = stack.replications
    table = np.zeros((max(len(active), 1), k.N_RP), dtype=np.float64)
    if not active:
        return table, [], -1
    if stack.network.switched:
        made = [
            pool(f"net.{names[node]}.{direction}", 1, None, k.ROLE_LINK)
            for direction in ("tx", "rx")
            for node in nodes
        ]
        links = made[0]
    else:
        links = pool("net.segment", 1, None, k.ROLE_LINK)
    probes: list[Measures] = []
    for row, part in enumerate(active):
        spec = part.settings
        streams.append(Stream(f"cluster.replication.{part.index}", None))
        constants.append(None)
        kib = spec.message_bytes / 1024.0
        table[row, k.RP_FRACTION] = spec.replicate_fraction
        table[row, k.RP_INVOCATIONS] = spec.invocations
        table[row, k.RP_BYTES] = spec.message_bytes
        table[row, k.RP_SERIALIZE_S] = spec.message_cpu_s + kib * spec.serialize_s_per_kb
        table[row, k.RP_APPLY_S] = spec.message_cpu_s + kib * spec.apply_s_per_kb
        table[row, k.RP_ACK_BYTES] = spec.ack_bytes
        table[row, k.RP_STREAM] = len(streams) - 1
        table[row, k.RP_BUDDIES] = 0 if spec.scope == "all" else spec.buddies
        table[row, k.RP_WEB] = part.tier == "web"
        probes.append(ReplicationView(part.name))
    return table, probes, links


def _backend_pools(model_plan: ModelPlan, pins: list[int]) -> tuple:
    """Per node, the front's pool of connections to it (`sim.engines.reference.assemble.
    make_backend_pool`, mod_proxy): whether it is built, what a connection pins, `max` per
    child (ThreadsPerChild by default; unbounded for an unbounded front), and its timeouts --
    `ttl` and `acquire` only where a child has a reslist (not a prefork child's one cached
    connection).  Negative: none."""
    stack = model_plan.stack
    assert stack is not None
    nodes = len(model_plan.nodes)
    table = np.zeros((max(nodes, 1), k.N_BN), dtype=np.int64)
    times = np.full((max(nodes, 1), k.N_BNF), -1.0, dtype=np.float64)
    front = stack.front
    if front is None:
        return table, times
    settings = front.worker
    limit = front.pool_max  # `max` per child, ThreadsPerChild by default
    reslist = front.reslist

    def none_negative(value: float | None) -> float:
        return -1.0 if value is None else value

    for index, part in enumerate(stack.nodes):
        if not part.backend_pool:
            continue
        table[index, k.BN_POOLED] = 1
        table[index, k.BN_PINS] = pins[index]
        table[index, k.BN_MAX] = -1 if limit is None else limit
        times[index, k.BNF_ACQUIRE] = none_negative(settings.acquire_timeout_s if reslist else None)
        times[index, k.BNF_IDLE] = none_negative(part.connection_idle_timeout_s)
        if front.mod_jk:
            _jk_worker(table[index], times[index], settings, limit, stack.balancer.maintain_s)
        else:
            times[index, k.BNF_TTL] = none_negative(settings.ttl_s if reslist else None)
            times[index, k.BNF_READ] = none_negative(settings.read_timeout_s)
    return table, times


def _front_pools(stack: StackPlan, config: np.ndarray) -> None:
    """The front's pools of connections to the nodes, as a whole: whether any is kept, whether
    they are mod_jk's, `disablereuse`, and the status a read timeout answers
    (`Front.read_timeout_status`)."""
    front = stack.front
    pooled = any(stack.backend_pools)
    config[k.C_BACKEND_POOLS] = int(pooled)
    config[k.C_MOD_JK] = int(front is not None and front.mod_jk and pooled)
    config[k.C_DISABLE_REUSE] = int(front is not None and front.worker.disable_reuse)
    config[k.C_READ_STATUS] = 502 if front is None else front.read_timeout_status


def _jk_worker(
    row: np.ndarray, times: np.ndarray, settings: ProxyWorker, limit, maintain_s: float
) -> None:
    """A node's pools as mod_jk's ajp13 worker (`sim.engines.reference.assemble.
    make_backend_pool`, `JkBackendPool`): no read timeout on Unix and no `ttl` when a
    connection is taken -- connection_pool_timeout acts at each process's maintenance, every
    `worker.maintain` (`balancer.maintain_s`), down to connection_pool_minsize; endpoints looked
    for every JK_SLEEP_DEF; the worker's reply timeout, retries and connect timeout."""
    worker = settings.jk
    assert worker is not None  # the front forwards through mod_jk
    row[k.BN_JK_MIN_SIZE] = 0 if limit is None else (limit + 1) // 2
    row[k.BN_JK_RETRIES] = worker.retries
    row[k.BN_JK_RECOVERABLE] = int(worker.recoverable_after_reply_timeout())
    times[k.BNF_JK_POLL] = JK_POLL_S
    times[k.BNF_JK_POOL_TIMEOUT] = -1.0 if settings.ttl_s is None else settings.ttl_s
    times[k.BNF_JK_MAINTAIN] = maintain_s
    times[k.BNF_JK_REPLY] = -1.0 if worker.reply_timeout_s is None else worker.reply_timeout_s
    give_up = worker.connect_timeout_s
    if give_up is None:  # the kernel's last SYN retransmission, then one more doubled RTO
        give_up = SYN_RTO_S * (2 ** (SYN_RETRIES + 1) - 1)
    times[k.BNF_JK_CONNECT] = give_up
    times[k.BNF_JK_RETRY_INTERVAL] = worker.retry_interval_s
    times[k.BNF_JK_SYN_RTO] = SYN_RTO_S
    times[k.BNF_JK_SYN_RETRIES] = SYN_RETRIES


def _front(
    clients: ClientsPart, front: Front | None, config: np.ndarray, config_float: np.ndarray, stream
) -> None:
    """The clients' connections and the front's keep-alive and lingering close
    (`sim.tiers.proxy.client_connections`); `stream` makes the connection demand's stream,
    None when the front's connections are not modelled."""
    config[k.C_CLIENT_KEEP_ALIVE] = int(clients.keep_alive)
    config[k.C_PROXY_KEEP_ALIVE] = 0
    config[k.C_MAX_KA_REQUESTS] = 0
    config[k.C_LISTENER_IDLE] = 0
    config[k.C_ST_CONN_DEMAND] = -1
    if front is None or stream is None:
        return
    connections = front.connections
    mpm = mpm_class(connections.mpm)
    config[k.C_PROXY_KEEP_ALIVE] = int(connections.keep_alive)
    config[k.C_MAX_KA_REQUESTS] = connections.max_keep_alive_requests
    config[k.C_LISTENER_IDLE] = int(mpm.listener_holds_idle_connections)
    config_float[k.CF_KA_TIMEOUT] = connections.keep_alive_timeout_s
    config_float[k.CF_LINGER_HOLD] = linger_hold_s(
        connections.mpm, connections.linger_s, connections.client_close_delay_s
    )
    if front.connection_demand is not None:
        config[k.C_ST_CONN_DEMAND] = stream(
            "proxy.connection_demand", as_distribution(front.connection_demand)
        )


def load_tables(clients: ClientsPart, config: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's RAMP and RATES (`kernel.ramps`): a closed ramp's changes in the order they
    come due -- by time, then in the order the reference schedules them (RAMP_ORDER) -- and an
    open schedule's steps as the ends of their durations summed in order (the reference's
    `accumulate`) with their rates."""
    ramp = np.zeros((1, k.N_RAMP))
    rates = np.zeros((1, k.N_RATE))
    config[k.C_RAMP_CHANGES] = -1  # no ramp: every user starts at once
    config[k.C_RATE_STEPS] = 0
    if clients.kind == "closed" and clients.ramp:
        changes = ramp_changes(clients.ramp)
        # (a ramp that never calls a user has none: nobody ever sends)
        due = sorted(range(len(changes)), key=lambda order: (changes[order][0], order))
        if due:
            ramp = np.zeros((len(due), k.N_RAMP))
            for row, order in enumerate(due):
                at, user, called = changes[order]
                ramp[row] = (0.0 + at, user, float(called), order)  # the start is at 0 s
        config[k.C_RAMP_CHANGES] = len(due)
    if clients.schedule is not None:
        rates = np.zeros((len(clients.schedule), k.N_RATE))
        rates[:, k.RATE_END] = list(accumulate(duration for _, duration in clients.schedule))
        rates[:, k.RATE_PER_S] = [rate for rate, _ in clients.schedule]
        config[k.C_RATE_STEPS] = len(clients.schedule)
    return ramp, rates


def _clients(clients: ClientsPart, streams: list[Stream], constants: list) -> tuple:
    """Client configuration; the clients' streams (`sim.model.parts.clients`) are appended to
    `streams`."""
    config = np.full(k.N_C, -1, dtype=np.int64)
    config_float = np.zeros(k.N_CF, dtype=np.float64)

    def stream(purpose: str, distribution: Distribution) -> int:
        streams.append(Stream(purpose, distribution))
        constants.append(distribution.value if isinstance(distribution, Deterministic) else None)
        return len(streams) - 1

    users = 1
    kind = clients.kind
    if kind == "closed":
        assert clients.users is not None and clients.think is not None  # a closed population's
        config[k.C_CLIENT] = k.CLIENT_CLOSED
        config[k.C_USERS] = users = clients.users
        config[k.C_ST_THINK] = stream("clients.think", clients.think)
        if clients.requests_per_user is not None:
            config[k.C_PER_USER] = clients.requests_per_user
    elif kind == "ab":  # ab -c concurrency -n requests, run `repeat` times
        assert clients.users is not None and clients.total is not None  # ab -c and -n
        config[k.C_CLIENT] = k.CLIENT_AB
        config[k.C_USERS] = users = clients.users
        config[k.C_TOTAL] = clients.total
        config[k.C_REPEAT] = clients.repeat
    elif kind == "open":
        # a rate, interarrivals, or a schedule's unit exponential (`load_tables`)
        assert clients.arrivals is not None
        config[k.C_CLIENT] = k.CLIENT_OPEN
        config[k.C_ST_ARRIVALS] = stream("clients.arrivals", clients.arrivals)
        if clients.total is not None:
            config[k.C_TOTAL] = clients.total
    else:
        assert kind == "sessions" and clients.arrivals is not None and clients.think is not None
        config[k.C_CLIENT] = k.CLIENT_SESSIONS
        config[k.C_ST_ARRIVALS] = stream("clients.arrivals", clients.arrivals)
        config[k.C_ST_THINK] = stream("clients.think", clients.think)
        if clients.session_length_fixed is not None:
            config[k.C_FIXED_LENGTH] = clients.session_length_fixed
        elif clients.session_length_p is not None:
            streams.append(
                Stream("clients.session_length", None, geometric_p=clients.session_length_p)
            )
            constants.append(None)
            config[k.C_ST_LENGTH] = len(streams) - 1
        # else a script's path is the session (`classes.client_tables` sets its length)
        if clients.total is not None:
            config[k.C_TOTAL] = clients.total
        users = 64
    if clients.connect is not None:
        config[k.C_ST_CONNECT] = stream("clients.connect", clients.connect)
    config[k.C_HAS_TIMEOUT] = int(clients.timeout_s is not None)
    config_float[k.CF_TIMEOUT] = clients.timeout_s or 0.0
    retry = clients.retry
    config[k.C_MAX_RETRIES] = retry.max_retries
    config[k.C_RETRY_ON_TIMEOUT] = int(retry.on_timeout)
    config[k.C_RETRY_ON_ERROR] = int(retry.on_error)
    config_float[k.CF_BACKOFF] = retry.backoff_s
    config_float[k.CF_MULTIPLIER] = retry.multiplier
    config_float[k.CF_MAX_BACKOFF] = retry.max_backoff_s
    config[k.C_SYN_RETRIES] = clients.tcp.syn_retries
    config_float[k.CF_RTO] = clients.tcp.initial_rto_s
    return config, config_float, users
