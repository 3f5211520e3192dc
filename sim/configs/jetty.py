"""Jetty 6 to 9 `jetty.xml`: the server's QueuedThreadPool and its connectors.

jetty.xml is Jetty's XmlConfiguration: `<Configure class="...Server">` with `<Set name=...>`,
`<New class=...>`, `<Arg>` and `<Call name="addConnector">`; a value may be
`<Property name=... default=...>` or `<SystemProperty ...>` (start.ini's or the command line's:
the default is what the file alone says).  Every connector's acceptors (and, Jetty 9, its
selectors) run on the server's thread pool for ever (AbstractConnector.doStart)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.configs.defaults import JETTY_MAX_THREADS
from sim.configs.errors import ConfigError, Where
from sim.configs.xml_lines import Element, read_xml

if TYPE_CHECKING:
    from sim.configs.members import Member

BLOCKING = (
    "SocketConnector",
    "Ajp13SocketConnector",
    "BlockingChannelConnector",
    "SslSocketConnector",
)
NONBLOCKING = ("SelectChannelConnector", "SslSelectChannelConnector", "ServerConnector")


@dataclass
class JettyConnector:
    element: Element
    kind: str  # the class's simple name

    def setting(self, *names: str) -> tuple[str, Where] | None:
        return _setting(self.element, names)

    @property
    def port(self) -> int | None:
        found = self.setting("port", "jetty.http.port", "jetty.port")
        return int(found[0]) if found and found[0].isdigit() else None


@dataclass
class JettyServer:
    file: Path
    version: int
    pool: Element | None
    connectors: list[JettyConnector] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_jetty(path: Path) -> JettyServer:
    root = read_xml(Path(path), "Jetty jetty.xml", "--jetty")
    server_class = root.attributes.get("class", "")
    if root.tag != "Configure" or not server_class.endswith("Server"):
        raise ConfigError(
            root.where,
            f'Jetty\'s <Configure class="...Server"> at the top of jetty.xml, not <{root.tag}>',
            "pass Jetty's etc/jetty.xml with --jetty (Tomcat's server.xml goes with --tomcat)",
        )
    news = list(root.iter("New"))
    classes = [n.attributes.get("class", "") for n in news]
    version = (
        6
        if server_class.startswith("org.mortbay")
        else 9
        if any(c.endswith("ServerConnector") for c in classes)
        else 7
    )
    pools = [
        n
        for n in news
        if n.attributes.get("class", "").endswith(("QueuedThreadPool", "BoundedThreadPool"))
    ]
    if not pools:  # Jetty 9: <Get name="ThreadPool"> on the server's own pool
        pools = [
            g for g in root.iter("Get") if g.attributes.get("name", "").lower() == "threadpool"
        ]
    server = JettyServer(Path(path), version, pools[0] if pools else None)
    for element in news:
        simple = element.attributes.get("class", "").rsplit(".", 1)[-1]
        if simple in BLOCKING + NONBLOCKING:
            server.connectors.append(JettyConnector(element, simple))
    if not server.connectors:
        raise ConfigError(
            root.where,
            "at least one connector (New class=...Connector)",
            "add the connector the front uses",
        )
    return server


def jetty_backend(
    server: JettyServer, member: Member, draft
) -> tuple[dict[str, Any], dict[str, str]]:
    release = f"Jetty {server.version}"
    matching = [c for c in server.connectors if c.port == member.port]
    if not matching:
        ports = ", ".join(f"{c.port} ({c.kind})" for c in server.connectors)
        raise ConfigError(
            member.where,
            f"a Jetty connector on port {member.port} in {server.file} (its connectors: {ports})",
            "add it to jetty.xml or fix the port the front uses",
        )
    connector = matching[0]
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    blocking = connector.kind in BLOCKING
    values["connector"] = "blocking" if blocking else "nonblocking"
    sources["connector"] = f"{connector.element.where}: {connector.kind}: a thread per " + (
        "connection" if blocking else "request"
    )
    found = _setting(server.pool, ("maxThreads",)) if server.pool is not None else None
    if found:
        values["threads"], sources["threads"] = (
            _count(found, "maxThreads"),
            f"{found[1]}: QueuedThreadPool maxThreads={found[0]}",
        )
    else:
        default = JETTY_MAX_THREADS[server.version]
        values["threads"], sources["threads"] = (
            default,
            f"{release} QueuedThreadPool maxThreads default {default}",
        )
    acceptors, held = 0, []
    for each in server.connectors:
        given = each.setting("acceptors", "Acceptors")
        count = (
            int(given[0]) if given and given[0].lstrip("-").isdigit() and int(given[0]) > 0 else 1
        )
        acceptors += count
        held.append(f"{each.kind} {count} ({given[1] if given else 'AbstractConnector default 1'})")
    values["acceptors"] = acceptors
    sources["acceptors"] = "every connector's acceptors hold a pool thread for ever: " + "; ".join(
        held
    )
    selectors = connector.setting("selectors")
    if selectors and selectors[0].isdigit() and int(selectors[0]) > 0:
        values["selectors"], sources["selectors"] = (
            int(selectors[0]),
            f"{selectors[1]}: selectors={selectors[0]}",
        )
    elif server.version == 9:
        draft.missing(
            connector.element.where,
            "ServerConnector selectors",
            "the default depends on the host's cores; set backends.N.selectors",
        )
    queue = connector.setting("acceptQueueSize")
    if queue and queue[0].isdigit() and int(queue[0]) > 0:
        values["accept_queue"], sources["accept_queue"] = (
            int(queue[0]),
            f"{queue[1]}: acceptQueueSize={queue[0]}",
        )
    else:
        values["accept_queue"] = 50
        sources["accept_queue"] = (
            f"{release} acceptQueueSize 0: java.net.ServerSocket's default backlog 50"
        )
    idle = connector.setting("maxIdleTime", "idleTimeout")
    if idle:
        ms = _milliseconds(idle, "maxIdleTime/idleTimeout")
        values["connection_idle_timeout_s"] = ms / 1000 if ms > 0 else None
        sources["connection_idle_timeout_s"] = f"{idle[1]}: maxIdleTime/idleTimeout={idle[0]} ms"
    else:
        ms = 30000.0 if server.version == 9 else 200000.0
        values["connection_idle_timeout_s"] = ms / 1000
        sources["connection_idle_timeout_s"] = (
            f"{release} connector idle timeout default {ms:g} ms (AbstractConnector)"
        )
    return values, sources


def _count(found: tuple[str, Where], name: str) -> int:
    """A whole number > 0 (a pool's size), as Jetty's XmlConfiguration would convert it."""
    text = found[0].strip()
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(
            found[1], f"{name} a whole number >= 1, not {text[:40]!r}", f"write {name} as digits"
        )
    if int(text) > 2**31 - 1:  # XmlConfiguration converts to a Java int: Jetty does not start
        raise ConfigError(
            found[1],
            f"{name} a Java int (at most 2,147,483,647), not {text[:40]!r}",
            f"write the {name} the server should have",
        )
    return int(text)


def _milliseconds(found: tuple[str, Where], name: str) -> float:
    """Milliseconds (<= 0: no timeout, as Jetty reads it)."""
    text = found[0].strip()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ConfigError(
            found[1], f"{name} in milliseconds, not {text[:40]!r}", f"write {name} as digits"
        )
    return value


def _setting(element: Element, names: tuple[str, ...]) -> tuple[str, Where] | None:
    """A `<Set name=...>` or `<Arg name=...>` directly under `element` (or under its
    `<Arg><New>` for Jetty 9's constructor arguments): its text, or a Property's default."""
    wanted = {n.lower() for n in names}
    for child in element.iter():
        if child.tag in ("Set", "Arg") and child.attributes.get("name", "").lower() in wanted:
            text = child.text.strip()
            for inner in child.children:
                if inner.tag in ("Property", "SystemProperty"):
                    text = inner.attributes.get("default", "")
            if text:
                return text, child.where
        if (
            child.tag in ("Property", "SystemProperty")
            and child.attributes.get("name", "").lower() in wanted
        ):
            default = child.attributes.get("default")
            if default:
                return default, child.where
    return None
