"""`sim.plan_experiment`'s cluster path and `sim.import_database`: the database evidence, the
node's JDBC pool (context.xml), its Connector (server.xml) and the think time (the JMeter test
plan) from Python as from `tiersim import` and `tiersim plan`, on the shipped files -- the
pgbench levels of tests/fixtures/measurements/postgres/ (one hot-row transaction at 1, 2 and 4
clients), the cluster test's own Tomcat configuration (notebooks/data/cluster-db/setup/) and
the JMeter plan fixture.  The folder the face writes is the command's, file for file; every
argument it cannot use is refused by name, and a missing file in one line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import sim
from sim.cli import main
from sim.exit_codes import ExitCode
from sim.files import FileProblem
from sim.measurements.errors import MeasurementError

pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parents[2]
LEVELS = ROOT / "tests" / "fixtures" / "measurements" / "postgres" / "levels"
SETUP = ROOT / "notebooks" / "data" / "cluster-db" / "setup"
JMX = ROOT / "tests" / "fixtures" / "measurements" / "jmeter" / "plan.jmx"
CLIENTS = (1, 2, 4)
SNAPSHOTS = [LEVELS / f"clients{c}.{when}.csv" for c in CLIENTS for when in ("before", "after")]
FIT = ["clients1", "clients2"]


def pgbench_row(clients: int) -> dict:
    """pgbench's own report of a level as the measurement table's row: a transaction is a
    request, its latency average the response time."""
    text = (LEVELS / f"clients{clients}.pgbench.txt").read_text()
    done = int(re.search(r"actually processed: (\d+)/", text).group(1))
    tps = float(re.search(r"tps = ([\d.]+)", text).group(1))
    latency = float(re.search(r"latency average = ([\d.]+) ms", text).group(1)) / 1000
    return {
        "run": f"clients{clients}",
        "window_start_s": 0.0,
        "window_end_s": done / tps,
        "class": "total",
        "users": float(clients),
        "throughput": tps,
        "response.mean": latency,
        "count.completed": float(done),
        "count.errors": 0.0,
        "count.timed_out": 0.0,
    }


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """The load test's table and the pg_stat_statements evidence, written by the face."""
    import pandas as pd

    folder = tmp_path_factory.mktemp("pgbench")
    sim.write_measurements(pd.DataFrame([pgbench_row(c) for c in CLIENTS]), folder / "table.csv")
    sim.import_database("pg-stat", SNAPSHOTS, folder / "table.csv", folder / "database.csv")
    return folder


def cli(*arguments: object):
    return CliRunner().invoke(main, [str(a) for a in arguments])


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


# --- sim.import_database ---------------------------------------------------------------------


def test_import_database_is_tiersim_import_pg_stat(measured, tmp_path):
    """The frame holds what the command writes; the file it writes is the command's, byte for
    byte; and the frame is the snapshots' own arithmetic (calls and time between them)."""
    import csv

    frame = sim.import_database("pg-stat", SNAPSHOTS, measured / "table.csv", tmp_path / "a.csv")
    result = cli(
        "import", "pg-stat", *SNAPSHOTS, "--table", measured / "table.csv", "-o", tmp_path / "b.csv"
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert set(frame["run"]) == {"clients1", "clients2", "clients4"}

    update = "UPDATE counters SET hits = hits + $1 WHERE id = $2"

    def snapshot(kind: str) -> tuple[float, float]:
        with open(LEVELS / f"clients2.{kind}.csv", newline="") as handle:
            (row,) = [r for r in csv.DictReader(handle) if r["query"] == update]
        return float(row["calls"]), float(row["total_exec_time"])

    (before_calls, before_ms), (after_calls, after_ms) = snapshot("before"), snapshot("after")
    (row,) = frame[(frame["run"] == "clients2") & (frame["statement"] == update)].itertuples()
    assert row.calls == after_calls - before_calls
    assert row.time_per_call_s == pytest.approx((after_ms - before_ms) / row.calls / 1000)
    requests = pgbench_row(2)["count.completed"]
    assert row.calls_per_request == pytest.approx(row.calls / requests)


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        ({"format": "oracle-awr"}, "format"),
        ({"files": 3}, "files"),
        ({"files": []}, "files"),
        ({"table": 3}, "table"),
        ({"output": "evidence.parquet"}, "output"),
        ({"run": "users10"}, "run"),  # snapshots name their runs
        ({"run": 10}, "run"),
        ({"min_duration_ms": 0}, "min_duration_ms"),  # a log's threshold, not a snapshot's
        ({"format": "pg-log", "min_duration_ms": -1.0}, "min_duration_ms"),
        ({"format": "pg-log", "min_duration_ms": "5"}, "min_duration_ms"),
    ],
)
def test_import_database_refuses_an_argument_it_cannot_use(arguments, parameter):
    given = {"format": "pg-stat", "files": SNAPSHOTS, **arguments}
    with pytest.raises(sim.ArgumentError) as caught:
        sim.import_database(**given)
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)


def test_import_database_names_a_missing_file(tmp_path):
    missing = tmp_path / "clients8.before.csv"
    with pytest.raises(MeasurementError, match=rf"^{re.escape(str(missing))}: no such file$"):
        sim.import_database("pg-stat", [missing, tmp_path / "clients8.after.csv"])


# --- sim.plan_experiment's cluster path ------------------------------------------------------

# (the face's keywords, the command's options): the same inputs given both ways
CASES: dict[str, tuple[dict[str, Any], list[object]]] = {
    "configuration": (
        {
            "context": SETUP / "context.xml",
            "tomcat": SETUP / "server.xml",
            "jmx": JMX,
            "jmx_group": "search",
        },
        [
            "--context",
            SETUP / "context.xml",
            "--tomcat",
            SETUP / "server.xml",
            "--jmx",
            JMX,
            "--jmx-group",
            "search",
        ],
    ),
    "numbers": (
        {"jdbc_pool": "none", "threads": 4},
        ["--jdbc-pool", "none", "--threads", "4"],
    ),
    "template pool": ({"threads": 4}, ["--threads", "4"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_face_writes_the_commands_experiment(measured, tmp_path, case):
    keywords, options = CASES[case]
    said = sim.plan_experiment(
        measured / "table.csv",
        FIT,
        tmp_path / "api" / "exp",
        cores=1,
        database=measured / "database.csv",
        **keywords,
    )
    result = cli(
        "plan",
        measured / "table.csv",
        *[a for run in FIT for a in ("--fit", run)],
        "-o",
        tmp_path / "cli" / "exp",
        "--cores",
        "1",
        "--database",
        measured / "database.csv",
        *options,
    )
    assert result.exit_code == 0, result.output
    written = files_of(tmp_path / "api" / "exp")
    assert written == files_of(tmp_path / "cli" / "exp")
    assert {"experiment.toml", "measured.csv"} <= set(written)
    # the sentences the command prints are the ones the face returns
    assert said["database"] is not None and f"the shared database: {said['database']}" in (
        result.output
    )
    if said["jdbc_pool"] is not None:
        assert f"JDBC pool: {said['jdbc_pool']}" in result.output
    else:  # a size given as a number needs no source
        assert "JDBC pool:" not in result.output
    for line in said["test_plan"]:
        assert line in result.output
    assert said["threads"] is None or said["threads"] in result.output


def test_each_value_read_from_the_files_says_where_it_comes_from(measured, tmp_path):
    import tomllib

    said = sim.plan_experiment(
        measured / "table.csv",
        FIT,
        tmp_path / "exp",
        cores=1,
        database=measured / "database.csv",
        **CASES["configuration"][0],
    )
    assert "context.xml:15: Resource 'jdbc/bank' maxTotal=3" in said["jdbc_pool"]
    assert "server.xml:12: Connector maxThreads=4" in said["threads"]
    assert any("Constant 150 ms" in line for line in said["test_plan"])
    spec = tomllib.loads((tmp_path / "exp" / "experiment.toml").read_text())
    settings = spec["factors"]["users"]["*"]
    assert {"backends.0.jdbc_pool=3", "backends.0.threads=4"} <= set(settings)
    assert spec["models"]["model"].endswith("planner-apache-tomcat-database.toml")
    (think,) = [s for s in settings if s.startswith("clients.think=")]
    assert "0.15" in think  # the search group's Constant Timer, 150 ms
    assert all(c["parameter"] != "clients.think.mean" for c in spec.get("calibrate", []))
    # without the database no pool is said
    plain = sim.plan_experiment(measured / "table.csv", FIT, tmp_path / "plain", threads=4)
    assert plain["jdbc_pool"] is None and plain["test_plan"] == [] and plain["database"] is None


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        ({"database": 3}, "database"),
        ({"jdbc_pool": "eight"}, "jdbc_pool"),
        ({"jdbc_pool": 0}, "jdbc_pool"),
        ({"jdbc_pool": 2.5}, "jdbc_pool"),
        ({"jdbc_pool": True}, "jdbc_pool"),
        ({"context": 3}, "context"),
        ({"tomcat": ["server.xml"]}, "tomcat"),
        ({"tomcat_version": 10.1}, "tomcat_version"),
        ({"jmx": 3}, "jmx"),
        ({"jmx": JMX, "jmx_group": 3}, "jmx_group"),
        # inputs that cannot go together, or a value its option cannot take
        ({"jdbc_pool": 4, "context": SETUP / "context.xml"}, "jdbc_pool"),
        ({"database": None, "context": SETUP / "context.xml"}, "context"),
        ({"threads": 8, "tomcat": SETUP / "server.xml"}, "tomcat"),
        ({"tomcat": SETUP / "server.xml", "tomcat_version": "ten"}, "tomcat_version"),
        ({"think": "0.5", "jmx": JMX}, "jmx"),
        ({"jmx_group": "search"}, "jmx_group"),
        ({"jmx": JMX}, "jmx_group"),  # two groups with different timers
        ({"jmx": JMX, "jmx_group": "nope"}, "jmx_group"),
    ],
)
def test_plan_refuses_a_cluster_argument_it_cannot_use(measured, tmp_path, arguments, parameter):
    given = {"cores": 1, "database": measured / "database.csv", **arguments}
    with pytest.raises(sim.ArgumentError) as caught:
        sim.plan_experiment(measured / "table.csv", FIT, tmp_path / "exp", **given)
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)
    assert not (tmp_path / "exp").exists()  # refused before anything is written


@pytest.mark.parametrize(
    "keyword, option", [("context", "--context"), ("tomcat", "--tomcat"), ("jmx", "--jmx")]
)
def test_a_missing_file_is_one_line_from_the_face_and_the_command(
    measured, tmp_path, keyword, option
):
    missing = tmp_path / "absent.xml"
    with pytest.raises(FileProblem) as caught:
        sim.plan_experiment(
            measured / "table.csv",
            FIT,
            tmp_path / "exp",
            database=measured / "database.csv",
            **{keyword: missing},
        )
    assert str(caught.value) == f"{missing}: no such file"
    assert not (tmp_path / "exp").exists()
    result = cli(
        "plan",
        measured / "table.csv",
        *[a for run in FIT for a in ("--fit", run)],
        "-o",
        tmp_path / "exp",
        "--database",
        measured / "database.csv",
        option,
        missing,
    )
    assert result.exit_code == ExitCode.MODEL
    assert str(caught.value) in result.output


def test_a_missing_evidence_table_is_one_line(measured, tmp_path):
    missing = tmp_path / "database.csv"
    with pytest.raises(FileProblem, match=rf"^{re.escape(str(missing))}: no such file$"):
        sim.plan_experiment(measured / "table.csv", FIT, tmp_path / "exp", database=missing)
    assert not (tmp_path / "exp").exists()
