"""The offered load: what the clients ask of the stack, as a queueing network sees it -- a
closed population with its think time, or an open stream of requests per second -- and, when
there is no steady state to solve, why.

`tiersim solve` reads this part instead of switching on the clients' kinds itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.model.classes import (
    request_fractions,
    session_requests,
    think_per_request,
    users_per_class,
)
from sim.random.distributions import as_distribution


@dataclass(frozen=True)
class OfferedLoad:
    """The clients as a network's customers.

    Exactly one of `population` (a closed network: JMeter's threads `clients.users`, or ab's
    `-c` concurrency) and `rate_per_s` (an open one: Poisson arrivals `clients.rate_per_s`,
    or sessions at `clients.session_rate_per_s` times their mean length) is set, unless
    `no_steady_state` says why the load has neither."""

    kind: str  # clients.kind
    population: int | None  # closed users (or ab's concurrency); None: open
    think_s: float  # mean think time per request of a closed population [s]; 0 for ab
    rate_per_s: float | None  # open arrivals [requests/s]; None: closed
    no_steady_state: str | None = None  # the setting that leaves no steady state, and why
    # with request classes ([[classes]]): each class's share of the requests, each class's
    # own users (`mix_by = "user"`), and the think time per request over the classes' steps
    class_fractions: tuple[float, ...] = ()
    users_per_class: tuple[int, ...] | None = None
    class_think_s: float = 0.0


def offered_load(model: Any) -> OfferedLoad:
    """The offered load of `model` (a `sim.model.schema.Model`)."""
    clients = model.clients
    kind = clients.kind
    population: int | None = None
    think = 0.0
    rate: float | None = None
    refused: str | None = None
    if kind == "closed":
        population = clients.users
        think = as_distribution(clients.think).mean
        if clients.ramp:
            refused = "clients.ramp: a changing population has no steady state to solve"
    elif kind == "ab":
        population = clients.concurrency
    elif kind == "open":
        rate = clients.rate_per_s
        if rate is None:
            which = "clients.schedule" if clients.schedule is not None else "clients.interarrival"
            refused = f"{which}: only Poisson arrivals (clients.rate_per_s) are product-form"
    elif kind == "sessions":
        rate = clients.session_rate_per_s * session_requests(clients)
    else:
        refused = f"clients.kind = {kind} has no analytic counterpart"
    if not model.classes:
        return OfferedLoad(kind, population, think, rate, refused)
    return OfferedLoad(
        kind,
        population,
        think,
        rate,
        refused,
        class_fractions=request_fractions(model),
        users_per_class=users_per_class(model),
        class_think_s=0.0 if kind == "ab" else think_per_request(model),
    )
