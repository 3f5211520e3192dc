"""The front's client connections (`[proxy]` with `[clients]`) as the engines build them, when
they are entities (`sim.model.stack.connections_matter`): how long httpd keeps a connection
for its next request (Apache `KeepAlive`, `KeepAliveTimeout`, `MaxKeepAliveRequests`), and
what holds a worker after a response (the MPM's lingering close, `proxy.linger_s`, against a
client slow to close, `clients.close_delay_s`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ClientConnections:
    """httpd's handling of one client connection."""

    mpm: str  # `proxy.mpm`: prefork and worker hold a worker on an idle connection, event does not
    keep_alive: bool  # Apache `KeepAlive` (used when the clients keep their connections)
    keep_alive_timeout_s: float  # Apache `KeepAliveTimeout`: the wait for the next request [s]
    max_keep_alive_requests: int  # Apache `MaxKeepAliveRequests` (0: unlimited)
    linger_s: float  # lingering close: the idle read before giving up (SECONDS_TO_LINGER) [s]
    # how long a client keeps its socket open after a response it does not follow
    # (`clients.close_delay_s`) [s]; None: it never closes
    client_close_delay_s: float | None


def client_connections(model: Any) -> ClientConnections:
    """The client connections of `model` (a `sim.model.schema.Model` with a `[proxy]`)."""
    proxy = model.proxy
    return ClientConnections(
        mpm=proxy.mpm,
        keep_alive=proxy.keep_alive,
        keep_alive_timeout_s=proxy.keep_alive_timeout_s,
        max_keep_alive_requests=proxy.max_keep_alive_requests,
        linger_s=proxy.linger_s,
        client_close_delay_s=model.clients.close_delay_s,
    )
