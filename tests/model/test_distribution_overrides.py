"""A bare number for a distribution: in a model file it is a constant, as documented (and
`tiersim validate` says so); in `--set` over a random distribution it is refused with both
fixes, because `backends.0.demand=0.01` would silently mean a deterministic demand where
`backends.0.demand.mean=0.01` keeps the exponential."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.model.load import ModelError, constant_times, load_model, parse_model
from sim.random.distributions import Deterministic, Exponential, as_distribution

ROOT = Path(__file__).resolve().parents[2]

MODEL = {
    "clients": {"kind": "closed", "users": 5, "think": {"dist": "deterministic", "value": 1.0}},
    "backends": [
        {
            "name": "server",
            "threads": 4,
            "cores": 1,
            "demand": {"dist": "exponential", "mean": 0.02},
            "io_wait": {"dist": "uniform", "low": 0.01, "high": 0.03},
        }
    ],
    "balancer": {"policy": "round_robin"},
    "run": {"duration_s": 100},
}


def test_a_bare_number_over_a_random_distribution_is_refused_with_both_fixes():
    with pytest.raises(ModelError) as caught:
        parse_model(MODEL, "m.toml", ["backends.0.demand=0.01"])
    message = str(caught.value)
    assert "\n" not in message and message.startswith("m.toml: --set backends.0.demand=0.01:")
    assert "an exponential distribution" in message
    assert "backends.0.demand.mean=0.01 to keep its exponential shape" in message
    assert 'backends.0.demand={dist="deterministic", value=0.01}' in message


def test_a_family_without_a_mean_is_told_to_give_its_table():
    with pytest.raises(ModelError) as caught:
        parse_model(MODEL, "m.toml", ["backends.0.io_wait=0.02"])
    assert "give its uniform table" in str(caught.value)
    assert 'backends.0.io_wait={dist="deterministic", value=0.02}' in str(caught.value)


def test_the_written_forms_keep_their_meaning():
    kept = parse_model(MODEL, "m.toml", ["backends.0.demand.mean=0.01"]).backends[0]
    assert isinstance(as_distribution(kept.demand), Exponential)
    assert as_distribution(kept.demand).mean == pytest.approx(0.01)
    table = parse_model(
        MODEL, "m.toml", ['backends.0.demand={dist="deterministic", value=0.01}']
    ).backends[0]
    assert as_distribution(table.demand) == Deterministic(0.01)
    # over a constant a number stays a constant: nothing changes family
    constant = parse_model(MODEL, "m.toml", ["clients.think=2"]).clients
    assert as_distribution(constant.think) == Deterministic(2.0)
    # zero is no time in any family
    none = parse_model(MODEL, "m.toml", ["backends.0.demand=0"]).backends[0]
    assert as_distribution(none.demand).mean == 0


def test_a_number_validation_refuses_is_left_to_its_message():
    with pytest.raises(ModelError, match=r"backends.0.demand = inf"):
        parse_model(MODEL, "m.toml", ["backends.0.demand=inf"])
    with pytest.raises(ModelError, match=r"backends.0.demand = -0.5"):
        parse_model(MODEL, "m.toml", ["backends.0.demand=-0.5"])


def test_validate_names_the_constants_a_model_file_writes(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(
        '[clients]\nkind = "closed"\nusers = 5\nthink = 1.0\n\n'
        '[[backends]]\nname = "server"\nthreads = 4\ncores = 1\ndemand = 0.02\n\n'
        '[balancer]\npolicy = "round_robin"\n\n[run]\nduration_s = 100\n'
    )
    model = load_model(path)
    assert constant_times(model) == [("clients.think", 1.0), ("backends.0.demand", 0.02)]
    assert as_distribution(model.backends[0].demand) == Deterministic(0.02)  # as documented
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert f"note: {path}: backends.0.demand = 0.02 is a constant" in result.output
    assert 'write backends.0.demand = {dist = "exponential", mean = 0.02}' in result.output
    refused = CliRunner().invoke(main, ["validate", str(path), "--set", "clients.think=2"])
    assert refused.exit_code == 0  # a constant over a constant: allowed, still named
    assert "clients.think = 2 is a constant" in refused.output


def test_validate_refuses_the_bare_override_in_one_line(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(
        '[clients]\nkind = "closed"\nusers = 5\n\n'
        '[[backends]]\nname = "server"\nthreads = 4\ncores = 1\n'
        'demand = { dist = "exponential", mean = 0.02 }\n\n[balancer]\npolicy = "round_robin"\n'
        "\n[run]\nduration_s = 100\n"
    )
    result = CliRunner().invoke(main, ["validate", str(path), "--set", "backends.0.demand=0.01"])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "backends.0.demand.mean=0.01" in lines[0]


def test_every_shipped_model_loads_and_names_only_its_written_constants():
    """The project's own models keep their meaning: only the loopback experiments write bare
    numbers (deterministic sleeps and CPU, as their notes say), and nothing else does."""
    named = {}
    files = sorted(glob.glob(str(ROOT / "models" / "*.toml")))
    files += sorted(glob.glob(str(ROOT / "experiments" / "*" / "*.toml")))
    for file in files:
        try:
            model = load_model(file)
        except ModelError as exc:
            assert "not a model file" in str(exc), exc  # experiment and sweep files
            continue
        if constant_times(model):
            named[Path(file).relative_to(ROOT).as_posix()] = dict(constant_times(model))
    assert named == {
        "experiments/loopback/jk-worker-maxconn30.toml": {
            "proxy.demand": 0.0005,
            "backends.0.demand": 0.001,
            "backends.0.io_wait": 5.0,
        },
        "experiments/loopback/proxy-worker-spawn.toml": {
            "proxy.demand": 0.0005,
            "backends.0.demand": 0.001,
            "backends.0.io_wait": 0.1,
        },
    }
