"""`tiersim solve`: the analytic answer for a model that maps onto a product-form network.

The mapping (BCMP 1975): every host's CPU is a processor-sharing station with `cores`
servers (load-dependent rate min(n, c)), insensitive to the demand distribution; a backend's
`io_wait` and the client's connection set-up are delay (infinite-server) stations; think
time is the delay of a closed network.  Demands are mean demand per request / speed, split
over nodes by the balancer's share.  Closed populations (and `ab -c`) are solved by exact
MVA; open Poisson arrivals and partly-open sessions as an open network of M/M/c-equivalent
stations (Jackson 1963), whose response time is insensitive to the session structure.

What the network leaves out is said, not hidden: a slot pool (proxy workers, threads, JDBC,
database connections) that can fill up holds its slot across downstream calls -- nested
holds are not product-form, so the answer is then labelled inexact and the pools that can
bind are named.  Likewise timeouts, retries and a deterministic rotation of the balancer.
Workloads with no steady state of this kind (ramps, schedules, renewal arrivals) raise
`NotProductForm`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.special import gammaln
from scipy.stats import poisson

from sim.analytic.erlang import mmc
from sim.analytic.mva import ClosedNetwork, Station, asymptotic_bounds, exact_mva
from sim.model.schema import AbClients, ClosedClients, Model, OpenClients, SessionClients
from sim.random.distributions import as_distribution


class NotProductForm(ValueError):
    """The model has no product-form counterpart; the message says which part and why."""


@dataclass(frozen=True)
class StationAnswer:
    name: str
    kind: str  # "queue" (processor sharing, `servers` cores) or "delay"
    servers: int | None
    demand_s: float  # mean demand per request [s]
    utilization: float  # per server; 0 for delay stations
    residence_s: float  # mean time per request at the station, all visits [s]
    queue_length: float  # mean number present


@dataclass
class Answer:
    model: str
    network: str  # "closed (exact MVA)" or "open (Jackson)"
    exact: bool
    caveats: list[str]
    throughput_per_s: float
    response_mean_s: float
    stations: list[StationAnswer]
    bounds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)

    def render(self, console) -> None:
        from rich.table import Table

        label = "exact" if self.exact else "approximate"
        console.print(f"{self.model}: {self.network}, {label}")
        for caveat in self.caveats:
            console.print(f"  not exact: {caveat}", markup=False)
        console.print(
            f"throughput {self.throughput_per_s:.6g} 1/s, mean response {self.response_mean_s:.6g} s"
        )
        table = Table(header_style="bold")
        for column in (
            "station",
            "kind",
            "servers",
            "demand [s]",
            "utilization",
            "residence [s]",
            "queue",
        ):
            table.add_column(column, justify="left" if column in ("station", "kind") else "right")
        for s in self.stations:
            table.add_row(
                s.name,
                s.kind,
                "inf" if s.servers is None else str(s.servers),
                f"{s.demand_s:.6g}",
                f"{s.utilization:.4g}",
                f"{s.residence_s:.6g}",
                f"{s.queue_length:.4g}",
            )
        console.print(table)
        if self.bounds:
            console.print(
                "asymptotic bounds: throughput <= {throughput_upper:.6g} 1/s, response >= {response_lower:.6g} s, "
                "N* = {saturation_population:.4g} users".format(**self.bounds)
            )


@dataclass(frozen=True)
class _Demand:
    name: str
    demand: float
    servers: int | None  # None: delay station


def _demands(model: Model) -> list[_Demand]:
    """Mean demand per request at each station, with the balancer's even split over nodes."""
    out: list[_Demand] = []
    connect = model.clients.connect
    if connect is not None and as_distribution(connect).mean > 0:
        if not (isinstance(model.clients, AbClients) and model.clients.keep_alive):
            out.append(_Demand("clients.connect", as_distribution(connect).mean, None))
    if model.proxy is not None:
        px = model.proxy
        out.append(_Demand("proxy.cpu", as_distribution(px.demand).mean / px.speed, px.cores))
    nodes = sum(group.count for group in model.backends)
    db_visits = 0.0
    for group in model.backends:
        share = 1.0 / nodes  # the policies of this version split evenly over nodes
        for i in range(group.count):
            name = f"{group.name}{i + 1}"
            out.append(
                _Demand(
                    f"{name}.cpu",
                    share * as_distribution(group.cpu).mean / group.speed,
                    group.cores,
                )
            )
            io = as_distribution(group.io_wait).mean
            if io > 0:
                out.append(_Demand(f"{name}.io_wait", share * io, None))
            db_visits += share * group.db_calls
    if model.database is not None and db_visits > 0:
        db = model.database
        out.append(
            _Demand(
                "database.cpu", db_visits * as_distribution(db.demand).mean / db.speed, db.cores
            )
        )
        out.append(_Demand("database.disk", db_visits * as_distribution(db.disk).mean, db.disks))
    return [d for d in out if d.demand > 0]


def _pool_limits(model: Model) -> list[tuple[str, int, tuple[str, ...]]]:
    """(path, size, stations whose customers hold one of its slots) for every bounded slot pool.
    The database's customers are counted in full against each node's pools (a safe over-count)."""
    out = []
    nodes = [f"{g.name}{i + 1}" for g in model.backends for i in range(g.count)]
    if model.proxy is not None and model.proxy.workers is not None:
        held = (
            "proxy.cpu",
            *(f"{n}.{part}" for n in nodes for part in ("cpu", "io_wait")),
            "database.cpu",
            "database.disk",
        )
        out.append(("proxy.workers", model.proxy.workers, held))
    for g, group in enumerate(model.backends):
        first = f"{group.name}1"
        if group.threads is not None:
            out.append(
                (
                    f"backends.{g}.threads",
                    group.threads,
                    (f"{first}.cpu", f"{first}.io_wait", "database.cpu", "database.disk"),
                )
            )
        if group.jdbc_pool is not None and group.db_calls:
            out.append(
                (f"backends.{g}.jdbc_pool", group.jdbc_pool, ("database.cpu", "database.disk"))
            )
    if model.database is not None and model.database.connections is not None:
        out.append(
            ("database.connections", model.database.connections, ("database.cpu", "database.disk"))
        )
    return out


def _number_pmf(station: StationAnswer, rate: float, limit: int) -> np.ndarray:
    """P(n customers present), n = 0..limit, at an open product-form station."""
    n = np.arange(limit + 1)
    if station.kind == "delay":
        return poisson.pmf(n, rate * station.demand_s)
    c, a = station.servers, rate * station.demand_s  # offered load in servers
    log_unnormalised = np.where(
        n <= c,
        n * np.log(a) - gammaln(n + 1),
        c * np.log(a) - gammaln(c + 1) + (n - c) * np.log(a / c),
    )
    pmf = np.exp(log_unnormalised - log_unnormalised.max())
    # the tail beyond `limit` is geometric with ratio a/c; add it to the normalising constant
    tail = pmf[-1] * (a / c) / (1 - a / c)
    return pmf / (pmf.sum() + tail)


def _open_pool_overflow(
    model: Model, stations: list[StationAnswer], rate: float
) -> list[tuple[str, int, float]]:
    """(path, size, P(all slots busy)) of every bounded pool, from the product-form
    distribution of the customers that hold it (a convolution of station distributions)."""
    by_name = {s.name: s for s in stations}
    out = []
    for path, size, held in _pool_limits(model):
        present = [by_name[h] for h in held if h in by_name]
        mean = sum(s.queue_length for s in present)
        if size > 50 * (mean + 1):
            continue  # geometric tails: far beyond any probability worth printing
        total = np.zeros(size + 1)
        total[0] = 1.0
        for s in present:
            total = np.convolve(total, _number_pmf(s, rate, size))[: size + 1]
        out.append((path, size, float(max(0.0, 1.0 - total[:size].sum()))))
    return out


def _caveats(model: Model, population: int | None) -> list[str]:
    caveats = []
    nodes = sum(group.count for group in model.backends)
    if nodes > 1 and model.balancer.policy != "random":
        caveats.append(
            f"balancer.policy = {model.balancer.policy} is treated as a random even split "
            "(a rotation or a load-aware choice balances better than random; the answer is pessimistic)"
        )
    for path, size, _ in _pool_limits(model):
        if population is not None and size < population:
            caveats.append(
                f"{path} = {size} can fill up under {population} users; slots held across downstream calls "
                "(nested holds) are not product-form -- raise it to the population to make the answer exact"
            )
    clients = model.clients
    if clients.timeout_s is not None:
        caveats.append(
            f"clients.timeout_s = {clients.timeout_s} is ignored (no abandonment in the network)"
        )
    if clients.retry.max_retries:
        caveats.append("clients.retry is ignored (retries are extra load the network does not see)")
    if (
        model.proxy is not None
        and model.proxy.listen_backlog is not None
        and model.proxy.workers is not None
    ):
        if population is not None and model.proxy.workers < population:
            caveats.append("proxy.listen_backlog can refuse requests; refusals are not modelled")
    for g, group in enumerate(model.backends):
        if group.accept_queue is not None and group.threads is not None:
            if population is not None and group.threads < population:
                caveats.append(
                    f"backends.{g}.accept_queue can refuse requests; refusals are not modelled"
                )
    if isinstance(clients, AbClients):
        caveats.append(
            f"ab -n {clients.requests} is a finite run; the answer is its steady state (start-up and drain excluded)"
        )
    return caveats


def solve_model(model: Model) -> Answer:
    clients = model.clients
    demands = _demands(model)
    if isinstance(clients, (ClosedClients, AbClients)):
        if isinstance(clients, ClosedClients) and clients.ramp:
            raise NotProductForm("clients.ramp: a changing population has no steady state to solve")
        population = clients.users if isinstance(clients, ClosedClients) else clients.concurrency
        think = as_distribution(clients.think).mean if isinstance(clients, ClosedClients) else 0.0
        return _closed(model, demands, population, think)
    if isinstance(clients, OpenClients):
        if clients.rate_per_s is None:
            which = "clients.schedule" if clients.schedule is not None else "clients.interarrival"
            raise NotProductForm(
                f"{which}: only Poisson arrivals (clients.rate_per_s) are product-form"
            )
        return _open(model, demands, clients.rate_per_s)
    if isinstance(clients, SessionClients):
        return _open(model, demands, clients.session_rate_per_s * clients.requests_per_session)
    raise NotProductForm(
        f"clients.kind = {clients.kind} has no analytic counterpart"
    )  # pragma: no cover


def _closed(model: Model, demands: list[_Demand], population: int, think: float) -> Answer:
    network = ClosedNetwork(
        tuple(
            Station(d.name, d.demand, "delay" if d.servers is None else "queue", d.servers or 1)
            for d in demands
        ),
        think=think,
    )
    result = exact_mva(network, population)
    row = population - 1
    stations = [
        StationAnswer(
            d.name,
            "delay" if d.servers is None else "queue",
            d.servers,
            d.demand,
            0.0 if d.servers is None else float(result.utilization[row, k]),
            float(result.residence[row, k]),
            float(result.queue_length[row, k]),
        )
        for k, d in enumerate(demands)
    ]
    caveats = _caveats(model, population)
    bounds = asymptotic_bounds(network, population)
    return Answer(
        model=model.meta.name,
        network=f"closed network, N = {population}, Z = {think:g} s (exact MVA)",
        exact=not caveats,
        caveats=caveats,
        throughput_per_s=float(result.throughput[row]),
        response_mean_s=float(result.response[row]),
        stations=stations,
        bounds={k: float(v) for k, v in asdict(bounds).items()},
    )


def _open(model: Model, demands: list[_Demand], rate: float) -> Answer:
    stations = []
    for d in demands:
        if d.servers is None:
            stations.append(
                StationAnswer(d.name, "delay", None, d.demand, 0.0, d.demand, rate * d.demand)
            )
            continue
        load = rate * d.demand / d.servers
        if load >= 1:
            raise NotProductForm(
                f"{d.name} is offered {load:.3g} of its {d.servers} core(s): no steady "
                f"state (the queue grows without bound)"
            )
        # A processor-sharing station with c cores has the M/M/c queue-length distribution,
        # whatever the demand distribution (it is a symmetric queue, Kelly 1979).
        metrics = mmc(rate, 1.0 / d.demand, d.servers)
        stations.append(
            StationAnswer(
                d.name,
                "queue",
                d.servers,
                d.demand,
                load,
                metrics.mean_response,
                metrics.mean_in_system,
            )
        )
    caveats = _caveats(model, None)
    for path, size, full in _open_pool_overflow(model, stations, rate):
        if full > 1e-4:
            caveats.append(
                f"{path} = {size} is full with probability {full:.2g} in the unbounded network; slots held "
                "across downstream calls (nested holds) are not product-form"
            )
    return Answer(
        model=model.meta.name,
        network=f"open network, Poisson arrivals at {rate:g} requests/s (Jackson)",
        exact=not caveats,
        caveats=caveats,
        throughput_per_s=rate,
        response_mean_s=sum(s.residence_s for s in stations),
        stations=stations,
    )
