"""How much a run will simulate, estimated before it starts, so that a run of hours (a
`duration_s` of 1e9, `run.requests = 1e12`) is refused or announced up front, not discovered
by waiting.

The estimate counts requests over all replications: the offered rate of an open workload,
the asymptotic bound of a closed one (X <= min(N / (Z + D), c_k / D_k), Denning & Buzen) times
the simulated time, or a finite workload's own count; plus the periodic events that grow
with simulated time however light the load (`--timeseries` rows, balancer reports, JVM
session sweeps, rate-schedule steps).  The bound overestimates a closed workload that waits
on pools or timeouts, never underestimates it: a warning may be early, a refusal is sure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim.model.classes import session_requests, think_per_request
from sim.model.plan import Plan, compile_plan
from sim.model.schema import AbClients, ClosedClients, Model, OpenClients, SessionClients
from sim.model.stability import offered_request_rate

# Requests the engine simulates per second of wall time on one core (16 000 measured on the
# demo model); used only to say roughly how long a run would take.
REQUESTS_PER_SECOND = 10_000
# Beyond this many events a run takes minutes: say so before starting.
WARN_EVENTS = 3_000_000


@dataclass(frozen=True)
class Work:
    events: float  # requests plus periodic events, over all replications (inf: without end)
    requests: float
    replications: int
    basis: str  # how the requests were counted, for the message
    fix: str  # the parameter to change to simulate less

    @property
    def minutes(self) -> float:
        return self.events / REQUESTS_PER_SECOND / 60

    def describe(self) -> str:
        if math.isinf(self.events):
            return f"the run would never end: {self.basis}"
        if self.minutes >= 120:
            took = f"{number(self.minutes / 60)} hours"
        elif self.minutes >= 1:
            took = f"{self.minutes:.0f} minutes"
        else:
            took = f"{self.minutes * 60:.0f} s"
        return f"about {number(self.events)} events to simulate ({self.basis}), roughly {took} on one core"


def estimate(
    model: Model,
    plan: Plan | None = None,
    *,
    replications: int | None = None,
    timeseries: bool = False,
) -> Work:
    """The work of `model`'s run (`replications` as the run will use, default the model's)."""
    run = model.run
    reps = replications or run.replications
    if replications is None and run.precision is not None:
        reps = max(reps, 2)  # the precision rule adds replications: at least these run
    plan = compile_plan(model) if plan is None else plan
    rate, rate_basis = _throughput(model, plan)
    warm = float(run.warmup) if isinstance(run.warmup, float) and not model.finite else 0.0
    if model.finite:
        count, count_basis = _finite_requests(model)
        simulated_s = min(count / rate if rate > 0 else run.max_duration_s, run.max_duration_s)
        requests = count
        basis = count_basis
        fix = "lower " + count_basis.split(" = ")[0]
    elif run.duration_s is not None:
        simulated_s = warm + run.duration_s
        requests = rate * simulated_s if rate > 0 else 0.0
        if run.requests is not None:
            requests = min(requests, run.requests + (rate * warm if warm > 0 else 0.0))
        basis = f"{rate_basis} x run.duration_s = {number(run.duration_s)} s"
        fix = "lower run.duration_s"
        if math.isinf(rate) and run.requests is None:
            return Work(math.inf, math.inf, reps, rate_basis, _zero_time_fix(model))
    else:
        assert run.requests is not None  # validated: a steady state has one of the two
        requests = run.requests + (rate * warm if rate > 0 and warm > 0 else 0.0)
        simulated_s = min(requests / rate, run.max_duration_s) if rate > 0 else run.max_duration_s
        basis = f"run.requests = {number(run.requests)}"
        fix = "lower run.requests"
    ticks = _periodic(model, plan, simulated_s, timeseries)
    if math.isnan(requests):
        requests = math.inf
    per_replication = requests + ticks
    if ticks > requests:
        basis, fix = _ticks_basis(model, plan, simulated_s, timeseries)
    return Work(
        per_replication * reps, requests * reps, reps, f"{basis}, {reps} replication(s)", fix
    )


def _throughput(model: Model, plan: Plan) -> tuple[float, str]:
    """An upper bound of the request rate [1/s], and how it was found."""
    clients = model.clients
    if isinstance(clients, (OpenClients, SessionClients)):
        rate = offered_request_rate(model)
        if rate is None:  # a finite open workload: its rate is the same
            if isinstance(clients, OpenClients):
                rate = _open_rate(clients)
            else:
                rate = clients.session_rate_per_s * session_requests(clients)
        if math.isinf(rate):
            return rate, "arrivals 0 s apart: requests without end at time 0"
        return rate, f"{number(rate)} requests/s offered"
    population = clients.users if isinstance(clients, ClosedClients) else clients.concurrency
    think = think_per_request(model) if isinstance(clients, ClosedClients) else 0.0
    demand = sum(s.demand_s for s in plan.stations)
    bounds = [population / (think + demand) if think + demand > 0 else math.inf]
    bounds += [s.servers / s.demand_s for s in plan.stations if s.servers and s.demand_s > 0]
    rate = min(bounds)
    if math.isinf(rate):
        return rate, (
            f"a request takes no time (no think time, every demand 0): clients.users = {population} "
            "would send requests without end at time 0"
        )
    return rate, f"at most {number(rate)} requests/s from {population} users"


def _open_rate(clients: OpenClients) -> float:
    from sim.random.distributions import as_distribution

    if clients.rate_per_s is not None:
        return clients.rate_per_s
    if clients.interarrival is not None:
        mean = as_distribution(clients.interarrival).mean
        return 1.0 / mean if mean > 0 else math.inf
    assert clients.schedule is not None
    total = sum(step.duration_s for step in clients.schedule)
    return sum(step.rate_per_s * step.duration_s for step in clients.schedule) / total


def _finite_requests(model: Model) -> tuple[float, str]:
    clients = model.clients
    if isinstance(clients, AbClients):
        return float(clients.requests * clients.repeat), (
            f"clients.requests = {clients.requests} x clients.repeat = {clients.repeat}"
        )
    if isinstance(clients, ClosedClients):
        assert clients.requests_per_user is not None
        return float(clients.users * clients.requests_per_user), (
            f"clients.requests_per_user = {clients.requests_per_user} x clients.users = "
            f"{clients.users}"
        )
    if isinstance(clients, OpenClients):
        assert clients.total_requests is not None
        return float(clients.total_requests), f"clients.total_requests = {clients.total_requests}"
    assert isinstance(clients, SessionClients) and clients.total_sessions is not None
    per = session_requests(clients)
    return clients.total_sessions * per, (
        f"clients.total_sessions = {clients.total_sessions} x {per:g} requests"
    )


def _intervals(model: Model, plan: Plan, timeseries: bool) -> list[tuple[str, float, int]]:
    """(parameter, period [s], how many run) of every periodic event the run schedules."""
    out: list[tuple[str, float, int]] = []
    if timeseries:
        out.append(("run.timeseries_interval_s", model.run.timeseries_interval_s, 1))
    balancer = model.balancer
    dispatched = len(plan.nodes) > 1 or any(group.events for group in model.backends)
    if balancer.report_interval_s is not None and dispatched:  # a balancer is built
        out.append(("balancer.report_interval_s", balancer.report_interval_s, 1))
    for node in plan.nodes:
        if node.spec.jvm is not None:
            out.append((f"{node.path}.jvm.expiry_check_s", node.spec.jvm.expiry_check_s, 1))
    clients = model.clients
    if isinstance(clients, OpenClients) and clients.schedule:
        cycle = sum(step.duration_s for step in clients.schedule)
        out.append(("clients.schedule", cycle / len(clients.schedule), 1))
    return out


def _periodic(model: Model, plan: Plan, simulated_s: float, timeseries: bool) -> float:
    return sum(
        count * simulated_s / period for _, period, count in _intervals(model, plan, timeseries)
    )


def _ticks_basis(model: Model, plan: Plan, simulated_s: float, timeseries: bool) -> tuple[str, str]:
    intervals = _intervals(model, plan, timeseries)
    name, period, _count = max(intervals, key=lambda entry: entry[2] / entry[1])
    return (
        f"{name} = {number(period)} s over {number(simulated_s)} simulated s",
        f"raise {name}, or simulate less time",
    )


def _zero_time_fix(model: Model) -> str:
    if isinstance(model.clients, ClosedClients):
        return "give clients.think or a demand a value above zero, or end the run by run.requests"
    return "give clients.interarrival a mean above zero, or end the run by run.requests"


def number(value: float) -> str:
    """3 significant digits, exponents without their plus sign and zeros (2e10, not 2e+10)."""
    text = f"{value:.3g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def check(work: Work, limit: float | None) -> str | None:
    """Why the run is refused (None: it may run).  `limit` is run.max_events."""
    if math.isinf(work.events):
        return f"{work.describe()}; {work.fix}"
    if limit is not None and work.events > limit:
        return (
            f"{work.describe()}, beyond run.max_events = {number(limit)}; {work.fix} (or the "
            "replications), or raise run.max_events to run it anyway"
        )
    return None


def warning(work: Work) -> str | None:
    """A sentence to print before a long run starts (None: it is short)."""
    if work.events < WARN_EVENTS or math.isinf(work.events):
        return None
    return f"{work.describe()}; {work.fix} for a quicker answer"
