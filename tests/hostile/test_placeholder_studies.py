"""Placeholders are not zeros in a study either: `tiersim sweep` of a base model, and
`tiersim capacity` of a model or a sweep, written by `from-config` with its placeholders left
(a demand of 0 s, one client) searched or swept the placeholder values without a word.  Each
now refuses before any simulation and names what fills them: `sweep.set` entries for a sweep,
`--set` for capacity; a factor or the searched `--vary` path counts as given.  And a grid
too large to expand is refused before it is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.configs.placeholders import unfilled
from sim.configs.to_model import Sources, assemble
from tests.hostile.bounded import ROOT, TIMEOUT_S, _limit_memory

FRONT = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "apache24-event-tomcat10"
FILLS = [
    "proxy.cores=1",
    "proxy.demand.mean=0.001",
    "backends.0.cores=2",
    "backends.0.demand.mean=0.01",
    "backends.0.io_wait=0.01",
    'clients.kind="ab"',
    "clients.requests=200",
]


@pytest.fixture
def unfilled_model(tmp_path) -> Path:
    assembled = assemble(Sources(httpd=FRONT / "httpd.conf", tomcat=[(None, FRONT / "server.xml")]))
    path = tmp_path / "from-config.toml"
    path.write_text(assembled.text)
    return path


def sweep_of(tmp_path) -> Path:
    """A sweep of the from-config model beside it, over the placeholder clients.concurrency."""
    path = tmp_path / "sweep.toml"
    path.write_text(
        '[sweep]\nname = "placeholders"\nbase = "from-config.toml"\nreplications = 2\nseed = 3\n'
        'metrics = ["throughput"]\n\n[factors]\n"clients.concurrency" = [1, 2]\n'
    )
    return path


def refused(args: list[str]) -> str:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "placeholders no configuration file holds are unfilled" in lines[0]
    return lines[0]


def test_a_sweep_of_an_unfilled_model(tmp_path, unfilled_model):
    line = refused(["sweep", str(sweep_of(tmp_path)), "--serial", "-o", str(tmp_path / "r")])
    assert 'sweep.set = ["proxy.cores=N", "proxy.demand.mean=SECONDS"' in line
    assert "clients.concurrency" not in line  # the factor gives it
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("source", ["model", "sweep"])
def test_capacity_of_an_unfilled_model(tmp_path, unfilled_model, source):
    given = unfilled_model if source == "model" else sweep_of(tmp_path)
    line = refused(["capacity", str(given), "--slo", "p95<1", "--vary", "clients.concurrency"])
    assert "--set backends.0.demand.mean=SECONDS" in line
    assert "clients.concurrency" not in line.split("unfilled (", 1)[1].split(")")[0]


def test_what_fills_the_placeholders(unfilled_model):
    assert "clients.concurrency" in unfilled(unfilled_model, FILLS)
    assert unfilled(unfilled_model, FILLS, filled=["clients.concurrency"]) == []


def test_a_grid_too_large_to_expand_is_refused_before_it_is(tmp_path):
    """Twelve factors of twelve values: 8.9 * 10^12 points, expanded until memory ran out."""
    demo = Path(__file__).resolve().parents[2] / "models" / "demo.toml"
    (tmp_path / "base.toml").write_text(demo.read_text())
    factors = "".join(
        f'"{path}" = [{", ".join(str(v) for v in range(1, 13))}]\n'
        for path in [
            "clients.users",
            "clients.think.mean",
            "proxy.workers",
            "proxy.cores",
            "backends.0.threads",
            "backends.0.accept_queue",
            "backends.0.cores",
            "backends.0.db_calls",
            "backends.0.jdbc_pool",
            "database.cores",
            "backends.0.count",
            "clients.timeout_s",
        ]
    )
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        '[sweep]\nbase = "base.toml"\nreplications = 2\nmetrics = ["throughput"]\n\n[factors]\n'
        + factors
    )
    for args in (["sweep", str(sweep), "--serial"], ["capacity", str(sweep), "--slo", "p95<1"]):
        args += (
            ["--vary", "clients.users"] if args[0] == "capacity" else ["-o", str(tmp_path / "r")]
        )
        # in a child bounded as `bounded` bounds a reader: were the grid expanded, it would
        # fail there, not take this machine's memory
        done = subprocess.run(
            [sys.executable, "-m", "sim.cli", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=TIMEOUT_S * 3,
            preexec_fn=_limit_memory,
        )
        assert done.returncode == 3, done.stderr
        assert "a grid of 8,916,100,448,256 points" in done.stderr
        assert "expected at most 100,000" in done.stderr


def test_validate_does_not_call_an_unfilled_model_ok(unfilled_model):
    """`tiersim validate` said "ok" of a model whose values are from-config's placeholders:
    it now names them and the `--set` that fills each, exit 3; filled, it says ok."""
    result = CliRunner().invoke(main, ["validate", str(unfilled_model)])
    assert result.exit_code == 3, result.output
    assert "ok (" not in result.output and "backends.0.demand" in result.output
    sets = [item for fill in [*FILLS, "clients.concurrency=2"] for item in ("--set", fill)]
    filled = CliRunner().invoke(main, ["validate", str(unfilled_model), *sets])
    assert filled.exit_code == 0 and "ok (" in filled.output, filled.output
