"""Reject open workloads that no server could keep up with, before simulating them.

With an open workload, a station whose offered load reaches its capacity has a queue that
grows without bound: the run would only report how long it was allowed to run.  The check
uses the utilisation law (U = X * D, Denning & Buzen 1978) on mean demands.  Client timeouts
do not help (servers keep working on abandoned requests); a *bounded* queue in front of the
overloaded station, or upstream of it while holding its slot, does: requests are refused
and the system stays stable, so such models are accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from sim.model.classes import session_requests
from sim.model.parts.database import HeldResource
from sim.model.plan import Plan, compile_plan
from sim.model.schema import Model, OpenClients, SessionClients
from sim.random.distributions import as_distribution


@dataclass(frozen=True)
class Overload:
    path: str  # dotted path of the parameter to change
    utilization: float
    detail: str


def offered_request_rate(model: Model) -> float | None:
    """Mean request rate of an unbounded open or partly-open workload; None otherwise."""
    clients = model.clients
    if model.finite:
        return None
    if isinstance(clients, OpenClients):
        if clients.rate_per_s is not None:
            return clients.rate_per_s
        if clients.interarrival is not None:
            mean = as_distribution(clients.interarrival).mean
            return 1.0 / mean if mean > 0 else float("inf")
        assert clients.schedule is not None  # validated: one of the three is given
        total = sum(step.duration_s for step in clients.schedule)
        return sum(step.rate_per_s * step.duration_s for step in clients.schedule) / total
    if isinstance(clients, SessionClients):
        return clients.session_rate_per_s * session_requests(clients)
    return None


def overloads(model: Model, plan: Plan | None = None) -> list[Overload]:
    """Stations offered at least their capacity by an unbounded open workload (by the plan's
    nodes and their shares)."""
    rate = offered_request_rate(model)
    if rate is None:
        return []
    found: list[Overload] = []
    proxy = model.proxy
    proxy_bounded = (
        proxy is not None and proxy.workers is not None and proxy.listen_backlog is not None
    )
    if model.clients.host is not None:
        generator = model.clients.host
        per_request = as_distribution(generator.demand).mean
        if not model.clients.keep_alive:
            per_request += as_distribution(generator.connection_demand).mean
        u = rate * per_request / (generator.cores * generator.speed)
        if u >= 1:
            found.append(
                Overload(
                    "clients.host.cores",
                    u,
                    f"the load generator's CPU is offered {u:.3g} of its {generator.cores} core(s)",
                )
            )
    if model.classes:
        return found + _class_overloads(
            compile_plan(model) if plan is None else plan, rate, proxy_bounded
        )
    if proxy is not None:
        u = rate * as_distribution(proxy.demand).mean / (proxy.cores * proxy.speed)
        if u >= 1 and not proxy_bounded:
            found.append(
                Overload(
                    "proxy.cores", u, f"proxy CPU offered {u:.3g} of its {proxy.cores} core(s)"
                )
            )
    plan = compile_plan(model) if plan is None else plan
    groups = list({node.group: node.spec for node in plan.nodes}.items())
    adaptive = any(node.share is None for node in plan.nodes)
    # not adaptive: every node has a share
    share = None if adaptive else {node.group: cast(float, node.share) for node in plan.nodes}
    db_rate = 0.0
    if share is None:  # a load-aware policy: stable up to the pooled capacity of the members
        found += _pooled(model, rate, groups)
    for g, group in groups:
        node_rate = rate * share[g] if share is not None else 0.0
        bounded = proxy_bounded or (group.threads is not None and group.accept_queue is not None)
        u = node_rate * as_distribution(group.demand).mean / (group.cores * group.speed)
        if u >= 1 and not bounded:
            found.append(
                Overload(
                    f"backends.{g}.cores",
                    u,
                    f"each '{group.name}' node's CPU is offered {u:.3g} of its {group.cores} core(s)",
                )
            )
        if group.threads is not None and not bounded:
            hold = (
                as_distribution(group.demand).mean / group.speed
                + as_distribution(group.io_wait).mean
            )
            if model.database is not None and group.db_calls:
                database = model.database
                hold += group.db_calls * (
                    as_distribution(database.demand).mean / database.speed
                    + as_distribution(database.disk_demand).mean
                )
            usable = group.request_threads
            assert usable is not None  # threads is finite here
            u_threads = node_rate * hold / usable
            if u_threads >= 1:
                found.append(
                    Overload(
                        f"backends.{g}.threads",
                        u_threads,
                        f"each '{group.name}' node needs {u_threads * usable:.3g} busy threads "
                        f"on average but has {usable}",
                    )
                )
        if share is None:
            db_rate += rate * _capacity_share(groups, g) * group.db_calls
        else:
            db_rate += min(node_rate * group.count, rate) * group.db_calls
    db = model.database
    if db is not None and db_rate > 0:
        u = db_rate * as_distribution(db.demand).mean / (db.cores * db.speed)
        if u >= 1 and not proxy_bounded:
            found.append(
                Overload(
                    "database.cores",
                    u,
                    f"the database CPU is offered {u:.3g} of its {db.cores} core(s)",
                )
            )
        # what the mechanisms around its calls hold (`sim.model.parts.database.CallMechanism`)
        for held in _held(plan):
            u_held = db_rate * held.share * held.hold_s / held.servers
            if u_held >= 1 and not proxy_bounded:
                found.append(Overload(held.name, u_held, held.overloaded.format(u=u_held)))
        u_disk = db_rate * as_distribution(db.disk_demand).mean / db.disks
        if u_disk >= 1 and not proxy_bounded:
            found.append(
                Overload(
                    "database.disks",
                    u_disk,
                    f"the database disks are offered {u_disk:.3g} of their {db.disks} spindle(s)",
                )
            )
    return found


def _held(plan: Plan) -> list[HeldResource]:
    """What the mechanisms around the database's calls hold (the shared lock's permits)."""
    database = None if plan.stack is None else plan.stack.database
    if database is None:
        return []
    return [held for m in database.mechanisms for held in m.resources(database)]


def _node_capacity(group) -> float:
    """Requests per second one node's CPU can serve."""
    demand = as_distribution(group.demand).mean
    return float("inf") if demand == 0 else group.cores * group.speed / demand


def _capacity_share(groups, g: int) -> float:
    total = sum(_node_capacity(group) * group.count for _, group in groups)
    return _node_capacity(groups[[i for i, _ in groups].index(g)][1]) / total if total else 0.0


def _pooled(model: Model, rate: float, groups) -> list[Overload]:
    capacity = sum(_node_capacity(group) * group.count for _, group in groups)
    u = rate / capacity if capacity else 0.0
    proxy = model.proxy
    bounded = proxy is not None and proxy.workers is not None and proxy.listen_backlog is not None
    if u >= 1 and not bounded:
        return [
            Overload(
                "backends",
                u,
                f"the backend nodes together are offered {u:.3g} of their CPU capacity "
                f"(policy {model.balancer.policy!r} can use all of it, but no more)",
            )
        ]
    return []


def _class_overloads(plan: Plan, rate: float, proxy_bounded: bool) -> list[Overload]:
    """With request classes: every station's utilisation from the plan's mean demand per
    request, the classes weighted by their shares of the requests (U = X * sum_c f_c D_c)."""
    if proxy_bounded:
        return []
    found = []
    for station in plan.stations:
        if station.servers is None:
            continue
        u = rate * station.demand_s / station.servers
        if u >= 1:
            found.append(
                Overload(
                    station.path,
                    u,
                    f"{station.name} is offered {u:.3g} of its {station.servers} server(s) by the "
                    "class mix",
                )
            )
    return found
