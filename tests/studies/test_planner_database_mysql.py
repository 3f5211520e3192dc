"""`tiersim plan --database` on MySQL's evidence, end to end, on the real MariaDB fixtures of
tests/fixtures/measurements/mysql/ (1, 2 and 4 concurrent `mariadb` sessions of one hot-row
transaction, 100 transactions each; `events_statements_summary_by_digest` before and after each
level, and its slow log with `long_query_time = 0`): the load test's table made from the slow
log (`slow_log_levels`), `tiersim import mysql-digest` and `mysql-slow`, `plan --database`,
and one `calibrate` evaluation, as tests/studies/test_planner_database.py does for PostgreSQL."""

from __future__ import annotations

import csv
import gzip
import math
import re
import statistics
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.studies.test_planner_database import calibrated_once_waits_grow

pytest.importorskip("pandas")

LEVELS = Path(__file__).resolve().parents[1] / "fixtures" / "measurements" / "mysql" / "levels"
CLIENTS = (1, 2, 4)
PICOSECONDS = 1e12
DIGEST_UPDATE = "UPDATE `counters` SET `hits` = `hits` + $1 WHERE ID = $2"
SLOW_UPDATE = "UPDATE counters SET hits = hits + $1 WHERE id = $2"
_ENTRY = re.compile(r"# Thread_id: (\d+)|# Query_time: ([\d.]+)|SET timestamp=(\d+);")


# --- the load test's table, from the slow log ---------------------------------------------------


def slow_log(clients: int) -> dict[str, list[tuple[int, float, str]]]:
    """Each session's logged statements in order: (start second, Query_time [s], statement)."""
    out: dict[str, list[tuple[int, float, str]]] = {}
    thread, second, duration = "", 0, 0.0
    with gzip.open(LEVELS / f"clients{clients}.slow.log.gz", "rt") as handle:
        for line in handle:
            found = _ENTRY.match(line)
            if found:
                thread_id, query_time, timestamp = found.groups()
                thread = thread_id or thread
                duration = float(query_time) if query_time else duration
                second = int(timestamp) if timestamp else second
            elif line.strip() and not line.startswith(("#", "use ")):
                out.setdefault(thread, []).append((second, duration, line.strip()))
    return out


def round_trip(statements: list[tuple[int, float, str]]) -> float | None:
    """The client's time between two of its statements [s], from the log's clock: from the
    first statement it started in a new second to the first it started in a later one, that
    many whole seconds passed (give or take a statement at each end: some 10 ms in 1 s, a
    tenth of the answer at most), filled by its statements' Query_time and one round trip
    each.  None when the session crosses fewer than two second boundaries."""
    ticks = [k for k in range(1, len(statements)) if statements[k][0] != statements[k - 1][0]]
    if len(ticks) < 2:
        return None
    first, last = ticks[0], ticks[-1]
    timed = sum(duration for _, duration, _ in statements[first:last])
    return (statements[last][0] - statements[first][0] - timed) / (last - first)


@dataclass
class Level:
    transactions: int
    window_s: float  # the longest session: its clients start together
    transaction_s: float  # a client's mean time per transaction (no think time between them)


def slow_log_levels() -> dict[int, Level]:
    """Each level as its clients saw it, from its slow log alone.  A client session is a
    `# Thread_id:` that committed (the snapshot's own session commits nothing); its
    transactions are its COMMITs.  It runs its statements back to back, so it lasted its
    statements' `Query_time` plus a round trip per statement, which the log does not time:
    the log's clock (`SET timestamp=`, whole seconds) gives it where a session crosses two
    second boundaries (`round_trip`), the mean of a level's sessions; clients2's sessions
    cross one each, and take the mean of the others'.  Throughput: the transactions over the
    longest session; the mean transaction time: a session's length over its transactions, the
    mean over its clients (the test's response time, Little's law with no think time)."""
    sessions = {
        c: {t: s for t, s in slow_log(c).items() if any(x[2] == "COMMIT;" for x in s)}
        for c in CLIENTS
    }
    trips = {
        c: [g for s in sessions[c].values() if (g := round_trip(s)) is not None] for c in CLIENTS
    }
    pooled = statistics.mean(g for c in CLIENTS for g in trips[c])
    out = {}
    for clients in CLIENTS:
        trip = statistics.mean(trips[clients]) if trips[clients] else pooled
        assert trip > 0  # the log's seconds hold more than the statements' own time
        lengths = [sum(d for _, d, _ in s) + len(s) * trip for s in sessions[clients].values()]
        commits = [sum(x[2] == "COMMIT;" for x in s) for s in sessions[clients].values()]
        out[clients] = Level(
            sum(commits),
            max(lengths),
            statistics.mean(length / n for length, n in zip(lengths, commits, strict=True)),
        )
    return out


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """The load test's table (one window per level) and both MySQL sources imported with it."""
    from sim.measurements.table import write

    folder = tmp_path_factory.mktemp("mariadb")
    rows = []
    for clients, level in slow_log_levels().items():
        assert level.transactions == 100 * clients  # the fixture's 100 per client, all logged
        rows.append(
            {
                "run": f"clients{clients}",
                "window_start_s": 0.0,
                "window_end_s": level.window_s,
                "class": "total",
                "users": float(clients),
                "throughput": level.transactions / level.window_s,
                "response.mean": level.transaction_s,
                "count.completed": float(level.transactions),
                "count.errors": 0.0,
                "count.timed_out": 0.0,
            }
        )
    write(rows, folder / "measured.csv")
    table = ["--table", str(folder / "measured.csv")]
    snapshots = [str(LEVELS / f"clients{c}.{k}.tsv") for c in CLIENTS for k in ("before", "after")]
    logs = [str(LEVELS / f"clients{c}.slow.log.gz") for c in CLIENTS]
    for format, files, out, extra in [
        ("mysql-digest", snapshots, "digest.csv", []),
        ("mysql-slow", logs, "slow.csv", ["--log-min-duration", "0"]),
        ("mysql-slow", logs, "slow-unknown.csv", []),  # long_query_time not given
        ("mysql-slow", logs, "slow-cut.csv", ["--log-min-duration", "1"]),
    ]:
        args = ["import", format, *files, *table, *extra, "-o", str(folder / out)]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
    return folder


# --- the fixtures read directly, to check the plan against ---------------------------------------


def digest(clients: int, kind: str) -> dict[str, tuple[str, float, float]]:
    """A digest snapshot: DIGEST -> (DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT [s])."""
    with open(LEVELS / f"clients{clients}.{kind}.tsv", newline="") as handle:
        return {
            r["DIGEST"]: (
                r["DIGEST_TEXT"],
                float(r["COUNT_STAR"]),
                float(r["SUM_TIMER_WAIT"]) / PICOSECONDS,
            )
            for r in csv.DictReader(handle, delimiter="\t")
        }


def digest_level(clients: int) -> dict[str, tuple[float, float]]:
    """Each statement's (calls, time [s]) in the level: after minus before, by its text's start."""
    before, after = digest(clients, "before"), digest(clients, "after")
    out = {}
    for key, (text, calls, time_s) in after.items():
        _, calls_then, time_then = before.get(key, (text, 0.0, 0.0))
        if calls > calls_then:
            out[text.strip()] = (calls - calls_then, time_s - time_then)
    return out


def digest_update_per_call(clients: int) -> float:
    (found,) = [v for k, v in digest_level(clients).items() if k.startswith("UPDATE `counters`")]
    return found[1] / found[0]


def slow_update_per_call(clients: int) -> float:
    times = [d for s in slow_log(clients).values() for _, d, sql in s if sql.startswith("UPDATE")]
    return statistics.mean(times)


def plan(folder: Path, out: Path, evidence: Path, *args: str):
    """`tiersim plan` of the load test's table in `folder` with the database `evidence`."""
    table = str(folder / "measured.csv")
    return CliRunner().invoke(
        main, ["plan", table, "-o", str(out), "--cores", "1", "--database", str(evidence), *args]
    )


def experiment(out: Path) -> dict:
    return tomllib.loads((out / "experiment.toml").read_text())


def entry(entries: list[dict], parameter: str) -> dict:
    (found,) = [e for e in entries if e["parameter"] == parameter]
    return found


FIT = ("--fit", "clients1", "--fit", "clients2")


# --- the plan --------------------------------------------------------------------------------------


def test_plan_writes_the_shared_database_and_its_fifo_lock_from_the_digest_table(
    measured, tmp_path
):
    out = tmp_path / "exp"
    result = plan(measured, out, measured / "digest.csv", *FIT, "--jdbc-pool", "5")
    assert result.exit_code == 0, result.output
    # the UPDATE of the hot row named by its growth: MySQL's files count no row-lock waits
    assert f"the lock taken by '{DIGEST_UPDATE}': time per call x" in result.output
    spec = experiment(out)
    assert spec["models"]["model"].endswith("planner-apache-tomcat-database.toml")
    settings = spec["factors"]["users"]["*"]
    assert "database.lock.share=1.0" in settings and "backends.0.jdbc_pool=5" in settings
    # InnoDB grants a record lock's waiters in queue order
    assert "database.lock.order=fifo" in settings
    text = (out / "experiment.toml").read_text()
    assert "served in fifo order: InnoDB grants" in text
    # InnoDB grants the next waiter and lets the others sleep: no cost per waiter to carry
    assert "database.lock.wake_per_waiter_s" not in text

    # the lock's wait per acquisition: the UPDATE's time per call less its light time, as the
    # digest snapshots themselves say
    from sim.measurements.table import read

    table = read(out / "measured.csv").set_index("run")
    light = digest_update_per_call(1)
    for clients in (2, 4):
        expected = digest_update_per_call(clients) - light
        assert expected > 0
        assert table.loc[f"clients{clients}", "database.lock.wait"] == pytest.approx(expected)
    assert math.isnan(table.loc["clients1", "database.lock.wait"])
    fitted = {(f["run"], f["figure"]) for f in spec["fitted"]}
    assert ("clients2", "database.lock.wait") in fitted
    assert ("clients4", "database.lock.wait") not in fitted

    # the transaction's light time: every statement's time over the level's transactions
    levels = slow_log_levels()
    transaction = sum(t for _, t in digest_level(1).values()) / levels[1].transactions
    response = levels[1].transaction_s
    assert transaction < response  # the round trips the statements leave out
    demand = entry(spec["unknown"], "database.demand.value")
    assert demand["range"] == pytest.approx([0.01 * transaction, transaction - light])
    # the measurement that would split it is MySQL's redo log, not PostgreSQL's WAL
    assert "innodb_log_file" in demand["provenance"]
    assert "pg_stat_wal" not in text
    hold = entry(spec["calibrate"], "database.lock.hold.value")
    assert hold["bounds"] == pytest.approx([light, response - 0.01 * transaction])
    # what the hold has beyond the statements: MySQL times the COMMIT, its flush included
    assert "held through the client's round trips" in text and "redo log flush" in text

    from sim.model.load import load_model
    from sim.studies.records import load_experiment

    _, loaded, _ = load_experiment(str(out))
    compared = {(f.when["run"], f.column) for f in loaded.figures}
    assert {("clients2", "database.lock.wait"), ("clients4", "database.lock.wait")} <= compared
    model = load_model(spec["models"]["model"], settings[1:])
    assert model.database.lock is not None and model.database.lock.order == "fifo"


def test_the_slow_log_gives_the_same_lock_from_its_own_times(measured, tmp_path):
    """The slow log of every statement (`long_query_time = 0`): the UPDATE as it was sent,
    literals as `$n`, and the waits from its logged `Query_time`s."""
    out = tmp_path / "exp"
    result = plan(measured, out, measured / "slow.csv", *FIT)
    assert result.exit_code == 0, result.output
    assert f"the lock taken by '{SLOW_UPDATE}'" in result.output
    assert "(mysql_slow_log, " in result.output
    assert "database.lock.order=fifo" in experiment(out)["factors"]["users"]["*"]
    from sim.measurements.table import read

    table = read(out / "measured.csv").set_index("run")
    light = slow_update_per_call(1)
    for clients in (2, 4):
        expected = slow_update_per_call(clients) - light
        assert table.loc[f"clients{clients}", "database.lock.wait"] == pytest.approx(expected)
    # the two MySQL sources agree on the wait within a tenth
    assert slow_update_per_call(4) - light == pytest.approx(
        digest_update_per_call(4) - digest_update_per_call(1), rel=0.1
    )


def test_a_statement_faster_under_load_than_at_the_light_run_is_said(measured, tmp_path):
    """The fixture's COMMIT takes 6.3 ms a call at one client and 1.2 ms at two (the digest
    table; the light level ran first after the tables were made): the model's one time per
    call cannot follow it, and the plan says so.  From two clients up it does not fall."""
    commit = {
        c: calls_time[1] / calls_time[0]
        for c in CLIENTS
        for text, calls_time in digest_level(c).items()
        if text == "COMMIT"
    }
    result = plan(measured, tmp_path / "exp", measured / "digest.csv", *FIT)
    assert result.exit_code == 0, result.output
    ratio = commit[2] / commit[1]  # the lowest: clients4's is higher
    assert ratio < commit[4] / commit[1] and ratio < 0.5
    said = f"faster under load than at clients1: 'COMMIT' x{ratio:.3g} from clients1 to clients2"
    assert said in result.output
    heavier = ("--fit", "clients2", "--fit", "clients4")
    result = plan(measured, tmp_path / "heavier", measured / "digest.csv", *heavier)
    assert result.exit_code == 0, result.output
    assert commit[4] > commit[2] and "faster under load" not in result.output


@pytest.mark.parametrize(
    ("evidence", "said"),
    [
        # imported without the server's long_query_time
        ("slow-unknown.csv", "give --log-min-duration 0 if the server had long_query_time = 0"),
        # a slow log of the slow statements only: an option cannot make it whole
        ("slow-cut.csv", "only the statements over 1 ms are logged (long_query_time)"),
    ],
)
def test_a_slow_log_without_every_statement_is_one_line(measured, tmp_path, evidence, said):
    result = plan(measured, tmp_path / "exp", measured / evidence, *FIT)
    assert result.exit_code != 0
    assert said in result.output and str(measured / evidence) in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "exp" / "experiment.toml").exists()


def test_mysql_evidence_without_a_lock_names_mysqls_fix(measured, tmp_path):
    """The light run alone: nothing grows, and the fix is a heavier run's MySQL files, not
    PostgreSQL's log_lock_waits."""
    from sim.measurements.database import evidence

    rows = [r for r in evidence.read(measured / "digest.csv") if r["run"] == "clients1"]
    evidence.write(rows, tmp_path / "light.csv")
    result = plan(measured, tmp_path / "exp", tmp_path / "light.csv", *FIT)
    assert result.exit_code != 0
    assert "the evidence shows no shared lock" in result.output
    assert "heavier run's digest snapshots or slow log" in result.output
    assert "log_lock_waits" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_light_run_missing_from_mysql_evidence_names_its_files(measured, tmp_path):
    from sim.measurements.database import evidence

    rows = [r for r in evidence.read(measured / "digest.csv") if r["run"] != "clients1"]
    evidence.write(rows, tmp_path / "partial.csv")
    result = plan(measured, tmp_path / "exp", tmp_path / "partial.csv", *FIT)
    assert result.exit_code != 0
    assert "no statement of run 'clients1'" in result.output
    assert "(clients1.before.tsv and clients1.after.tsv)" in result.output


def test_calibrate_compares_the_simulated_lock_wait(measured, tmp_path):
    """One evaluation of the planned experiment (short runs), as for PostgreSQL: the simulated
    `database.lock.wait` is compared at every run with a measured wait, and at the same
    parameters it grows with the users under the FIFO lock."""
    out = tmp_path / "exp"
    assert plan(measured, out, measured / "digest.csv", *FIT, "--duration", "5").exit_code == 0
    calibrated_once_waits_grow(out, tmp_path)
