"""A node's JVM (`backends.N.jvm`: HotSpot's heap and collectors) as the engines build it: the
sizes derived from its flags, computed once (the compiled engine used to repeat "the
reference's own arithmetic")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.features import Declaration, StackPart, approximate
from sim.tiers.appserver.jvm import MIB


@dataclass(frozen=True)
class JvmPart(StackPart):
    """The JVM of one node, its sizes in bytes."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "appserver.jvm": approximate(
            "garbage-collection pauses stop the node's CPU and JIT warm-up changes the demand "
            "over time"
        ),
        # named after the clients' kind: `appserver.jvm_sessions.<clients.kind>`
        "appserver.jvm_sessions.": approximate(
            "sessions kept on the heap raise the garbage collector's work over the run"
        ),
    }

    name: str  # its probe: `<node>.jvm`
    heap_bytes: float  # -Xmx (`heap_mb`)
    young_bytes: float  # -Xmn, or the NewRatio share of the heap (`young_bytes`)
    # eden: the young generation less its two survivor spaces (-XX:SurvivorRatio)
    eden_bytes: float
    old_capacity_bytes: float  # the old generation: the heap less the young one
    baseline_bytes: float  # the container and the application, tenured at start-up
    settings: Any  # `backends.N.jvm` (the schema's section): its costs and flags
    path: str  # its section in the model file (`backends.N.jvm`)
    # the clients' kind (`clients.kind`) when they keep cookies and the application creates a
    # session (`backends.N.jvm.creates_sessions`): their sessions live on this heap; None: no
    # session outlives its request
    sessions_of: str | None

    def features(self) -> dict[str, str]:
        out = {"appserver.jvm": self.path}
        if self.sessions_of is not None:
            # clients that keep cookies touch their session again at each request; how
            # their sessions are named depends on the client kind
            out[f"appserver.jvm_sessions.{self.sessions_of}"] = (
                f"{self.path}.creates_sessions with clients.kind = {self.sessions_of!r} "
                "(clients that keep cookies reuse their session)"
            )
        return out


def jvm_part(node: str, spec: Any, path: str, clients: str | None) -> JvmPart | None:
    """The JVM of `node` from `backends.N.jvm` (None: no JVM modelled), at `path` in the model
    file; `clients`: the clients' kind when they keep session cookies, else None."""
    if spec is None:
        return None
    heap = spec.heap_mb * MIB
    young = spec.young_bytes
    return JvmPart(
        name=f"{node}.jvm",
        heap_bytes=heap,
        young_bytes=young,
        eden_bytes=young * spec.survivor_ratio / (spec.survivor_ratio + 2),
        old_capacity_bytes=heap - young,
        baseline_bytes=spec.baseline_mb * MIB,
        settings=spec,
        path=path,
        sessions_of=clients if spec.creates_sessions else None,
    )
