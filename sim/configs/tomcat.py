"""Tomcat's `server.xml` (5.5 to 10.1): the Connectors and the Executors they share.

A `Connector` (org.apache.catalina.connector.Connector) takes `protocol` (`HTTP/1.1`,
`AJP/1.3` or a protocol handler class: the I/O era BIO, NIO, NIO2 or APR), its thread pool
(`maxThreads`, `minSpareThreads`) unless `executor` names a shared `Executor`
(org.apache.catalina.core.StandardThreadExecutor: `maxThreads`, `minSpareThreads`,
`maxQueueSize`), `acceptCount`, `maxConnections`, `connectionTimeout`, `keepAliveTimeout`
(default: connectionTimeout) and `maxKeepAliveRequests`.  `${name}` in an attribute is a
system property (catalina.properties); none is known here, so one is an error where it matters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sim.configs.defaults import tomcat_protocol
from sim.configs.errors import ConfigError, Where
from sim.configs.xml_lines import Element, read_xml


@dataclass(frozen=True)
class Attribute:
    value: str
    where: Where


@dataclass
class TomcatConnector:
    element: Element
    scheme: str  # http or ajp
    io: str  # bio, nio, nio2, apr
    protocol_note: str
    executor: Element | None

    @property
    def where(self) -> Where:
        return self.element.where

    @property
    def port(self) -> int | None:
        text = self.element.attributes.get("port")
        return int(text) if text and text.isdigit() else None

    def attribute(self, name: str) -> Attribute | None:
        """An attribute of the Connector (case as Tomcat's setters: maxThreads...)."""
        return _attribute(self.element, name)

    def thread_attribute(self, name: str) -> Attribute | None:
        """maxThreads / minSpareThreads: the shared Executor's when there is one (the
        Connector's own are then ignored, the HTTP connector reference says)."""
        return (
            _attribute(self.executor, name) if self.executor is not None else self.attribute(name)
        )


@dataclass
class TomcatServer:
    file: Path
    version: tuple[int, int]
    connectors: list[TomcatConnector] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # performance-relevant elements with no model parameter: (where, what, why)
    not_modelled: list[tuple[Where, str, str]] = field(default_factory=list)

    def connector(self, port: int | None, scheme: str, wanted_by: Where | str) -> TomcatConnector:
        """The Connector the front talks to: on `port`, else the only one of its scheme."""
        on_port = [c for c in self.connectors if port is not None and c.port == port]
        if on_port:
            return on_port[0]
        of_scheme = [c for c in self.connectors if c.scheme == scheme]
        ports = ", ".join(f"{c.port} ({c.scheme.upper()})" for c in self.connectors) or "none"
        if port is None and len(of_scheme) == 1:
            return of_scheme[0]
        raise ConfigError(
            wanted_by,
            f"an {scheme.upper()} Connector on port {port} in {self.file} (its Connectors: {ports})",
            f'add <Connector port="{port}" protocol="{"AJP/1.3" if scheme == "ajp" else "HTTP/1.1"}"/> '
            "to server.xml (uncomment the shipped one) or fix the port the front uses",
        )


def read_tomcat(path: Path, version: tuple[int, int] = (10, 1)) -> TomcatServer:
    root = read_xml(Path(path), "Tomcat server.xml", "--tomcat")
    if root.tag != "Server":
        raise ConfigError(
            root.where,
            f"Tomcat's <Server> element at the top of server.xml, not <{root.tag}>",
            "pass Tomcat's conf/server.xml with --tomcat (Jetty's jetty.xml goes with --jetty)",
        )
    server = TomcatServer(Path(path), version)
    for cluster in root.iter("Cluster"):
        server.not_modelled.append(
            (
                cluster.where,
                f"<Cluster className={cluster.attributes.get('className', '')!r}>",
                "session replication between the nodes: give it as [[cluster.replication]]",
            )
        )
    for engine in root.iter("Engine"):
        if "jvmRoute" in engine.attributes:
            server.notes.append(
                f"{engine.attribute_where('jvmRoute')}: Engine jvmRoute="
                f"{engine.attributes['jvmRoute']} (the route a sticky balancer sends a session to)"
            )
    for service in root.children:
        if service.tag != "Service":
            continue
        executors = {
            e.attributes.get("name", ""): e for e in service.children if e.tag == "Executor"
        }
        users: dict[str, int] = {}
        for element in service.children:
            if element.tag != "Connector":
                continue
            protocol = element.attributes.get("protocol")
            try:
                scheme, io, note = tomcat_protocol(version, protocol)
            except ValueError:
                raise ConfigError(
                    element.attribute_where("protocol"),
                    f"a Connector protocol HTTP/1.1, AJP/1.3 or a protocol handler class, not {protocol!r}",
                    "write one of those (e.g. org.apache.coyote.http11.Http11NioProtocol)",
                ) from None
            executor = None
            name = element.attributes.get("executor")
            if name is not None:
                executor = executors.get(name)
                if executor is None:
                    raise ConfigError(
                        element.attribute_where("executor"),
                        f'an <Executor name="{name}"> in this Service '
                        f"(executors: {', '.join(sorted(executors)) or 'none'})",
                        "declare the Executor before the Connector or fix the name",
                    )
                users[name] = users.get(name, 0) + 1
            server.connectors.append(TomcatConnector(element, scheme, io, note, executor))
        for name, count in users.items():
            if count > 1:
                server.notes.append(
                    f"{executors[name].where}: Executor {name!r} is shared by {count} Connectors: "
                    "the model's thread pool serves only the connector the front uses"
                )
    if not server.connectors:
        raise ConfigError(
            root.where,
            "at least one <Connector> in a <Service>",
            "add the Connector the front uses",
        )
    return server


def _attribute(element: Element | None, name: str) -> Attribute | None:
    if element is None:
        return None
    for key, value in element.attributes.items():
        if key.lower() == name.lower():
            where = element.attribute_where(key)
            if re.search(r"\$\{[^}]+\}", value):
                raise ConfigError(
                    where,
                    f"{key}={value!r} uses a system property, which only the running Tomcat knows",
                    "write the value in server.xml, or give it with --set",
                )
            return Attribute(value, where)
    return None


def milliseconds(attribute: Attribute, name: str) -> float:
    try:
        return float(attribute.value)
    except ValueError:
        raise ConfigError(
            attribute.where,
            f"{name} in milliseconds, not {attribute.value!r}",
            f'write {name}="NUMBER"',
        ) from None


JAVA_INT_MAX = 2**31 - 1


def whole(attribute: Attribute, name: str) -> int:
    try:
        value = int(attribute.value.strip())
    except ValueError:
        raise ConfigError(
            attribute.where,
            f"{name} is a whole number, not {attribute.value!r}",
            f'write {name}="NUMBER"',
        ) from None
    if abs(value) > JAVA_INT_MAX:
        # Tomcat's IntrospectionUtils fails Integer.parseInt, logs a warning and keeps the
        # default: a model of the number as written would not be the server that runs
        raise ConfigError(
            attribute.where,
            f"{name} a Java int (at most {JAVA_INT_MAX:,}), not {attribute.value.strip()[:40]!r}: "
            "Tomcat ignores it and keeps its default",
            f'write the {name}="NUMBER" the server should have',
        )
    return value
