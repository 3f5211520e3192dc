"""The backend nodes as `[[backends]]` groups: each member's server configuration (Tomcat's
server.xml or Jetty's jetty.xml) read at the connector the front talks to; members alike
(the same file and weight) are one group of `count` nodes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.configs.defaults import tomcat_connector, tomcat_release
from sim.configs.errors import ConfigError
from sim.configs.jetty import JettyServer, jetty_backend, read_jetty
from sim.configs.members import Member
from sim.configs.tomcat import TomcatConnector, TomcatServer, milliseconds, read_tomcat, whole

TOMCAT_NOT_MODELLED = {
    "minSpareThreads": "threads kept started (the model's pool has its threads from the start)",
    "maxKeepAliveRequests": "the connection is closed after this many requests (the front reconnects)",
    "maxQueueSize": "the Executor's task queue (the connection waits in it, not in acceptCount)",
    "acceptorThreadCount": "threads accepting connections",
    "pollerThreadCount": "NIO poller threads",
    "enableLookups": "a DNS lookup per request when true",
    "compression": "gzip of responses (CPU per response) when on",
    "maxHttpHeaderSize": "",
}


@dataclass
class ServerFiles:
    """`--tomcat [NAME=]FILE` and `--jetty [NAME=]FILE`: NAME is a member's worker name, host
    or host:port; a file without a NAME is every member's."""

    tomcat: list[tuple[str | None, Path]]
    jetty: list[tuple[str | None, Path]]
    tomcat_version: tuple[int, int]

    def for_member(self, member: Member) -> tuple[str, Path]:
        keys = {member.name, member.host, f"{member.host}:{member.port}"}
        for kind, files in (("tomcat", self.tomcat), ("jetty", self.jetty)):
            for key, path in files:
                if key in keys:
                    return kind, path
        unnamed = [("tomcat", p) for k, p in self.tomcat if k is None] + [
            ("jetty", p) for k, p in self.jetty if k is None
        ]
        if len(unnamed) == 1:
            return unnamed[0]
        raise ConfigError(
            member.where,
            f"a server configuration for backend {member.name} ({member.host}:{member.port})"
            + (": several files are given without a name" if unnamed else ""),
            f"pass --tomcat FILE (or --tomcat {member.name}=FILE; --jetty for Jetty)",
        )


def read_backends(members: list[Member], files: ServerFiles, draft) -> None:
    """Write `backends.N.*`: one group per run of alike members."""
    tomcats: dict[Path, TomcatServer] = {}
    jetties: dict[Path, JettyServer] = {}
    nodes: list[tuple[dict[str, Any], dict[str, str], Member]] = []
    kinds: dict[str, str] = {}  # member name -> tomcat / jetty, the group's name
    for member in members:
        kind, path = files.for_member(member)
        kinds[member.name] = kind
        if kind == "tomcat":
            if path not in tomcats:
                tomcats[path] = read_tomcat(path, files.tomcat_version)
                draft.notes += tomcats[path].notes
                for where, what, why in tomcats[path].not_modelled:
                    draft.missing(where, what, why)
            server = tomcats[path]
            connector = server.connector(member.port, member.scheme, member.where)
            values, sources = _tomcat_backend(server, connector, draft)
        else:
            if path not in jetties:
                jetties[path] = read_jetty(path)
                draft.notes += jetties[path].notes
            values, sources = jetty_backend(jetties[path], member, draft)
        nodes.append((values, sources, member))
    groups: list[tuple[dict[str, Any], dict[str, str], list[Member]]] = []
    for values, sources, member in nodes:
        if groups and groups[-1][0] == values and groups[-1][2][0].weight == member.weight:
            groups[-1][2].append(member)
        else:
            groups.append((values, sources, [member]))
    names: set[str] = set()
    for index, (values, sources, group) in enumerate(groups):
        prefix = f"backends.{index}"
        # named for the server it runs (its nodes are tomcat1, tomcat2...); the member's own
        # name (a mod_jk worker, a host) is in the provenance
        name = _name(kinds[group[0].name], names)
        names.add(name)
        members_named = ", ".join(m.name for m in group)
        draft.put(
            f"{prefix}.name", name, f"{group[0].where}: {kinds[group[0].name]} {members_named}"
        )
        if len(group) > 1:
            draft.put(
                f"{prefix}.count", len(group), ", ".join(f"{m.name} ({m.where})" for m in group)
            )
        for key, value in values.items():
            draft.put(f"{prefix}.{key}", value, sources[key])
        if len(members) > 1:
            draft.put(f"{prefix}.weight", group[0].weight, group[0].weight_source)
        draft.placeholder(
            f"{prefix}.cores", 1, "the host's cores; no configuration file holds them"
        )
        draft.placeholder(
            f"{prefix}.demand",
            {"dist": "exponential", "mean": 0.0},
            "the application's CPU-seconds per request; calibrate it (tiersim calibrate) or --set it",
        )
        draft.placeholder(
            f"{prefix}.io_wait",
            0.0,
            "the application's non-CPU wait per request (database, remote calls); --set it",
        )


def _tomcat_backend(
    server: TomcatServer, connector: TomcatConnector, draft
) -> tuple[dict[str, Any], dict[str, str]]:
    release = tomcat_release(server.version)
    defaults = tomcat_connector(server.version, connector.scheme, connector.io)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def given(key: str, value: Any, source: str) -> None:
        values[key] = value
        sources[key] = source

    blocking = connector.io == "bio"
    protocol = connector.attribute("protocol")
    where = protocol.where if protocol else connector.where
    given(
        "connector",
        "blocking" if blocking else "nonblocking",
        f"{where}: {connector.protocol_note}: "
        + ("a thread per connection" if blocking else "a thread per request"),
    )
    threads = connector.thread_attribute("maxThreads")
    owner = "Executor" if connector.executor is not None else "Connector"
    if threads is not None:
        given(
            "threads",
            whole(threads, "maxThreads"),
            f"{threads.where}: {owner} maxThreads={threads.value}",
        )
    else:
        given("threads", defaults["maxThreads"].value, defaults["maxThreads"].reference)
    queue = connector.attribute("acceptCount") or connector.attribute("backlog")
    if queue is not None:
        given(
            "accept_queue", whole(queue, "acceptCount"), f"{queue.where}: acceptCount={queue.value}"
        )
    else:
        given("accept_queue", defaults["acceptCount"].value, defaults["acceptCount"].reference)
    if not blocking:
        limit = connector.attribute("maxConnections")
        if limit is not None:
            count = whole(limit, "maxConnections")
            given(
                "max_connections",
                count if count > 0 else None,
                f"{limit.where}: maxConnections={limit.value}",
            )
        else:
            given(
                "max_connections",
                defaults["maxConnections"].value,
                defaults["maxConnections"].reference,
            )
    idle = connector.attribute("keepAliveTimeout") or connector.attribute("connectionTimeout")
    if idle is not None:
        ms = milliseconds(idle, "connectionTimeout")
        name = (
            "keepAliveTimeout" if connector.attribute("keepAliveTimeout") else "connectionTimeout"
        )
        note = "" if name == "keepAliveTimeout" else "; keepAliveTimeout defaults to it"
        given(
            "connection_idle_timeout_s",
            ms / 1000 if ms > 0 else None,
            f"{idle.where}: {name}={idle.value} ms{note}",
        )
    else:
        ms = defaults["connectionTimeout"].value
        given(
            "connection_idle_timeout_s",
            ms / 1000 if ms > 0 else None,
            defaults["connectionTimeout"].reference + "; keepAliveTimeout defaults to it",
        )
    for name, why in TOMCAT_NOT_MODELLED.items():
        found = connector.attribute(name) or (
            connector.thread_attribute(name)
            if name in ("minSpareThreads", "maxQueueSize")
            else None
        )
        if found is not None and why:
            if name == "enableLookups" and found.value.lower() != "true":
                continue
            if name == "compression" and found.value.lower() in ("off", "false"):
                continue
            draft.missing(found.where, f"{name}={found.value}", why)
    if connector.executor is not None:
        draft.notes.append(
            f"{connector.where}: {release} Connector uses Executor {connector.executor.attributes.get('name')}"
        )
    return values, sources


def _name(text: str, taken: set[str]) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "-", text)
    if not re.match(r"[A-Za-z]", name):
        name = f"node-{name}"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    return name


@dataclass(frozen=True)
class NodeSettings:
    """What `tiersim plan --tomcat server.xml` takes from one Tomcat: the request Connector's
    thread pool and queues, as model settings (`backends.0.threads=8`) with their sources."""

    threads: int
    settings: tuple[str, ...]  # `backends.0.<key>=<value>` besides the threads
    said: tuple[str, ...]  # per value: where it comes from (`server.xml:69: maxThreads=8`)
    not_modelled: tuple[str, ...]


PLANNED_KEYS = ("connector", "accept_queue", "max_connections")


def node_settings(path: Path, version: tuple[int, int] = (10, 1)) -> NodeSettings:
    """The request Connector of the Tomcat `server.xml` at `path` (the only HTTP one, else the
    only AJP one), read as `from-config` reads it: `maxThreads` (the shared Executor's when it
    has one), `acceptCount`, `maxConnections` and the connector kind, each a written value or
    Tomcat's documented default for `version`."""
    from sim.configs.draft import Draft

    server = read_tomcat(path, version)
    http = [c for c in server.connectors if c.scheme == "http"]
    candidates = http or [c for c in server.connectors if c.scheme == "ajp"]
    if len(candidates) != 1:
        ports = ", ".join(f"{c.port} ({c.scheme.upper()})" for c in server.connectors) or "none"
        raise ConfigError(
            str(path),
            f"one request Connector (HTTP, else AJP) in server.xml, not {len(candidates)} "
            f"(its Connectors: {ports})",
            "give --threads N for the Connector your front talks to instead of --tomcat",
        )
    draft = Draft()
    values, sources = _tomcat_backend(server, candidates[0], draft)
    settings = []
    for key in PLANNED_KEYS:
        if key not in values:
            continue
        value = values[key]
        text = "0" if value is None else (f'"{value}"' if isinstance(value, str) else str(value))
        if key == "max_connections" and value is None:
            # maxConnections -1 (no limit): the template's 8192 stays, the same for any load
            # below 8192 open connections
            continue
        if key == "connector" and value == "blocking":
            raise ConfigError(
                str(path),
                f"a blocking (BIO) Connector ({sources[key]}): the planner's template is a "
                "nonblocking (NIO) Connector",
                "write the node with `tiersim from-config` and give it as --model",
            )
        settings.append(f"backends.0.{key}={text}")
    said = tuple(f"{key}: {sources[key]}" for key in ("threads", *PLANNED_KEYS) if key in sources)
    return NodeSettings(int(values["threads"]), tuple(settings), said, tuple(draft.not_modelled))
