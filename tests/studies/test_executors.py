"""Every heavy command on a Dask cluster (`--scheduler`, `--local-cluster`) gives the numbers it
gives serially: calibrate (an evaluation's rows, the [[choose]] candidates side by side),
reproduce and its cross-validation, capacity's search and its parameter draws, run's
--calibration draws.  Each task carries its seed, so where it runs cannot change a figure.
A worker lost is one line naming what was kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.table import write
from sim.studies.executor import LostWork, ProcessExecutor, SerialExecutor
from tests.conftest import one_server_file

distributed = pytest.importorskip("dask.distributed")

ROOT = Path(__file__).resolve().parents[2]
PLANNER = ROOT / "models" / "planner-apache-tomcat.toml"

# a measured table of three load levels and one level nobody measured (its figures predicted)
TABLE_EXPERIMENT = f"""\
[experiment]
name = "lab"
table = "measured.csv"

[models]
model = "{PLANNER}"

[factors.users]
"*" = ["clients.users={{value}}", "run.duration_s=5"]

[[fitted]]
users = 2

[[fitted]]
users = 16

[[calibrate]]
parameter = "backends.0.demand.mean"
bounds = [0.002, 0.05]
"""
CHOOSE = """
[[choose]]
parameter = "backends.0.cores"
values = [1, 2]
"""

MM1 = one_server_file(duration_s=300, warmup_s=20, replications=3)
# a demand fitted at 0.1 s (the model file's 0.3 s is unstable at 5 per s), sd 7 %
CALIBRATION = {
    "experiment": "mm1",
    "parameters": [
        {
            "parameter": "backends.0.demand.mean",
            "value": 0.1,
            "low": 0.05,
            "high": 0.2,
            "scale": "log",
            "when": {},
            "kind": "calibrate",
        }
    ],
    "uncertainty": {
        "model_error": {"sd": 0.02, "estimated": True},
        "posterior": {"scale": "unit", "mean": [1.5], "cov": [[0.0025]]},
    },
}


def table_experiment(folder: Path, extra: str = "") -> str:
    rows = []
    for users, count, response in ((2, 70, 0.012), (8, 280, 0.014), (16, 500, 0.02)):
        for k, wobble in enumerate((0.95, 1.0, 1.05)):
            rows.append(
                {
                    "run": f"users{users}",
                    "window_start_s": 10.0 * k,
                    "window_end_s": 10.0 * k + 10.0,
                    "class": "total",
                    "users": users,
                    "throughput": round(count * wobble) / 10.0,
                    "response.mean": response / wobble,
                    "count.completed": round(count * wobble),
                    "count.errors": 0,
                }
            )
    rows.append({"run": "users30", "window_start_s": 0.0, "window_end_s": 0.0, "users": 30.0})
    rows[-1]["class"] = "total"
    folder.mkdir(parents=True, exist_ok=True)
    write(rows, folder / "measured.csv")
    (folder / "experiment.toml").write_text(TABLE_EXPERIMENT + extra, encoding="utf-8")
    return str(folder)


def mm1_files(folder: Path) -> tuple[str, str]:
    (folder / "model.toml").write_text(MM1)
    (folder / "cal.json").write_text(json.dumps(CALIBRATION))
    return str(folder / "model.toml"), str(folder / "cal.json")


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of two single-thread workers in this process (quick to start)."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        yield cluster


@pytest.fixture
def scheduler(cluster):
    """The cluster's address; the test fails unless the cluster ran tasks meanwhile (an option
    that ran everything here would otherwise pass)."""

    def executed() -> int:
        return sum(worker.state.executed_count for worker in cluster.workers.values())

    before = executed()
    yield cluster.scheduler_address
    assert executed() > before, "nothing ran on the cluster"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def same_output(serial, clustered) -> None:
    assert serial.exit_code == 0, serial.output
    assert clustered.exit_code == 0, clustered.output
    assert clustered.stdout == serial.stdout


def test_calibrate_with_choose_gives_the_serial_fit_on_a_cluster(tmp_path, scheduler):
    """Two [[choose]] candidates fitted side by side on a cluster of two slots, their rows and
    the withheld level's steps on its workers: the same document, number for number."""
    folder = table_experiment(tmp_path / "lab", CHOOSE)
    common = ["calibrate", folder, "--json", "--no-cache", "-r", "2", "--max-evaluations", "3"]
    serial = invoke(*common, "--serial")
    same_output(serial, invoke(*common, "--scheduler", scheduler))
    document = json.loads(serial.stdout)
    assert [c["set"] for c in document["choices"]] == [
        ["backends.0.cores=1"],
        ["backends.0.cores=2"],
    ]
    unmeasured = [r for r in document["rows"] if r["published"] is None]
    assert unmeasured and all(r["pi_low"] < r["simulated"] < r["pi_high"] for r in unmeasured)


def test_reproduce_and_its_cross_validation_are_the_same_on_a_cluster(
    tmp_path, scheduler, monkeypatch
):
    folder = table_experiment(tmp_path / "lab")
    same_output(
        invoke("reproduce", folder, "--json", "-r", "2", "--serial"),
        invoke("reproduce", folder, "--json", "-r", "2", "--scheduler", scheduler),
    )
    # each in a folder of its own: the calibration cache of one must not serve the other
    runs = []
    for where, extra in (("serial", ["--serial"]), ("cluster", ["--scheduler", scheduler])):
        (tmp_path / where).mkdir()
        monkeypatch.chdir(tmp_path / where)
        runs.append(invoke("reproduce", folder, "--cross-validate", "--json", "-r", "2", *extra))
        assert list((tmp_path / where / ".tiersim-cache").iterdir())
    same_output(*runs)
    scored = [r for r in json.loads(runs[0].stdout) if r["pi_low"] is not None]
    assert scored


def test_run_calibration_draws_are_the_same_on_a_cluster(tmp_path, scheduler):
    model, calibration = mm1_files(tmp_path)
    common = ["run", model, "--calibration", calibration, "--draws", "6", "--json"]
    serial, clustered = invoke(*common, "--serial"), invoke(*common, "--scheduler", scheduler)
    assert serial.exit_code == clustered.exit_code == 0, clustered.output
    a, b = json.loads(serial.stdout), json.loads(clustered.stdout)
    for document in (a, b):
        document["run"].pop("wall_s")  # the only figure that is not a result
    assert a == b
    assert a["prediction"]["draws"] == 6 and a["prediction"]["metrics"]["response.mean"]


def capacity_of(model: str, calibration: str) -> list[str]:
    """`tiersim capacity` of the M/M/1 model's rate for a mean under 0.5 s, with a calibration."""
    return [
        "capacity",
        model,
        "--slo",
        "response.mean<0.5",
        "--vary",
        "clients.rate_per_s",
        "--min",
        "1",
        "--max",
        "20",
        "--knee",
        "0",
        "--calibration",
        calibration,
    ]


def test_capacity_and_its_draws_are_the_same_on_a_cluster(tmp_path, scheduler):
    """The search evaluates a point per slot (two here): serially with two points a round it
    gives the cluster's answer; each draw's search is one task, the same anywhere."""
    model, calibration = mm1_files(tmp_path)
    common = [*capacity_of(model, calibration), "--draws", "4", "--json"]
    serial = invoke(*common, "--serial", "--points-per-round", "2")
    same_output(serial, invoke(*common, "--scheduler", scheduler))
    answers = json.loads(serial.stdout)["calibrated_range"]["answers"]
    assert len(answers) == 4 and all(1 <= a <= 20 for a in answers)


def test_capacity_draws_interleaved_on_local_workers_give_the_serial_answers(tmp_path):
    """The draws' searches side by side on two worker processes, each draw's next point sent
    as its last one returns (whichever draw that is): the document `--serial` gives."""
    model, calibration = mm1_files(tmp_path)
    common = [*capacity_of(model, calibration), "--draws", "6", "--json"]
    serial = invoke(*common, "--serial", "--points-per-round", "2")
    same_output(serial, invoke(*common, "--workers", "2"))
    document = json.loads(serial.stdout)["calibrated_range"]
    assert len(document["answers"]) == 6 and len(set(document["answers"])) > 1


def test_local_cluster_of_worker_processes_gives_the_serial_numbers(tmp_path):
    model, calibration = mm1_files(tmp_path)
    # the reference engine: a new worker process would load the compiled one for seconds
    common = ["run", model, "--engine", "reference", "--calibration", calibration, "--draws", "2"]
    common.append("--json")
    serial, clustered = invoke(*common, "--serial"), invoke(*common, "--local-cluster", "2")
    assert clustered.exit_code == 0, clustered.output
    a, b = json.loads(serial.stdout), json.loads(clustered.stdout)
    assert a["prediction"] == b["prediction"]


def test_by_default_the_draws_and_rows_run_on_every_core_with_the_serial_numbers(tmp_path):
    """`calibrate`, `reproduce` and `run --calibration` run on a pool of local processes (one
    per core) unless asked otherwise: the same document as `--serial`, number for number.  Two
    workers at least, so that the runs are spread even on a one-core machine."""
    model, calibration = mm1_files(tmp_path)
    folder = table_experiment(tmp_path / "lab")
    commands = [
        ["run", model, "--calibration", calibration, "--draws", "4", "--json"],
        ["calibrate", folder, "--json", "--no-cache", "-r", "2", "--max-evaluations", "3"],
    ]
    for command in commands:
        serial = invoke(*command, "--serial")
        pooled = invoke(*command, "--workers", "2")
        assert serial.exit_code == pooled.exit_code == 0, pooled.output
        a, b = json.loads(serial.stdout), json.loads(pooled.stdout)
        for document in (a, b):
            document.get("run", {}).pop("wall_s", None)  # the only figure that is not a result
            # which engine ran a small run depends on what this test process loaded before
            # (`sim.engines`: the same numbers on both), not on where the draws ran
            notes = document.get("notes", [])
            notes[:] = [n for n in notes if not n.startswith("engine: ")]
        assert a == b
    from sim.cli.experiments import calibrate, reproduce
    from sim.cli.models import run

    for command in (run, calibrate, reproduce):
        workers = next(p for p in command.params if p.name == "workers")
        assert "default: one per core" in (workers.help or ""), command.name


def test_a_pool_starts_its_workers_with_the_compiled_engine_loaded():
    """The pool's workers fork from a process that has loaded the compiled engine and its
    machine code (`sim.run.warm`): a worker's first small run goes where `auto` sends it in a
    warm process, not to the reference engine while numba loads (a fresh process here, which
    had not loaded it before the pool)."""
    pytest.importorskip("numba")
    code = (
        "from sim.engines import compiled_loaded\n"
        "from sim.studies.executor import ProcessExecutor\n"
        "def loaded(_):\n"
        "    return compiled_loaded()\n"
        "before = compiled_loaded()\n"
        "with ProcessExecutor(2) as pool:\n"
        "    print(before, list(pool.map(loaded, [0, 1])))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout
    assert out.strip() == "False [True, True]"


# --------------------------------------------------------------------------- lost workers
def die(_: object) -> None:
    os._exit(3)  # a worker killed (out of memory, a node lost)


def test_a_dead_worker_process_is_lost_work():
    with ProcessExecutor(1) as pool:
        with pytest.raises(LostWork, match="a worker process died"):
            list(pool.map(die, [1, 2]))
        # and for whatever runs next on the broken pool ([[choose]]'s other candidates)
        with pytest.raises(LostWork, match="a worker process died"):
            list(pool.map(abs, [-1]))


def test_a_dead_dask_worker_is_lost_work():
    import dask

    from sim.studies.executor import DaskExecutor

    # the scheduler gives up on the first death (its default retries three times)
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        pytest.raises(LostWork, match="a Dask worker died"),
        DaskExecutor(local_workers=1) as cluster,
    ):
        list(cluster.map(die, [1]))


class Lost(SerialExecutor):
    """A cluster that loses its workers at the first ordered map or interleaved studies (a
    capacity range's draws)."""

    def map(self, fn, *iterables):
        raise LostWork("a Dask worker died running a task (at tcp://10.0.0.7:4000)")

    def interleave(self, studies, fn=None):
        raise LostWork("a Dask worker died running a task (at tcp://10.0.0.7:4000)")


@pytest.fixture
def lost(monkeypatch):
    monkeypatch.setattr("sim.cli.common.executor_for", lambda *args: Lost())


def test_lost_draws_keep_the_run_at_the_fitted_values(tmp_path, lost):
    model, calibration = mm1_files(tmp_path)
    out = invoke("run", model, "--calibration", calibration, "--workers", "2", "--json")
    assert out.exit_code == 1
    assert "prediction" not in json.loads(out.stdout) and json.loads(out.stdout)["metrics"]
    (line,) = out.stderr.strip().splitlines()[-1:]
    assert line == (
        "error: a Dask worker died running a task (at tcp://10.0.0.7:4000): the prediction "
        "intervals were not finished (the run at the fitted values is shown); rerun the same "
        "command"
    )
    capacity = invoke(*capacity_of(model, calibration), "--workers", "2")
    assert capacity.exit_code == 1
    assert "largest clients.rate_per_s meeting response.mean < 0.5: " in capacity.stdout
    assert (
        capacity.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "the range over the calibration's draws was not finished (the answer at the fitted "
            "values is above); rerun the same command"
        )
    )


def test_a_lost_calibration_says_its_cache_keeps_what_finished(tmp_path, lost):
    folder = table_experiment(tmp_path / "lab")
    cache = str(tmp_path / "cache.jsonl")
    out = invoke("calibrate", folder, "--cache", cache, "--local-cluster", "2", "-r", "2")
    assert out.exit_code == 1
    assert out.stderr.strip().splitlines()[-1] == (
        "error: a Dask worker died running a task (at tcp://10.0.0.7:4000); finished "
        f"evaluations are kept in {cache}; rerun the same command to go on"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["calibrate", "X", "--serial", "--local-cluster", "2"], "--serial and --local-cluster"),
        (["reproduce", "X", "-w", "2", "--scheduler", "tcp://h:1"], "--workers and --scheduler"),
        (["run", "M", "--local-cluster", "2"], "--local-cluster places the --calibration draws"),
    ],
)
def test_one_way_to_run_and_only_where_it_acts(tmp_path, args, message):
    model, _ = mm1_files(tmp_path)
    args = [
        model if a == "M" else table_experiment(tmp_path / "x") if a == "X" else a for a in args
    ]
    out = invoke(*args)
    assert out.exit_code == 2 and message in out.stderr, out.output
