"""Backend connectors: what a request holds on the node, and what each open connection pins.

A connector is chosen by `backends.N.connector` and shapes two pools of the node:

* the **request threads** a request holds while it is served (Tomcat `maxThreads`, Jetty
  QueuedThreadPool `maxThreads`, with `acceptCount` as their queue), and
* what each **open connection** from the front pins for its whole life, idle or not.

`blocking` (Tomcat BIO, Jetty `SocketConnector` / `Ajp13SocketConnector`): the thread is
bound to the connection, so the connection pins a thread and the request needs nothing more.
`nonblocking` (Tomcat NIO/NIO2, Jetty `SelectChannelConnector`): a thread per request; a
connection pins a connection slot when `max_connections` (Tomcat `maxConnections`) bounds
them — `acceptCount` is then the backlog of connections beyond it — and nothing otherwise.

The front's pool of connections (`sim.tiers.proxy.backend_pool.BackendPool`) is the same for
every connector; it asks the connector's `pins` pool for a slot when it opens a connection and
returns it when the connection closes.  A new connector type is one class here and its name in
the schema's `connector` choices.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from sim.kernel.slots import GRANTED, Pool

if TYPE_CHECKING:  # the schema lists the connector names from here: no import at run time
    from sim.model.schema import Backend

MakePool = Callable[[str, int | None, int | None], Pool]


class Unpinned:
    """An open connection that pins nothing on the node: every bind succeeds at once."""

    name = "unpinned"
    capacity = float("inf")

    def acquire(self, _callback, _arg) -> int:
        return GRANTED

    def release(self) -> None:
        pass


UNPINNED = Unpinned()


class Connector:
    """One connector type: builds the node's request-thread pool and the per-connection pins."""

    kind: ClassVar[str]

    def __init__(self, group: Backend, node: str, make_pool: MakePool) -> None:
        self.request_threads: Pool | None = None
        self.pins: Pool | Unpinned = UNPINNED

    @property
    def pins_per_connection(self) -> bool:
        """An open connection holds something of the node's (a thread or a slot), so the
        front's pool of connections changes what the node can serve."""
        return self.pins is not UNPINNED


class Blocking(Connector):
    """Tomcat BIO, Jetty `SocketConnector` / `Ajp13SocketConnector`: a thread per connection for
    the connection's whole life (`backends.N.threads` = maxThreads, `accept_queue` = acceptCount:
    connections waiting for a thread)."""

    kind = "blocking"

    def __init__(self, group: Backend, node: str, make_pool: MakePool) -> None:
        super().__init__(group, node, make_pool)
        self.pins = make_pool(f"{node}.threads", group.request_threads, group.accept_queue)


class NonBlocking(Connector):
    """Tomcat NIO/NIO2, Jetty `SelectChannelConnector`: a thread per request from the executor
    (`threads` = maxThreads); with `max_connections` (Tomcat maxConnections) each open
    connection holds a connection slot and `accept_queue` (acceptCount) is the backlog of
    connections beyond it, requests then waiting for a thread in the executor's unbounded
    queue; without it `accept_queue` bounds the requests waiting for a thread."""

    kind = "nonblocking"

    def __init__(self, group: Backend, node: str, make_pool: MakePool) -> None:
        super().__init__(group, node, make_pool)
        limited = group.max_connections is not None
        thread_queue = None if limited else group.accept_queue
        # An unbounded pool with an unbounded queue never makes anyone wait: no pool at all.
        if group.request_threads is not None or thread_queue is not None:
            self.request_threads = make_pool(f"{node}.threads", group.request_threads, thread_queue)
        if limited:
            self.pins = make_pool(f"{node}.connections", group.max_connections, group.accept_queue)


CONNECTORS: dict[str, type[Connector]] = {c.kind: c for c in (Blocking, NonBlocking)}


def connector_class(kind: str) -> type[Connector]:
    return CONNECTORS[kind]
