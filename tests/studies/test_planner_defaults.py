"""`tiersim plan` without `--shape` and `--threads`: the light level's samples are found where
the import recorded them (or beside the table) and their shape fitted, the p95 a fitted figure;
without any sample file the planner says the p95 is not fitted; the thread count is candidates,
never Tomcat's default taken as known.  And a level imported as one window, its drain in it, is
a whole number of users (README step 3, on the shipped pool test)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.drain import find_drain
from sim.measurements.table import write
from sim.measurements.windows import SampleLog
from sim.studies.records import load_experiment

ROOT = Path(__file__).resolve().parents[2]
POOL = ROOT / "notebooks" / "data" / "planning-pool"
TEMPLATE = ROOT / "models" / "planner-apache-tomcat.toml"


def imported(tmp_path: Path, levels=(10, 40), *cut: str) -> Path:
    """The pool test's levels imported one window each, as README step 3 asks (no --until)."""
    table = tmp_path / "in" / "measured.csv"
    table.parent.mkdir()
    files = [str(POOL / f"users{n}.jtl") for n in levels]
    result = CliRunner().invoke(main, ["import", "jtl", *files, "-o", str(table), *cut])
    assert result.exit_code == 0, result.output
    return table


def plan(table: Path, out: Path, *args: str):
    fit = ["--fit", "users10", "--fit", "users40"]
    return CliRunner().invoke(main, ["plan", str(table), *fit, "-o", str(out), *args])


def experiment(out: Path) -> dict:
    return tomllib.loads((out / "experiment.toml").read_text())


def fitted(spec: dict) -> set[tuple[str, str]]:
    return {(f["run"], f["figure"]) for f in spec["fitted"]}


def test_plan_fits_the_recorded_samples_shape_and_the_p95_by_default(tmp_path):
    table = imported(tmp_path, (10, 40), "--warmup", "2")
    sources = pd.read_csv(table.with_name("measured.sources.csv"))
    assert list(sources["run"]) == ["users10", "users40"]
    assert list(sources["from_s"]) == [2.0, 2.0]
    assert Path(sources["file"][0]) == POOL / "users10.jtl"

    out = tmp_path / "exp"
    result = plan(table, out, "--threads", "8")
    assert result.exit_code == 0, result.output
    (said,) = [line for line in result.stdout.splitlines() if "the wait a request" in line]
    assert "users10's" in said and "recorded by the import" in said and "2 s to the end" in said
    spec = experiment(out)
    (wait,) = [s for s in spec["factors"]["users"]["*"] if s.startswith("backends.0.io_wait=")]
    assert "offset" in wait  # the light samples' fixed part, then their varying shape
    assert {("users10", "response.p95"), ("users40", "response.p95")} <= fitted(spec)
    # the folder keeps the record, so that planning again on its copy finds the same file
    assert (out / "measured.sources.csv").read_text() == table.with_name(
        "measured.sources.csv"
    ).read_text()


def test_a_jtl_beside_the_table_is_the_shape_when_no_import_recorded_it(tmp_path):
    folder = tmp_path / "test"
    folder.mkdir()
    shutil.copy(POOL / "measured.csv", folder)  # imported before files were recorded
    shutil.copy(POOL / "users10.jtl", folder)
    result = plan(folder / "measured.csv", tmp_path / "exp", "--threads", "8", "--warmup", "2")
    assert result.exit_code == 0, result.output
    assert "beside the table, 2 s to the end" in result.stdout  # cut as the experiment is
    assert ("users10", "response.p95") in fitted(experiment(tmp_path / "exp"))


def test_without_a_sample_file_the_p95_is_said_to_be_unfitted(tmp_path):
    rows = [
        {
            "run": f"users{n}",
            "window_start_s": 0.0,
            "window_end_s": 60.0,
            "class": "total",
            "users": n,
            "throughput": n / 0.56,
            "response.mean": 0.06,
            "response.p95": 0.08,
            "response.p95.std_error": 0.001,
            "count.completed": 60 * n / 0.56,
        }
        for n in (10, 40)
    ]
    write(rows, tmp_path / "measured.csv")
    result = plan(tmp_path / "measured.csv", tmp_path / "exp", "--threads", "8")
    assert result.exit_code == 0, result.output
    (said,) = [line for line in result.stdout.splitlines() if "p95" in line and "not" in line]
    assert "the p95 is not fitted" in said and "no users10.jtl" in said
    assert "the tail is the model's assumption" in said and "--shape" in said
    spec = experiment(tmp_path / "exp")
    assert not any(figure == "response.p95" for _, figure in fitted(spec))
    assert not any(s.startswith("backends.0.io_wait") for s in spec["factors"]["users"]["*"])

    # a file too short to give a shape is said, and the plan is still written
    lines = ["timeStamp,elapsed,label,responseCode,success,grpThreads,allThreads"]
    lines += [f"{1795575000000 + 100 * i},57,work,200,true,10,10" for i in range(12)]
    (tmp_path / "users10.jtl").write_text("\n".join(lines) + "\n")
    short = plan(tmp_path / "measured.csv", tmp_path / "short", "--threads", "8")
    assert short.exit_code == 0, short.output
    assert "the p95 is not fitted: users10's samples give no shape" in short.stdout
    assert "at least 40" in short.stdout


def test_threads_are_candidates_unless_given_or_the_model_is_ones_own(tmp_path):
    table = imported(tmp_path, (10, 40), "--warmup", "2")
    result = plan(table, tmp_path / "exp", "--cores", "2")
    assert result.exit_code == 0, result.output
    assert "maxThreads not given: candidates 4, 8, 16, 32, 200" in result.stdout
    choose = {c["parameter"]: c["values"] for c in experiment(tmp_path / "exp")["choose"]}
    assert choose == {"backends.0.threads": [4, 8, 16, 32, 200]}  # below 40 users, and 200

    given = plan(table, tmp_path / "given", "--cores", "2", "--threads", "8")
    assert given.exit_code == 0, given.output
    spec = experiment(tmp_path / "given")
    assert "backends.0.threads=8" in spec["factors"]["users"]["*"] and not spec.get("choose")

    own = tmp_path / "from-config.toml"  # tiersim from-config's output stands in for it
    own.write_text(TEMPLATE.read_text().replace("threads = 200", "threads = 12"))
    mine = plan(table, tmp_path / "mine", "--cores", "2", "--model", str(own))
    assert mine.exit_code == 0, mine.output
    assert f"maxThreads: {own}'s" in mine.stdout and not experiment(tmp_path / "mine").get("choose")


def test_one_window_per_level_with_its_drain_is_a_whole_number_of_users(tmp_path):
    """users20.jtl's last 19 samples complete as JMeter's threads stop (allThreads 19 ... 1):
    averaged in, the level had 19.9 users and the experiment refused it (exit 3).  The users
    are counted up to the drain; the samples stay in the statistics."""
    table = imported(tmp_path, (10, 20), "--warmup", "2")
    frame = pd.read_csv(table)
    total = frame[frame["class"] == "total"].set_index("run")
    assert list(total["users"]) == [10.0, 20.0]
    shipped = pd.read_csv(POOL / "measured.csv")  # the same import, with --utilisation
    shipped = shipped[shipped["class"] == "total"].set_index("run")
    assert list(shipped["users"]) == [5.0, 10.0, 20.0, 40.0, 60.0, 80.0, 90.0, 100.0, 120.0, 160.0]
    for column in ("users", "throughput", "count.completed", "response.p95", "window_end_s"):
        assert total.loc["users20", column] == pytest.approx(shipped.loc["users20", column])
    out = tmp_path / "exp"
    fit = ["--fit", "users10", "--fit", "users20", "--threads", "8"]
    result = CliRunner().invoke(main, ["plan", str(table), *fit, "-o", str(out)])
    assert result.exit_code == 0, result.output
    _, _, records = load_experiment(str(out))  # refused before: "19.9 users ... not a whole"
    assert [r["users"] for r in records] == ["10", "20"]


def log(users: list[float]) -> SampleLog:
    n = len(users)
    frame = pd.DataFrame(
        {
            "start_s": np.arange(n, dtype=float),
            "elapsed_s": np.full(n, 0.5),
            "label": ["work"] * n,
            "url": [None] * n,
            "failed": [False] * n,
            "error_kind": [""] * n,
            "users": users,
        }
    )
    return SampleLog("run.jtl", frame, True, False)


def test_a_drain_is_a_short_tail_below_the_full_thread_count():
    drain = find_drain(log([4.0] * 20 + [3.0, 2.0, 1.0]), 0.0)
    assert drain is not None and drain.samples == 3 and drain.start_s == pytest.approx(19.5)
    assert find_drain(log([4.0] * 20), 0.0) is None  # no drain recorded
    # a long stretch below the peak is a change of load, not threads stopping
    assert find_drain(log([4.0] * 20 + [2.0] * 30), 0.0) is None
    assert find_drain(log([4.0] * 20 + [float("nan")]), 0.0) is None  # users unknown
