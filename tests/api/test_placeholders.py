"""`sim.simulate` and `sim.solve` of a `tiersim from-config` model whose placeholders nothing
filled: a `sim.ModelError` naming each placeholder and the overrides that fill it, as the
commands refuse it (before, simulate answered for a demand of 0 s, and solve raised a
ZeroDivisionError)."""

from __future__ import annotations

from pathlib import Path

import pytest

import sim
from sim.configs.to_model import Sources, assemble

FRONT = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "apache24-event-tomcat10"


@pytest.fixture
def from_config(tmp_path) -> Path:
    assembled = assemble(Sources(httpd=FRONT / "httpd.conf", tomcat=[(None, FRONT / "server.xml")]))
    path = tmp_path / "from-config.toml"
    path.write_text(assembled.text)
    return path


@pytest.mark.parametrize(
    ("function", "name"), [(sim.simulate, "sim.simulate"), (sim.solve, "sim.solve")]
)
def test_unfilled_placeholders_are_refused(from_config, function, name):
    with pytest.raises(sim.ModelError) as caught:
        function(from_config)
    message = str(caught.value)
    assert message.startswith(f"{from_config}: 8 placeholders no configuration file holds")
    assert f"{name} would answer for the placeholder values" in message
    assert 'overrides = ["proxy.cores=N", "proxy.demand.mean=SECONDS"' in message
    assert "\n" not in message


def test_filled_placeholders_are_solved(from_config):
    fills = [
        "proxy.cores=2",
        "proxy.demand.mean=0.001",
        "backends.0.cores=2",
        "backends.0.demand.mean=0.01",
        "backends.0.io_wait=0.005",
        "clients.concurrency=4",
        "clients.requests=400",
    ]
    with pytest.raises(
        sim.ModelError,
        match=r"1 placeholder no configuration file holds is unfilled \(clients.kind\)",
    ):
        sim.solve(from_config, fills)
    answer = sim.solve(from_config, [*fills, 'clients.kind="ab"'])
    assert len(answer) > 0
