"""The request classes (`[[classes]]`) and how the clients pick each request's class: a random
mix (`clients.mix`, per request or per user) or a script's steps (`clients.script`, a fixed
path or a Markov chain between the steps)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.classes import Work, class_names, users_per_class, works
from sim.model.features import Declaration, StackPart, exact


@dataclass(frozen=True)
class RequestClasses(StackPart):
    """The classes, in the model's order (none: a one-class model)."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "classes": exact("request classes: multi-class MVA or an open multi-class network"),
        "clients.mix": exact(
            "a random request mix is a chain with class switching (BCMP): its mean demands are "
            "exact"
        ),
        "clients.script": exact(
            "a script's steps are a chain with deterministic class switching (BCMP)"
        ),
    }

    names: tuple[str, ...]
    works: tuple[Work, ...]  # what a request of each class asks of each tier
    # whether a class's requests write the session (`classes.N.writes_session`; None: the
    # tier's default)
    writes_session: tuple[bool | None, ...]
    # `clients.mix`: each class's share of the requests, in `names`' order; None: a script
    mix: tuple[float, ...] | None
    users_per_class: tuple[int, ...] | None  # `mix_by = "user"`: each class's own users
    script: Any  # `clients.script` (the schema's steps), or None
    # the script's steps have several successors: each session's path is drawn (a chain)
    chain: bool
    # a script walked in order: the steps of its one path (every session walks them)
    path: tuple[int, ...]

    def features(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.names:
            out["classes"] = "request classes ([[classes]])"
        if self.mix is not None:
            out["clients.mix"] = "clients.mix"
        if self.script is not None:
            out["clients.script"] = "clients.script"
        return out


def request_classes(model: Any) -> RequestClasses:
    """The request classes of `model` (a `sim.model.schema.Model`)."""
    names = class_names(model)
    clients = model.clients
    script = clients.script
    chain = script is not None and any(len(row) > 1 for row in script.successors())
    return RequestClasses(
        names=names,
        works=works(model),
        writes_session=tuple(spec.writes_session for spec in model.classes),
        mix=None if clients.mix is None else tuple(clients.mix.get(n, 0.0) for n in names),
        users_per_class=users_per_class(model),
        script=script,
        chain=chain,
        path=() if script is None or chain else _linear_path(script),
    )


def _linear_path(script: Any) -> tuple[int, ...]:
    """The steps of a script without a Markov chain, in the order every session walks them
    (`ScriptChoice._path` with one successor per step)."""
    successors = script.successors()
    path: list[int] = []
    step: int | None = 0
    while step is not None:
        path.append(step)
        step = successors[step][0][0]
    return tuple(path)
