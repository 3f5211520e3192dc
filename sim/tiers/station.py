"""A server instance: a slot pool (workers or threads) in front of a processor-shared CPU.

A visit holds its slot for the whole visit, including calls made downstream (an Apache
worker waits for the backend; a Tomcat thread waits for its JDBC call) but uses a core
only while it computes: threads are not cores.  A visit with k downstream calls computes
in k + 1 bursts around them, each an independent draw of the demand distribution scaled
by 1/(k + 1), so the mean demand per visit is the configured one and every burst is a
fresh visit to the CPU (which keeps processor-sharing networks product-form, BCMP 1975).
A non-CPU wait (`io_wait`) holds the slot and no core.  If the slot pool refuses the request
(queue full), or a downstream call fails, an
error travels back to the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from sim.kernel.request import CONNECTION_REFUSED, Reply, Request
from sim.kernel.slots import GRANTED, REFUSED, Pool
from sim.observe.probes import PER_SECOND, REQUESTS, SECONDS, Metric, Window, ratio

if TYPE_CHECKING:
    from sim.tiers.proxy.client_connections import FrontConnections

Call = Callable[[Request, Reply], None]


class Station:
    """One host-level server (a proxy host, an application node, the database host)."""

    # FrontStation: the client connections' handling (keep-alive, lingering close)
    front: FrontConnections | None = None
    connection_burst: Callable[[], float] | None = None  # FrontStation's (see there)

    fields = ("visits", "wait_sum", "residence_sum", "downstream_sum", "failed", "in_progress")

    __slots__ = (
        "accepts_clients",
        "burst",
        "calls",
        "cpu",
        "downstream",
        "downstream_sum",
        "env",
        "failed",
        "in_progress",
        "io_wait",
        "kernel",
        "name",
        "pool",
        "post",
        "residence_sum",
        "visits",
        "wait_sum",
    )

    def __init__(
        self,
        kernel,
        name: str,
        pool: Pool | None,
        cpu,
        burst: Callable[[], float],
        io_wait: Callable[[], float] | None = None,
        downstream: Call | None = None,
        calls: int = 0,
    ) -> None:
        self.name = name
        self.kernel = kernel
        self.env = kernel.env
        self.pool = pool
        self.cpu = cpu
        self.burst = burst  # draws one CPU burst: demand / (calls + 1) in the mean [s]
        self.io_wait = io_wait
        self.downstream = downstream
        self.calls = calls if downstream is not None else 0
        self.visits = 0  # completed visits (successful or not)
        self.wait_sum = 0.0  # time waiting for a slot
        self.residence_sum = 0.0  # arrival to departure, including downstream calls
        self.downstream_sum = 0.0  # time inside downstream calls
        self.failed = 0
        self.in_progress = 0
        # True for the tier the clients connect to: its full queue is a full listen queue
        # (the client's SYN is dropped); deeper tiers answer their caller with an error.
        self.accepts_clients = False
        # Work after the request's own, before its response, holding its thread (session
        # replication: `sim.tiers.cluster.session_replication.AfterRequest`); None for most nodes.
        self.post: Callable[[Visit, Callable[[Visit], None]], None] | None = None

    def serve(self, request: Request, reply: Reply) -> None:
        visit = Visit(self, request, reply)
        pool = self.pool
        status = GRANTED if pool is None else pool.acquire(_granted, visit)
        if status == GRANTED:
            # _granted, inlined (once per visit): `started` and `calls_left` are set by Visit
            self.in_progress += 1
            self.cpu.run(self.burst(), _computed, visit)
        elif status == REFUSED:
            self.refuse(request, reply)

    def refuse(self, request: Request, reply: Reply) -> None:
        """The queue in front of the slots is full: the listen queue of the tier the clients
        connect to drops the SYN; a deeper tier answers its caller with an error."""
        self.failed += 1
        reply(request, CONNECTION_REFUSED if self.accepts_clients else False)

    def counters(self, now: float) -> tuple[float, ...]:
        """Cumulative (visits, wait, residence, downstream time, failures); visits in progress."""
        return (
            float(self.visits),
            self.wait_sum,
            self.residence_sum,
            self.downstream_sum,
            float(self.failed),
            float(self.in_progress),
        )

    def metrics(self, w: Window) -> Iterator[Metric]:
        """Visits per second; per visit: waiting for a slot, residence (arrival to departure,
        downstream calls included) and service (residence less waiting and downstream time);
        failed visits; visits being served at the window's end."""
        yield "throughput", w.rate("visits"), PER_SECOND
        yield "wait", w.per("wait_sum", "visits"), SECONDS
        yield "residence", w.per("residence_sum", "visits"), SECONDS
        exclusive = w.delta["residence_sum"] - w.delta["wait_sum"] - w.delta["downstream_sum"]
        yield "service", ratio(exclusive, w.delta["visits"]), SECONDS
        yield "failed", w.delta["failed"], REQUESTS
        yield "serving_now", w.level["in_progress"], REQUESTS


class Visit:
    """The state of one request at one station.  Continuations are module functions taking
    the visit (no bound-method objects on the hot path)."""

    __slots__ = (
        "arrived",
        "call_started",
        "calls_left",
        "downstream",
        "reply",
        "request",
        "started",
        "station",
    )

    call_started: float  # set when a downstream call starts

    def __init__(self, station: Station, request: Request, reply: Reply) -> None:
        self.station = station
        self.request = request
        self.reply = reply
        self.arrived = self.started = station.env._now
        self.calls_left = station.calls
        self.downstream = 0.0

    def called(self, _request: Request, ok: bool | None) -> None:
        """The downstream call returned."""
        station = self.station
        self.downstream += station.env._now - self.call_started
        if ok:
            station.cpu.run(station.burst(), _computed, self)
        else:
            _finish(self, False)


def _granted(visit: Visit) -> None:
    station = visit.station
    visit.started = station.env._now
    station.in_progress += 1
    station.cpu.run(station.burst(), _computed, visit)


def _computed(visit: Visit) -> None:
    station = visit.station
    if visit.calls_left:
        visit.calls_left -= 1
        visit.call_started = station.env._now
        downstream = station.downstream
        assert downstream is not None  # calls > 0 only with a downstream
        downstream(visit.request, visit.called)
    elif station.io_wait is not None:
        station.kernel.call_after(station.io_wait(), _io_done, visit)
    elif station.post is not None:
        station.post(visit, _finish_ok)
    else:
        _finish(visit, True)


def _io_done(visit: Visit) -> None:
    if visit.station.post is not None:
        visit.station.post(visit, _finish_ok)
    else:
        _finish(visit, True)


def _finish_ok(visit: Visit) -> None:
    _finish(visit, True)


def finish_failed(visit: Visit) -> None:
    """End a visit with an error response (a post-request hook that fails it: a JVM's
    OutOfMemoryError)."""
    _finish(visit, False)


def _finish(visit: Visit, ok: bool) -> None:
    station = visit.station
    now = station.env._now
    station.visits += 1
    station.in_progress -= 1
    station.wait_sum += visit.started - visit.arrived
    station.residence_sum += now - visit.arrived
    station.downstream_sum += visit.downstream
    if not ok:
        station.failed += 1
    front = station.front
    if front is not None:
        front.responded(
            visit.request, ok
        )  # keep-alive / lingering close decide when the worker frees
    elif station.pool is not None:
        station.pool.release()
    visit.reply(visit.request, ok)


class FrontStation(Station):
    """The tier the clients connect to, when its workers belong to client connections
    (`sim.tiers.proxy.client_connections`): a request on a connection that holds a worker skips the queue,
    and the first request on a new connection also pays the connection's set-up CPU
    (`connection_burst`: accept, socket set-up and close; None when it costs nothing)."""

    __slots__ = ("connection_burst", "front")

    def __init__(
        self, *args, front, connection_burst: Callable[[], float] | None = None, **kwargs
    ) -> None:
        super().__init__(*args, **kwargs)
        self.front: FrontConnections = front
        self.connection_burst = connection_burst

    def serve(self, request: Request, reply: Reply) -> None:
        visit = Visit(self, request, reply)
        pool = self.pool
        if self.front.reuses_worker(request):
            _granted(visit)  # the worker of an open connection: nothing to accept
            return
        status = GRANTED if pool is None else pool.acquire(_front_granted, visit)
        if status == GRANTED:
            _front_granted(visit)
        elif status == REFUSED:
            self.refuse(request, reply)


def _front_granted(visit: Visit) -> None:
    station = visit.station
    connection = visit.request.connection
    opened = connection is None or connection.requests == 0  # read before accepted() counts it
    front = station.front
    assert front is not None  # a FrontStation's visit
    front.accepted(visit.request)
    if opened and station.connection_burst is not None:
        visit.started = station.env._now
        station.in_progress += 1
        # On a processor-shared CPU one burst of a + b is the same as a then b for one job.
        station.cpu.run(station.connection_burst() + station.burst(), _computed, visit)
    else:
        _granted(visit)


class PooledCall:
    """A call that must first take a slot of a client-side pool (a JDBC connection pool).

    The slot is held for the whole call and released before the caller resumes.  A full
    pool with a full wait queue fails the call.
    """

    __slots__ = ("pool", "target")

    def __init__(self, pool: Pool, target: Call) -> None:
        self.pool = pool
        self.target = target

    def __call__(self, request: Request, reply: Reply) -> None:
        status = self.pool.acquire(self._go, (request, reply))
        if status == GRANTED:
            self._go((request, reply))
        elif status == REFUSED:
            reply(request, False)

    def _go(self, pair: tuple[Request, Reply]) -> None:
        request, reply = pair
        self.target(request, _ReleaseThen(self.pool, reply))


class _ReleaseThen:
    __slots__ = ("pool", "reply")

    def __init__(self, pool: Pool, reply: Reply) -> None:
        self.pool = pool
        self.reply = reply

    def __call__(self, request: Request, ok: bool | None) -> None:
        self.pool.release()
        self.reply(request, ok)
