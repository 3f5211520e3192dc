"""The front's pool of connections to each backend node, for every connector.

The front keeps a pool of persistent connections to each backend node (mod_proxy worker
`max`, `ttl`, `acquire`, `timeout`; mod_jk `connection_pool_size`,
`connection_pool_timeout`), reused most-recently-released first (apr_reslist is LIFO).  A
request takes an idle connection, opens a new one while fewer than `max` are open, or waits
(`acquire`; mod_jk polls, see `poll_s`) and gets a 503 when the wait ends.

What an open connection holds on the node is the connector's (`sim.tiers.appserver.connectors`):
with a blocking connector (Tomcat BIO, Jetty `SocketConnector` / `Ajp13SocketConnector`) the
backend binds one thread to each accepted connection for the connection's whole life, idle
or not; a connection that finds every thread pinned waits in the backend's accept queue,
holding nothing, and its request is served only when a thread frees -- when some connection
is closed by the backend's idle timeout (`connectionTimeout` / `keepAliveTimeout`, Jetty
`maxIdleTime`; infinite for AJP by default) or by the front's `ttl`.  The front's read
`timeout` (mod_proxy `timeout` = ProxyTimeout, 60 s) ends such a wait with an error.  This is
the stall of seed 001: more pooled connections than backend threads.  Tomcat NIO's
`maxConnections` pins a connection slot the same way; a plain non-blocking connector pins
nothing, and the pool then limits only how many requests reach the node at once.

Apache keeps the pool per child process, for every MPM (`proxy_util.c`
`ap_proxy_initialize_worker`: a reslist per worker per child, `max` defaulting to the MPM's
threads per child; mod_jk's endpoint cache is per process, `connection_pool_size` defaulting
to ThreadsPerChild).  With children as individuals (`sim.tiers.proxy.children`) each child has
its own idle list, open count and waiters here: a new child opens its own connections (each
pinning a thread of a blocking connector), a request never borrows another child's idle
connection, and a child that exits closes its connections.  A prefork child (one thread) has
no reslist: it caches one connection, so `ttl` and `acquire` do not apply
(`ap_proxy_acquire_connection`).  Without children (an unbounded front) one pool stands for
the whole front.

A connect to a node whose accept queue is full is not refused: Linux drops the SYN
(tcp_abort_on_overflow = 0) and the front's kernel retransmits it (1 s, doubling,
tcp_syn_retries = 6), so connect() waits -- the child with it -- until the queue has room at a
retransmission or mod_proxy's `connectiontimeout` (default the worker's `timeout`) expires.
A failed connect puts the worker in error state for `retry` seconds (default 60;
`ap_proxy_connect_backend`, "disabling worker", httpd 2.2 and 2.4): every request for the node
in that time is answered 503 at once (`ap_proxy_acquire_connection`), and the first one after
it tries the node again.  mod_jk's connects are `sim.tiers.proxy.mod_jk`'s.

A failed request carries the status the front answers with: 503 when no connection could be
had (mod_proxy `acquire`, mod_jk's endpoint wait, a failed connect, a worker in error); on the read timeout
mod_proxy_ajp answers 503 for an idempotent request with no body sent (`ajp_read_header`
failing, `mod_proxy_ajp.c`), mod_proxy_http 502 ("Error reading from remote server",
`mod_proxy_http.c`).  mod_jk has no read timeout on Unix; its reply timeout, retries and
connect failures are `sim.tiers.proxy.mod_jk`'s.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, cast

from sim.kernel.request import Reply, Request
from sim.kernel.slots import GRANTED, REFUSED, Pool, Waiter
from sim.observe.probes import CONNECTIONS, REQUESTS, Metric, Window
from sim.tiers.appserver.connectors import Unpinned

if TYPE_CHECKING:
    from sim.kernel.calendar import Wakeup

    # a connection in the backend's accept queue: (its waiter, request, reply, read timer)
    Waiting = tuple[Waiter, Request, Reply, Wakeup | None]

UNAVAILABLE = 503  # HTTP_SERVICE_UNAVAILABLE
# The front host's TCP stack retransmitting an unanswered SYN (Linux defaults: the first
# retransmission after TCP_TIMEOUT_INIT = 1 s, doubling; net.ipv4.tcp_syn_retries = 6, so
# connect() fails 127 s after it started when nothing else bounds it).
SYN_RTO_S = 1.0
SYN_RETRIES = 6
SYN_GIVE_UP_S = SYN_RTO_S * (2 ** (SYN_RETRIES + 1) - 1)


def after_dropped_syn(started: float, syns: int, give_up: float) -> tuple[float, bool]:
    """A connect begun at `started` has had its SYN and `syns` retransmissions dropped: when
    the next thing happens, and whether it is another retransmission (True; RTO doubling from
    the start) or connect() giving up at `give_up` after the start (False)."""
    next_syn = SYN_RTO_S * (2 ** (syns + 1) - 1)
    if syns < SYN_RETRIES and next_syn < give_up:
        return started + next_syn, True
    return started + give_up, False


class ChildPool:
    """One child's connections to the node (an apr_reslist; a mod_jk endpoint cache)."""

    __slots__ = ("idle", "open", "waiters")

    def __init__(self) -> None:
        self.idle: list[BackendConnection] = []  # LIFO: the last released is reused first
        self.open = 0
        self.waiters: deque = deque()  # requests waiting for a connection: [request, reply, timer]


class BackendConnection:
    __slots__ = ("idle_timer", "pool", "released_at", "set_up", "thread", "waiting")

    def __init__(self, pool: ChildPool) -> None:
        self.pool = pool  # the child's pool it belongs to
        self.thread = False  # a backend thread is bound to it (blocking connector)
        self.set_up = False  # the node has done its set-up of the connection (connection_setup)
        self.released_at = 0.0  # when it last went back to the front's pool (ttl)
        self.idle_timer = None  # the backend's idle timeout while the connection is idle
        self.waiting: Waiting | None = (
            None  # (waiter in the accept queue, request, reply, read timer) until a thread binds
        )


class BackendPool:
    """The front's pools of connections to one node, whatever its connector (duck-types a node
    for the balancer: `name`, `serve`).  A new connection binds one of the connector's `pins`
    (a thread, a connection slot, or nothing) for its whole life."""

    __slots__ = (
        "_pools",
        "_single",
        "acquire_timeout_s",
        "acquire_timeouts",
        "connect_failures",
        "connect_timeout_s",
        "disable_reuse",
        "disabled_refusals",
        "disabled_until",
        "exit_closes",
        "idle_closes",
        "idle_timeout_s",
        "kernel",
        "max_connections",
        "name",
        "node",
        "on_disabled",
        "open_connections",
        "pins",
        "poll_s",
        "read_timeout_s",
        "read_timeout_status",
        "read_timeouts",
        "reslist",
        "retry_s",
        "setup",
        "setup_lock",
        "ttl_closes",
        "ttl_s",
    )

    def __init__(
        self,
        kernel,
        node,
        pins: Pool | Unpinned,
        *,
        max_connections: int | None,
        ttl_s: float | None,
        acquire_timeout_s: float | None,
        read_timeout_s: float | None,
        idle_timeout_s: float | None,
        children=None,
        reslist: bool = True,
        poll_s: float | None = None,
        disable_reuse: bool = False,
        read_timeout_status: int = 502,
        setup: Callable[[], float] | None = None,
        setup_lock: Pool | None = None,
        connect_timeout_s: float | None = None,
        retry_s: float | None = None,
    ) -> None:
        self.kernel = kernel
        self.node = node  # a Station without a pool: the thread is held by the connection
        self.name = node.name
        self.pins = pins  # what an open connection holds on the node (the connector's)
        self.max_connections = max_connections  # per child (per front without children)
        # A reslist (threaded MPM) applies ttl and acquire; a prefork child's cached one does not.
        self.reslist = reslist
        self.ttl_s = ttl_s if reslist else None
        self.acquire_timeout_s = acquire_timeout_s if reslist else None
        self.read_timeout_s = read_timeout_s
        self.read_timeout_status = read_timeout_status
        self.idle_timeout_s = idle_timeout_s
        self.open_connections = 0
        self.read_timeouts = 0
        self.acquire_timeouts = 0
        self.idle_closes = 0
        self.ttl_closes = 0
        self.exit_closes = 0
        # mod_jk does not wait on a condition variable for a free endpoint: it looks, sleeps
        # JK_SLEEP_DEF (100 ms) and looks again while retry x 100 ms < connection_acquire_timeout
        # (`ajp_get_endpoint`, jk_ajp_common.c), so a connection freed between looks waits for the
        # next look, and one freed after the last look is missed.
        self.poll_s = poll_s
        self.disable_reuse = disable_reuse  # mod_proxy disablereuse=On: a connection per request
        # `backends.N.connection_setup`: the node's serialised set-up of each new connection
        # (one lock for the node), paid before the connection's first request is served
        self.setup = setup
        self.setup_lock = setup_lock
        # mod_proxy `connectiontimeout` (None: the kernel's SYN retransmissions bound it) and
        # `retry`, the worker's error state after a failed connect (None: no error state)
        self.connect_timeout_s = connect_timeout_s
        self.retry_s = retry_s
        self.disabled_until = -math.inf
        self.connect_failures = 0
        self.disabled_refusals = 0
        # a balancer in front hears of the error state too (it stops choosing the member)
        self.on_disabled: Callable[[], None] | None = None
        # One pool per child process (by the child), or one for the whole front.
        self._single: ChildPool | None = None
        self._pools: dict = {}
        if children is None:
            self._single = ChildPool()
        else:
            children.on_exit.append(self._child_exited)

    def _pool_of(self, child) -> ChildPool:
        if self._single is not None:
            return self._single
        pool = self._pools.get(child)
        if pool is None:
            pool = self._pools[child] = ChildPool()
        return pool

    def _pools_now(self) -> list[ChildPool]:
        return [self._single] if self._single is not None else list(self._pools.values())

    # ------------------------------------------------------------------ the front's side
    def serve(self, request: Request, reply: Reply) -> None:
        if self.kernel.now < self.disabled_until:
            # `ap_proxy_acquire_connection`: the worker is in error state, "disabled connection"
            self.disabled_refusals += 1
            request.status = UNAVAILABLE
            reply(request, False)
            return
        pool = self._pool_of(request.worker)
        connection = self._pop_idle(pool)
        if connection is None and (
            self.max_connections is None or pool.open < self.max_connections
        ):
            connection = self._open(pool)
        if connection is not None:
            self._send(connection, request, reply)
            return
        if self.poll_s is not None:
            self._poll((pool, request, reply, 1))
            return
        entry = [request, reply, None]
        if self.acquire_timeout_s is not None:
            entry[2] = self.kernel.after(self.acquire_timeout_s, self._acquire_expired, entry)
        pool.waiters.append(entry)

    def _poll(self, state: tuple) -> None:
        """mod_jk: the request has looked `looks` times and found no free endpoint; sleep, then
        look again while looks x poll < connection_acquire_timeout, else fail (the balancer
        would mark the member busy)."""
        looks = state[3]
        if self.acquire_timeout_s is not None and looks * self.poll_s >= self.acquire_timeout_s:
            self.kernel.call_after(self.poll_s, self._give_up, state)
            return
        self.kernel.call_after(self.poll_s, self._look_again, state)

    def _look_again(self, state: tuple) -> None:
        pool, request, reply, looks = state
        connection = self._pop_idle(pool)
        if connection is None and (
            self.max_connections is None or pool.open < self.max_connections
        ):
            connection = self._open(pool)
        if connection is not None:
            self._send(connection, request, reply)
        else:
            self._poll((pool, request, reply, looks + 1))

    def _give_up(self, state: tuple) -> None:
        _pool, request, reply, _looks = state
        self.acquire_timeouts += 1
        request.status = UNAVAILABLE
        reply(request, False)

    def _pop_idle(self, pool: ChildPool) -> BackendConnection | None:
        while pool.idle:
            connection = pool.idle.pop()
            if self._reusable(connection):
                return connection
        return None

    def _reusable(self, connection: BackendConnection) -> bool:
        """Take an idle connection out of the pool: False (and closed) if older than ttl."""
        if self.ttl_s is not None and self.kernel.now - connection.released_at >= self.ttl_s:
            self.ttl_closes += 1
            self._close(connection)
            return False
        if connection.idle_timer is not None:
            connection.idle_timer.cancel()
            connection.idle_timer = None
        return True

    def _open(self, pool: ChildPool) -> BackendConnection:
        pool.open += 1
        self.open_connections += 1
        return BackendConnection(pool)

    def _send(self, connection: BackendConnection, request: Request, reply: Reply) -> None:
        if connection.thread:
            self._serve_on(connection, request, _Returned(self, connection, reply))
            return
        # A new connection: the backend must accept it onto a thread first.
        self._connect_to_node(connection, request, reply, self.kernel.now, 0)

    def _connect_to_node(
        self,
        connection: BackendConnection,
        request: Request,
        reply: Reply,
        started: float,
        syns: int,
    ) -> None:
        """connect(): the node's connector accepts the connection onto what it pins, queues
        it, or (its accept queue full) drops the SYN, which is sent again later."""
        status = self.pins.acquire(self._bound, connection)
        if status == GRANTED:
            connection.thread = True
            self._serve_on(connection, request, _Returned(self, connection, reply))
        elif status == REFUSED:
            give_up = SYN_GIVE_UP_S
            if self.connect_timeout_s is not None:
                give_up = min(give_up, self.connect_timeout_s)
            at, again = after_dropped_syn(started, syns, give_up)
            if again:
                self.kernel.call_after(
                    at - self.kernel.now,
                    lambda _arg: self._connect_to_node(
                        connection, request, reply, started, syns + 1
                    ),
                )
            else:
                self.kernel.call_after(
                    at - self.kernel.now,
                    lambda _arg: self._connect_failed(connection, request, reply),
                )
        else:
            timer = None
            if self.read_timeout_s is not None:
                timer = self.kernel.after(self.read_timeout_s, self._read_expired, connection)
            connection.waiting = (cast(Waiter, status), request, reply, timer)  # queued

    def _connect_failed(
        self, connection: BackendConnection, request: Request, reply: Reply
    ) -> None:
        """connect() timed out: 503, and the worker goes into error state for `retry`."""
        self.connect_failures += 1
        self._forget(connection)  # never established
        if self.retry_s is not None:
            self.disabled_until = self.kernel.now + self.retry_s
            if self.on_disabled is not None:
                self.on_disabled()
        request.status = UNAVAILABLE
        reply(request, False)
        self._next_waiter(connection.pool)

    def _bound(self, connection: BackendConnection) -> None:
        """A backend thread took the connection out of the accept queue: serve its request."""
        _waiter, request, reply, timer = cast("Waiting", connection.waiting)
        connection.waiting = None
        connection.thread = True
        if timer is not None:
            timer.cancel()
        self._serve_on(connection, request, _Returned(self, connection, reply))

    def _serve_on(self, connection: BackendConnection, request: Request, reply: Reply) -> None:
        """The node serves `request` on `connection`, whose thread it holds; a new connection's
        first request waits for the node's set-up of it first (`connection_setup`: Tomcat 5.5
        JK registers each new connection's RequestProcessor in JMX, under one static lock, on
        the connection's thread before it decodes the request)."""
        if self.setup is None or connection.set_up:
            self.node.serve(request, reply)
            return
        connection.set_up = True
        assert self.setup_lock is not None  # built with the set-up
        state = (request, reply)
        if self.setup_lock.acquire(self._setting_up, state) == GRANTED:
            self._setting_up(state)  # else queued FIFO (the lock's queue is unbounded)

    def _setting_up(self, state: tuple[Request, Reply]) -> None:
        assert self.setup is not None
        self.kernel.call_after(self.setup(), self._set_up, state)

    def _set_up(self, state: tuple[Request, Reply]) -> None:
        assert self.setup_lock is not None
        self.setup_lock.release()  # the next connection's set-up starts at once
        request, reply = state
        self.node.serve(request, reply)

    def _read_expired(self, connection: BackendConnection) -> None:
        """The front's read timeout: no byte came back; it gives up and closes the connection."""
        waiter, request, reply, _timer = cast("Waiting", connection.waiting)
        connection.waiting = None
        waiter.cancel()
        self.read_timeouts += 1
        self._forget(connection)
        self._next_waiter(connection.pool)
        request.status = self.read_timeout_status
        reply(request, False)

    def _acquire_expired(self, entry: list) -> None:
        for pool in self._pools_now():
            if entry in pool.waiters:
                pool.waiters.remove(entry)
                break
        self.acquire_timeouts += 1
        request, reply, _timer = entry
        request.status = UNAVAILABLE  # mod_proxy: 503 after `acquire`
        reply(request, False)

    def released(self, connection: BackendConnection) -> None:
        """The response came back: the connection returns to its child's pool (its thread
        stays pinned), or with disablereuse is closed (its thread freed)."""
        if self.disable_reuse:
            self._close(connection)
            return
        pool = connection.pool
        if pool.waiters:
            request, reply, timer = pool.waiters.popleft()
            if timer is not None:
                timer.cancel()
            self._send(connection, request, reply)
            return
        self._park(connection)
        pool.idle.append(connection)

    def _park(self, connection: BackendConnection) -> None:
        connection.released_at = self.kernel.now
        if self.idle_timeout_s is not None:
            connection.idle_timer = self.kernel.after(
                self.idle_timeout_s, self._idle_expired, connection
            )

    fields: tuple[str, ...] = (
        "read_timeouts",
        "acquire_timeouts",
        "idle_closes",
        "ttl_closes",
        "exit_closes",
        "open",
        "idle_pinned",
        "awaiting_thread",
        "awaiting_connection",
    )

    def counters(self, now: float) -> tuple[float, ...]:
        """Cumulative closes and timeouts; where the node's connections are now (pinned and
        idle in the pools, waiting for a thread, requests waiting for a connection)."""
        pools = self._pools_now()
        idle = sum(len(pool.idle) for pool in pools)
        awaiting = self.open_connections - idle - self.node.in_progress
        return (
            float(self.read_timeouts),
            float(self.acquire_timeouts),
            float(self.idle_closes),
            float(self.ttl_closes),
            float(self.exit_closes),
            float(self.open_connections),
            float(idle),
            float(max(awaiting, 0)),
            float(sum(len(pool.waiters) for pool in pools)),
        )

    def metrics(self, w: Window) -> Iterator[Metric]:
        """The stall's counters (seed 001): timeouts and closes over the window; open, pinned
        idle and thread-awaiting connections and requests awaiting a connection at its end."""
        yield "read_timeouts", w.delta["read_timeouts"], REQUESTS
        yield "acquire_timeouts", w.delta["acquire_timeouts"], REQUESTS
        yield "connections.idle_closed", w.delta["idle_closes"], CONNECTIONS
        yield "connections.ttl_closed", w.delta["ttl_closes"], CONNECTIONS
        yield "connections.closed_by_child_exit", w.delta["exit_closes"], CONNECTIONS
        yield "connections.open_now", w.level["open"], CONNECTIONS
        yield "connections.idle_pinned_now", w.level["idle_pinned"], CONNECTIONS
        yield "connections.awaiting_thread_now", w.level["awaiting_thread"], CONNECTIONS
        yield "requests.awaiting_connection_now", w.level["awaiting_connection"], REQUESTS

    # ------------------------------------------------------------------ the backend's side
    def _idle_expired(self, connection: BackendConnection) -> None:
        """The backend's idle timeout closes the connection and frees its thread."""
        connection.idle_timer = None
        connection.pool.idle.remove(connection)
        self.idle_closes += 1
        self._close(connection)

    def _child_exited(self, child) -> None:
        """A child process exited: the connections it kept close with it (it exits only
        when it serves nothing, so all are idle)."""
        pool = self._pools.pop(child, None)
        if pool is None:
            return
        for connection in pool.idle:
            self.exit_closes += 1
            self._close(connection)
        pool.idle.clear()

    def close_idle(self) -> None:
        """The node stops (a scaled-down pod): the connections kept to it close with it; a
        node that comes back in its place starts with none.  Counted with the backend's idle
        closes: the node closes them, not the front."""
        for pool in self._pools_now():
            for connection in pool.idle:
                self.idle_closes += 1
                self._close(connection)
            pool.idle.clear()

    def _forget(self, connection: BackendConnection) -> None:
        connection.pool.open -= 1
        self.open_connections -= 1

    def _close(self, connection: BackendConnection) -> None:
        if connection.idle_timer is not None:
            connection.idle_timer.cancel()
            connection.idle_timer = None
        self._forget(connection)
        if connection.thread:
            connection.thread = False
            self.pins.release()  # may bind a waiting connection's thread at once
        self._next_waiter(connection.pool)

    def _next_waiter(self, pool: ChildPool) -> None:
        """A connection slot of the child freed: a request waiting for one opens a new one."""
        if pool.waiters and (self.max_connections is None or pool.open < self.max_connections):
            request, reply, timer = pool.waiters.popleft()
            if timer is not None:
                timer.cancel()
            self._send(self._open(pool), request, reply)


class FailingConnectsPool(BackendPool):
    """mod_proxy's worker to a node that can leave its connects unanswered (more connections
    from the front than the node takes and queues: `sim.model.backend_pools.connects_can_fail`):
    the pool with its worker's error state (`retry`) and their counts."""

    __slots__ = ()

    fields: tuple[str, ...] = (*BackendPool.fields, "connect_failures", "disabled_refusals")

    def counters(self, now: float) -> tuple[float, ...]:
        return (
            *super().counters(now),
            float(self.connect_failures),
            float(self.disabled_refusals),
        )

    def metrics(self, w: Window) -> Iterator[Metric]:
        yield from super().metrics(w)
        # connects that timed out (each put the worker in error state), and the requests
        # answered 503 at once while it was
        yield "connect_failures", w.delta["connect_failures"], REQUESTS
        yield "disabled_refusals", w.delta["disabled_refusals"], REQUESTS


class _Returned:
    __slots__ = ("backend", "connection", "reply")

    def __init__(self, backend: BackendPool, connection: BackendConnection, reply: Reply) -> None:
        self.backend = backend
        self.connection = connection
        self.reply = reply

    def __call__(self, request: Request, ok: bool | None) -> None:
        self.backend.released(self.connection)
        self.reply(request, ok)
