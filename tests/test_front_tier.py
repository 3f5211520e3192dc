"""The front tier as httpd 2.4 and mod_jk behave: exact event times on tiny scenarios.

Child processes of the worker and event MPMs (StartServers, Min/MaxSpareThreads, the spawn
rate), each child's own backend connection pool, the event MPM's connection limit per child,
the connection closed after an error status, and the instant the server closed its last
client connection."""

from __future__ import annotations

import pytest

from sim.model.load import ModelError, parse_model

BASE = {
    "clients": {"kind": "ab", "concurrency": 1, "requests": 1},
    "proxy": {"workers": 4},
    "backends": [{"cpu": 0.1}],
}


@pytest.mark.parametrize(
    "override, read",
    [
        ("proxy.backend_pool.timeout_s=none", lambda m: m.proxy.backend_pool.timeout_s),
        ("clients.close_delay_s=none", lambda m: m.clients.close_delay_s),
        ("proxy.workers=none", lambda m: m.proxy.workers),
        ('clients.connect="None"', lambda m: m.clients.connect),
    ],
)
def test_none_sets_an_optional_parameter_from_set_and_toml(override, read):
    assert read(parse_model(BASE, overrides=[override])) is None
    path, value = override.split("=")
    *tables, last = path.split(".")
    data = {**BASE, "proxy": dict(BASE["proxy"]), "clients": dict(BASE["clients"])}
    node = data
    for table in tables:
        node = node.setdefault(table, {})
    node[last] = value.strip('"')
    assert read(parse_model(data)) is None


def test_none_is_refused_where_a_parameter_is_not_optional():
    with pytest.raises(ModelError, match=r"proxy\.cores = 'none'"):
        parse_model(BASE, overrides=["proxy.cores=none"])
