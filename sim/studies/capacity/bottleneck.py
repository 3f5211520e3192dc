"""The bottleneck at an answer: which resource bounds the stack, and whether more nodes help.

A resource's busy share is its `.utilization` metric (a CPU's busy cores over its cores, a
slot pool's busy slots over its slots: Apache's workers, Tomcat's threads, a JDBC pool, the
database's shared lock).  Resources nest: a request holds its worker while its thread runs,
its thread while it waits for a JDBC connection, its connection while it waits for the hot
row's lock.  A saturated inner resource saturates every resource around it (threads waiting for
the lock are busy threads), so the bottleneck is the *innermost* resource that is nearly always
busy, not the busiest one.  When it is shared by every node (the front, the database, its
lock), another node adds requests waiting for it, not throughput: the answer says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

SATURATED = 0.9  # busy this share of the time: the resource bounds the stack

# how deep a resource sits in the nesting of holds, outermost first; a pattern on its name
_DEPTH: tuple[tuple[str, int], ...] = (
    (r"^clients\.", 0),
    (r"^proxy\.", 1),
    (r"^[a-z_]+\d+\.(threads|max_connections)$", 2),
    (r"^[a-z_]+\d+\.(cpu|io_wait)$", 3),
    (r"^[a-z_]+\d+\.jdbc_pool$", 3),
    (r"^database\.connections$", 4),
    (r"^database\.lock$", 5),
    (r"^database\.(cpu|disks)$", 6),
)
_SHARED = re.compile(r"^(proxy|database|clients)\.")
_NAMES = {
    "database.lock": "the database's shared lock",
    "database.cpu": "the database's CPU",
    "database.disks": "the database's disks",
    "database.connections": "the database's connections",
    "proxy.workers": "the front's workers",
    "proxy.cpu": "the front's CPU",
}


@dataclass(frozen=True)
class Bottleneck:
    resource: str  # `database.lock`, `tomcat1.threads`
    utilization: float  # its busy share at the answer
    saturated: bool  # busy at least SATURATED of the time
    shared: bool  # shared by every node (the front, the database)

    def sentence(self, vary: str | None = None, value: float | None = None) -> str:
        """One line for the planner: what bounds the stack, and what more nodes would do."""
        name = _NAMES.get(self.resource, self.resource)
        busy = f"{name} ({self.resource}) is {self.utilization:.0%} busy"
        where = f" at {vary} = {value:g}" if vary is not None and value is not None else ""
        if not self.saturated:
            return f"no resource is saturated{where}; the busiest innermost is {busy}"
        if self.shared and vary is not None and vary.endswith(".count"):
            return (
                f"bottleneck{where}: {busy}, shared by every node: another node adds requests "
                "waiting for it, not throughput"
            )
        return f"bottleneck{where}: {busy}"


def depth(resource: str) -> int | None:
    """How deep `resource` sits in the nesting of holds; None for a name not known here."""
    for pattern, level in _DEPTH:
        if re.match(pattern, resource):
            return level
    return None


def bottleneck(utilization: Mapping[str, float]) -> Bottleneck | None:
    """The innermost resource busy at least `SATURATED` of the time, else the busiest one.
    `utilization` maps metric names (`database.lock.utilization`) or resource names to their
    busy share; names no nesting level is known for are left out."""
    busy: dict[str, float] = {}
    for name, value in utilization.items():
        resource = name.removesuffix(".utilization")
        if depth(resource) is not None and value == value:  # not NaN
            busy[resource] = float(value)
    if not busy:
        return None
    saturated = [r for r, u in busy.items() if u >= SATURATED]
    # the innermost of the saturated ones; with none saturated, the busiest
    resource = max(saturated or busy, key=lambda r: (depth(r), busy[r]) if saturated else busy[r])
    return Bottleneck(
        resource,
        busy[resource],
        busy[resource] >= SATURATED,
        bool(_SHARED.match(resource)),
    )
