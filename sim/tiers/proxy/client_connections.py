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

Parameters are the front's (`proxy.mpm`, `proxy.keep_alive`, `proxy.keep_alive_timeout_s`,
`proxy.max_keep_alive_requests`, `proxy.linger_s`) and the clients' (`clients.keep_alive`,
`clients.close_delay_s`: how long a client keeps its socket open after a response it does not
follow with another request on the connection).
"""

from __future__ import annotations

from sim.kernel.slots import Pool


def linger_hold_s(mpm: str, linger_s: float, client_close_delay_s: float | None) -> float:
    """How long a lingering close holds a worker (httpd `ap_lingering_close`): until the client
    closes, or after one idle read of `linger_s`; never with the event MPM, whose listener
    lingers instead of a worker."""
    if mpm == "event":
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
        self.worker = None  # the prefork child bound to it, if children are tracked


class FrontConnections:
    """The front tier's connection handling: keep-alive and lingering close, by MPM."""

    __slots__ = (
        "children",
        "keep_alive",
        "keep_alive_timeout_s",
        "kernel",
        "linger_hold_s",
        "max_keep_alive_requests",
        "mpm",
        "pool",
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
        self.children = children  # ProcessTable: which prefork child holds each worker slot
        self.pool = pool
        self.mpm = mpm
        self.keep_alive = keep_alive
        self.keep_alive_timeout_s = keep_alive_timeout_s
        self.max_keep_alive_requests = max_keep_alive_requests
        self.linger_hold_s = linger_hold_s(mpm, linger_s, client_close_delay_s)

    def reuses_worker(self, request) -> bool:
        """prefork/worker: the request arrives on a connection that still holds its worker."""
        connection = request.connection
        if connection is None:
            return False
        if connection.idle_timer is not None:  # the next request came inside KeepAliveTimeout
            connection.idle_timer.cancel()
            connection.idle_timer = None
        if not connection.holds_worker:
            return False  # event MPM: an idle connection waits for a worker like a new one
        connection.requests += 1
        request.worker = connection.worker
        return True

    def accepted(self, request) -> None:
        """A worker was granted to a request that came without one."""
        if self.children is not None:
            request.worker = self.children.take()
        connection = request.connection
        if connection is not None:
            connection.requests += 1
            connection.holds_worker = self.mpm != "event"
            connection.worker = request.worker

    def responded(self, request) -> None:
        """The response went out: keep the connection (and, by MPM, the worker) or close it."""
        connection = request.connection
        persistent = (
            connection is not None
            and connection.open
            and not connection.client_closed
            and self.keep_alive
            and (
                self.max_keep_alive_requests == 0
                or connection.requests < self.max_keep_alive_requests
            )
        )
        if persistent:
            connection.idle_timer = self.kernel.after(
                self.keep_alive_timeout_s, self._idle_expired, connection
            )
            if self.mpm == "event":
                self._release_worker(request.worker)
            return
        if connection is not None:
            connection.open = False
            connection.holds_worker = False
            if connection.client_closed:
                self._release_worker(request.worker)  # the client has gone: nothing to drain
                return
        self._close_worker(request.worker)

    def _idle_expired(self, connection: Connection) -> None:
        connection.idle_timer = None
        connection.open = False
        if connection.holds_worker:
            connection.holds_worker = False
            self._close_worker(connection.worker)

    def _close_worker(self, worker) -> None:
        if self.linger_hold_s > 0:
            self.kernel.call_after(self.linger_hold_s, self._release_worker, worker)
        else:
            self._release_worker(worker)

    def _release_worker(self, worker) -> None:
        # The child goes back to accept() before its slot can pass to a waiting connection.
        if self.children is not None:
            self.children.give(worker)
        if self.pool is not None:
            self.pool.release()
