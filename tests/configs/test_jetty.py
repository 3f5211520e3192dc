"""Jetty's jetty.xml: the server's QueuedThreadPool, every connector's acceptors on it, the
connector the front talks to (blocking or not, its idle timeout and accept queue)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.configs.errors import ConfigError
from sim.configs.jetty import read_jetty
from sim.configs.to_model import Sources, assemble

JETTY = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "configs" / "jetty"
MODULES = (
    "LoadModule proxy_module m/mod_proxy.so\nLoadModule proxy_http_module m/mod_proxy_http.so\n"
    "LoadModule proxy_ajp_module m/mod_proxy_ajp.so\n"
)


def proxied(tmp_path: Path, url: str, jetty: Path) -> dict:
    (tmp_path / "httpd.conf").write_text(MODULES + f"ProxyPass / {url}\n")
    sources = Sources(httpd=tmp_path / "httpd.conf", httpd_version="2.2.22", jetty=[(None, jetty)])
    return assemble(sources).draft.values


def test_jetty7_ajp_connector_behind_mod_proxy_ajp(tmp_path):
    """Seed 001's cells: 30 threads, of which the AJP connector's 1 acceptor and the
    SelectChannelConnector's 2 are held for ever; the AJP connector is blocking."""
    values = proxied(tmp_path, "ajp://jetty:8009/", JETTY / "jetty7.xml")
    assert values["backends.0.name"] == "jetty"
    assert values["backends.0.threads"] == 30 and values["backends.0.acceptors"] == 3
    assert values["backends.0.connector"] == "blocking"
    assert values["backends.0.connection_idle_timeout_s"] == 60
    http = proxied(tmp_path, "http://jetty:8080/", JETTY / "jetty7.xml")
    assert http["backends.0.connector"] == "nonblocking"
    assert http["backends.0.connection_idle_timeout_s"] == 300


def test_jetty9_server_connector_property_defaults(tmp_path):
    server = read_jetty(JETTY / "jetty9.xml")
    assert server.version == 9 and [c.port for c in server.connectors] == [8080]
    values = proxied(tmp_path, "http://jetty:8080/", JETTY / "jetty9.xml")
    assert values["backends.0.threads"] == 200  # the Property's default
    assert values["backends.0.connection_idle_timeout_s"] == 30
    assert values["backends.0.accept_queue"] == 50  # acceptQueueSize 0: ServerSocket's 50


def test_a_port_no_jetty_connector_listens_on(tmp_path):
    with pytest.raises(ConfigError, match="port 8010"):
        proxied(tmp_path, "ajp://jetty:8010/", JETTY / "jetty7.xml")


def test_jetty6_select_channel_connector(tmp_path):
    server = read_jetty(JETTY / "jetty6.xml")
    assert server.version == 6
    values = proxied(tmp_path, "http://jetty:8080/", JETTY / "jetty6.xml")
    assert values["backends.0.threads"] == 250 and values["backends.0.acceptors"] == 2
    assert values["backends.0.connector"] == "nonblocking"
    assert values["backends.0.connection_idle_timeout_s"] == 30


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ('default="200"', "maxThreads a whole number >= 1, not 'many'"),
        ('default="30000"', "idleTimeout in milliseconds, not 'soon'"),  # the connector's
    ],
)
def test_a_non_numeric_property_default_is_named_with_its_line(tmp_path, setting, expected):
    """A Property default that is no number: one line naming jetty.xml's line, not a crash."""
    text = (JETTY / "jetty9.xml").read_text()
    bad = "many" if "200" in setting else "soon"
    changed = tmp_path / "jetty.xml"
    changed.write_text(text.replace(setting, setting.replace(setting.split('"')[1], bad), 1))
    with pytest.raises(ConfigError, match=expected) as raised:
        proxied(tmp_path, "http://jetty:8080/", changed)
    line = next(i for i, t in enumerate(changed.read_text().splitlines(), 1) if f'"{bad}"' in t)
    assert str(raised.value).startswith(f"{changed}:{line}: ")
