"""The compiled plan: a validated model turned once into the stack's nodes, stations, pools and
routing, which the builder, the stability check and `tiersim solve` all read.

Before the plan, each of the three walked the model on its own and their readings disagreed
(the solver counted backend groups the balancer's `members` leave out; it knew nothing of JVMs,
replication, connectors or keep-alive).  Here the stack is read once:

* `nodes`: every backend node the balancer can reach (`balancer.members`), named as the
  engine names it (`tomcat1`), with its share of the requests when the policy is state-blind;
* `stations`: the mean demand per request at each service centre (host CPUs, database disks,
  delays), as the product-form network sees them;
* `pools`: every bounded slot pool with the stations its holders occupy while holding a slot;
* `approximations`: every component whose behaviour the product-form network leaves out,
  by model path, with the reason.  `solve` calls its answer exact only when this list (and
  the population-dependent pool limits) are empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from sim.model.classes import Work, class_names, request_fractions, works
from sim.model.features import solver_caveat
from sim.model.parts.database import DatabasePart
from sim.model.parts.run_control import RunControl
from sim.model.schema import (
    AbClients,
    Backend,
    Model,
    OpenClients,
    SessionClients,
)
from sim.model.stack import StackPlan, stack_plan
from sim.random.distributions import Exponential, as_distribution
from sim.tiers.balancer.policies import policy_class
from sim.tiers.proxy.client_connections import linger_hold_s
from sim.tiers.proxy.mpm import mpm as mpm_class


@dataclass(frozen=True)
class NodePlan:
    """One backend node the balancer can send to."""

    name: str  # the engine's name: group name + number (`tomcat1`)
    group: int  # index of its group in `backends`
    number: int  # 1-based number within the group
    spec: Backend
    share: float | None  # long-run fraction of requests (state-blind policy); None: load-aware

    @property
    def path(self) -> str:
        return f"backends.{self.group}"


@dataclass(frozen=True)
class StationPlan:
    """A service centre of the product-form network: demand per request, all visits."""

    name: str  # `tomcat1.cpu`, `database.disks`, `clients.connect`
    path: str  # the model parameter that sets its capacity (`backends.0.cores`)
    demand_s: float  # mean demand per request at this centre [s], visit ratio included
    servers: int | None  # cores or spindles; None: a delay (infinite-server) centre
    exponential: bool = False  # the demand per visit is exponential (memoryless)
    # per request class ([[classes]]), the demand per request of that class [s]; `demand_s` is
    # then their mean weighted by the classes' shares of the requests.  Empty: one class.
    class_demands: tuple[float, ...] = ()


@dataclass(frozen=True)
class PoolPlan:
    """A bounded slot pool, and the stations whose customers hold one of its slots."""

    path: str  # model path of its size (`proxy.workers`, `backends.0.threads`)
    size: int
    holders: tuple[str, ...]


@dataclass(frozen=True)
class Approximation:
    """A component outside the product-form network, and why."""

    path: str
    reason: str
    # the feature it stands for (`sim.model.features`); "" for a limit no feature names
    feature: str = ""

    def __str__(self) -> str:
        # "proxy.workers = 5 can fill up ..." reads on; any other reason follows a colon
        separator = " " if self.reason.startswith("=") else ": "
        return f"{self.path}{separator}{self.reason}"


@dataclass(frozen=True)
class Plan:
    model: Model
    nodes: tuple[NodePlan, ...]
    stations: tuple[StationPlan, ...]
    pools: tuple[PoolPlan, ...]
    approximations: tuple[Approximation, ...] = field(default=())
    classes: tuple[str, ...] = ()  # request class names ([[classes]]); empty: one class
    # how a replication is built and the features it uses (`sim.model.stack`); None only in
    # the partial plans the stations are computed from
    stack: StackPlan | None = None

    @property
    def features(self) -> dict[str, str]:
        """Each mechanism the model uses, with the setting that brings it in."""
        assert self.stack is not None
        return self.stack.features

    @property
    def run(self) -> RunControl:
        """How a replication is run (`sim.model.parts.run_control`): what the engines read of
        `[run]`."""
        assert self.stack is not None
        return self.stack.run

    @property
    def name(self) -> str:
        """The model's name (`meta.name`)."""
        return self.model.meta.name

    @cached_property
    def split(self) -> str:
        """How the balancer's long-run split is known: even, weighted, single or adaptive."""
        return policy_class(self.model.balancer.policy).split

    @property
    def population(self) -> int | None:
        """The closed population (users, or ab's concurrency); None for open workloads
        (`sim.model.parts.offered_load`)."""
        assert self.stack is not None
        return self.stack.offered_load.population

    @property
    def think_s(self) -> float:
        """A closed population's mean think time per request [s]; 0 for ab and open ones."""
        assert self.stack is not None
        return self.stack.offered_load.think_s

    def binding_pools(self) -> list[PoolPlan]:
        """Pools that can change the answer when they fill up.  A pool held at one station
        only, with at least as many slots as the station has servers and an exponential
        demand, is not one: its queue in front of the servers is the station's own queue
        (M/M/c FCFS and processor sharing have the same number in system)."""
        by_name = {s.name: s for s in self.stations}
        out = []
        for pool in self.pools:
            held = [by_name[h] for h in pool.holders if h in by_name]
            if (
                len(held) == 1
                and held[0].servers is not None
                and pool.size >= held[0].servers
                and held[0].exponential
            ):
                continue
            out.append(pool)
        return out

    def pool_limits(self, population: int | None) -> list[Approximation]:
        """Pools that can fill up: under a closed population, those smaller than it (a slot
        held across downstream calls is a nested hold, not product-form)."""
        if population is None:
            return []
        return [
            Approximation(
                pool.path,
                f"= {pool.size} can fill up under {population} users; slots held across downstream "
                "calls (nested holds) are not product-form -- raise it to the population to make "
                "the answer exact",
            )
            for pool in self.binding_pools()
            if pool.size < population
        ]


def compile_plan(model: Model) -> Plan:
    """Read the model once into the plan every consumer shares."""
    nodes = _nodes(model)
    stack = stack_plan(model, nodes)
    return Plan(
        model=model,
        nodes=nodes,
        stations=_stations(model, nodes, stack.database),
        pools=_pools(model, nodes),
        approximations=_with_declared(_approximations(model, nodes), stack),
        classes=class_names(model),
        stack=stack,
    )


def _with_declared(specific: list[Approximation], stack: StackPlan) -> tuple[Approximation, ...]:
    """The approximations written for this model's settings, and for every other feature it
    uses that is not product-form, the caveat its declaration gives (`sim.model.features`):
    a mechanism no one wrote an approximation for is never solved "exact"."""
    covered = {a.feature for a in specific}
    declared = [
        Approximation(setting, caveat, feature)
        for feature, setting in stack.features.items()
        if feature not in covered and (caveat := solver_caveat(feature)) is not None
    ]
    return (*specific, *declared)


def _nodes(model: Model) -> tuple[NodePlan, ...]:
    members = model.balancer.members
    groups = [
        (g, group)
        for g, group in enumerate(model.backends)
        if members is None or group.name in members
    ]
    shares = _shares(model, groups)
    return tuple(
        NodePlan(
            name=f"{group.name}{i + 1}",
            group=g,
            number=i + 1,
            spec=group,
            share=None if shares is None else shares[g],
        )
        for g, group in groups
        for i in range(built_nodes(group))
    )


def built_nodes(group: Backend) -> int:
    """The nodes a group is built with: its `count`, or an autoscaled group's `max_replicas`
    (those it has not asked for wait outside the balancer: `sim.tiers.cluster.node_life`)."""
    return group.count if group.autoscale is None else group.autoscale.max_replicas


def _shares(model: Model, groups: list[tuple[int, Backend]]) -> dict[int, float] | None:
    """Each node's share of the requests, by group, for a state-blind policy; None for a
    load-aware one.  Round robin and random split evenly whatever the nodes' speeds: a
    heterogeneous cluster is then stable only while every node keeps up with 1/N of the load."""
    split = policy_class(model.balancer.policy).split
    nodes = sum(built_nodes(group) for _, group in groups)
    if split == "adaptive":
        return None
    if split == "weighted":
        total = sum(group.weight * built_nodes(group) for _, group in groups)
        return {g: group.weight / total for g, group in groups}
    if split == "single":  # everything to one elected node, which may be any of them
        return {g: 1.0 for g, _ in groups}
    return {g: 1.0 / nodes for g, _ in groups}


def analytic_share(plan: Plan, node: NodePlan) -> float:
    """The share the product-form network gives a node: the policy's own when it is known,
    else (load-aware, or one elected node) an even split, which `solve` names as inexact."""
    if node.share is not None and plan.split in ("even", "weighted"):
        return node.share
    return 1.0 / len(plan.nodes)


# --------------------------------------------------------------------------- stations
def _stations(
    model: Model, nodes: tuple[NodePlan, ...], database: DatabasePart | None
) -> tuple[StationPlan, ...]:
    """The stations with their mean demand per request; with request classes, each class's
    demand too (a station any class visits is listed, in the order of a one-class model)."""
    if not model.classes:
        return tuple(
            s for s in _class_stations(model, nodes, Work(None), database) if s.demand_s > 0
        )
    per_class = [
        {s.name: s for s in _class_stations(model, nodes, work, database)} for work in works(model)
    ]
    fractions = request_fractions(model)
    out = []
    for name in dict.fromkeys(n for stations in per_class for n in stations):
        demands = tuple(
            stations[name].demand_s if name in stations else 0.0 for stations in per_class
        )
        first = next(stations[name] for stations in per_class if name in stations)
        out.append(
            StationPlan(
                name,
                first.path,
                sum(f * d for f, d in zip(fractions, demands)),
                first.servers,
                all(stations[name].exponential for stations in per_class if name in stations),
                demands,
            )
        )
    return tuple(s for s in out if any(d > 0 for d in s.class_demands))


def _class_stations(
    model: Model, nodes: tuple[NodePlan, ...], work: Work, database: DatabasePart | None
) -> list[StationPlan]:
    """Every station a request of one class (`work`) may visit, with its demand (zero ones too)."""
    out: list[StationPlan] = []
    clients = model.clients
    connect = clients.connect
    # ab -k opens its connections once; everyone else pays the connect on every request
    per_request = not (isinstance(clients, AbClients) and clients.keep_alive)
    if connect is not None and as_distribution(connect).mean > 0 and per_request:
        out.append(
            StationPlan("clients.connect", "clients.connect", as_distribution(connect).mean, None)
        )
    if clients.host is not None:
        # the load generator's CPU (ab's one core); a new connection per request without
        # keep-alive (ab -k and keep-alive users reuse theirs)
        generator = clients.host
        demand = as_distribution(generator.demand).mean
        if not clients.keep_alive:
            demand += as_distribution(generator.connection_demand).mean
        out.append(
            StationPlan(
                "clients.cpu",
                "clients.host.cores",
                demand / generator.speed,
                generator.cores,
                isinstance(as_distribution(generator.demand), Exponential),
            )
        )
    if model.proxy is not None:
        px = model.proxy
        demand = as_distribution(work.proxy_demand(px)).mean
        if not clients.keep_alive:  # every request opens its own connection
            demand += as_distribution(px.connection_demand).mean
        out.append(StationPlan("proxy.cpu", "proxy.cores", demand / px.speed, px.cores))
    plan = Plan(model, nodes, (), ())
    db_visits = 0.0
    for node in nodes if work.forwarded else ():
        group = node.spec
        share = analytic_share(plan, node)
        out.append(
            StationPlan(
                f"{node.name}.cpu",
                f"{node.path}.cores",
                share * as_distribution(work.demand(group)).mean / group.speed,
                group.cores,
                isinstance(as_distribution(work.demand(group)), Exponential),
            )
        )
        io = as_distribution(group.io_wait).mean
        if io > 0:
            out.append(
                StationPlan(f"{node.name}.io_wait", f"{node.path}.io_wait", share * io, None)
            )
        db_visits += share * work.db_calls(group)
    if model.database is not None and db_visits > 0:
        db = model.database
        out.append(
            StationPlan(
                "database.cpu",
                "database.cores",
                db_visits * as_distribution(work.db_demand(db)).mean / db.speed,
                db.cores,
                isinstance(as_distribution(work.db_demand(db)), Exponential),
            )
        )
        out.append(
            StationPlan(
                "database.disks",
                "database.disks",
                db_visits * as_distribution(db.disk_demand).mean,
                db.disks,
            )
        )
        # what the mechanisms around its calls hold (`sim.model.parts.database.CallMechanism`)
        assert database is not None  # the stack's part of `model.database`
        for mechanism in database.mechanisms:
            for held in mechanism.resources(database):
                out.append(
                    StationPlan(
                        held.name, held.setting, db_visits * held.share * held.hold_s, held.servers
                    )
                )
    return out


def _pools(model: Model, nodes: tuple[NodePlan, ...]) -> tuple[PoolPlan, ...]:
    """Every bounded slot pool.  The database's customers are counted in full against each
    node's pools (a safe over-count)."""
    out: list[PoolPlan] = []
    database = ("database.cpu", "database.disks")
    if model.proxy is not None and model.proxy.workers is not None:
        held = (
            "proxy.cpu",
            *(f"{n.name}.{part}" for n in nodes for part in ("cpu", "io_wait")),
            *database,
        )
        # the MaxRequestWorkers httpd runs: rounded to whole children (AH00316)
        processes = model.proxy.processes
        assert processes is not None  # finite workers
        out.append(PoolPlan("proxy.workers", processes.workers, held))
    seen: set[int] = set()
    for node in nodes:
        if node.group in seen:
            continue
        seen.add(node.group)
        group = node.spec
        own = (f"{node.name}.cpu", f"{node.name}.io_wait", *database)
        if group.request_threads is not None:
            out.append(PoolPlan(f"{node.path}.threads", group.request_threads, own))
        if group.max_connections is not None:
            out.append(PoolPlan(f"{node.path}.max_connections", group.max_connections, own))
        if group.jdbc_pool is not None and group.db_calls:
            out.append(PoolPlan(f"{node.path}.jdbc_pool", group.jdbc_pool, database))
    if model.database is not None and model.database.connections is not None:
        out.append(PoolPlan("database.connections", model.database.connections, database))
    return tuple(out)


# ---------------------------------------------------------------------- approximations
def _approximations(model: Model, nodes: tuple[NodePlan, ...]) -> list[Approximation]:
    """Every component the product-form network leaves out, whatever the load."""
    out: list[Approximation] = []
    clients = model.clients
    split = policy_class(model.balancer.policy).split
    if len(nodes) > 1 and model.balancer.policy != "random":
        out.append(
            Approximation(
                "balancer.policy",
                f"{model.balancer.policy} is treated as a random split by share "
                "(a rotation or a load-aware choice balances better than random; the answer is "
                "pessimistic)"
                if split in ("even", "weighted")
                else f"{model.balancer.policy} is treated as an even random split (its split "
                "depends on the load or elects one node)",
                feature=policy_class(model.balancer.policy).feature,
            )
        )
    if len(nodes) > 1 and model.balancer.sticky_session and clients.kind in ("closed", "sessions"):
        out.append(
            Approximation(
                "balancer.sticky_session",
                "pins each user's session to one node; the network routes every request at random",
                feature="balancer.sticky_session",
            )
        )
    if len(nodes) > 1 and model.balancer.report_interval_s is not None:
        out.append(
            Approximation(
                "balancer.report_interval_s",
                "the balancer acts on stale load reports (herding), which no routing matrix describes",
                feature="balancer.report_interval_s",
            )
        )
    if clients.timeout_s is not None:
        out.append(
            Approximation(
                "clients.timeout_s",
                f"= {clients.timeout_s} is ignored (no abandonment in the network)",
                feature="clients.timeouts",
            )
        )
    if clients.retry.max_retries:
        out.append(
            Approximation(
                "clients.retry",
                "is ignored (retries are extra load the network does not see)",
                feature="clients.timeouts",
            )
        )
    if isinstance(clients, AbClients):
        out.append(
            Approximation(
                "clients.requests",
                f"ab -n {clients.requests} is a finite run; the answer is its steady state "
                "(start-up and drain excluded)",
                feature="clients.finite",
            )
        )
    px = model.proxy
    if px is not None:
        workers_bounded = px.workers is not None
        if (
            clients.keep_alive
            and px.keep_alive
            and not mpm_class(px.mpm).listener_holds_idle_connections
            and workers_bounded
        ):
            out.append(
                Approximation(
                    "clients.keep_alive",
                    f"with the {px.mpm} MPM a persistent connection holds its worker through the "
                    f"think time (up to proxy.keep_alive_timeout_s = {px.keep_alive_timeout_s:g} s)",
                    feature="clients.keep_alive",
                )
            )
        if clients.keep_alive and as_distribution(px.connection_demand).mean > 0:
            out.append(
                Approximation(
                    "proxy.connection_demand",
                    "is paid once per connection, and the requests per connection depend on the "
                    "keep-alive timing",
                    feature="proxy.connection_demand",
                )
            )
        if workers_bounded and linger_hold_s(px.mpm, px.linger_s, clients.close_delay_s) > 0:
            out.append(
                Approximation(
                    "proxy.linger_s",
                    "a lingering close holds the worker while the client is slow to close",
                    feature="proxy.lingering_close",
                )
            )
        if px.start_servers is not None:
            out.append(
                Approximation(
                    "proxy.start_servers",
                    "children are spawned over time (process management): the start is a transient",
                    feature="proxy.process_management",
                )
            )
        if workers_bounded and px.listen_backlog is not None:
            out.append(
                Approximation(
                    "proxy.listen_backlog", "can refuse connections; refusals are not modelled"
                )
            )
        pool = px.backend_pool
        if px.forward and pool.module == "mod_jk" and pool.reply_timeout_s is not None:
            out.append(
                Approximation(
                    "proxy.backend_pool.reply_timeout_s",
                    f"= {pool.reply_timeout_s:g} s: mod_jk abandons a slower reply (the node "
                    f"still serves it) and sends the request again, up to retries = "
                    f"{pool.retries} attempts {pool.retry_interval_s:g} s apart, then to other "
                    "members (lb retries, lb_retries): extra load that depends on the response time",
                    feature="mod_jk.ajp13",
                )
            )
        processes = px.processes
        per_child = processes.threads_per_child if processes is not None else None
        if pool.max is not None and (per_child is None or pool.max < per_child):
            out.append(
                Approximation(
                    "proxy.backend_pool.max",
                    f"= {pool.max} below the threads of a child ({per_child}): requests "
                    "wait for a pooled connection while holding their worker (a nested hold)",
                    feature="proxy.backend_pool.max",
                )
            )
        if (
            mpm_class(px.mpm).limits_connections_by_idle_workers
            and workers_bounded
            and px.keep_alive
            and clients.keep_alive
        ):
            out.append(
                Approximation(
                    "proxy.async_request_worker_factor",
                    "idle keep-alive connections count toward each child's connection limit "
                    "(ThreadsPerChild + AsyncRequestWorkerFactor x idle workers): a child at its "
                    "limit accepts nothing",
                )
            )
        if (
            processes is not None
            and processes.max_children > 1
            and any(
                # a slot per connection binds only below the connections the front can open
                group.connector == "blocking"
                or (group.max_connections is not None and group.max_connections < processes.workers)
                for group in model.backends
            )
        ):
            out.append(
                Approximation(
                    "proxy.threads_per_child",
                    f"each of up to {processes.max_children} children keeps its own backend "
                    "connections, each pinning a thread or a slot on the node",
                )
            )
    seen: set[int] = set()
    for node in nodes:
        if node.group in seen:
            continue
        seen.add(node.group)
        group, path = node.spec, node.path
        if group.connector == "blocking":
            out.append(
                Approximation(
                    f"{path}.connector",
                    "blocking: each pooled connection pins a thread while idle (seed 001's stall)",
                    feature=f"connector.{group.connector}",
                )
            )
        if group.jvm is not None:
            out.append(
                Approximation(
                    f"{path}.jvm",
                    "garbage-collection pauses stop the node's CPU and JIT warm-up changes the "
                    "demand over time; neither is in a product-form network",
                    feature="appserver.jvm",
                )
            )
        if group.events:
            out.append(
                Approximation(
                    f"{path}.events",
                    "crashes and slow-downs make the load time-varying",
                    feature="backends.events",
                )
            )
        if group.accept_queue is not None and group.threads is not None:
            out.append(
                Approximation(
                    f"{path}.accept_queue", "can refuse requests; refusals are not modelled"
                )
            )
    for index, spec in model.cluster.active:
        out.append(
            Approximation(
                f"cluster.replication.{index}",
                f"{spec.mode} {spec.tier}-tier replication adds serialization, network and "
                "receiver CPU work"
                + (
                    " and holds the request thread until every replica acknowledges"
                    if spec.mode == "sync"
                    else ""
                ),
                feature=f"replication.{spec.mode}",
            )
        )
    db = model.database
    if db is not None and any(n.spec.db_calls for n in nodes):
        disk = as_distribution(db.disk_demand)
        if disk.mean > 0 and not isinstance(disk, Exponential):
            out.append(
                Approximation(
                    "database.disk_demand",
                    "FCFS spindles are product-form only with exponential service times",
                )
            )
    if isinstance(clients, (OpenClients, SessionClients)) and model.finite:
        out.append(
            Approximation(
                "clients",
                "a finite workload; the answer is the steady state of its rate",
                feature="clients.finite",
            )
        )
    return out
