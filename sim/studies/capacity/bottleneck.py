"""The bottleneck at an answer: which resource bounds the stack, and whether more nodes help.

A resource's busy share is its `.utilization` metric (a CPU's busy cores over its cores, a
slot pool's busy slots over its slots: Apache's workers, Tomcat's threads, a JDBC pool, a
mechanism around the database's call).  Resources nest: a request holds its worker while its
thread runs, its thread while it waits for a JDBC connection, its connection while it waits
for the hot row's lock.  A saturated inner resource saturates every resource around it
(threads waiting for the lock are busy threads), so the bottleneck is the *innermost* resource
that is nearly always busy, not the busiest one.  When it is shared by every node (the front,
the database and what stands around its calls), another node adds requests waiting for it,
not throughput: the answer says so.

Which resources there are, how deep each sits, what a planner calls it and whether every node
shares it, is declared by the stack part that builds it (`sim.model.features.Hold`) and read
from the model's probe layout (`sim.studies.metrics.holds`); nothing here names a resource.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sim.model.features import Hold

SATURATED = 0.9  # busy this share of the time: the resource bounds the stack


@dataclass(frozen=True)
class Bottleneck:
    resource: str  # its probe's name (`tomcat1.threads`)
    utilization: float  # its busy share at the answer
    saturated: bool  # busy at least SATURATED of the time
    shared: bool  # shared by every node (the front, the database)
    title: str = ""  # what the planner reads (`Hold.title`); "": its name

    def sentence(self, vary: str | None = None, value: float | None = None) -> str:
        """One line for the planner: what bounds the stack, and what more nodes would do."""
        busy = f"{self.title or self.resource} ({self.resource}) is {self.utilization:.0%} busy"
        where = f" at {vary} = {value:g}" if vary is not None and value is not None else ""
        if not self.saturated:
            return f"no resource is saturated{where}; the busiest innermost is {busy}"
        if self.shared and vary is not None and vary.endswith(".count"):
            return (
                f"bottleneck{where}: {busy}, shared by every node: another node adds requests "
                "waiting for it, not throughput"
            )
        return f"bottleneck{where}: {busy}"


def bottleneck(utilization: Mapping[str, float], held: Iterable[Hold]) -> Bottleneck | None:
    """The innermost resource busy at least `SATURATED` of the time, else the busiest one.
    `utilization` maps metric names (`tomcat1.threads.utilization`) or resource names to their
    busy share; `held` are the model's resources (`sim.studies.metrics.holds`): other names
    are left out."""
    known = {h.name: h for h in held}
    busy: dict[str, float] = {}
    for name, value in utilization.items():
        resource = name.removesuffix(".utilization")
        if resource in known and value == value:  # not NaN
            busy[resource] = float(value)
    if not busy:
        return None
    saturated = [r for r, u in busy.items() if u >= SATURATED]
    # the innermost of the saturated ones; with none saturated, the busiest
    resource = max(
        saturated or busy,
        key=lambda r: (known[r].depth, busy[r]) if saturated else busy[r],
    )
    hold = known[resource]
    return Bottleneck(
        resource, busy[resource], busy[resource] >= SATURATED, hold.shared, hold.title
    )
