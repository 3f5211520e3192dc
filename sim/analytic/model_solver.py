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
from typing import Any

import numpy as np

from sim.analytic.erlang import mmc
from sim.analytic.multiclass_mva import MultiClassNetwork, solve_closed, state_space
from sim.analytic.mva import (
    ClosedNetwork,
    Station,
    asymptotic_bounds,
    exact_mva,
    schweitzer_mva,
)
from sim.model.parts.offered_load import OfferedLoad
from sim.model.plan import Plan, compile_plan


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


@dataclass(frozen=True)
class ClassAnswer:
    """One request class's figures ([[classes]])."""

    name: str
    throughput_per_s: float
    response_mean_s: float
    users: int | None = None  # its own users (mix_by = "user"); None when classes share users


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
    classes: list[ClassAnswer] = field(default_factory=list)

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
        for c in self.classes:
            users = "" if c.users is None else f" ({c.users} users)"
            console.print(
                f"class {c.name}{users}: throughput {c.throughput_per_s:.6g} 1/s, "
                f"mean response {c.response_mean_s:.6g} s"
            )
        if self.bounds:
            console.print(
                "asymptotic bounds: throughput <= {throughput_upper:.6g} 1/s, response >= {response_lower:.6g} s, "
                "N* = {saturation_population:.4g} users".format(**self.bounds)
            )


def _number_pmf(station: StationAnswer, rate: float, limit: int) -> np.ndarray:
    """P(n customers present), n = 0..limit, at an open product-form station."""
    # here, not at the top: scipy.stats costs `tiersim solve` 0.5-2 s to import, and only an
    # open network's pool overflow needs these distributions
    from scipy.special import gammaln
    from scipy.stats import poisson

    n = np.arange(limit + 1)
    if station.kind == "delay":
        return poisson.pmf(n, rate * station.demand_s)
    c, a = station.servers, rate * station.demand_s  # offered load in servers
    assert c is not None  # a queue: delay stations returned above
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
    plan: Plan, stations: list[StationAnswer], rate: float
) -> list[tuple[str, int, float]]:
    """(path, size, P(all slots busy)) of every bounded pool, from the product-form
    distribution of the customers that hold it (a convolution of station distributions)."""
    by_name = {s.name: s for s in stations}
    out = []
    for pool in plan.binding_pools():
        present = [by_name[h] for h in pool.holders if h in by_name]
        mean = sum(s.queue_length for s in present)
        if pool.size > 50 * (mean + 1):
            continue  # geometric tails: far beyond any probability worth printing
        total = np.zeros(pool.size + 1)
        total[0] = 1.0
        for s in present:
            total = np.convolve(total, _number_pmf(s, rate, pool.size))[: pool.size + 1]
        out.append((pool.path, pool.size, float(max(0.0, 1.0 - total[: pool.size].sum()))))
    return out


def _caveats(plan: Plan, population: int | None) -> list[str]:
    """Everything the network leaves out: the plan's approximations, and the pools that can
    fill up under this population."""
    return [str(a) for a in (*plan.approximations, *plan.pool_limits(population))]


def solve_model(model: Any, plan: Plan | None = None) -> Answer:
    """The product-form answer for the model's compiled plan (compiled here when not given:
    `model`, a `sim.model.schema.Model`, is handed to `compile_plan` and not read here)."""
    plan = compile_plan(model) if plan is None else plan
    load = _offered_load(plan)
    if load.no_steady_state is not None:
        raise NotProductForm(load.no_steady_state)
    if plan.classes:
        return _with_classes(plan, load)
    if load.population is not None:
        return _closed(plan, load.population, load.think_s)
    assert load.rate_per_s is not None  # open: Poisson arrivals, or sessions
    return _open(plan, load.rate_per_s)


def _offered_load(plan: Plan) -> OfferedLoad:
    assert plan.stack is not None  # compile_plan always decides the stack
    return plan.stack.offered_load


# Exact MVA runs one step per user; with multi-server stations each step is O(N) too.  Beyond
# these populations (about a second of work) the answer is Schweitzer-Bard's, and says so.
EXACT_LIMIT = 50_000
EXACT_LIMIT_MULTISERVER = 5_000


def _closed(plan: Plan, population: int, think: float) -> Answer:
    demands = plan.stations
    network = ClosedNetwork(
        tuple(
            Station(d.name, d.demand_s, "delay" if d.servers is None else "queue", d.servers or 1)
            for d in demands
        ),
        think=think,
    )
    multiserver = any(d.servers is not None and d.servers > 1 for d in demands)
    limit = EXACT_LIMIT_MULTISERVER if multiserver else EXACT_LIMIT
    caveats = _caveats(plan, population)
    if population <= limit:
        result = exact_mva(network, population)
        row = population - 1
        x, response = float(result.throughput[row]), float(result.response[row])
        utilization = [float(u) for u in result.utilization[row]]
        residence = [float(r) for r in result.residence[row]]
        queue = [float(q) for q in result.queue_length[row]]
        method = "exact MVA"
    else:
        x, response, q = schweitzer_mva(network, population)
        queue = [float(v) for v in q]
        residence = [v / x if x > 0 else 0.0 for v in queue]
        utilization = [
            x * d.demand_s / d.servers if d.servers is not None else 0.0 for d in demands
        ]
        method = "Schweitzer-Bard approximate MVA"
        caveats.append(
            f"a population of {population}: beyond N = {limit} the exact recursion is too slow; "
            "Schweitzer-Bard's approximation"
            + (" with Seidmann's for multi-server stations" if multiserver else "")
        )
    stations = [
        StationAnswer(
            d.name,
            "delay" if d.servers is None else "queue",
            d.servers,
            d.demand_s,
            0.0 if d.servers is None else utilization[k],
            residence[k],
            queue[k],
        )
        for k, d in enumerate(demands)
    ]
    bounds = asymptotic_bounds(network, population)
    return Answer(
        model=plan.name,
        network=f"closed network, N = {population}, Z = {think:g} s ({method})",
        exact=not caveats,
        caveats=caveats,
        throughput_per_s=x,
        response_mean_s=response,
        stations=stations,
        bounds={k: float(v) for k, v in asdict(bounds).items()},
    )


def _open(plan: Plan, rate: float) -> Answer:
    stations = []
    for d in plan.stations:
        if d.servers is None:
            stations.append(
                StationAnswer(d.name, "delay", None, d.demand_s, 0.0, d.demand_s, rate * d.demand_s)
            )
            continue
        load = rate * d.demand_s / d.servers
        if load >= 1:
            raise NotProductForm(
                f"{d.name} is offered {load:.3g} of its {d.servers} core(s): no steady state "
                f"(the queue grows without bound); raise {d.path}"
            )
        # A processor-sharing station with c cores has the M/M/c queue-length distribution,
        # whatever the demand distribution (it is a symmetric queue, Kelly 1979).
        metrics = mmc(rate, 1.0 / d.demand_s, d.servers)
        stations.append(
            StationAnswer(
                d.name,
                "queue",
                d.servers,
                d.demand_s,
                load,
                metrics.mean_response,
                metrics.mean_in_system,
            )
        )
    caveats = _caveats(plan, None)
    for path, size, full in _open_pool_overflow(plan, stations, rate):
        if full > 1e-4:
            caveats.append(
                f"{path} = {size} is full with probability {full:.2g} in the unbounded network; "
                "slots held across downstream calls (nested holds) are not product-form"
            )
    return Answer(
        model=plan.name,
        network=f"open network, Poisson arrivals at {rate:g} requests/s (Jackson)",
        exact=not caveats,
        caveats=caveats,
        throughput_per_s=rate,
        response_mean_s=sum(s.residence_s for s in stations),
        stations=stations,
    )


# ------------------------------------------------------------------------ request classes
def _with_classes(plan: Plan, load: OfferedLoad) -> Answer:
    """A model with request classes.  Users that each keep one class (`mix_by = "user"`) are
    separate chains with fixed populations: multi-class MVA.  Users that change class per
    request (a mix, a script) form one chain whose customers switch class; its throughput and
    queues are those of one class with the mix-weighted demands (BCMP with class switching),
    and a class's residence at a processor-sharing station is its demand times the station's
    residence per unit of demand.  Open classes likewise share an open network."""
    if load.users_per_class is not None:
        return _chains(plan, load.users_per_class, load.think_s)
    fractions = load.class_fractions
    if load.population is not None:
        answer = _closed(plan, load.population, load.class_think_s)
        answer.network += ", one chain: each request draws its class"
    else:
        assert load.rate_per_s is not None  # open: Poisson arrivals, or sessions
        answer = _open(plan, load.rate_per_s)
    stretch = [s.residence_s / s.demand_s if s.demand_s > 0 else 0.0 for s in answer.stations]
    for c, name in enumerate(plan.classes):
        response = sum(d.class_demands[c] * f for d, f in zip(plan.stations, stretch))
        answer.classes.append(
            ClassAnswer(name, answer.throughput_per_s * fractions[c], float(response))
        )
    return answer


def _chains(plan: Plan, populations: tuple[int, ...], think_s: float) -> Answer:
    demands = plan.stations
    network = MultiClassNetwork(
        tuple(d.name for d in demands),
        np.array([d.class_demands for d in demands]).reshape(len(demands), len(populations)),
        tuple(d.servers for d in demands),
        (think_s,) * len(populations),
    )
    result = solve_closed(network, populations)
    total = float(result.throughput.sum())
    stations = [
        StationAnswer(
            d.name,
            "delay" if d.servers is None else "queue",
            d.servers,
            float((result.throughput * network.demands[k]).sum() / total),
            0.0 if d.servers is None else float(result.utilization[k]),
            float((result.throughput * result.residence[k]).sum() / total),
            float(result.queue_length[k].sum()),
        )
        for k, d in enumerate(demands)
    ]
    caveats = _caveats(plan, sum(populations))
    exact = result.method.startswith("exact")
    if not exact:
        caveats.append(
            f"{state_space(populations):.3g} population vectors exceed the exact recursion's "
            "limit: Schweitzer-Bard approximate MVA (typically within a few per cent)"
        )
    return Answer(
        model=plan.name,
        network=f"closed multi-class network, N = {populations} by class, Z = {think_s:g} s "
        f"({result.method})",
        exact=not caveats,
        caveats=caveats,
        throughput_per_s=total,
        response_mean_s=float((result.throughput * result.response).sum() / total),
        stations=stations,
        classes=[
            ClassAnswer(name, float(result.throughput[c]), float(result.response[c]), n)
            for c, (name, n) in enumerate(zip(plan.classes, populations))
        ],
    )
