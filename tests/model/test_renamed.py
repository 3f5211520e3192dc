"""Renamed parameters name their new names (one vocabulary from model file to result column).

This file spells the old names on purpose: it is left out of vocabulary migrations."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli import main


@pytest.mark.parametrize(
    "text, needles",
    [
        (
            "[clients]\nkind = 'closed'\nusers = 5\n[[backends]]\ncpu = 0.1\n",
            ["backends.0.cpu is now backends.0.demand"],
        ),
        (
            "[clients]\nkind = 'closed'\nusers = 5\n[proxy.backend_pool]\nmax_connections = 2\n"
            "[[backends]]\ndemand = 0.1\n[database]\ndemand = 0.01\ndisk = 0.01\n",
            [
                "proxy.backend_pool.max_connections is now proxy.backend_pool.max",
                "database.disk is now database.disk_demand",
            ],
        ),
    ],
)
def test_an_old_name_gets_an_error_naming_the_new_one(tmp_path, text, needles):
    path = tmp_path / "old.toml"
    path.write_text(text, encoding="utf-8")
    for command in ("validate", "run", "solve"):
        result = CliRunner().invoke(main, [command, str(path)])
        assert result.exit_code == 3, (command, result.output)
        assert all(needle in result.output for needle in needles), result.output


def test_an_old_name_in_set_is_refused_too(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(
        "[clients]\nkind = 'closed'\nusers = 5\n[[backends]]\ndemand = 0.1\n[run]\nduration_s = 5\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["run", str(path), "--set", "backends.0.cpu=0.2"])
    assert result.exit_code == 3
    assert "backends.0.cpu is now backends.0.demand" in result.output
