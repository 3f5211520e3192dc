"""A node's JVM (`backends.N.jvm`: HotSpot's heap and collectors) as the engines build it: the
sizes derived from its flags, computed once (the compiled engine used to repeat "the
reference's own arithmetic")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.tiers.appserver.jvm import MIB


@dataclass(frozen=True)
class JvmPart:
    """The JVM of one node, its sizes in bytes."""

    name: str  # its probe: `<node>.jvm`
    heap_bytes: float  # -Xmx (`heap_mb`)
    young_bytes: float  # -Xmn, or the NewRatio share of the heap (`young_bytes`)
    # eden: the young generation less its two survivor spaces (-XX:SurvivorRatio)
    eden_bytes: float
    old_capacity_bytes: float  # the old generation: the heap less the young one
    baseline_bytes: float  # the container and the application, tenured at start-up
    settings: Any  # `backends.N.jvm` (the schema's section): its costs and flags


def jvm_part(node: str, spec: Any) -> JvmPart | None:
    """The JVM of `node` from `backends.N.jvm` (None: no JVM modelled)."""
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
    )
