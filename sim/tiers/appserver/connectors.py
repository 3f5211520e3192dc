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
returns it when the connection closes.  A new connector type is one class (here, or in any
module imported before the model is read): defining it registers its `kind` as a choice of
`backends.N.connector` and brings its `feature` (`connector.<kind>`), which an engine runs only
if it declares it (`sim.engines.choose`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from sim.kernel.slots import GRANTED, Pool

MakePool = Callable[[str, int | None, int | None], Pool]


class ConnectorSettings(Protocol):
    """What a connector reads of its `[[backends]]` group (`sim.model.schema.Backend`)."""

    @property
    def request_threads(self) -> int | None: ...  # maxThreads less acceptors and selectors
    @property
    def accept_queue(self) -> int | None: ...  # acceptCount
    @property
    def max_connections(self) -> int | None: ...  # Tomcat maxConnections


class Unpinned:
    """An open connection that pins nothing on the node: every bind succeeds at once."""

    name = "unpinned"
    capacity = float("inf")

    def acquire(self, _callback, _arg) -> int:
        return GRANTED

    def release(self) -> None:
        pass


UNPINNED = Unpinned()


CONNECTORS: dict[str, type[Connector]] = {}  # backends.N.connector -> class


class Connector:
    """One connector type: builds the node's request-thread pool and the per-connection pins.

    A subclass sets `kind` (the model file's `backends.N.connector`); defining it registers it
    and gives it the feature `connector.<kind>`."""

    kind: ClassVar[str]
    feature: ClassVar[str]
    # what `tiersim solve` does with it (`sim.model.features`): exactly one is set by a kind
    product_form: ClassVar[str | None] = None
    approximation: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if kind is not None:
            if kind in CONNECTORS:
                raise ValueError(f"backend connector {kind!r} is defined twice")
            CONNECTORS[kind] = cls
            cls.feature = f"connector.{kind}"

    def __init__(self, group: ConnectorSettings, node: str, make_pool: MakePool) -> None:
        self.request_threads: Pool | None = None
        self.pins: Pool | Unpinned = UNPINNED

    @classmethod
    def pins_per_connection(cls, group: ConnectorSettings) -> bool:
        """An open connection holds something of the node's (a thread or a slot), so the
        front's pool of connections changes what the node can serve."""
        return False

    @classmethod
    def pinned_capacity(cls, group: ConnectorSettings) -> int | None:
        """How many open connections the node takes at once (the rest wait in its accept
        queue, then have their SYNs dropped); None: as many as come."""
        return None


class Blocking(Connector):
    """Tomcat BIO, Jetty `SocketConnector` / `Ajp13SocketConnector`: a thread per connection for
    the connection's whole life (`backends.N.threads` = maxThreads, `accept_queue` = acceptCount:
    connections waiting for a thread)."""

    kind = "blocking"
    approximation = "each pooled connection pins a thread while idle (seed 001's stall)"

    def __init__(self, group: ConnectorSettings, node: str, make_pool: MakePool) -> None:
        super().__init__(group, node, make_pool)
        self.pins = make_pool(f"{node}.threads", group.request_threads, group.accept_queue)

    @classmethod
    def pins_per_connection(cls, group: ConnectorSettings) -> bool:
        return True

    @classmethod
    def pinned_capacity(cls, group: ConnectorSettings) -> int | None:
        return group.request_threads


class NonBlocking(Connector):
    """Tomcat NIO/NIO2, Jetty `SelectChannelConnector`: a thread per request from the executor
    (`threads` = maxThreads); with `max_connections` (Tomcat maxConnections) each open
    connection holds a connection slot and `accept_queue` (acceptCount) is the backlog of
    connections beyond it, requests then waiting for a thread in the executor's unbounded
    queue; without it `accept_queue` bounds the requests waiting for a thread."""

    kind = "nonblocking"
    product_form = "the request threads (maxThreads): a slot pool, named when it can fill up"

    def __init__(self, group: ConnectorSettings, node: str, make_pool: MakePool) -> None:
        super().__init__(group, node, make_pool)
        limited = group.max_connections is not None
        thread_queue = None if limited else group.accept_queue
        # An unbounded pool with an unbounded queue never makes anyone wait: no pool at all.
        if group.request_threads is not None or thread_queue is not None:
            self.request_threads = make_pool(f"{node}.threads", group.request_threads, thread_queue)
        if limited:
            self.pins = make_pool(f"{node}.connections", group.max_connections, group.accept_queue)

    @classmethod
    def pins_per_connection(cls, group: ConnectorSettings) -> bool:
        return group.max_connections is not None

    @classmethod
    def pinned_capacity(cls, group: ConnectorSettings) -> int | None:
        return group.max_connections


def connector_class(kind: str) -> type[Connector]:
    return CONNECTORS[kind]
