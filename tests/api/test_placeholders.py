"""`sim.simulate`, `sim.solve`, `sim.capacity` and `sim.predict` of a `tiersim from-config`
model whose placeholders nothing filled, given as its path or as the `Model` `sim.load_model`
or `sim.parse_model` made of it: a `sim.ModelError` naming the file, each placeholder and what
fills it, as the commands refuse it (before, simulate answered for a demand of 0 s, solve
raised a ZeroDivisionError, and a loaded Model ran silently)."""

from __future__ import annotations

import json
import tomllib
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


FILLS = [
    "proxy.cores=2",
    "proxy.demand.mean=0.001",
    "backends.0.cores=2",
    "backends.0.demand.mean=0.01",
    "backends.0.io_wait=0.005",
    'clients.kind="ab"',
    "clients.concurrency=4",
    "clients.requests=400",
]


@pytest.mark.parametrize(
    ("function", "name"), [(sim.simulate, "sim.simulate"), (sim.solve, "sim.solve")]
)
def test_a_loaded_model_is_refused_as_its_file_is(from_config, function, name):
    """`sim.simulate(sim.load_model(path))` ran the placeholders silently: the Model carries
    them, and the refusal names the file, every placeholder, and the load that fills them."""
    with pytest.raises(sim.ModelError) as caught:
        function(sim.load_model(from_config))
    message = str(caught.value)
    assert message.startswith(f"{from_config}: 8 placeholders no configuration file holds")
    assert "(proxy.cores, proxy.demand, backends.0.cores, backends.0.demand," in message
    assert f"{name} would answer for the placeholder values" in message
    assert f"fill them: sim.load_model({str(from_config)!r}, " in message
    assert '["proxy.cores=N", "proxy.demand.mean=SECONDS"' in message
    assert "\n" not in message
    # a dict parsed the same way is refused the same way, under the name it is given
    with pytest.raises(sim.ModelError, match=r"^fc: 8 placeholders"):
        function(sim.parse_model(tomllib.loads(from_config.read_text()), "fc"))


def test_placeholders_filled_where_the_model_is_loaded_stay_filled(from_config):
    """Filled at the load, even with the placeholder's own value (clients.concurrency=1 is what
    was written): the loaded Model is solved; one left unfilled is named alone."""
    with pytest.raises(
        sim.ModelError, match=r"1 placeholder .* is unfilled \(backends.0.io_wait\)"
    ):
        sim.solve(sim.load_model(from_config, [f for f in FILLS if "io_wait" not in f]))
    filled = sim.load_model(from_config, [*FILLS, "clients.concurrency=1"])
    assert len(sim.solve(filled)) > 0
    assert len(sim.solve(sim.parse_model(tomllib.loads(from_config.read_text()), "fc", FILLS)))


def test_capacity_and_predict_refuse_a_loaded_model_and_take_overrides_beside_it(
    from_config, tmp_path
):
    """The studies that take overrides beside a Model: the refusal says which to give, and the
    searched parameter or a calibration's fitted values count as filled."""
    model = sim.load_model(from_config)
    with pytest.raises(sim.ModelError) as caught:
        sim.capacity(model, "p95<1", "clients.concurrency", replications=2)
    message = str(caught.value)
    assert message.startswith(f"{from_config}: 7 placeholders")  # concurrency is searched
    assert "sim.capacity would answer" in message
    assert 'fill them: overrides = ["proxy.cores=N"' in message
    with pytest.raises(sim.ModelError, match=r"^.*from-config.toml: 7 placeholders"):
        sim.capacity(from_config, "p95<1", "clients.concurrency", replications=2)
    calibration = tmp_path / "cal.json"
    calibration.write_text(json.dumps(DEMAND_FIT))
    with pytest.raises(sim.ModelError) as caught:
        sim.predict(model, calibration, replications=2, draws=2)
    message = str(caught.value)  # the calibration fills the application's demand
    assert (
        message.startswith(f"{from_config}: 7 placeholders")
        and "backends.0.demand" not in (message.split("(", 1)[1].split(")", 1)[0])
    )
    assert "sim.predict would answer" in message


# a calibration of the application's demand alone (as `tiersim calibrate --save` writes it)
DEMAND_FIT = {
    "experiment": "demand",
    "parameters": [
        {
            "parameter": "backends.0.demand.mean",
            "value": 0.01,
            "low": 0.005,
            "high": 0.02,
            "scale": "log",
            "when": {},
            "kind": "calibrate",
        }
    ],
    "uncertainty": {
        "model_error": {"sd": 0.02, "estimated": True},
        "posterior": {"scale": "unit", "mean": [1.5], "cov": [[0.0025]]},
    },
}
