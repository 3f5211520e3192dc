"""mod_jk's ajp13 worker: reply timeouts, retries on new connections, and connect failures.

What mod_jk 1.2.48 does with one request once it holds an endpoint (`ajp_service`,
`native/common/jk_ajp_common.c`), as simulated here on top of the front's connection pool
(`sim.tiers.proxy.backend_pool.BackendPool`: the endpoint cache, `connection_pool_size`,
`connection_acquire_timeout`):

* **Attempts.**  `for (i = 0; i < retries; i++)`: at most `retries` attempts (default 2,
  JK_RETRIES; the first counts, "retries=2 means one retry after error"), each after the
  first preceded by `jk_sleep(retry_interval)` (default 100 ms).  A retry is sent over a new
  connection (`ajp_next_connection`; the failed one was closed).
* **Reply timeout.**  `ajp_get_reply` polls the socket for `reply_timeout` ms
  (`jk_is_input_event`) before reading; nothing by then: `ajp_abort_endpoint` closes the
  connection and the attempt fails with JK_REPLY_TIMEOUT, status 504
  (JK_HTTP_GATEWAY_TIME_OUT).  The simulated response arrives whole when the node finishes,
  so the timer runs from sending the request to the node's answer, including any wait in the
  node's accept queue.  The node is not told: Tomcat goes on serving the abandoned request
  (a blocking connector's thread stays bound until it has written the response into the closed
  socket; a connection still in the accept queue is accepted later and its request, already in
  the socket buffer, served), so every retry adds load -- the retry storm.
* **socket_timeout** sets SO_RCVTIMEO only in builds that define USE_SO_RCVTIMEO (the IBM i
  build files; `jk_open_socket`, `jk_connect.c`), so on Unix a read never times out on it;
  its only effect is the default of `socket_connect_timeout` (socket_timeout x 1000 ms).
* **Connect failures.**  A connect that fails (`ajp_connect_to_endpoint`) makes
  `ajp_send_request` return JK_FATAL_ERROR with the request still recoverable: status 503
  (JK_HTTP_SERVER_BUSY), retried.  A crashed node refuses at once (RST); a node whose accept
  queue is full drops the SYN (Linux, tcp_abort_on_overflow = 0), so connect() waits while the
  kernel retransmits the SYN (1 s, doubling, tcp_syn_retries = 6) and fails after
  `socket_connect_timeout`, or after the last retransmission's 127 s with none.
* **connection_pool_timeout** (`proxy.backend_pool.ttl_s`) is applied by the worker's
  maintenance (`ajp_maintain`), not when a connection is taken: each process runs it from
  `wc_maintain` when a request arrives at least `worker.maintain` (60 s) after its previous
  run (at its first request, too), and closes the idle connections unused for longer than the
  timeout, down to connection_pool_minsize ((connection_pool_size + 1) / 2); it stops at the
  first slot once that few are open, which may still be closed.  With prefork too: its point
  is to free Tomcat threads pinned by idle children's connections -- but only children that
  serve requests run it.  (The slots are taken here oldest first.)
* **recovery_options.**  After a reply timeout before the response headers, bit 1
  (RECOVER_ABORT_IF_TCGETREQUEST) makes the request unrecoverable, so the 504 is final; bit 8
  (RECOVER_ALWAYS_HTTP_HEAD) or else bit 16 (RECOVER_ALWAYS_HTTP_GET) make it recoverable again
  for HEAD or GET requests.  The simulated requests are GETs and their headers arrive with the
  whole response, so bit 2 (after the headers) never acts.  Connect failures stay recoverable.

A request that failed carries `status` and `cause` ("reply_timeout", "connect", "busy") and
whether mod_jk may try it elsewhere (`recoverable`), for the lb worker
(`sim.tiers.balancer.mod_jk_lb`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from sim.kernel.request import Request
from sim.kernel.slots import GRANTED, REFUSED, Waiter
from sim.observe.probes import REQUESTS, Metric, Window
from sim.tiers.proxy.backend_pool import (
    SYN_GIVE_UP_S,
    UNAVAILABLE,
    BackendConnection,
    BackendPool,
    ChildPool,
    after_dropped_syn,
)

if TYPE_CHECKING:
    from sim.kernel.calendar import Wakeup
    from sim.kernel.request import Reply

POLL_S = 0.1  # JK_SLEEP_DEF, jk_util.h: how often a request looks again for a free endpoint
GATEWAY_TIME_OUT = 504  # JK_HTTP_GATEWAY_TIME_OUT: the last attempt's reply timed out
RECOVER_ABORT_IF_TCGETREQUEST = 0x0001
RECOVER_ABORT_IF_TCSENDHEADER = 0x0002
RECOVER_ALWAYS_HTTP_HEAD = 0x0008
RECOVER_ALWAYS_HTTP_GET = 0x0010


class JkWorker(NamedTuple):
    """An ajp13 worker's properties (workers.properties), in seconds."""

    reply_timeout_s: float | None  # reply_timeout; None = 0, wait for ever
    connect_timeout_s: float | None  # socket_connect_timeout; None = blocking connect()
    retries: int  # attempts, the first included
    retry_interval_s: float
    recovery_options: int

    @classmethod
    def of(cls, settings) -> JkWorker:
        """From the model's `proxy.backend_pool` (`sim.model.schema.BackendPool`)."""
        return cls(
            settings.reply_timeout_s,
            settings.connect_timeout_s,
            settings.retries,
            settings.retry_interval_s,
            settings.recovery_options,
        )

    def recoverable_after_reply_timeout(self) -> bool:
        """`ajp_get_reply`: may a GET whose reply timed out before any header be retried?"""
        options = self.recovery_options
        if not options & RECOVER_ABORT_IF_TCGETREQUEST:
            return True
        if options & RECOVER_ALWAYS_HTTP_HEAD:
            return False  # (the method is not HEAD; the GET bit is then not consulted)
        return bool(options & RECOVER_ALWAYS_HTTP_GET)


class JkCall:
    """One request's `ajp_service`: its endpoint and the attempt under way."""

    __slots__ = ("attempt", "endpoint", "exchange", "reply", "request", "timer")

    def __init__(self, request: Request, reply: Reply, endpoint: BackendConnection) -> None:
        self.request = request
        self.reply = reply
        self.endpoint = endpoint  # the endpoint's current connection (socket)
        self.attempt = 1
        self.exchange: Exchange | None = None
        self.timer: Wakeup | None = None  # the reply timeout of the attempt under way


class Exchange:
    """One attempt on one connection: the node's answer, unless mod_jk gave up on it first."""

    __slots__ = ("abandoned", "call", "connection", "pool", "waiter")

    def __init__(self, pool: JkBackendPool, call: JkCall, connection: BackendConnection) -> None:
        self.pool = pool
        self.call = call
        self.connection = connection
        self.abandoned = False
        self.waiter: Waiter | None = None  # in the node's accept queue, until a thread binds

    def __call__(self, request: Request, ok: bool | None) -> None:
        self.pool._answered(self, request, ok)


class JkBackendPool(BackendPool):
    """The front's connections to one node, driven by mod_jk's ajp13 worker (see the module)."""

    __slots__ = (
        "abandoned",
        "abandoned_served",
        "attempts",
        "connect_failures",
        "jk",
        "maintain_s",
        "maintained",
        "min_size",
        "pool_timeout_s",
        "refusing",
        "reply_timeouts",
    )

    def __init__(self, *args, jk: JkWorker, maintain_s: float = 60.0, **kwargs) -> None:
        # socket_timeout sets no read timeout on Unix (see the module): reads wait for ever
        # unless reply_timeout is set
        kwargs["read_timeout_s"] = None
        # connection_pool_timeout acts at the maintenance, with prefork too (see the module)
        self.pool_timeout_s = kwargs.pop("ttl_s", None)
        super().__init__(*args, ttl_s=None, **kwargs)
        size = self.max_connections
        self.min_size = 0 if size is None else (size + 1) // 2  # connection_pool_minsize
        self.maintain_s = maintain_s  # worker.maintain
        self.maintained: dict[ChildPool, float] = {}  # each process's last maintenance
        self.jk = jk
        self.refusing = False  # the node's process is down: connects are refused (RST)
        self.attempts = 0
        self.reply_timeouts = 0
        self.connect_failures = 0
        self.abandoned = 0  # attempts mod_jk gave up on while the node still had them
        self.abandoned_served = 0  # of those, served by the node to the end

    def has_endpoint(self, child) -> bool:
        """`ajp_has_endpoint`: the process has a free endpoint for a request now."""
        pool = self._pool_of(child)
        return bool(pool.idle) or self.max_connections is None or pool.open < self.max_connections

    # ------------------------------------------------------------------ wc_maintain
    def serve(self, request: Request, reply: Reply) -> None:
        if self.pool_timeout_s is not None:
            pool = self._pool_of(request.worker)
            now = self.kernel.now
            if now - self.maintained.get(pool, -math.inf) >= self.maintain_s:
                self.maintained[pool] = now
                self._maintain(pool, now)
        super().serve(request, reply)

    def _maintain(self, pool: ChildPool, now: float) -> None:
        """`ajp_maintain`: close the process's idle connections unused for longer than
        connection_pool_timeout, keeping connection_pool_minsize open."""
        assert self.pool_timeout_s is not None
        open_now = pool.open
        closed = 0
        for connection in sorted(pool.idle, key=lambda c: c.released_at):
            if now - connection.released_at > self.pool_timeout_s:
                pool.idle.remove(connection)
                self.ttl_closes += 1
                closed += 1
                self._close(connection)
            if open_now <= self.min_size + closed:
                break

    def _child_exited(self, child) -> None:
        pool = self._pools.get(child)
        if pool is not None:
            self.maintained.pop(pool, None)
        super()._child_exited(child)

    # ------------------------------------------------------------------ ajp_service
    def _send(self, connection: BackendConnection, request: Request, reply: Reply) -> None:
        """The request holds an endpoint (`get_endpoint`): run `ajp_service` on it."""
        request.cause = None
        self._attempt(JkCall(request, reply, connection))

    def _attempt(self, call: JkCall) -> None:
        self.attempts += 1
        connection = call.endpoint
        if connection.thread:  # a pooled connection the node has accepted: send on it
            self._exchange(call, connection)
        else:
            self._connect(call, connection, self.kernel.now, 0)

    def _connect(self, call: JkCall, connection: BackendConnection, started: float, syns: int):
        """`ajp_connect_to_endpoint`: open a connection; the node's connector accepts it onto
        what it pins (a thread, a connection slot), queues it, or drops the SYN."""
        if self.refusing:
            self._attempt_failed(call, UNAVAILABLE, "connect", recoverable=True)
            return
        exchange = Exchange(self, call, connection)
        status = self.pins.acquire(self._accepted, exchange)
        if status == GRANTED:
            connection.thread = True
            self._exchange(call, connection, exchange)
        elif status == REFUSED:
            # The accept queue is full: the SYN is dropped and retransmitted; connect() gives
            # up at socket_connect_timeout, or after the kernel's last retransmission.
            give_up = self.jk.connect_timeout_s
            if give_up is None:
                give_up = SYN_GIVE_UP_S
            at, again = after_dropped_syn(started, syns, give_up)
            if again:
                self.kernel.call_after(
                    at - self.kernel.now,
                    lambda _arg: self._connect(call, connection, started, syns + 1),
                )
            else:
                self.kernel.call_after(
                    at - self.kernel.now,
                    lambda _arg: self._attempt_failed(
                        call, UNAVAILABLE, "connect", recoverable=True
                    ),
                )
        else:
            # Established, waiting in the accept queue: the request is sent and the reply
            # timeout runs; the node serves it when a thread takes the connection.
            exchange.waiter = status  # type: ignore[assignment]
            call.exchange = exchange
            self._start_timer(call)

    def _accepted(self, exchange: Exchange) -> None:
        """A node thread took the connection out of the accept queue: serve its request, even
        if mod_jk has given up on it (the request is in the socket's buffer)."""
        exchange.waiter = None
        exchange.connection.thread = True
        self._serve_on(exchange.connection, exchange.call.request, exchange)

    def _exchange(
        self, call: JkCall, connection: BackendConnection, exchange: Exchange | None = None
    ) -> None:
        exchange = exchange or Exchange(self, call, connection)
        call.exchange = exchange
        self._start_timer(call)
        self._serve_on(connection, call.request, exchange)

    def _start_timer(self, call: JkCall) -> None:
        if self.jk.reply_timeout_s is not None:
            call.timer = self.kernel.after(self.jk.reply_timeout_s, self._reply_expired, call)

    def _reply_expired(self, call: JkCall) -> None:
        """`ajp_get_reply`: no reply within reply_timeout; the connection is closed
        (`ajp_abort_endpoint`), the node keeps the request."""
        call.timer = None
        exchange = call.exchange
        assert exchange is not None
        exchange.abandoned = True
        call.exchange = None
        self.reply_timeouts += 1
        self.abandoned += 1
        # the endpoint keeps its place in the pool without a socket: the next attempt connects
        call.endpoint = BackendConnection(call.endpoint.pool)
        self._attempt_failed(
            call,
            GATEWAY_TIME_OUT,
            "reply_timeout",
            recoverable=self.jk.recoverable_after_reply_timeout(),
        )

    def _attempt_failed(self, call: JkCall, status: int, cause: str, recoverable: bool) -> None:
        if cause == "connect":
            self.connect_failures += 1
        if recoverable and call.attempt < self.jk.retries:
            call.attempt += 1
            self.kernel.call_after(self.jk.retry_interval_s, lambda _arg: self._attempt(call))
            return
        # The endpoint goes back to the cache without a socket: it holds nothing on the node.
        self._forget(call.endpoint)
        self._next_waiter(call.endpoint.pool)
        request = call.request
        request.status = status
        request.cause = cause
        request.recoverable = recoverable
        call.reply(request, False)

    def _answered(self, exchange: Exchange, request: Request, ok: bool | None) -> None:
        """The node finished the request of `exchange`."""
        connection = exchange.connection
        if exchange.abandoned:
            # Its response goes into a closed socket; the node then closes the connection,
            # freeing what it pinned (a blocking connector's thread).
            self.abandoned_served += 1
            if connection.thread:
                connection.thread = False
                self.pins.release()
            return
        call = exchange.call
        call.exchange = None
        if call.timer is not None:
            call.timer.cancel()
            call.timer = None
        self.released(connection)
        call.reply(request, ok)

    def _give_up(self, state: tuple) -> None:
        """No endpoint within connection_acquire_timeout (the lb marks the member busy)."""
        request = state[1]
        request.cause = "busy"
        request.recoverable = True
        super()._give_up(state)

    def node_down(self, down: bool) -> None:
        """`backends.N.events`: the node's process died (connects are refused, the connections
        it had are reset: closed when next taken from the pool, here at once) or is back."""
        self.refusing = down
        if down:
            for pool in self._pools_now():
                idle, pool.idle = pool.idle, []
                for connection in idle:
                    self._close(connection)

    # ------------------------------------------------------------------ counters
    fields: tuple[str, ...] = (
        *BackendPool.fields,
        "attempts",
        "reply_timeouts",
        "connect_failures",
        "abandoned",
        "abandoned_served",
    )

    def counters(self, now: float) -> tuple[float, ...]:
        return (
            *super().counters(now),
            float(self.attempts),
            float(self.reply_timeouts),
            float(self.connect_failures),
            float(self.abandoned),
            float(self.abandoned_served),
        )

    def metrics(self, w: Window) -> Iterator[Metric]:
        """The pool's counters, and mod_jk's: attempts sent (retries included), reply timeouts,
        failed connects, and attempts given up on that the node kept (and finished)."""
        yield from super().metrics(w)
        yield "jk.attempts", w.delta["attempts"], REQUESTS
        yield "jk.reply_timeouts", w.delta["reply_timeouts"], REQUESTS
        yield "jk.connect_failures", w.delta["connect_failures"], REQUESTS
        yield "jk.abandoned", w.delta["abandoned"], REQUESTS
        yield "jk.abandoned_served", w.delta["abandoned_served"], REQUESTS
