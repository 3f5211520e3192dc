"""`tiersim plan --database`: the shared database tier and its lock from the database's own
evidence, on the real fixtures of tests/fixtures/measurements/postgres/ (pgbench at 1, 2 and 4
clients running one hot-row transaction, with pg_stat_statements snapshots and the statement
log of each level).  The load test's table is pgbench's own report per level: a transaction is
a request, its latency average the response time."""

from __future__ import annotations

import csv
import math
import re
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main

pytest.importorskip("pandas")

POSTGRES = Path(__file__).resolve().parents[1] / "fixtures" / "measurements" / "postgres"
LEVELS = POSTGRES / "levels"
CLIENTS = (1, 2, 4)
UPDATE = "UPDATE counters SET hits = hits + $1 WHERE id = $2"
# the cluster test's own Tomcat context.xml (DBCP 2, maxTotal="3")
CLUSTER_CONTEXT = (
    Path(__file__).resolve().parents[2] / "notebooks/data/cluster-db/setup/context.xml"
)


def pgbench(clients: int) -> tuple[int, float, float]:
    """pgbench's transactions, tps and latency average [s] at this level."""
    text = (LEVELS / f"clients{clients}.pgbench.txt").read_text()
    done = int(re.search(r"actually processed: (\d+)/", text).group(1))
    tps = float(re.search(r"tps = ([\d.]+)", text).group(1))
    latency = float(re.search(r"latency average = ([\d.]+) ms", text).group(1)) / 1000
    return done, tps, latency


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """The load test's table (one window per level) and the database evidence of both sources."""
    from sim.measurements.database.evidence import write as write_evidence
    from sim.measurements.database.importer import import_database
    from sim.measurements.table import write

    folder = tmp_path_factory.mktemp("pgbench")
    rows = []
    for clients in CLIENTS:
        done, tps, latency = pgbench(clients)
        rows.append(
            {
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
        )
    write(rows, folder / "measured.csv")
    snapshots = [str(LEVELS / f"clients{c}.{k}.csv") for c in CLIENTS for k in ("before", "after")]
    table = folder / "measured.csv"
    write_evidence(import_database("pg-stat", snapshots, table), folder / "pgstat.csv")
    logs = [str(LEVELS / f"clients{c}.postgresql.log.gz") for c in CLIENTS]
    write_evidence(import_database("pg-log", logs, table, None, 0.0), folder / "pglog.csv")
    return folder


def snapshot_time_per_call(clients: int, statement: str) -> float:
    """The statement's time per call at this level straight from the two snapshots [s]."""

    def read(kind: str) -> dict[str, tuple[float, float]]:
        with open(LEVELS / f"clients{clients}.{kind}.csv", newline="") as handle:
            return {
                r["query"]: (float(r["calls"]), float(r["total_exec_time"]))
                for r in csv.DictReader(handle)
            }

    before, after = read("before"), read("after")
    calls = after[statement][0] - before.get(statement, (0.0, 0.0))[0]
    total_ms = after[statement][1] - before.get(statement, (0.0, 0.0))[1]
    return total_ms / calls / 1000


def plan(folder: Path, out: Path, *args: str):
    return CliRunner().invoke(
        main,
        ["plan", str(folder / "measured.csv"), "-o", str(out), "--cores", "1", *args],
    )


def experiment(out: Path) -> dict:
    return tomllib.loads((out / "experiment.toml").read_text())


def entry(entries: list[dict], parameter: str) -> dict:
    (found,) = [e for e in entries if e["parameter"] == parameter]
    return found


def test_plan_writes_the_shared_database_and_its_lock_from_pg_stat_statements(measured, tmp_path):
    out = tmp_path / "exp"
    args = ["--fit", "clients1", "--fit", "clients2", "--database", str(measured / "pgstat.csv")]
    result = plan(measured, out, *args, "--jdbc-pool", "5")
    assert result.exit_code == 0, result.output
    assert "time per call x" in result.output  # the UPDATE named by its growth
    spec = experiment(out)
    assert spec["models"]["model"].endswith("planner-apache-tomcat-database.toml")
    settings = spec["factors"]["users"]["*"]
    assert "backends.0.jdbc_pool=5" in settings and "database.lock.share=1.0" in settings

    # the lock's wait per acquisition: the UPDATE's time per call less its light time, as the
    # snapshots themselves say, written into the experiment's copy of the table
    from sim.measurements.table import read

    table = read(out / "measured.csv").set_index("run")
    light = snapshot_time_per_call(1, UPDATE)
    for clients in (2, 4):
        expected = snapshot_time_per_call(clients, UPDATE) - light
        assert table.loc[f"clients{clients}", "database.lock.wait"] == pytest.approx(expected)
    assert math.isnan(table.loc["clients1", "database.lock.wait"])  # no wait to compare there
    assert {"column": "database.lock.wait", "unit": "s"} in spec["figures"]
    fitted = {(f["run"], f["figure"]) for f in spec["fitted"]}
    assert ("clients2", "database.lock.wait") in fitted
    assert ("clients4", "database.lock.wait") not in fitted  # predicted, not fitted

    # the transaction's light time: every statement's calls per request x time per call
    with open(LEVELS / "clients1.after.csv", newline="") as handle:
        queries = [r["query"] for r in csv.DictReader(handle)]
    statements = [q for q in queries if _ran(q, 1)]
    done, _, latency = pgbench(1)
    transaction = sum(snapshot_time_per_call(1, q) * _calls(q, 1) / done for q in statements)
    demand = entry(spec["unknown"], "database.demand.value")
    assert demand["range"] == pytest.approx([0.01 * transaction, transaction - light])
    assert "pg_stat_wal" in demand["provenance"]
    # a fitted run measured the wait: the hold is searched between the UPDATE's own light
    # time and the light response less the database's least work
    hold = entry(spec["calibrate"], "database.lock.hold.value")
    assert hold["bounds"] == pytest.approx([light, latency - 0.01 * transaction])
    # why not the statements' time alone: with two clients a wait lasts at most the other's
    # section, and clients2's measured wait is longer than every statement of clients1 put
    # together (pg_stat_statements does not time the COMMIT's flush, nor the round trips)
    assert transaction < table.loc["clients2", "database.lock.wait"] < hold["bounds"][1]
    # what each waiter costs the next holder: PostgreSQL wakes them all at each COMMIT, and a
    # woken waiter redoes at most its UPDATE: an unknown from 1 % of to all of its light time
    wake = entry(spec["unknown"], "database.lock.wake_per_waiter_s")
    assert wake["range"] == pytest.approx([0.01 * light, light])
    assert "EvalPlanQual" in (out / "experiment.toml").read_text()

    # the experiment loads, with the figure on every heavier run and the lock in its model
    from sim.model.load import load_model
    from sim.studies.records import load_experiment

    _, loaded, _ = load_experiment(str(out))
    compared = {(f.when["run"], f.column) for f in loaded.figures}
    assert {("clients2", "database.lock.wait"), ("clients4", "database.lock.wait")} <= compared
    model = load_model(spec["models"]["model"], settings[1:])
    assert model.database.lock is not None and model.backends[0].jdbc_pool == 5
    assert model.backends[0].db_calls == 1


def _calls(statement: str, clients: int) -> float:
    with open(LEVELS / f"clients{clients}.before.csv", newline="") as handle:
        before = {r["query"]: float(r["calls"]) for r in csv.DictReader(handle)}
    with open(LEVELS / f"clients{clients}.after.csv", newline="") as handle:
        after = {r["query"]: float(r["calls"]) for r in csv.DictReader(handle)}
    return after[statement] - before.get(statement, 0.0)


def _ran(statement: str, clients: int) -> bool:
    return _calls(statement, clients) > 0


def test_the_log_names_the_locking_statement_by_its_lock_waits(measured, tmp_path):
    out = tmp_path / "exp"
    args = ["--fit", "clients1", "--fit", "clients4", "--database", str(measured / "pglog.csv")]
    result = plan(measured, out, *args)
    assert result.exit_code == 0, result.output
    assert "1065 lock waits logged at clients4" in result.output
    spec = experiment(out)
    assert "UPDATE counters" in (out / "experiment.toml").read_text()
    assert ("clients4", "database.lock.wait") in {(f["run"], f["figure"]) for f in spec["fitted"]}
    assert "JDBC pool: the template's 8" in result.output


def test_without_a_fitted_wait_the_hold_is_an_unknown(measured, tmp_path):
    """The evidence of clients1 and clients4 only: the fitted clients2 measured no wait, so no
    figure pins the hold, and it is carried over its range (clients4's wait is still a figure)."""
    from sim.measurements.database import evidence

    rows = [r for r in evidence.read(measured / "pgstat.csv") if r["run"] != "clients2"]
    evidence.write(rows, tmp_path / "partial.csv")
    out = tmp_path / "exp"
    args = ["--fit", "clients1", "--fit", "clients2", "--database", str(tmp_path / "partial.csv")]
    result = plan(measured, out, *args)
    assert result.exit_code == 0, result.output
    spec = experiment(out)
    assert all(e["parameter"] != "database.lock.hold.value" for e in spec.get("calibrate", []))
    hold = entry(spec["unknown"], "database.lock.hold.value")
    assert hold["range"][0] < hold["range"][1] and "locking statement" in hold["provenance"]
    assert all(f["figure"] != "database.lock.wait" for f in spec["fitted"])
    assert {"column": "database.lock.wait", "unit": "s"} in spec["figures"]


@pytest.mark.parametrize(
    ("keep", "fit", "message"),
    [
        # only the light run: nothing grows, and the snapshots log no lock waits
        (("clients1",), ("clients1", "clients2"), "the evidence shows no shared lock"),
        # the lightest fitted run is not in the evidence
        (("clients2", "clients4"), ("clients1", "clients2"), "no statement of run 'clients1'"),
    ],
)
def test_evidence_that_cannot_give_the_tier_is_one_line(measured, tmp_path, keep, fit, message):
    from sim.measurements.database import evidence

    rows = [r for r in evidence.read(measured / "pgstat.csv") if r["run"] in keep]
    evidence.write(rows, tmp_path / "partial.csv")
    args = [a for run in fit for a in ("--fit", run)]
    result = plan(measured, tmp_path / "exp", *args, "--database", str(tmp_path / "partial.csv"))
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "exp" / "experiment.toml").exists()  # nothing half-written


@pytest.mark.parametrize(
    "pool", [("--jdbc-pool", "8"), ("--context", str(CLUSTER_CONTEXT))], ids=["size", "context"]
)
def test_a_jdbc_pool_without_the_database_is_refused(measured, tmp_path, pool):
    result = plan(measured, tmp_path / "exp", "--fit", "clients1", "--fit", "clients2", *pool)
    assert result.exit_code != 0 and "give --database" in result.output


def test_calibrate_compares_the_simulated_lock_wait(measured, tmp_path):
    """One evaluation of the planned experiment (short runs): the simulated metric
    `database.lock.wait` exists and is compared at every run with a measured wait, and at the
    same parameters it grows with the users (more clients queue for the one row)."""
    out = tmp_path / "exp"
    args = ["--fit", "clients1", "--fit", "clients2", "--database", str(measured / "pgstat.csv")]
    assert plan(measured, out, *args, "--duration", "5").exit_code == 0
    calibrated_once_waits_grow(out, tmp_path)


def calibrated_once_waits_grow(out: Path, tmp_path: Path) -> None:
    """One `calibrate` evaluation of the experiment in `out` (short runs, no uncertainty): the
    simulated `database.lock.wait` is a target at the heavier fitted run, and at the same
    parameters it is 0 with one client and grows from two clients to four."""
    import json

    result = CliRunner().invoke(
        main,
        [
            "calibrate",
            str(out),
            "--no-cache",
            "-r",
            "2",
            "--max-evaluations",
            "1",
            "--no-uncertainty",
            "--draws",
            "0",
            "--serial",
            "--save",
            str(tmp_path / "cal.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "cal.json").read_text())
    targets = {t["figure"] for t in document["targets"]}
    assert "run=clients2 database.lock.wait" in targets
    waits = {
        r["figure"]: r["simulated"] for r in document["rows"] if r["metric"] == "database.lock.wait"
    }
    assert 0 < waits["clients2 database.lock.wait"] < waits["clients4 database.lock.wait"]
    assert waits["clients1 database.lock.wait"] == 0  # one client never waits for itself


# --- the JDBC pool from Tomcat's context.xml --------------------------------------------------

CLUSTER_CONTEXT = (
    Path(__file__).resolve().parents[2] / "notebooks/data/cluster-db/setup/context.xml"
)


def pool_setting(out: Path) -> list[str]:
    return [s for s in experiment(out)["factors"]["users"]["*"] if "jdbc_pool" in s]


def test_the_pool_is_read_from_a_real_context_xml(measured, tmp_path):
    """The cluster test's own context.xml: DBCP 2, maxTotal="3" (its url's ${pg.port} is a
    system property the planner does not need)."""
    out = tmp_path / "exp"
    args = ["--fit", "clients1", "--fit", "clients2", "--database", str(measured / "pgstat.csv")]
    result = plan(measured, out, *args, "--context", str(CLUSTER_CONTEXT))
    assert result.exit_code == 0, result.output
    assert pool_setting(out) == ["backends.0.jdbc_pool=3"]
    assert "context.xml:15: Resource 'jdbc/bank' maxTotal=3" in result.output


@pytest.mark.parametrize(
    ("resource", "setting"),
    [
        ('maxTotal="-1"', "backends.0.jdbc_pool=none"),  # DBCP 2: negative is no limit
        ("", "backends.0.jdbc_pool=8"),  # DBCP 2's default maxTotal
        ('factory="org.apache.tomcat.jdbc.pool.DataSourceFactory"', "backends.0.jdbc_pool=100"),
        (
            'factory="org.apache.tomcat.jdbc.pool.DataSourceFactory" maxActive="12" maxTotal="2"',
            "backends.0.jdbc_pool=12",
        ),  # the Tomcat JDBC pool reads maxActive only
    ],
)
def test_each_factory_reads_its_own_attribute(measured, tmp_path, resource, setting):
    context = tmp_path / "context.xml"
    context.write_text(
        f'<Context>\n  <Resource name="jdbc/x" type="javax.sql.DataSource" {resource}/>\n</Context>\n'
    )
    out = tmp_path / "exp"
    args = ["--fit", "clients1", "--fit", "clients2", "--database", str(measured / "pgstat.csv")]
    result = plan(measured, out, *args, "--context", str(context))
    assert result.exit_code == 0, result.output
    assert pool_setting(out) == [setting]
    from sim.model.load import load_model

    model = load_model(experiment(out)["models"]["model"], [setting])
    assert model.backends[0].jdbc_pool == (
        None if setting.endswith("none") else int(setting.split("=")[1])
    )


@pytest.mark.parametrize(
    ("body", "args", "message"),
    [
        ("<Context/>", (), 'a <Resource type="javax.sql.DataSource">'),
        (
            '<Context><Resource name="a" type="javax.sql.DataSource"/>'
            '<Resource name="b" type="javax.sql.DataSource"/></Context>',
            (),
            "not 2 ('a', 'b')",
        ),
        (
            '<Context><Resource name="a" type="javax.sql.DataSource" maxTotal="${n}"/></Context>',
            (),
            "uses a system property",
        ),
        (
            '<Context><Resource name="a" type="javax.sql.DataSource" maxTotal="ten"/></Context>',
            (),
            "maxTotal is a whole number, not 'ten'",
        ),
        ("<Context/>", ("--jdbc-pool", "4"), "give one"),
    ],
)
def test_a_context_that_gives_no_pool_is_one_line(measured, tmp_path, body, args, message):
    context = tmp_path / "context.xml"
    context.write_text(body)
    fit = ["--fit", "clients1", "--fit", "clients2", "--database", str(measured / "pgstat.csv")]
    result = plan(measured, tmp_path / "exp", *fit, "--context", str(context), *args)
    assert result.exit_code != 0 and message in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_a_light_run_of_several_users_is_said_to_count_the_waits_short(measured, tmp_path):
    """From clients2 the UPDATE already waits (4.8 ms a call): clients4's figure is counted from
    there, so the plan says it is short by that wait, and a one-user light run makes it whole."""
    out = tmp_path / "exp"
    args = ["--fit", "clients2", "--fit", "clients4", "--database", str(measured / "pgstat.csv")]
    result = plan(measured, out, *args)
    assert result.exit_code == 0, result.output
    assert "counted from clients2's time per call, 2 users that may wait already" in result.output
    from sim.measurements.table import read

    table = read(out / "measured.csv").set_index("run")
    # the growth, plus the middle of what clients2 itself may have waited, [0, its time per call]
    light = snapshot_time_per_call(2, UPDATE)
    expected = snapshot_time_per_call(4, UPDATE) - light + light / 2
    assert table.loc["clients4", "database.lock.wait"] == pytest.approx(expected)
    # ... and that spread is the figure's error
    (figure,) = [f for f in experiment(out)["figures"] if f["column"] == "database.lock.wait"]
    assert figure["measurement_error"] == pytest.approx(light / math.sqrt(12) / expected)
    assert math.isnan(table.loc["clients1", "database.lock.wait"])  # lighter than the light run


CLUSTER_SERVER = CLUSTER_CONTEXT.with_name("server.xml")


def settings_of(out: Path) -> list[str]:
    return experiment(out)["factors"]["users"]["*"]


def test_the_node_is_read_from_a_real_server_xml(measured, tmp_path):
    """The cluster test's own server.xml: one HTTP/1.1 NIO Connector with maxThreads="4" and
    Tomcat 10.1's acceptCount and maxConnections defaults; its port is a system property the
    planner does not need."""
    out = tmp_path / "exp"
    args = ["--fit", "clients1", "--fit", "clients2", "--database", str(measured / "pgstat.csv")]
    result = plan(measured, out, *args, "--tomcat", str(CLUSTER_SERVER))
    assert result.exit_code == 0, result.output
    settings = settings_of(out)
    assert "backends.0.threads=4" in settings
    assert "backends.0.accept_queue=100" in settings
    assert "backends.0.max_connections=8192" in settings
    assert "server.xml:12: Connector maxThreads=4" in result.output
    chosen = [c["parameter"] for c in experiment(out).get("choose", [])]
    assert "backends.0.threads" not in chosen  # set from the file, not chosen among candidates


def test_a_server_xml_without_max_threads_runs_tomcats_default(measured, tmp_path):
    """maxThreads left out is Tomcat's 200, said with its source, never the template's guess."""
    server = tmp_path / "server.xml"
    server.write_text(
        '<Server port="-1"><Service name="C"><Connector port="8080" protocol="HTTP/1.1" '
        'acceptCount="50"/><Engine name="C" defaultHost="h"/></Service></Server>\n'
    )
    out = tmp_path / "exp"
    args = ["--fit", "clients1", "--fit", "clients2"]
    result = plan(measured, out, *args, "--tomcat", str(server))
    assert result.exit_code == 0, result.output
    assert "backends.0.threads=200" in settings_of(out)
    assert "backends.0.accept_queue=50" in settings_of(out)
    assert "maxThreads default 200" in result.output


@pytest.mark.parametrize(
    ("body", "args", "message"),
    [
        (
            '<Server><Service name="C"><Connector port="8080" protocol="HTTP/1.1" '
            'maxThreads="eight"/></Service></Server>',
            (),
            "maxThreads",
        ),
        (
            '<Server><Service name="C"><Connector port="8080" protocol="HTTP/1.1"/>'
            '<Connector port="8081" protocol="HTTP/1.1"/></Service></Server>',
            (),
            "one request Connector",
        ),
        ("<Context/>", (), "<Server>"),
        (
            '<Server><Service name="C"><Connector port="8080" protocol="HTTP/1.1"/>'
            "</Service></Server>",
            ("--threads", "8"),
            "give one",
        ),
    ],
)
def test_a_server_xml_that_gives_no_node_is_one_line(measured, tmp_path, body, args, message):
    server = tmp_path / "server.xml"
    server.write_text(body)
    fit = ["--fit", "clients1", "--fit", "clients2"]
    result = plan(measured, tmp_path / "exp", *fit, "--tomcat", str(server), *args)
    assert result.exit_code != 0 and message in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_a_lock_whose_wait_falls_past_the_knee_is_still_found(tmp_path):
    """One node bound by its own threads: the locking UPDATE waits most at the middle load
    (x3.1 at 40 users) and less at the heaviest (x1.9 at 170, where the queue has moved to the
    threads), as on the cluster test's one-node runs; the statements outside the lock stay."""
    from sim.studies.database_plan import read_evidence

    header = (
        "run,users,requests,failed_requests,source,statement_id,statement,calls,"
        "calls_per_request,total_time_s,time_per_call_s,growth,rows_per_call,lock_waits,"
        "lock_wait_s,lock_wait_per_call_s,complete,missing"
    )
    per_call = {  # run -> (UPDATE, pg_sleep, SELECT) time per call [ms]
        ("users10", 10): (1.38, 4.58, 0.030),
        ("users40", 40): (4.31, 4.71, 0.028),
        ("users170", 170): (2.61, 4.62, 0.032),
    }
    lines = [header]
    for (run, users), times in per_call.items():
        for index, (statement, ms) in enumerate(
            zip(("UPDATE hot", "SELECT pg_sleep", "SELECT balance"), times)
        ):
            lines.append(
                f"{run},{users},1000,0,pg_stat_statements,{index},{statement},1000,1,"
                f"{ms:g},{ms / 1000:g},,1,,,,yes,"
            )
    path = tmp_path / "database.csv"
    path.write_text("\n".join(lines) + "\n")
    found = read_evidence(path, "users10")
    assert list(found.locking) == ["UPDATE hot"]
    assert "x3.12 from users10 to users40" in found.locking["UPDATE hot"]
    # the growth, plus the middle of the light run's own wait in [0, 1.38 ms] (10 users may wait)
    assert found.waits["users40"] == pytest.approx((4.31 - 1.38 + 1.38 / 2) / 1000)
    assert found.waits["users170"] == pytest.approx((2.61 - 1.38 + 1.38 / 2) / 1000)


def test_a_host_busy_without_the_requests_leaves_the_cpu_a_range(tmp_path):
    """The cluster test's one node at 10 and 40 users, with the host's sar: the host was 20.5 %
    busy at 18.5 requests/s and 32.4 % at 72.9, so the utilisation law at the light run (22 ms
    a request on 2 cores) counts the idle JVMs and the other processes too; the busy share's
    growth between the runs gives 4.4 ms.  The CPU per request is an unknown between the two,
    never the law's upper end set as if measured."""
    k1 = CLUSTER_CONTEXT.parents[1] / "k1"
    table = tmp_path / "measured.csv"
    runner = CliRunner()
    imported = runner.invoke(
        main,
        [
            "import",
            "jtl",
            str(k1 / "users10.jtl"),
            str(k1 / "users40.jtl"),
            "--utilisation",
            str(k1 / "sar.sadf.csv"),
            "--warmup",
            "2",
            "--until",
            "58",
            "-o",
            str(table),
        ],
    )
    assert imported.exit_code == 0, imported.output
    out = tmp_path / "exp"
    result = plan(tmp_path, out, "--fit", "users10", "--fit", "users40")
    assert result.exit_code == 0, result.output
    (unknown,) = [
        u for u in experiment(out)["unknown"] if u["parameter"] == "backends.0.demand.value"
    ]
    low, high = unknown["range"]
    # the law: U x c / X at users10; the slope: (U40 - U10) x c / (X40 - X10)
    from sim.measurements.table import read

    rows = read(table)
    rows = rows[rows["class"] == "total"].set_index("run")
    u, x = rows["vm.cpu.utilization"], rows["throughput"]
    assert high == pytest.approx(u["users10"] * 1 / x["users10"])
    slope = (u["users40"] - u["users10"]) / (x["users40"] - x["users10"])
    assert low == pytest.approx(slope)
    assert low < 0.5 * high
    assert "busy without the requests" in result.output


def test_a_fitted_run_past_the_knee_leaves_every_range_open(tmp_path):
    """planning-pool at 10, 40 and 120 users: at 120 the stack is saturated and its busy share no
    longer grows with its throughput, so the slope says nothing of the CPU; every unknown keeps
    a range (an empty one, [0, 0], was refused by calibrate)."""
    pool = CLUSTER_CONTEXT.parents[2] / "planning-pool"
    table = tmp_path / "measured.csv"
    runs = [str(pool / f"users{n}.jtl") for n in (10, 40, 120)]
    imported = CliRunner().invoke(
        main,
        [
            "import",
            "jtl",
            *runs,
            "--utilisation",
            str(pool / "sar.sadf.csv"),
            "--warmup",
            "2",
            "--until",
            "58",
            "-o",
            str(table),
        ],
    )
    assert imported.exit_code == 0, imported.output
    out = tmp_path / "exp"
    fit = ["--fit", "users10", "--fit", "users40", "--fit", "users120"]
    result = plan(tmp_path, out, *fit)
    assert result.exit_code == 0, result.output
    for unknown in experiment(out)["unknown"]:
        low, high = unknown["range"]
        assert 0 <= low < high, unknown
