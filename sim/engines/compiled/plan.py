"""The compiled engine's plan of a model: flat tables of stations, pools, CPUs, balancer
members and random streams, in the reference engine's order.

The order is the reference's (`sim.run.assemble`): stations proxy, database, nodes; pools and
CPUs in the order they are built there.  Recorder columns, and so metric names and their
order, come out identical; the random streams have the reference's purposes
(`Streams.generator(purpose)`), so both engines draw the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.engines.compiled import kernel as k
from sim.engines.compiled.support import BLIND_POLICIES
from sim.model.schema import ClosedClients, Model, OpenClients, SessionClients
from sim.observe.recorder import BASE_FIELDS
from sim.random.distributions import Deterministic, Distribution, Exponential, as_distribution

STATION_FIELDS = ("visits", "wait_sum", "residence_sum", "downstream_sum", "failed")
POOL_FIELDS = ("busy_area", "queue_area", "acquired", "refused", "wait_sum")
CPU_FIELDS = ("busy_area", "jobs_area", "completed")
DISPATCH_COUNTS = (
    "#failovers",
    "#refused_down",
    "#unavailable",
    "#sticky_refused",
    "#sessions_created",
    "#sessions_lost",
)
POLICY_CODES = {
    "round_robin": k.POLICY_ROUND_ROBIN,
    "random": k.POLICY_RANDOM,
    "byrequests": k.POLICY_BYREQUESTS,
    "static": k.POLICY_STATIC,
}


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
    capacities: dict[str, float | str] = field(default_factory=dict)
    users: int = 0


def build_plan(model: Model) -> Plan:
    """The tables of a model that `support.unsupported` accepts."""
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

    def cpu(name: str, cores: int, speed: float, slots) -> int:
        # At most `slots` visits compute at once: with no more slots than cores the CPU is
        # never shared (the reference's DedicatedCPU).
        cpus.append((f"{name}.cpu", cores, speed, slots is not None and slots <= cores))
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
        }
        record.update(fields)
        stations.append(record)
        names.append(name)
        return len(stations) - 1

    database = -1
    if model.database is not None:
        db = model.database
        connections = (
            pool("database.connections", db.connections, None, k.ROLE_STATION)
            if db.connections
            else -1
        )
        database = station(
            "database",
            pool=connections,
            cpu=cpu("database", db.cores, db.speed, db.connections),
            burst=stream("database.demand", as_distribution(db.demand)),
        )
        disk = as_distribution(db.disk)
        if disk.mean > 0:
            stations[database]["disk_pool"] = pool("database.disk", db.disks, None, k.ROLE_DISK)
            stations[database]["disk_stream"] = stream("database.disk", disk)

    nodes: list[int] = []
    weights: list[float] = []
    members = model.balancer.members
    for group in model.backends:
        if members is not None and group.name not in members:
            continue
        for i in range(group.count):
            weights.append(group.weight)
            name = f"{group.name}{i + 1}"
            fields: dict = {"calls": 0}
            if group.db_calls:
                fields.update(calls=group.db_calls, down=k.DOWN_STATION, target=database)
                if group.jdbc_pool is not None:
                    fields["jdbc"] = pool(f"{name}.jdbc", group.jdbc_pool, None, k.ROLE_JDBC)
            bounded = group.threads is not None or group.accept_queue is not None
            if bounded:
                fields["pool"] = pool(
                    f"{name}.threads", group.threads, group.accept_queue, k.ROLE_STATION
                )
            fields["cpu"] = cpu(name, group.cores, group.speed, group.threads)
            fields["burst"] = stream(f"{name}.demand", as_distribution(group.cpu), group.db_calls)
            io = as_distribution(group.io_wait)
            if io.mean != 0:
                fields["io"] = stream(f"{name}.io_wait", io)
            nodes.append(station(name, **fields))

    dispatcher = len(nodes) > 1
    keeps_sessions = dispatcher and model.clients.kind in ("closed", "sessions")
    balancer_stream = -1
    if dispatcher and BLIND_POLICIES[model.balancer.policy] == "random":
        streams.append(Stream("balancer", None, reverse=True))
        constants.append(None)
        balancer_stream = len(streams) - 1

    entry_kind, entry_target = k.ENTRY_STATION, nodes[0] if nodes else -1
    if dispatcher:
        entry_kind, entry_target = k.ENTRY_BALANCER, -1
    if model.proxy is not None:
        px = model.proxy
        forwards = px.forward and bool(nodes)
        fields = {
            "pool": pool("proxy.workers", px.workers, px.listen_backlog, k.ROLE_STATION),
            "cpu": cpu("proxy", px.cores, px.speed, px.workers),
            "burst": stream("proxy.demand", as_distribution(px.demand), 1 if forwards else 0),
            "accepts": 1,
        }
        if forwards:
            fields["calls"] = 1
            if dispatcher:
                fields["down"] = k.DOWN_BALANCER
            else:
                fields.update(down=k.DOWN_STATION, target=nodes[0])
        proxy = station("proxy", **fields)
        entry_kind, entry_target = k.ENTRY_STATION, proxy
        # the reference lists the proxy first
        order = [proxy, *range(len(stations) - 1)]
    else:
        for node in nodes:
            stations[node]["accepts"] = 1
        order = list(range(len(stations)))
    renumber = {old: new for new, old in enumerate(order)}
    stations = [stations[old] for old in order]
    names = [names[old] for old in order]
    for record in stations:
        if record["target"] >= 0:
            record["target"] = renumber[record["target"]]
    nodes = [renumber[n] for n in nodes]
    if entry_kind == k.ENTRY_STATION:
        entry_target = renumber[entry_target]

    levels = (1 if model.proxy is not None else 0) + (1 if nodes else 0)
    if any(stations[n]["calls"] for n in nodes):
        levels += 1
    levels = max(levels, 1)

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

    pool_table = np.zeros((len(pools), k.N_POI), dtype=np.int64)
    for p, (_name, capacity, queue_limit, role) in enumerate(pools):
        row = pool_table[p]
        row[k.PO_CAPACITY] = -1 if capacity is None else capacity
        row[k.PO_QUEUE_LIMIT] = -1 if queue_limit is None else queue_limit
        row[k.PO_HEAD] = -1
        row[k.PO_TAIL] = -1
        row[k.PO_ROLE] = role

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

    member_table = np.zeros((max(len(nodes), 1), k.N_BI), dtype=np.int64)
    for m, node in enumerate(nodes):
        member_table[m, k.B_STATION] = node

    columns = list(BASE_FIELDS)
    for name in names:
        columns += [f"{name}:{f}" for f in STATION_FIELDS]
    for name, *_ in pools:
        columns += [f"{name}:{f}" for f in POOL_FIELDS]
    for name, *_ in cpus:
        columns += [f"{name}:{f}" for f in CPU_FIELDS]
    if dispatcher:
        columns += [f"balancer:{names[n]}" for n in nodes] + [
            f"balancer:{f}" for f in DISPATCH_COUNTS
        ]
    capacities: dict[str, float | str] = {}
    for name, capacity, *_ in pools:
        capacities[name] = float("inf") if capacity is None else capacity
        capacities[f"{name}#kind"] = "pool"
    for name, cores, *_ in cpus:
        capacities[name] = cores
        capacities[f"{name}#kind"] = "cpu"
    for name in names:
        capacities[f"{name}#kind"] = "station"
    capacities["balancer#kind"] = "dispatcher"

    config, config_float, users = _clients(model, streams, constants)
    config[k.C_LEVELS] = levels
    config[k.C_N_STATIONS] = len(stations)
    config[k.C_N_POOLS] = len(pools)
    config[k.C_N_CPUS] = len(cpus)
    config[k.C_N_MEMBERS] = len(nodes)
    config[k.C_ST_BALANCER] = balancer_stream
    config[k.C_ENTRY_KIND] = entry_kind
    config[k.C_ENTRY_TARGET] = entry_target
    config[k.C_POLICY] = POLICY_CODES[BLIND_POLICIES.get(model.balancer.policy, "static")]
    config[k.C_STICKY] = int(model.balancer.sticky_session)
    config[k.C_KEEPS_SESSIONS] = int(keeps_sessions)
    config[k.C_HAS_DISPATCHER] = int(dispatcher)
    config[k.C_MAX_CORES] = max((c[1] for c in cpus), default=1)
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
        capacities=capacities,
        users=users,
    )


def _clients(model: Model, streams: list[Stream], constants: list) -> tuple:
    """Client configuration; the clients' streams are appended to `streams`."""
    spec = model.clients
    config = np.full(k.N_C, -1, dtype=np.int64)
    config_float = np.zeros(k.N_CF, dtype=np.float64)

    def stream(purpose: str, distribution: Distribution) -> int:
        streams.append(Stream(purpose, distribution))
        constants.append(distribution.value if isinstance(distribution, Deterministic) else None)
        return len(streams) - 1

    users = 1
    if isinstance(spec, ClosedClients):
        config[k.C_CLIENT] = k.CLIENT_CLOSED
        config[k.C_USERS] = users = spec.users
        config[k.C_ST_THINK] = stream("clients.think", as_distribution(spec.think))
    elif isinstance(spec, OpenClients):
        config[k.C_CLIENT] = k.CLIENT_OPEN
        if spec.rate_per_s is not None:
            arrivals = Exponential(1.0 / spec.rate_per_s)
        else:
            arrivals = as_distribution(spec.interarrival)
        config[k.C_ST_ARRIVALS] = stream("clients.arrivals", arrivals)
    else:
        assert isinstance(spec, SessionClients)
        config[k.C_CLIENT] = k.CLIENT_SESSIONS
        config[k.C_ST_ARRIVALS] = stream(
            "clients.arrivals", Exponential(1.0 / spec.session_rate_per_s)
        )
        config[k.C_ST_THINK] = stream("clients.think", as_distribution(spec.think))
        if spec.fixed_length:
            config[k.C_FIXED_LENGTH] = int(spec.requests_per_session)
        else:
            streams.append(
                Stream("clients.session_length", None, geometric_p=1.0 / spec.requests_per_session)
            )
            constants.append(None)
            config[k.C_ST_LENGTH] = len(streams) - 1
        users = 64
    if spec.connect is not None and as_distribution(spec.connect).mean > 0:
        config[k.C_ST_CONNECT] = stream("clients.connect", as_distribution(spec.connect))
    config[k.C_HAS_TIMEOUT] = int(spec.timeout_s is not None)
    config_float[k.CF_TIMEOUT] = spec.timeout_s or 0.0
    retry = spec.retry
    config[k.C_MAX_RETRIES] = retry.max_retries
    config[k.C_RETRY_ON_TIMEOUT] = int(retry.on_timeout)
    config[k.C_RETRY_ON_ERROR] = int(retry.on_error)
    config_float[k.CF_BACKOFF] = retry.backoff_s
    config_float[k.CF_MULTIPLIER] = retry.multiplier
    config_float[k.CF_MAX_BACKOFF] = retry.max_backoff_s
    config[k.C_SYN_RETRIES] = spec.tcp.syn_retries
    config_float[k.CF_RTO] = spec.tcp.initial_rto_s
    return config, config_float, users
