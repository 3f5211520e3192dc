"""Small inputs for the package face's tests: an M/M/1 model (short runs, two replications),
the planning notebook's measured levels, and a one-parameter M/M/1 experiment."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

PLANNING = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "planning"

# M/M/1 at rho = 0.5: R = D / (1 - rho) = 0.2 s, X = 5/s (one core, threads enough)
MM1 = """
[meta]
name = "mm1"

[clients]
kind = "open"
rate_per_s = 5.0

[[backends]]
name = "server"
threads = 8
cores = 1
demand = { dist = "exponential", mean = 0.1 }

[balancer]
policy = "round_robin"

[run]
duration_s = 400
warmup = 20
replications = 2
seed = 3
"""


@pytest.fixture
def mm1_file(tmp_path) -> Path:
    path = tmp_path / "mm1.toml"
    path.write_text(MM1)
    return path


@pytest.fixture
def measured(tmp_path_factory):
    """Three measured levels (1, 2 and 4 JMeter threads) with the host's CPU, imported once."""
    import sim

    folder = tmp_path_factory.mktemp("measured")
    table = sim.import_measurements(
        "jtl",
        [PLANNING / f"users{n}.jtl" for n in (1, 2, 4)],
        folder / "measured.csv",
        utilisation=[PLANNING / "sar.sadf.csv"],
    )
    return table, folder / "measured.csv"


def experiment(folder: Path) -> Path:
    """R = 0.2 s published at lambda = 5 (D = 0.1 s); the demand free in [0.05, 0.15]."""
    (folder / "model.toml").write_text(MM1.replace("threads = 8", "threads = 1"))
    (folder / "published.csv").write_text("row,response_s\nfit,0.2\nother,\n")
    (folder / "experiment.toml").write_text(
        textwrap.dedent("""
        [experiment]
        name = "mm1"
        published = "published.csv"
        value_column = "response_s"
        metric = "response.mean"

        [models]
        column = "row"
        fit = "model.toml"
        other = "model.toml"

        [[calibrate]]
        parameter = "backends.0.demand.mean"
        bounds = [0.05, 0.15]

        [[fitted]]
        row = "fit"
        """)
    )
    return folder
