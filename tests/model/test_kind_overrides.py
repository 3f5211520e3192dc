"""`--set clients.kind=closed` on a model whose clients are of another kind: the old kind's own
fields are left out (as writing the file with the new kind would) and named, so a `from-config`
model (ab's placeholder load) is switched to closed users without being written again."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.configs.placeholders import unfilled
from sim.configs.to_model import Sources, assemble
from sim.model.load import ModelError, load_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "configs"
CLOSED = [
    "clients.kind=closed",
    "clients.users=50",
    'clients.think={dist="exponential", mean=1.0}',
    "run.duration_s=30",
]


@pytest.fixture
def from_config(tmp_path: Path) -> Path:
    """`tiersim from-config` on upstream httpd 2.4 event and Tomcat 10: ab's placeholder load."""
    directory = FIXTURES / "apache24-event-tomcat10"
    path = tmp_path / "model.toml"
    sources = Sources(httpd=directory / "httpd.conf", tomcat=[(None, directory / "server.xml")])
    path.write_text(assemble(sources).text)
    return path


def test_a_from_config_model_switches_to_closed_users(from_config):
    model = load_model(from_config, CLOSED)
    assert model.clients.kind == "closed"
    assert model.clients.users == 50 and model.clients.think.mean == 1.0
    provenance = model.meta.provenance
    assert provenance["clients.kind"] == (
        "--set clients.kind=closed left out clients.concurrency = 1, clients.requests = 10000: "
        "parameters of kind = 'ab' that kind = 'closed' does not have"
    )
    assert "clients.concurrency" not in provenance and "clients.requests" not in provenance
    # in any order: the kind's switch does not undo the fields given before it
    again = load_model(from_config, [*CLOSED[1:], CLOSED[0]])
    assert again.clients == model.clients


def test_the_placeholders_left_out_are_not_asked_for(from_config):
    left = unfilled(from_config, CLOSED)
    assert "clients.concurrency" not in left and "clients.requests" not in left
    assert "clients.kind" not in left
    assert {"proxy.cores", "backends.0.cores", "backends.0.demand"} <= set(left)
    # without the switch, ab's placeholders are still asked for
    assert {"clients.concurrency", "clients.requests"} <= set(unfilled(from_config, []))


def test_what_the_new_kind_lacks_is_named_with_what_was_left_out(from_config):
    with pytest.raises(ModelError) as refused:
        load_model(from_config, ["clients.kind=closed", "run.duration_s=30"])
    message = str(refused.value)
    assert "clients.users: required" in message
    assert "--set clients.kind=closed left out clients.concurrency = 1" in message


def test_a_field_given_by_set_or_misspelt_is_never_dropped_silently(from_config):
    """An override of the old kind's field, before or after the switch, and a misspelt field
    in the file are named by validation, not left out."""
    for overrides in (
        ["clients.concurrency=5", *CLOSED],
        [*CLOSED, "clients.concurrency=5"],
    ):
        with pytest.raises(
            ModelError, match=r"clients\.concurrency = 5: a parameter of kind = 'ab'"
        ):
            load_model(from_config, overrides)
    text = from_config.read_text().replace("requests = 10000", "requests = 10000\nuserz = 3")
    from_config.write_text(text)
    with pytest.raises(
        ModelError, match=r"clients.userz = 3: unknown parameter: did you mean users"
    ):
        load_model(from_config, CLOSED)
