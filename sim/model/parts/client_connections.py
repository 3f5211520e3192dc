"""The front's client connections (`[proxy]` with `[clients]`) as the engines build them, when
they are entities (`sim.model.stack.connections_matter`): how long httpd keeps a connection
for its next request (Apache `KeepAlive`, `KeepAliveTimeout`, `MaxKeepAliveRequests`), and
what holds a worker after a response (the MPM's lingering close, `proxy.linger_s`, against a
client slow to close, `clients.close_delay_s`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.features import Declaration, StackPart, exact
from sim.tiers.proxy.client_connections import linger_hold_s


@dataclass(frozen=True)
class ClientConnections(StackPart):
    """httpd's handling of one client connection."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "proxy.server_close": exact(
            "when the front closed its last connection: no steady-state effect"
        ),
        "proxy.server_close.clients_view": exact("a finite run's end as the clients see it"),
        "proxy.client_connections": exact(
            "the front's connections as entities; what they hold is its own feature"
        ),
    }

    mpm: str  # `proxy.mpm`: prefork and worker hold a worker on an idle connection, event does not
    keep_alive: bool  # Apache `KeepAlive` (used when the clients keep their connections)
    keep_alive_timeout_s: float  # Apache `KeepAliveTimeout`: the wait for the next request [s]
    max_keep_alive_requests: int  # Apache `MaxKeepAliveRequests` (0: unlimited)
    linger_s: float  # lingering close: the idle read before giving up (SECONDS_TO_LINGER) [s]
    # how long a client keeps its socket open after a response it does not follow
    # (`clients.close_delay_s`) [s]; None: it never closes
    client_close_delay_s: float | None
    # the connections are entities (`sim.model.stack.connections_matter`): the stack's
    # `front_connections`
    entities: bool
    # ... for what they hold (keep-alive, a lingering close, httpd's children, a CPU cost per
    # connection), not only because a finite run counts them
    held: bool
    finite: bool  # a finite workload: the run reports when the front closed its last connection
    # a client gives up on a request after this (`clients.timeout_s`) [s]; None: never
    client_timeout_s: float | None

    @property
    def lingers(self) -> bool:
        """A lingering close holds a worker after a response while the client is slow to close."""
        return linger_hold_s(self.mpm, self.linger_s, self.client_close_delay_s) > 0

    def features(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.entities and not self.held:
            # a finite run counts the front's connections, one per request, to report when
            # the front closed its last (`elapsed.server_close`)
            out["proxy.server_close"] = "a finite run through the proxy"
        elif self.entities:
            out["proxy.client_connections"] = "the front's client connections as entities"
        if self.entities and self.finite and self.client_timeout_s is not None:
            # a client that gave up ends its test at its deadline; the front's later closes
            # of its connection are not what it sees (`elapsed.server_close`)
            out["proxy.server_close.clients_view"] = (
                f"clients.timeout_s = {self.client_timeout_s:g} with a finite workload through "
                "the proxy (a client that gave up ends at its deadline)"
            )
        return out


def client_connections(model: Any, entities: bool, held: bool) -> ClientConnections:
    """The client connections of `model` (a `sim.model.schema.Model` with a `[proxy]`);
    `entities`, `held`: they are entities, and for what they hold
    (`sim.model.stack.connections_matter`)."""
    proxy = model.proxy
    return ClientConnections(
        mpm=proxy.mpm,
        keep_alive=proxy.keep_alive,
        keep_alive_timeout_s=proxy.keep_alive_timeout_s,
        max_keep_alive_requests=proxy.max_keep_alive_requests,
        linger_s=proxy.linger_s,
        client_close_delay_s=model.clients.close_delay_s,
        entities=entities,
        held=held,
        finite=bool(model.finite),
        client_timeout_s=model.clients.timeout_s,
    )
