"""Client connections to the front tier, and what the front does with a worker between requests.

A client's TCP connection is an entity of its own, with its own lifetime: it is accepted by
an Apache worker, carries one or more requests (HTTP keep-alive), and is closed.  What holds
the worker meanwhile depends on the MPM (Apache httpd docs, `prefork`, `worker`, `event`;
`server/connection.c` `ap_lingering_close`):

* prefork / worker: the worker belongs to the connection.  After a response on a persistent
  connection it waits up to `KeepAliveTimeout` for the next request, holding the worker.  When
  the server closes the connection (keep-alive off, the timeout expired, or
  `MaxKeepAliveRequests` reached) it drains the client's side first (lingering close): the
  worker stays held until the client closes, each read waiting at most SECONDS_TO_LINGER
  (2 s) -- so a client that never closes costs a worker 2 s after every close.
* event: the worker is freed after each response; idle keep-alive connections and the
  lingering close are watched by the listener thread and hold no worker.  The next request
  on an idle connection waits for a worker like any other.

When the children are individuals (`sim.tiers.proxy.children`), a connection belongs to the
child that accepted it: its worker is that child's, and with the event MPM an idle
connection's next request needs an idle worker *of that child* -- with none, the listener
closes the connection and the client connects anew (event.c).

After an error status that drops the connection (`ap_status_drops_connection` in httpd.h:
400, 408, 411, 413, 414, 500, 501, 503) the connection is closed, not kept alive
(`ap_set_keepalive`, `modules/http/http_protocol.c`): a 503 frees a prefork/worker worker
at once (after the lingering close) instead of after KeepAliveTimeout.  502 and 504 keep it.

The front also records when the clients saw their last connection end (`elapsed.server_close`):
a load generator that waits for EOF sees the test end when the server closes the last
connection a client still waits on -- a KeepAliveTimeout after the last response on a
persistent connection.  A client that gave up (its timeout fired) closed its own socket then:
its end is its deadline, and the server's later close of that connection (the request served
into a closed socket, or still stuck) is seen by no one.  A finite run goes on until every
connection a client still waits on is closed, not until the abandoned ones are.

Parameters are the front's (`proxy.mpm`, `proxy.keep_alive`, `proxy.keep_alive_timeout_s`,
`proxy.max_keep_alive_requests`, `proxy.linger_s`) and the clients' (`clients.keep_alive`,
`clients.close_delay_s`: how long a client keeps its socket open after a response it does not
follow with another request on the connection).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sim.kernel.request import IN_FLIGHT
from sim.kernel.slots import Pool
from sim.observe.probes import CONNECTIONS, REQUESTS, SECONDS, Metric, Window
from sim.tiers.proxy.mpm import mpm as mpm_class

# ap_status_drops_connection (include/httpd.h, httpd 2.2 and 2.4)
DROPS_CONNECTION = frozenset({400, 408, 411, 413, 414, 500, 501, 503})
# The status of an error response whose component set none: a refused or failed backend
# connection, no usable balancer member (mod_proxy and mod_jk answer 503)
DEFAULT_ERROR_STATUS = 503
COUNTED_STATUSES = (500, 502, 503, 504)


def linger_hold_s(mpm: str, linger_s: float, client_close_delay_s: float | None) -> float:
    """How long a lingering close holds a worker (httpd `ap_lingering_close`): until the client
    closes, or after one idle read of `linger_s`; never with the event MPM, whose listener
    lingers instead of a worker."""
    if mpm_class(mpm).listener_holds_idle_connections:
        return 0.0
    if client_close_delay_s is None:
        return linger_s
    return min(linger_s, client_close_delay_s)


class Connection:
    """A client's TCP connection to the front tier."""

    __slots__ = ("client_closed", "holds_worker", "idle_timer", "open", "requests", "worker")

    def __init__(self) -> None:
        self.open = True  # False once the server has closed it: the next request reconnects
        self.holds_worker = False  # prefork/worker: a worker is bound to this connection
        self.requests = 0  # requests carried so far (MaxKeepAliveRequests)
        self.idle_timer = None  # the pending KeepAliveTimeout
        self.client_closed = False  # the client hung up (its timeout fired): no lingering
        self.worker = None  # the child that accepted it, if children are individuals


class FrontConnections:
    """The front tier's connection handling: keep-alive and lingering close, by MPM."""

    __slots__ = (
        "children",
        "client_end",
        "closed",
        "closed_after_error",
        "closed_no_worker",
        "keep_alive",
        "keep_alive_timeout_s",
        "kernel",
        "last_close",
        "linger_hold_s",
        "max_keep_alive_requests",
        "mpm",
        "on_all_closed",
        "open",
        "opened",
        "pool",
        "statuses",
        "watched",
    )

    def __init__(
        self,
        kernel,
        pool: Pool | None,
        *,
        mpm: str,
        keep_alive: bool,
        keep_alive_timeout_s: float,
        max_keep_alive_requests: int,
        linger_s: float,
        client_close_delay_s: float | None,
        children=None,
    ) -> None:
        self.kernel = kernel
        # ChildProcesses: the workers are children's threads (`pool` is then the same object)
        self.children = children
        self.pool = pool
        self.mpm = mpm_class(mpm)
        self.keep_alive = keep_alive
        self.keep_alive_timeout_s = keep_alive_timeout_s
        self.max_keep_alive_requests = max_keep_alive_requests
        self.linger_hold_s = linger_hold_s(mpm, linger_s, client_close_delay_s)
        self.opened = 0  # client connections accepted
        self.closed = 0  # ... closed by the server
        self.closed_after_error = 0  # ... closed because of the response's error status
        self.closed_no_worker = 0  # event: a request on an idle connection found no worker
        self.open = 0
        self.last_close = float("nan")  # when the server last closed a client connection
        # the connections a client still waits on (its Connection, or the request itself when
        # each request has its own connection), and when a client last saw its connection end
        # (the server's close, or its own giving up)
        self.watched: set = set()
        self.client_end = float("nan")
        # once, when no connection a client waits on is left open
        self.on_all_closed: Callable[[], None] | None = None
        self.statuses = dict.fromkeys(COUNTED_STATUSES, 0)
        if children is not None:
            children.on_stopping.append(self._child_stopping)

    def reuses_worker(self, request) -> bool:
        """A request on an open connection that still holds its worker (prefork/worker), or,
        event, that its child's listener hands to an idle worker of the child."""
        connection = request.connection
        if connection is None:
            return False
        if not connection.open:
            # KeepAliveTimeout closed it while the client was still sending on it (its own
            # CPU, `clients.host`, sat between choosing the connection and the send): the
            # client sees the close and sends the request again on a new connection (RFC 9112
            # section 9.3.1: a request on a kept-alive connection that closes may be retried),
            # which waits for a worker like any new one.  The resend's handshake
            # (`clients.connect`) and connection CPU are not charged: the gap is one send.
            connection.open = True
            connection.requests = 0
            connection.worker = None
            connection.holds_worker = False
            return False
        if connection.idle_timer is not None:  # the next request came inside KeepAliveTimeout
            connection.idle_timer.cancel()
            connection.idle_timer = None
        if connection.holds_worker:
            connection.requests += 1
            request.worker = connection.worker
            return True
        child = connection.worker
        if self.children is None or child is None or connection.requests == 0:
            return False  # event, children not tracked: waits for a worker like a new one
        child.keep_alive.discard(connection)
        if self.children.take_worker(child):
            connection.requests += 1
            request.worker = child
            return True
        # No idle worker in its child: the listener closes the connection, and the client
        # connects again (a new connection through the listen queue).
        self.closed_no_worker += 1
        self._server_closed(connection)
        self.children.connection_closed(child)
        connection.requests = 0
        connection.worker = None
        return False

    def accepted(self, request) -> None:
        """A worker was granted to a request that came without one: a new connection.  With
        children the accepting child has already set `request.worker`."""
        connection = request.connection
        if connection is not None and connection.requests:
            # event with the workers one pool: the next request on an idle connection took
            # a worker like a new one, but the connection was accepted before
            connection.requests += 1
            return
        self.opened += 1
        self.open += 1
        if request.state == IN_FLIGHT:  # a client that gave up in the listen queue waits not
            self.watched.add(request if connection is None else connection)
        if connection is not None:
            connection.requests += 1
            connection.holds_worker = not self.mpm.listener_holds_idle_connections
            connection.worker = request.worker

    def responded(self, request, ok: bool = True) -> None:
        """The response went out: keep the connection (and, by MPM, the worker) or close it."""
        connection = request.connection
        child = request.worker
        drops = False
        if not ok:
            status = request.status or DEFAULT_ERROR_STATUS
            if status in self.statuses:
                self.statuses[status] += 1
            drops = status in DROPS_CONNECTION
        persistent = (
            connection is not None
            and connection.open
            and not connection.client_closed
            and not drops
            and self.keep_alive
            and (child is None or not child.exiting)
            and (
                self.max_keep_alive_requests == 0
                or connection.requests < self.max_keep_alive_requests
            )
        )
        if persistent:
            connection.idle_timer = self.kernel.after(
                self.keep_alive_timeout_s, self._idle_expired, connection
            )
            if self.mpm.listener_holds_idle_connections:
                if child is not None:
                    child.keep_alive.add(connection)
                self._release_worker(child)
            return
        if drops and connection is not None and connection.open:
            self.closed_after_error += 1
        self._server_closed(request if connection is None else connection)
        if connection is not None:
            connection.open = False
            connection.holds_worker = False
            if connection.client_closed:
                self._connection_gone(child)
                self._release_worker(child)  # the client has gone: nothing to drain
                return
        self._connection_gone(child)
        self._close_worker(child)

    def _idle_expired(self, connection: Connection) -> None:
        connection.idle_timer = None
        connection.open = False
        self._server_closed(connection)
        child = connection.worker
        if child is not None:
            child.keep_alive.discard(connection)
        if connection.holds_worker:
            connection.holds_worker = False
            self._connection_gone(child)
            self._close_worker(child)
        else:
            self._connection_gone(child)

    def _child_stopping(self, child) -> None:
        """event: a child told to stop closes its idle keep-alive connections at once
        (event.c: "kill'em all" when dying); prefork/worker let them run out."""
        for connection in list(child.keep_alive):
            if connection.idle_timer is not None:
                connection.idle_timer.cancel()
            self._idle_expired(connection)

    def _server_closed(self, key) -> None:
        self.closed += 1
        self.open -= 1
        now = self.kernel.now
        self.last_close = now
        if key in self.watched:  # its client sees EOF now
            self._seen_end(key, now)

    def client_gave_up(self, request) -> None:
        """A client's timeout fired: it closes its socket and its test ends now, whatever the
        server later does with the connection."""
        now = self.kernel.now
        key = request if request.connection is None else request.connection
        if key in self.watched:
            self._seen_end(key, now)
        else:  # still in the listen queue, or between requests on its connection
            self.client_end = now

    def _seen_end(self, key, now: float) -> None:
        self.watched.discard(key)
        self.client_end = now
        if not self.watched and self.on_all_closed is not None:
            self.kernel.call_after(0.0, _call, self.on_all_closed)

    def _connection_gone(self, child) -> None:
        if child is not None and self.children is not None:
            self.children.connection_closed(child)

    def _close_worker(self, worker) -> None:
        if self.linger_hold_s > 0:
            self.kernel.call_after(self.linger_hold_s, self._release_worker, worker)
        else:
            self._release_worker(worker)

    def _release_worker(self, worker) -> None:
        if self.children is not None:
            self.children.free(worker)
        elif self.pool is not None:
            self.pool.release()

    def probes(self, server_close: bool = False) -> list:
        """The front's connections and error statuses, and (finite runs) when it closed the
        last one."""
        made = [ConnectionsProbe(self), StatusProbe(self)]
        if server_close:
            made.append(ServerCloseProbe(self))
        return made


def _call(fn: Callable[[], None]) -> None:
    fn()


class ConnectionsProbe:
    """`proxy.connections.*`: client connections accepted and closed by the server."""

    name = "proxy.connections"
    fields = ("opened", "closed", "closed_after_error", "closed_no_worker", "open")

    def __init__(self, front: FrontConnections) -> None:
        self.front = front

    def counters(self, now: float) -> tuple[float, ...]:
        f = self.front
        return (
            float(f.opened),
            float(f.closed),
            float(f.closed_after_error),
            float(f.closed_no_worker),
            float(f.open),
        )

    def metrics(self, w: Window) -> Iterator[Metric]:
        yield "opened", w.delta["opened"], CONNECTIONS
        yield "closed", w.delta["closed"], CONNECTIONS
        yield "closed_after_error", w.delta["closed_after_error"], CONNECTIONS
        yield "closed_no_worker", w.delta["closed_no_worker"], CONNECTIONS
        yield "open_now", w.level["open"], CONNECTIONS


class StatusProbe:
    """`proxy.responses.<status>`: error responses the front sent, by HTTP status."""

    name = "proxy.responses"
    fields = tuple(str(status) for status in COUNTED_STATUSES)

    def __init__(self, front: FrontConnections) -> None:
        self.front = front

    def counters(self, now: float) -> tuple[float, ...]:
        return tuple(float(self.front.statuses[status]) for status in COUNTED_STATUSES)

    def metrics(self, w: Window) -> Iterator[Metric]:
        for field in self.fields:
            yield field, w.delta[field], REQUESTS


class ServerCloseProbe:
    """`elapsed.server_close`: the instant the last client saw its connection end -- the
    front's close of a connection the client still waited on (a load generator that waits for
    EOF ends then), or the client's own giving up.  A finite run goes on after its last
    outcome until then; NaN while a connection a client waits on is still open."""

    name = "elapsed"
    fields = ()

    def __init__(self, front: FrontConnections) -> None:
        self.front = front

    def counters(self, now: float) -> tuple[float, ...]:
        return ()

    def metrics(self, w: Window) -> Iterator[Metric]:
        front = self.front
        yield "server_close", front.client_end if not front.watched else float("nan"), SECONDS
