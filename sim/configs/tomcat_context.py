"""Tomcat's JDBC pool: a `<Resource type="javax.sql.DataSource">` of `context.xml` (or of
server.xml's `<GlobalNamingResources>`), the connections a node holds to the database
(`backends.N.jdbc_pool`).

The pool's size is the factory's: Tomcat 8 to 10.1's default factory, DBCP 2 (org.apache.
tomcat.dbcp.dbcp2.BasicDataSourceFactory), reads `maxTotal` (default 8; a negative value is no
limit); DBCP 1 (Tomcat 7 and before) and the Tomcat JDBC pool (`factory="org.apache.tomcat.
jdbc.pool.DataSourceFactory"`) read `maxActive` (default 8 and 100).  Other attributes
(`url`, `${...}` system properties in it) are not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sim.configs.errors import ConfigError, Where
from sim.configs.xml_lines import Element, read_xml

DATA_SOURCE = "javax.sql.DataSource"
TOMCAT_JDBC = "org.apache.tomcat.jdbc.pool.DataSourceFactory"


@dataclass(frozen=True)
class JdbcPool:
    """A DataSource's pool: `size` connections at most (None: no limit), and where it says so."""

    name: str
    size: int | None
    said: str


def read_jdbc_pool(path: Path, option: str = "--context") -> JdbcPool:
    """The one DataSource `Resource` of `path` (context.xml or server.xml)."""
    root = read_xml(Path(path), "Tomcat context.xml", option)
    found = [
        e
        for e in root.iter("Resource")
        if e.attributes.get("type", "").strip() in (DATA_SOURCE, "javax.sql.XADataSource")
    ]
    if not found:
        raise ConfigError(
            root.where,
            f'a <Resource type="{DATA_SOURCE}"> (the JDBC pool the application looks up)',
            "give the context.xml (or server.xml) that declares it, or give --jdbc-pool N",
        )
    if len(found) > 1:
        names = ", ".join(repr(e.attributes.get("name", "")) for e in found)
        raise ConfigError(
            found[1].where,
            f"one DataSource Resource, not {len(found)} ({names}): the model's node has one pool",
            "give --jdbc-pool N with the size of the pool the transaction uses",
        )
    return _pool(found[0])


def _pool(element: Element) -> JdbcPool:
    name = element.attributes.get("name", "")
    tomcat_jdbc = element.attributes.get("factory", "").strip() == TOMCAT_JDBC
    # DBCP 2 reads maxTotal; DBCP 1 and the Tomcat JDBC pool read maxActive
    keys = ("maxActive",) if tomcat_jdbc else ("maxTotal", "maxActive")
    for key in keys:
        if key in element.attributes:
            value = element.attributes[key]
            where = element.attribute_where(key)
            size = _whole(value, key, where)
            return JdbcPool(
                name,
                None if size < 0 else size,
                f"{where}: Resource {name!r} {key}={value}"
                + (" (negative: no limit)" if size < 0 else ""),
            )
    default, key = (100, "maxActive") if tomcat_jdbc else (8, "maxTotal")
    factory = "the Tomcat JDBC pool" if tomcat_jdbc else "DBCP 2"
    return JdbcPool(
        name, default, f"{element.where}: Resource {name!r} without {key}: {factory}'s {default}"
    )


def _whole(value: str, key: str, where: Where) -> int:
    if re.search(r"\$\{[^}]+\}", value):
        raise ConfigError(
            where,
            f"{key}={value!r} uses a system property, which only the running Tomcat knows",
            "give the pool's size with --jdbc-pool N",
        )
    try:
        return int(value.strip())
    except ValueError:
        raise ConfigError(
            where, f"{key} is a whole number, not {value!r}", f'write {key}="NUMBER"'
        ) from None
