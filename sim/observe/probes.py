"""Probes: components that expose cumulative counters and say what they mean.

A probe has a `name` (its component path: `proxy.workers`, `tomcat1.cpu`, `balancer`), the
`fields` of its cumulative counters, `counters(now)` returning them, and `metrics(window)`
yielding `(metric, value, unit)` for a window between two snapshots.  The meaning and the
unit of a statistic live with the component that produces it: nothing downstream switches on
kinds or guesses units from names.

Gauges (a level such as the slots in use now) are fields too; a window reads them at its end
(`Window.level`), which is the value a time series samples at that instant and the value
`--json` reports as `<name>_now`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Protocol

# Units, named once: every metric carries one of these.
SECONDS = "s"
PER_SECOND = "1/s"
FRACTION = "fraction"
COUNT = "count"  # a mean number present (slots busy, jobs runnable, queue length)
REQUESTS = "requests"
CONNECTIONS = "connections"
MESSAGES = "messages"
BYTES = "bytes"
MEBIBYTES = "MiB"
COLLECTIONS = "collections"
SESSIONS = "sessions"
EVENTS = "events"  # decisions that changed something (an autoscaler's scale-ups)
NODES = "nodes"
NODE_SECONDS = "node-s"  # nodes x seconds they existed: what an elastic group costs

Metric = tuple[str, float, str]  # (name relative to the probe, value, unit)


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


class Window:
    """One probe's counters over a window: `delta` (end - start) and `level` (at the end)."""

    __slots__ = ("delta", "elapsed", "level")

    def __init__(self, delta: dict[str, float], level: dict[str, float], elapsed: float) -> None:
        self.delta = delta
        self.level = level
        self.elapsed = elapsed

    def rate(self, field: str) -> float:
        """Events per second of a cumulative count."""
        return ratio(self.delta[field], self.elapsed)

    def mean_level(self, area_field: str, per: float = 1.0) -> float:
        """A time-average from a time-integral (an area), optionally per unit of capacity."""
        return ratio(self.delta[area_field], self.elapsed * per)

    def per(self, field: str, count_field: str) -> float:
        """A sum per event (e.g. wait per acquisition)."""
        return ratio(self.delta[field], self.delta[count_field])


class Measures(Protocol):
    """What a window's metrics need of a component: its name, the fields of its counters and
    its metrics.  A probe also reads its counters; the compiled engine records them itself and
    measures through views (`sim.engines.compiled.plan`) that have only this part."""

    @property
    def name(self) -> str: ...

    @property
    def fields(self) -> tuple[str, ...]: ...

    def metrics(self, window: Window) -> Iterator[Metric]: ...


class Probe(Measures, Protocol):
    def counters(self, now: float) -> Iterable[float]: ...
