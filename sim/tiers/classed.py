"""Stations that serve several request classes, each with its own demand and downstream calls.

A class's request asks a tier for its own CPU demand and its own number of downstream calls
(a static file: the proxy's demand and no call to a backend; a search: more database calls
than a page view).  The station is the same (`sim.tiers.station`): one slot pool, one
processor-shared CPU, bursts around downstream calls; only the burst sampler and the number of
calls are the request's class's (`Profile`).  A one-class model builds the plain `Station`, so
its hot path and its random numbers are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sim.kernel.request import Reply, Request
from sim.kernel.slots import GRANTED, REFUSED
from sim.tiers.station import FrontStation, Station, Visit, _computed, _finish


@dataclass(frozen=True)
class Profile:
    """One class's work at a station: a burst sampler (demand / (calls + 1) in the mean) and
    its downstream calls."""

    burst: Callable[[], float]
    calls: int


class ClassedVisit(Visit):
    """A visit whose bursts are drawn from its class's sampler."""

    __slots__ = ("burst",)

    burst: Callable[[], float]  # its class's sampler, set by _start

    def called(self, _request: Request, ok: bool | None) -> None:
        station = self.station
        self.downstream += station.env._now - self.call_started
        if ok:
            station.cpu.run(self.burst(), _computed, self)
        else:
            _finish(self, False)


def _start(
    station: ClassedStation | ClassedFrontStation, request: Request, reply: Reply
) -> ClassedVisit:
    profile = station.profiles[request.klass]
    visit = ClassedVisit(station, request, reply)
    visit.burst = profile.burst
    visit.calls_left = profile.calls if station.downstream is not None else 0
    return visit


def _granted(visit: ClassedVisit) -> None:
    station = visit.station
    visit.started = station.env._now
    station.in_progress += 1
    station.cpu.run(visit.burst(), _computed, visit)


class ClassedStation(Station):
    """A station whose demand and downstream calls depend on the request's class."""

    __slots__ = ("profiles",)

    def __init__(self, *args, profiles: list[Profile], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.profiles = profiles

    def serve(self, request: Request, reply: Reply) -> None:
        visit = _start(self, request, reply)
        pool = self.pool
        status = GRANTED if pool is None else pool.acquire(_granted, visit)
        if status == GRANTED:
            _granted(visit)
        elif status == REFUSED:
            self.refuse(request, reply)


class ClassedFrontStation(FrontStation):
    """The front (keep-alive, lingering close, per-connection CPU) with per-class work."""

    __slots__ = ("profiles",)

    def __init__(self, *args, profiles: list[Profile], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.profiles = profiles

    def serve(self, request: Request, reply: Reply) -> None:
        visit = _start(self, request, reply)
        if self.front.reuses_worker(request):
            _granted(visit)
            return
        pool = self.pool
        status = GRANTED if pool is None else pool.acquire(_front_granted, visit)
        if status == GRANTED:
            _front_granted(visit)
        elif status == REFUSED:
            self.refuse(request, reply)


def _front_granted(visit: ClassedVisit) -> None:
    station = visit.station
    connection = visit.request.connection
    opened = connection is None or connection.requests == 0
    front = station.front
    assert front is not None  # a ClassedFrontStation's visit
    front.accepted(visit.request)
    if opened and station.connection_burst is not None:
        visit.started = station.env._now
        station.in_progress += 1
        station.cpu.run(station.connection_burst() + visit.burst(), _computed, visit)
    else:
        _granted(visit)
