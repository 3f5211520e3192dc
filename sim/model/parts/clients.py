"""The clients (`[clients]`: JMeter's thread group, an open arrival process, partly-open
sessions, or ApacheBench) as the engines build them: who they are, and the distributions their
random streams draw (`clients.think`, `clients.arrivals`, `clients.session_length`,
`clients.connect`, `clients.host.*`) -- decided once, so that both engines draw the same
numbers from the same streams."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.features import Declaration, StackPart, approximate, exact, refused
from sim.model.parts.request_classes import RequestClasses, request_classes
from sim.random.distributions import Distribution, Exponential, as_distribution
from sim.tiers.clients.populations import client_class


@dataclass(frozen=True)
class ClientsPart(StackPart):
    """The load generator.  Each distribution is drawn on the stream named in its comment
    (`Streams.generator(purpose)`).  Its kind's feature (`clients.<kind>`) is declared on its
    class (`sim.tiers.clients.populations`)."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "clients.finite": approximate(
            "a finite workload: the answer is its steady state (start-up and drain excluded)"
        ),
        "clients.ab.repeat": approximate(
            "repeated ab runs (batch.K.*): the answer is one run's steady state"
        ),
        "clients.ramp": refused("a changing population has no steady state to solve"),
        "clients.schedule": refused("a changing arrival rate has no steady state to solve"),
        "clients.keep_alive": exact(
            "reusing a connection changes only which requests pay its set-up; where a "
            "persistent connection holds a worker, the approximation `clients.keep_alive` is "
            "named"
        ),
        "clients.host": exact("the load generator's CPU: one more processor-sharing station"),
        "clients.timeouts": approximate(
            "timeouts and retries are ignored (no abandonment, no extra load in the network)"
        ),
        "clients.connect": exact("the connection set-up: a delay station"),
    }

    kind: str  # clients.kind: closed, open, sessions, ab
    # closed: JMeter's threads (`clients.users`); ab: `-c` concurrency; else None
    users: int | None
    think: Distribution | None  # `clients.think` (closed, sessions)
    # `clients.arrivals`: an open workload's interarrival times (Poisson at `rate_per_s`, or
    # `interarrival`), a unit exponential scaled by a `schedule`'s rate, or the sessions'
    arrivals: Distribution | None
    schedule: tuple[tuple[float, float], ...] | None  # (rate [1/s], duration [s]) steps
    # a finite workload: `total_requests`, `total_sessions`, ab's `-n`; None: unbounded
    total: int | None
    requests_per_user: int | None  # closed: each user's requests, then it stops
    ramp: Any  # closed: `clients.ramp`'s steps (schema values), or None
    repeat: int  # ab: the run repeated this many times (batch.K.*)
    # sessions: each session's length, fixed (`fixed_length`) or geometric with this success
    # probability on `clients.session_length`; both None: a script's path is the session
    session_length_fixed: int | None
    session_length_p: float | None
    connect: Distribution | None  # `clients.connect`: the TCP set-up; None when it costs nothing
    # the load generator's own CPU work (`clients.host.demand`, `clients.host.connection_demand`,
    # None when it costs nothing); no host, None both
    host_demand: Distribution | None
    host_connection_demand: Distribution | None
    # the common settings, passed on as the schema's values
    timeout_s: float | None
    retry: Any
    tcp: Any
    keep_alive: bool
    # a finite workload (ab `-n`, `clients.requests_per_user`, `clients.total_*`)
    finite: bool
    # the request classes and how the clients pick one (`sim.model.parts.request_classes`)
    classes: RequestClasses

    def features(self) -> dict[str, str]:
        out = {client_class(self.kind).feature: f"clients.kind = {self.kind!r}"}
        if self.finite:
            out["clients.finite"] = "a finite workload"
        if self.repeat > 1:
            out["clients.ab.repeat"] = f"clients.repeat = {self.repeat} (batch.K.* metrics)"
        if self.ramp:
            out["clients.ramp"] = "clients.ramp"
        if self.schedule is not None:
            out["clients.schedule"] = "clients.schedule"
        out.update(self.classes.features())
        if self.keep_alive:
            out["clients.keep_alive"] = "clients.keep_alive (persistent connections)"
        if self.host_demand is not None:
            out["clients.host"] = "clients.host (the load generator's CPU)"
        if self.timeout_s is not None or self.retry.max_retries:
            out["clients.timeouts"] = "clients.timeout_s / clients.retry"
        if self.connect is not None:
            out["clients.connect"] = "clients.connect"
        return out


def _costly(spec: Any) -> Distribution | None:
    """The distribution of `spec`, or None when it is absent or costs nothing."""
    if spec is None:
        return None
    distribution = as_distribution(spec)
    return distribution if distribution.mean > 0 else None


def clients_part(model: Any) -> ClientsPart:
    """The clients of `model` (a `sim.model.schema.Model`)."""
    spec = model.clients
    kind = spec.kind
    users: int | None = None
    think: Distribution | None = None
    arrivals: Distribution | None = None
    schedule: tuple[tuple[float, float], ...] | None = None
    total: int | None = None
    per_user: int | None = None
    ramp: Any = None
    fixed: int | None = None
    p: float | None = None
    repeat = 1
    if kind == "closed":
        users, think = spec.users, as_distribution(spec.think)
        per_user, ramp = spec.requests_per_user, spec.ramp
    elif kind == "open":
        if spec.rate_per_s is not None:
            arrivals = Exponential(1.0 / spec.rate_per_s)
        elif spec.interarrival is not None:
            arrivals = as_distribution(spec.interarrival)
        else:  # validated: exactly one of rate_per_s, interarrival and schedule is given
            arrivals = Exponential(1.0)
            schedule = tuple((step.rate_per_s, step.duration_s) for step in spec.schedule)
        total = spec.total_requests
    elif kind == "sessions":
        arrivals = Exponential(1.0 / spec.session_rate_per_s)
        think = as_distribution(spec.think)
        total = spec.total_sessions
        if spec.requests_per_session is not None and spec.fixed_length:
            fixed = int(spec.requests_per_session)
        elif spec.requests_per_session is not None:
            p = 1.0 / spec.requests_per_session
    else:  # ab
        users, total, repeat = spec.concurrency, spec.requests, spec.repeat
    host = spec.host
    return ClientsPart(
        kind=kind,
        users=users,
        think=think,
        arrivals=arrivals,
        schedule=schedule,
        total=total,
        requests_per_user=per_user,
        ramp=ramp,
        repeat=repeat,
        session_length_fixed=fixed,
        session_length_p=p,
        connect=_costly(spec.connect),
        host_demand=None if host is None else as_distribution(host.demand),
        host_connection_demand=None if host is None else _costly(host.connection_demand),
        timeout_s=spec.timeout_s,
        retry=spec.retry,
        tcp=spec.tcp,
        keep_alive=spec.keep_alive,
        finite=bool(model.finite),
        classes=request_classes(model),
    )
