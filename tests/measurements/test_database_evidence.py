"""The database's own evidence per run: pg_stat_statements snapshots, PostgreSQL's statement
log (stderr and csvlog), MariaDB's slow log and digest table, read from the real files in
tests/fixtures/measurements/postgres/ and mysql/ (three levels of 1, 2 and 4 clients running
one hot-row transaction), and small hand-worked files for the arithmetic and the errors."""

from __future__ import annotations

import gzip
import math
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.database import evidence, mysql, postgres_log
from sim.measurements.database.importer import DatabaseUsageError, import_database
from sim.measurements.database.statements import normalise
from sim.measurements.errors import MeasurementError

pytest.importorskip("pandas")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "measurements"
PG = FIXTURES / "postgres" / "levels"
MY = FIXTURES / "mysql" / "levels"
CLIENTS = (1, 2, 4)
UPDATE = "UPDATE counters SET hits = hits + $1 WHERE id = $2"
SLEEP = "SELECT pg_sleep($1)"


def pgbench(clients: int) -> tuple[int, float]:
    """The transactions pgbench processed at this level and its transactions per second."""
    text = (PG / f"clients{clients}.pgbench.txt").read_text()
    done = int(re.search(r"actually processed: (\d+)/", text).group(1))
    tps = float(re.search(r"tps = ([\d.]+)", text).group(1))
    return done, tps


def pg_table(path: Path) -> Path:
    """The load test's measurement table, from pgbench's own counts: a transaction is a request."""
    from sim.measurements.table import write

    rows = []
    for clients in CLIENTS:
        done, tps = pgbench(clients)
        rows.append(
            {
                "run": f"clients{clients}",
                "window_start_s": 0.0,
                "window_end_s": done / tps,
                "class": "total",
                "users": float(clients),
                "count.completed": float(done),
                "count.errors": 0.0,
                "count.timed_out": 0.0,
            }
        )
    write(rows, path)
    return path


def snapshots(folder: Path, suffix: str) -> list[str]:
    return [
        str(folder / f"clients{c}.{kind}.{suffix}") for c in CLIENTS for kind in ("before", "after")
    ]


def by_statement(rows, source=None):
    return {(r["run"], r["statement"]): r for r in rows if source is None or r["source"] == source}


# --- normalisation -------------------------------------------------------------------------


def test_a_logged_statement_reads_as_pg_stat_statements_stores_it():
    assert normalise("UPDATE counters SET hits = hits + 1 WHERE id = 1;") == UPDATE
    assert normalise("SELECT  pg_sleep(0.002) ;") == SLEEP
    assert normalise("select * from t2 where a = 'it''s' and b in (-1, 2e3)") == (
        "select * from t2 where a = $1 and b in ($2, $3)"
    )
    assert normalise("SELECT `price` FROM `items` WHERE ID = ?") == (
        "SELECT `price` FROM `items` WHERE ID = $1"
    )


# --- pg_stat_statements --------------------------------------------------------------------


def test_pg_stat_statements_counts_each_levels_transactions_as_pgbench_did(tmp_path):
    rows = import_database("pg-stat", snapshots(PG, "csv"), pg_table(tmp_path / "m.csv"))
    found = by_statement(rows)
    for clients in CLIENTS:
        done, _ = pgbench(clients)
        for statement in (
            "BEGIN",
            UPDATE,
            SLEEP,
            "COMMIT",
            "SELECT price FROM items WHERE id = $1",
        ):
            row = found[(f"clients{clients}", statement)]
            assert row["calls"] == done  # one of each per transaction
            assert row["calls_per_request"] == 1.0
            assert row["complete"] == "yes" and row["missing"] == ""
        # pg_sleep(0.002) cannot return before 2 ms
        assert found[(f"clients{clients}", SLEEP)]["time_per_call_s"] >= 0.002
    # the hot row's UPDATE waits for the row lock: its time per call grows with the clients
    growth = [found[(f"clients{c}", UPDATE)]["growth"] for c in CLIENTS]
    assert growth[0] == 1.0 and growth[0] < growth[1] < growth[2]
    assert growth[2] > 10
    # the statement that runs under the lock does not wait for it
    assert found[("clients4", SLEEP)]["growth"] < 1.5


def test_a_snapshot_difference_is_worked_by_hand(tmp_path):
    (tmp_path / "u1.before.csv").write_text(
        "queryid,query,calls,total_exec_time,rows\n7,UPDATE t SET n = n + $1,10,5.0,10\n"
        "8,SELECT $1,3,0.3,3\n9,gone,1,1.0,1\n"
    )
    (tmp_path / "u1.after.csv").write_text(
        "queryid,query,calls,total_exec_time,rows\n7,UPDATE t SET n = n + $1,60,105.0,60\n"
        "8,SELECT $1,3,0.3,3\n10,SELECT new,4,2.0,8\n"
    )
    rows = by_statement(
        import_database(
            "pg-stat", [str(tmp_path / "u1.after.csv"), str(tmp_path / "u1.before.csv")], None
        )
    )
    update = rows[("u1", "UPDATE t SET n = n + $1")]
    assert update["calls"] == 50 and update["total_time_s"] == pytest.approx(0.1)
    assert update["time_per_call_s"] == pytest.approx(0.002) and update["rows_per_call"] == 1
    assert ("u1", "SELECT $1") not in rows  # not run during the run
    assert rows[("u1", "SELECT new")]["calls"] == 4  # new: it started from zero
    gone = rows[("u1", "gone")]
    assert math.isnan(gone["calls"]) and gone["complete"] == "no" and "evicted" in gone["missing"]
    assert "--table" in update["missing"] and math.isnan(update["calls_per_request"])
    assert math.isnan(update["growth"])  # without users there is no lightest level


def test_postgresql_12_names_and_a_mean_only_snapshot(tmp_path):
    (tmp_path / "a.before.csv").write_text(
        "queryid,query,calls,total_time,mean_time\n1,q,2,4.0,2.0\n"
    )
    (tmp_path / "a.after.csv").write_text(
        "queryid,query,calls,total_time,mean_time\n1,q,6,16.0,4.0\n"
    )
    (tmp_path / "b.before.csv").write_text("queryid,query,calls,mean_exec_time\n1,q,2,2.0\n")
    (tmp_path / "b.after.csv").write_text("queryid,query,calls,mean_exec_time\n1,q,6,3.0\n")
    files = [
        str(tmp_path / n) for n in ("a.before.csv", "a.after.csv", "b.before.csv", "b.after.csv")
    ]
    rows = by_statement(import_database("pg-stat", files, None))
    assert rows[("a", "q")]["time_per_call_s"] == pytest.approx(0.003)  # 12 ms over 4 calls
    assert rows[("b", "q")]["time_per_call_s"] == pytest.approx(0.0035)  # (18 - 4) ms / 4


def test_a_reset_between_the_snapshots_leaves_the_calls_unknown(tmp_path):
    (tmp_path / "r.before.csv").write_text("queryid,query,calls,total_exec_time\n1,q,50,10\n")
    (tmp_path / "r.after.csv").write_text("queryid,query,calls,total_exec_time\n1,q,20,4\n")
    (row,) = import_database(
        "pg-stat", [str(tmp_path / "r.before.csv"), str(tmp_path / "r.after.csv")], None
    )
    assert math.isnan(row["calls"]) and math.isnan(row["time_per_call_s"])
    assert "fell from 50 to 20" in row["missing"]


@pytest.mark.parametrize(
    ("names", "texts", "message"),
    [
        (["x.csv"], ["queryid,calls,total_exec_time\n"], "RUN.before.csv and RUN.after.csv"),
        (["x.before.csv"], ["queryid,calls,total_exec_time\n"], "no after snapshot"),
        (
            ["x.before.csv", "x.after.csv"],
            ["queryid,query,calls\n1,q,2\n", "queryid,query,calls\n1,q,3\n"],
            "lacks total_exec_time",
        ),
        (
            ["x.before.csv", "x.after.csv"],
            ["queryid,calls,total_exec_time\n1,2,3\n", "queryid,calls,total_exec_time\n1,two,3\n"],
            "calls = 'two'",
        ),
        (
            ["x.before.csv", "x.after.csv"],
            ["queryid,calls,total_exec_time\n1,2,3\n", "queryid,calls,total_exec_time\n1,2\n"],
            "2 fields where the header has 3",
        ),
    ],
)
def test_bad_snapshots_are_one_line(tmp_path, names, texts, message):
    for name, text in zip(names, texts):
        (tmp_path / name).write_text(text)
    with pytest.raises(MeasurementError, match=re.escape(message)) as raised:
        import_database("pg-stat", [str(tmp_path / n) for n in names], None)
    assert "\n" not in str(raised.value)


# --- PostgreSQL's statement log ------------------------------------------------------------


def test_the_stderr_log_and_the_csvlog_say_the_same():
    for clients in CLIENTS:
        stderr = postgres_log.read(PG / f"clients{clients}.postgresql.log.gz", "r", 0)
        csvlog = postgres_log.read(PG / f"clients{clients}.postgresql.csv.gz", "r", 0)
        a = {s.statement: s for s in stderr}
        b = {s.statement: s for s in csvlog}
        assert a.keys() == b.keys()
        for text in a:
            assert a[text].calls == b[text].calls
            assert a[text].total_time_s == pytest.approx(b[text].total_time_s)
            assert (a[text].lock_waits, a[text].lock_wait_s) == pytest.approx(
                (b[text].lock_waits, b[text].lock_wait_s), nan_ok=True
            )
        # the csvlog carries pg_stat_statements' queryid (compute_query_id), the stderr log none
        assert b[UPDATE].statement_id == "6026042922754076939"
        assert a[UPDATE].statement_id.startswith("text:")


def test_the_log_counts_every_call_pg_stat_statements_counts(tmp_path):
    table = pg_table(tmp_path / "m.csv")
    logged = by_statement(
        import_database(
            "pg-log",
            [str(PG / f"clients{c}.postgresql.csv.gz") for c in CLIENTS],
            table,
            min_duration_ms=0,
        )
    )
    counted = by_statement(import_database("pg-stat", snapshots(PG, "csv"), table))
    for (run, text), row in counted.items():
        if text.startswith("select queryid"):  # the snapshot itself runs outside the cut log
            continue
        assert logged[(run, text)]["calls"] == row["calls"]
    # lock waits: none logged at one client (the cells stay empty), the UPDATE's at two and four
    assert math.isnan(logged[("clients1", UPDATE)]["lock_waits"])
    for run in ("clients2", "clients4"):
        assert logged[(run, UPDATE)]["lock_waits"] > 0
        assert logged[(run, SLEEP)]["lock_waits"] == 0
        # the waits are part of the UPDATE's time, never more than it
        assert 0 < logged[(run, UPDATE)]["lock_wait_s"] < logged[(run, UPDATE)]["total_time_s"]
    assert (
        logged[("clients4", UPDATE)]["lock_wait_per_call_s"]
        > logged[("clients2", UPDATE)]["lock_wait_per_call_s"]
    )


STDERR_LOG = """\
2026-11-27 10:00:00.001 UTC [41] app@shop LOG:  duration: 0.500 ms  parse <unnamed>: UPDATE t
\tSET n = n + 1 WHERE id = 3
2026-11-27 10:00:00.002 UTC [41] app@shop LOG:  duration: 0.250 ms  bind <unnamed>: UPDATE t SET n = n + 1 WHERE id = 3
2026-11-27 10:00:00.010 UTC [42] app@shop LOG:  process 42 still waiting for ShareLock on transaction 77 after 1.000 ms
2026-11-27 10:00:00.010 UTC [42] app@shop DETAIL:  Process holding the lock: 41. Wait queue: 42.
2026-11-27 10:00:00.010 UTC [42] app@shop CONTEXT:  while updating tuple (0,1) in relation "t"
2026-11-27 10:00:00.010 UTC [42] app@shop STATEMENT:  UPDATE t SET n = n + 1 WHERE id = 4
2026-11-27 10:00:00.012 UTC [41] app@shop LOG:  duration: 9.000 ms  execute S_1: UPDATE t SET n = n + 1 WHERE id = 3
2026-11-27 10:00:00.020 UTC [42] app@shop LOG:  process 42 acquired ShareLock on transaction 77 after 8.500 ms
2026-11-27 10:00:00.020 UTC [42] app@shop STATEMENT:  UPDATE t SET n = n + 1 WHERE id = 4
2026-11-27 10:00:00.021 UTC [42] app@shop LOG:  duration: 9.250 ms  statement: UPDATE t SET n = n + 1 WHERE id = 4
2026-11-27 10:00:00.030 UTC [43] app@shop LOG:  process 43 still waiting for ShareLock on transaction 78 after 1.500 ms
2026-11-27 10:00:00.030 UTC [43] app@shop STATEMENT:  UPDATE t SET n = n + 1 WHERE id = 5
"""


def test_a_stderr_log_worked_by_hand(tmp_path):
    """Debian's prefix, the extended protocol (parse, bind, execute: one call), a statement
    over two lines, a wait that ends and one still open at the log's end."""
    path = tmp_path / "u8.postgresql.log"
    path.write_text(STDERR_LOG)
    (row,) = import_database("pg-log", [str(path)], None, min_duration_ms=0)
    assert row["run"] == "u8" and row["statement"] == "UPDATE t SET n = n + $1 WHERE id = $2"
    assert row["calls"] == 2  # execute and statement; parse and bind add time only
    assert row["total_time_s"] == pytest.approx((0.5 + 0.25 + 9.0 + 9.25) / 1000)
    assert row["lock_waits"] == 2  # one acquired after 8.5 ms, one still waiting after 1.5 ms
    assert row["lock_wait_s"] == pytest.approx(0.010)


def test_a_log_with_a_threshold_does_not_pass_for_every_call(tmp_path):
    path = tmp_path / "u8.postgresql.log"
    path.write_text(STDERR_LOG)
    (unknown,) = import_database("pg-log", [str(path)], None)
    (cut,) = import_database("pg-log", [str(path)], None, min_duration_ms=5)
    for row in (unknown, cut):
        assert row["calls"] == 2 and math.isnan(row["time_per_call_s"])
        assert math.isnan(row["calls_per_request"])
    assert unknown["complete"] == "unknown" and "--log-min-duration 0" in unknown["missing"]
    assert cut["complete"] == "no" and "over 5 ms" in cut["missing"]


def test_a_file_that_is_not_a_postgresql_log_is_one_line(tmp_path):
    path = tmp_path / "x.log"
    path.write_text("just some text\nwithout any prefix\n")
    with pytest.raises(MeasurementError, match=r"no line with a \[pid\] and a severity"):
        import_database("pg-log", [str(path)], None, min_duration_ms=0)
    path.write_text("2026-11-27 10:00:00 UTC [1] LOG:  checkpoint starting: time\n")
    with pytest.raises(MeasurementError, match="no statement duration and no lock wait"):
        import_database("pg-log", [str(path)], None, min_duration_ms=0)


# --- MariaDB (MySQL's formats) -------------------------------------------------------------


def test_mariadbs_slow_log_and_digest_table_count_each_level():
    logs = [str(MY / f"clients{c}.slow.log.gz") for c in CLIENTS]
    slow = by_statement(evidence.evidence_rows(mysql.import_slow_runs(logs, None, 0.0), None))
    digest = evidence.evidence_rows(mysql.import_digest_runs(snapshots(MY, "tsv")), None)
    digest_calls = {(r["run"], r["statement"]): r["calls"] for r in digest}
    for clients in CLIENTS:
        run = f"clients{clients}"
        assert (
            slow[(run, "UPDATE counters SET hits = hits + $1 WHERE id = $2")]["calls"]
            == 100 * clients
        )
        assert slow[(run, "DO SLEEP($1)")]["time_per_call_s"] >= 0.002
        assert (
            digest_calls[(run, "UPDATE `counters` SET `hits` = `hits` + $1 WHERE ID = $2")]
            == 100 * clients
        )
        assert digest_calls[(run, "COMMIT")] == 100 * clients
    # the two sources time the same calls: the UPDATE's mean agrees within 20 % at 4 clients
    update = next(
        r for r in digest if r["run"] == "clients4" and r["statement"].startswith("UPDATE")
    )
    assert update["time_per_call_s"] == pytest.approx(
        slow[("clients4", "UPDATE counters SET hits = hits + $1 WHERE id = $2")]["time_per_call_s"],
        rel=0.2,
    )


MYSQL8_SLOW = """\
/usr/sbin/mysqld, Version: 8.0.36 (MySQL Community Server - GPL). started with:
Tcp port: 3306  Unix socket: /var/run/mysqld/mysqld.sock
Time                 Id Command    Argument
# Time: 2026-11-27T10:00:00.123456Z
# User@Host: app[app] @ localhost []  Id:     8
# Query_time: 0.004000  Lock_time: 0.003000 Rows_sent: 0  Rows_examined: 1
use shop;
SET timestamp=1795600000;
UPDATE counters
  SET hits = hits + 1 WHERE id = 1;
# Time: 2026-11-27T10:00:00.223456Z
# User@Host: app[app] @ localhost []  Id:     9
# Query_time: 0.002000  Lock_time: 0.000001 Rows_sent: 0  Rows_examined: 1
SET timestamp=1795600000;
UPDATE counters SET hits = hits + 1 WHERE id = 1;
"""


def test_a_mysql_8_slow_log_worked_by_hand(tmp_path):
    path = tmp_path / "u3.slow.log"
    path.write_text(MYSQL8_SLOW)
    (row,) = import_database("mysql-slow", [str(path)], None, min_duration_ms=0)
    assert row["statement"] == "UPDATE counters SET hits = hits + $1 WHERE id = $2"
    assert row["calls"] == 2 and row["time_per_call_s"] == pytest.approx(0.003)
    assert row["lock_wait_s"] == pytest.approx(0.003001)


def test_a_digest_snapshot_in_picoseconds_worked_by_hand(tmp_path):
    header = (
        "SCHEMA_NAME\tDIGEST\tDIGEST_TEXT\tCOUNT_STAR\tSUM_TIMER_WAIT\tSUM_LOCK_TIME\t"
        "SUM_ROWS_SENT\tSUM_ROWS_AFFECTED\n"
    )
    (tmp_path / "u3.before.tsv").write_text(
        header + "shop\tab\tUPDATE t SET n = n + ?\t10\t1000000000\t0\t0\t10\n"
    )
    (tmp_path / "u3.after.tsv").write_text(
        header + "shop\tab\tUPDATE t SET n = n + ?\t30\t41000000000\t2000000000\t0\t30\n"
        "NULL\tNULL\tNULL\t5\t5000000000\t0\t5\t0\n"
    )
    rows = by_statement(
        import_database(
            "mysql-digest", [str(tmp_path / "u3.before.tsv"), str(tmp_path / "u3.after.tsv")], None
        )
    )
    update = rows[("u3", "UPDATE t SET n = n + $1")]
    assert update["calls"] == 20 and update["time_per_call_s"] == pytest.approx(0.002)  # 40 ms / 20
    assert update["lock_wait_s"] == pytest.approx(0.002) and update["rows_per_call"] == 1
    assert rows[("u3", "(statements past performance_schema_digests_size)")]["calls"] == 5


# --- the evidence table and the command ----------------------------------------------------


def test_the_evidence_table_reads_back_as_written(tmp_path):
    rows = import_database("pg-stat", snapshots(PG, "csv"), pg_table(tmp_path / "m.csv"))
    evidence.write(rows, tmp_path / "evidence.csv")
    back = evidence.read(tmp_path / "evidence.csv")
    assert len(back) == len(rows)
    for a, b in zip(rows, back):
        for column in evidence.COLUMNS:
            if isinstance(a[column], float):
                assert b[column] == pytest.approx(a[column], rel=1e-9, nan_ok=True)
            else:
                assert b[column] == a[column]
    (tmp_path / "bad.csv").write_text("run,calls\nx,1\n")
    with pytest.raises(MeasurementError, match="lacks users"):
        evidence.read(tmp_path / "bad.csv")


def test_a_table_of_other_runs_is_refused(tmp_path):
    from sim.measurements.table import write

    write(
        [
            {
                "run": "users5",
                "window_start_s": 0.0,
                "window_end_s": 10.0,
                "class": "total",
                "users": 5.0,
                "count.completed": 50.0,
            }
        ],
        tmp_path / "m.csv",
    )
    with pytest.raises(MeasurementError, match="none of its runs"):
        import_database("pg-stat", snapshots(PG, "csv"), tmp_path / "m.csv")


def test_cli_imports_the_evidence_and_refuses_what_does_not_fit(tmp_path):
    table = pg_table(tmp_path / "m.csv")
    out = tmp_path / "db.csv"
    runner = CliRunner()
    result = runner.invoke(
        main, ["import", "pg-stat", *snapshots(PG, "csv"), "--table", str(table), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "3 run(s)" in result.output
    rows = by_statement(evidence.read(out))
    assert rows[("clients4", UPDATE)]["calls_per_request"] == 1.0
    for args, message in [
        (
            ["pg-log", str(PG / "clients1.postgresql.log.gz"), "--window", "5"],
            "--window is for load-test files",
        ),
        (["pg-stat", *snapshots(PG, "csv"), "--log-min-duration", "0"], "count every call"),
        (["pg-stat", *snapshots(PG, "csv"), "--run", "x"], "leave --run out"),
        (["pg-stat", *snapshots(PG, "csv"), "--encoding", "latin-1"], "--encoding is for"),
        (["mysql-slow", str(MY / "clients1.slow.log.gz"), "--class-by", "url"], "--class-by is"),
        (
            ["jtl", str(PG / "clients1.pgbench.txt"), "--table", str(table)],
            "--table is for the database's files",
        ),
        (
            ["pg-log", str(PG / "clients1.postgresql.log.gz"), "--log-min-duration", "-1"],
            "expected the server's threshold",
        ),
    ]:
        result = runner.invoke(main, ["import", *args, "-o", str(tmp_path / "x.csv")])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output and "Traceback" not in result.output
    assert DatabaseUsageError  # the usage errors are the importer's own type


def test_the_fixtures_logs_are_the_levels_cut_from_one_server(tmp_path):
    """Each level's cut log starts at that level (no line of the level before it)."""
    for clients in CLIENTS:
        with gzip.open(PG / f"clients{clients}.postgresql.log.gz", "rt") as handle:
            text = handle.read()
        assert text.count("statement: COMMIT") == pgbench(clients)[0]
