"""Request classes and session scripts: the model file's `[[classes]]`, `clients.mix` and
`[clients.script]`.

Every application is a mix: a wiki serves page views, searches and edits whose demands are an
order of magnitude apart; a shop's users walk through a session (home, login, browse, add to
cart, buy).  A class names one kind of request and what it asks of each tier; whatever it
leaves out is the tier's own parameter (`proxy.demand`, `backends.N.demand`, `backends.N.db_calls`,
`database.demand`), so the tiers keep the defaults and a class states only how it differs.
A model without classes has one implicit class and behaves exactly as before.

Clients pick a class per request from `clients.mix` (probabilities; `mix_by = "user"` instead
gives each user one class for good: fixed populations per class, a multi-chain network), or
follow `[clients.script]`: an ordered list of steps, each a class, with think times between
them, optionally with a Markov chain between the steps -- the customer behaviour model graph
(CBMG) of TPC-W (Menascé & Almeida, *Scaling for E-Business*, 2000, ch. 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sim.random.distributions import DistributionSpec, as_distribution

END = "end"  # the script's absorbing state: the session is over
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )


class ProxyWork(_Strict):
    """What one request of the class asks of the front proxy."""

    demand: DistributionSpec | None = Field(
        None, description="proxy CPU demand per request of this class [s]; none = proxy.demand"
    )


class BackendWork(_Strict):
    """What one request of the class asks of a backend node (every group)."""

    demand: DistributionSpec | None = Field(
        None,
        description="CPU demand per request of this class on a node [s]; none = backends.N.demand",
    )
    db_calls: int | None = Field(
        None,
        ge=0,
        le=1000,
        description="database calls per request of this class; none = backends.N.db_calls",
    )


class DatabaseWork(_Strict):
    """What one database call of the class asks of the database host."""

    demand: DistributionSpec | None = Field(
        None, description="CPU demand per database call of this class [s]; none = database.demand"
    )


class RequestClass(_Strict):
    """One kind of request ([[classes]]): its demand per tier, where it differs from the tier's."""

    name: str = Field(
        ...,
        pattern=NAME_PATTERN,
        description="class name, as in clients.mix, the script's steps and class.NAME.* metrics",
    )
    served_by: Literal["backend", "proxy"] = Field(
        "backend",
        description="the tier that answers it: backend (forwarded, the normal path) or proxy (Apache "
        "serves it itself, e.g. static files; the model needs a proxy)",
    )
    proxy: ProxyWork = Field(default_factory=ProxyWork, description="its proxy work")
    backend: BackendWork = Field(default_factory=BackendWork, description="its work on a node")
    database: DatabaseWork = Field(
        default_factory=DatabaseWork, description="its work per database call"
    )
    writes_session: bool | None = Field(
        None,
        description="true: every request of this class dirties the replicated state (it replicates); "
        "false: it never does; none = cluster.replication's trigger fractions decide",
    )


class Step(_Strict):
    """One step of a session script: a request of a class, then a think time."""

    name: str = Field(..., pattern=NAME_PATTERN, description="step name (e.g. home, login, buy)")
    request_class: str | None = Field(
        None,
        alias="class",
        description="the class of the step's request (a declared class's name); none = the step's name",
    )
    think: DistributionSpec | None = Field(
        None,
        description="think time after this step's response, before the next request [s]; "
        "none = clients.think",
    )

    @property
    def class_name(self) -> str:
        return self.request_class or self.name


class Script(_Strict):
    """A session as a sequence of steps ([clients.script]), in order, or as a Markov chain
    between them: the customer behaviour model graph of TPC-W (Menascé & Almeida 2000)."""

    steps: list[Step] = Field(
        ..., min_length=1, description="the steps; a session starts at the first"
    )
    transitions: dict[str, dict[str, float]] | None = Field(
        None,
        description='Markov chain: step -> {next step or "end": probability}, e.g. '
        "{home = {search = 0.6, end = 0.4}}; a step without a row goes on to the next listed step "
        "(the last one ends the session); none = every session runs the steps in order",
    )

    @model_validator(mode="after")
    def _chain(self) -> Script:
        names = [step.name for step in self.steps]
        if len(set(names)) != len(names):
            raise ValueError(f"script step names must be unique, got {names}")
        if END in names:
            raise ValueError(f'"{END}" is the end of a session; name the step otherwise')
        for source, row in (self.transitions or {}).items():
            if source not in names:
                raise ValueError(
                    f"transitions.{source}: no step of that name (steps: {', '.join(names)})"
                )
            unknown = [t for t in row if t not in names and t != END]
            if unknown:
                raise ValueError(
                    f"transitions.{source}.{unknown[0]}: no step of that name; targets are the "
                    f'steps ({", ".join(names)}) or "{END}"'
                )
            if any(p < 0 for p in row.values()) or not math.isclose(
                sum(row.values()), 1.0, abs_tol=1e-9
            ):
                raise ValueError(
                    f"transitions.{source}: probabilities must be >= 0 and sum to 1, got "
                    f"{sum(row.values()):g}"
                )
        # every session must end: from each step reachable from the first, "end" is reachable
        successors = self.successors()
        reach = {i: {j for j, p in successors[i] if p > 0} for i in range(len(names))}
        seen, frontier = {0}, [0]
        while frontier:
            for j in reach[frontier.pop()]:
                if j is not None and j not in seen:
                    seen.add(j)
                    frontier.append(j)
        for i in sorted(seen):
            can_end, visited, todo = False, {i}, [i]
            while todo and not can_end:
                for j in reach[todo.pop()]:
                    if j is None:
                        can_end = True
                    elif j not in visited:
                        visited.add(j)
                        todo.append(j)
            if not can_end:
                raise ValueError(
                    f"transitions: a session at step {names[i]!r} can never end; give some step "
                    f'it leads to a probability of going to "{END}"'
                )
        return self

    def successors(self) -> list[list[tuple[int | None, float]]]:
        """Per step: (next step index or None for the end, probability)."""
        names = [step.name for step in self.steps]
        out = []
        for i, step in enumerate(self.steps):
            row = (self.transitions or {}).get(step.name)
            if row is None:
                out.append([(i + 1 if i + 1 < len(names) else None, 1.0)])
            else:
                out.append([(None if t == END else names.index(t), p) for t, p in row.items()])
        return out

    def visits(self) -> list[float]:
        """Mean visits to each step per session (the CBMG's visit ratios): the solution of
        v = e_1 + v P over the transient steps."""
        import numpy as np

        n = len(self.steps)
        matrix = np.zeros((n, n))
        for i, row in enumerate(self.successors()):
            for j, p in row:
                if j is not None:
                    matrix[i, j] += p
        start = np.zeros(n)
        start[0] = 1.0
        return [float(v) for v in np.linalg.solve(np.eye(n) - matrix.T, start)]


# ------------------------------------------------------------------ cross-checks and reading
def check_classes(model: Any) -> None:
    """The references between classes, the mix, the script and the tiers (run by the Model's
    validator): every name used is declared, probabilities sum to one, a proxy-served class
    has a proxy to serve it."""
    classes, clients = model.classes, model.clients
    names = [c.name for c in classes]
    if len(set(names)) != len(names):
        raise ValueError(f"class names must be unique, got {names}")
    mix, script = clients.mix, getattr(clients, "script", None)
    if not classes:
        if mix is not None or script is not None:
            which = "clients.mix" if mix is not None else "clients.script"
            raise ValueError(f"{which} names classes, but the model declares none: add [[classes]]")
        return
    if mix is None and script is None:
        raise ValueError(
            "the model declares [[classes]]: say how clients pick one, with clients.mix = "
            f"{{{names[0]} = ...}} or [clients.script]"
        )
    if mix is not None and script is not None:
        raise ValueError("give clients.mix or clients.script, not both")
    if mix is not None:
        unknown = [k for k in mix if k not in names]
        if unknown:
            raise ValueError(
                f"clients.mix.{unknown[0]}: no class of that name (classes: {', '.join(names)})"
            )
        if any(p < 0 for p in mix.values()) or not math.isclose(
            sum(mix.values()), 1.0, abs_tol=1e-9
        ):
            raise ValueError(
                f"clients.mix: probabilities must be >= 0 and sum to 1, got {sum(mix.values()):g}"
            )
        if clients.mix_by == "user":
            _check_users_per_class(clients, mix)
    elif clients.mix_by != "request":
        raise ValueError("clients.mix_by applies to clients.mix; a script changes class per step")
    if script is not None:
        if clients.kind == "open":
            raise ValueError(
                "clients.script needs users that come back (kind = closed, sessions or ab); an open "
                "arrival sends one request: use clients.mix"
            )
        for i, step in enumerate(script.steps):
            if step.class_name not in names:
                raise ValueError(
                    f"clients.script.steps.{i}.class = {step.class_name!r}: no class of that name "
                    f"(classes: {', '.join(names)}); set the step's class"
                )
        if clients.kind == "ab" and any(step.think is not None for step in script.steps):
            raise ValueError("ab sends back to back: clients.script steps can have no think time")
    proxy_served = [c.name for c in classes if c.served_by == "proxy"]
    if proxy_served and (model.proxy is None):
        raise ValueError(
            f"class {proxy_served[0]!r} has served_by = proxy, but the model has no [proxy]"
        )
    calling = [c.name for c in classes if c.backend.db_calls]
    if calling and model.database is None:
        raise ValueError(
            f"classes.{names.index(calling[0])}.backend.db_calls > 0 but there is no [database]"
        )
    # A node calls the database only when its group has db_calls: a class's calls on a node
    # without them would split the class's demand and make no call.
    silent = [i for i, group in enumerate(model.backends) if not group.db_calls]
    if calling and silent:
        raise ValueError(
            f"classes.{names.index(calling[0])}.backend.db_calls > 0, but backends.{silent[0]}"
            ".db_calls = 0: that node has no connection to the database for a class to call; "
            f"give backends.{silent[0]} db_calls (a class can set its own to 0)"
        )


def _check_users_per_class(clients: Any, mix: dict[str, float]) -> None:
    users = clients.users if clients.kind == "closed" else getattr(clients, "concurrency", None)
    if users is None:
        raise ValueError(
            'clients.mix_by = "user" gives each user a class for good: it needs a closed '
            "population (kind = closed or ab)"
        )
    if getattr(clients, "ramp", None):
        raise ValueError('clients.mix_by = "user" needs a fixed population (no clients.ramp)')
    for name, share in mix.items():
        count = share * users
        if abs(count - round(count)) > 1e-6:
            raise ValueError(
                f'clients.mix.{name} = {share:g} of {users} users is {count:g}: with mix_by = "user" '
                "each class needs a whole number of users"
            )


def class_names(model: Any) -> tuple[str, ...]:
    """The declared classes, in order (empty for a one-class model)."""
    return tuple(c.name for c in model.classes)


def request_fractions(model: Any) -> tuple[float, ...]:
    """The long-run fraction of requests in each class: the mix, or the script's visit ratios."""
    names = class_names(model)
    clients = model.clients
    if clients.mix is not None:
        return tuple(float(clients.mix.get(name, 0.0)) for name in names)
    script = clients.script
    visits = script.visits()
    total = sum(visits)
    out = dict.fromkeys(names, 0.0)
    for step, v in zip(script.steps, visits):
        out[step.class_name] += v / total
    return tuple(out[name] for name in names)


def users_per_class(model: Any) -> tuple[int, ...] | None:
    """With `mix_by = "user"`: each class's fixed number of users; else None."""
    clients = model.clients
    if clients.mix is None or clients.mix_by != "user":
        return None
    users = clients.users if clients.kind == "closed" else clients.concurrency
    return tuple(round(clients.mix.get(name, 0.0) * users) for name in class_names(model))


def session_requests(clients: Any) -> float:
    """Mean requests per partly-open session: the script's mean path length, or the given mean."""
    script = clients.script
    return clients.requests_per_session if script is None else sum(script.visits())


def think_per_request(model: Any) -> float:
    """Mean think time per request: with a script, the steps' own, weighted by their visits."""
    clients = model.clients
    default = as_distribution(getattr(clients, "think", 0.0)).mean
    script = getattr(clients, "script", None)
    if script is None or clients.kind == "ab":
        return default
    visits = script.visits()
    total = sum(
        v * (default if s.think is None else as_distribution(s.think).mean)
        for s, v in zip(script.steps, visits)
    )
    return total / sum(visits)


@dataclass(frozen=True)
class Work:
    """What one request of a class asks of each tier: the class's own values over the tiers'
    defaults.  `Work(None)` is the implicit class of a model without classes."""

    spec: RequestClass | None = None

    @property
    def forwarded(self) -> bool:
        return self.spec is None or self.spec.served_by == "backend"

    def proxy_demand(self, proxy: Any) -> Any:
        own = None if self.spec is None else self.spec.proxy.demand
        return proxy.demand if own is None else own

    def demand(self, group: Any) -> Any:
        own = None if self.spec is None else self.spec.backend.demand
        return group.demand if own is None else own

    def db_calls(self, group: Any) -> int:
        own = None if self.spec is None else self.spec.backend.db_calls
        return group.db_calls if own is None else own

    def db_demand(self, database: Any) -> Any:
        own = None if self.spec is None else self.spec.database.demand
        return database.demand if own is None else own


def node_work(group: Any) -> Callable[[Work], tuple[Any, int]]:
    """What a request of each class asks of a node of `group` (`backends.N`): (its demand spec,
    its database calls), the class's own values over the group's."""

    def work(each: Work) -> tuple[Any, int]:
        return each.demand(group), each.db_calls(group)

    return work


def works(model: Any) -> tuple[Work, ...]:
    """One Work per class (one implicit class when the model declares none)."""
    return tuple(Work(c) for c in model.classes) or (Work(None),)
