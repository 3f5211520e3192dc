"""Sweeps: designs, where points run (serial = process pool = Dask), resumption without loss
or duplication, failed points kept, and sweep files that explain their mistakes."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.studies.sweep.design import expand, point_seed
from sim.studies.sweep.execute import ProcessExecutor, SerialExecutor, run_sweep
from sim.studies.sweep.spec import SweepError, SweepFile, load_sweep
from sim.studies.sweep.store import ResultStore, StoreError, load_results

TINY_MODEL = """
[clients]
kind = "closed"
users = 5
think = { dist = "exponential", mean = 1.0 }
[[backends]]
name = "app"
threads = 10
cores = 1
demand = { dist = "exponential", mean = 0.05 }
[run]
duration_s = 40
warmup = 5.0
replications = 3
seed = 3
"""

GRID = """
[sweep]
name = "tiny"
base = "tiny.toml"
replications = 2
seed = 11
metrics = ["throughput", "mean", "p95"]
[factors]
"clients.users" = [2, 5, 8]
"backends.0.threads" = [1, 4]
"""

METRICS = ["throughput", "response.mean", "response.p95"]


def write_sweep(tmp_path, text: str, name: str = "sweep.toml"):
    (tmp_path / "tiny.toml").write_text(TINY_MODEL, encoding="utf-8")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def metric_table(root):
    frame = load_results(root)
    columns = [
        "point_id",
        "point_index",
        "status",
        "seed",
        *[c for c in frame.columns if c.startswith(tuple(METRICS))],
    ]
    return frame[columns].sort_values("point_id").reset_index(drop=True)


def spec(factors: dict, **sweep) -> SweepFile:
    return SweepFile.model_validate({"sweep": {"base": "x.toml", **sweep}, "factors": factors})


# --------------------------------------------------------------------------- designs
def test_grid_is_every_combination_in_factor_order():
    points, dropped = expand(spec({"a.x": [1, 2, 3], "b.y": ["p", "q"]}))
    assert [tuple(p.values.values()) for p in points] == [
        (1, "p"),
        (1, "q"),
        (2, "p"),
        (2, "q"),
        (3, "p"),
        (3, "q"),
    ]
    assert [p.index for p in points] == list(range(6)) and dropped == 0
    assert points[0].overrides == ("a.x=1", 'b.y="p"')


def test_zip_pairs_values_and_drops_duplicates():
    points, dropped = expand(spec({"a.x": [1, 2, 1], "b.y": [0.5, 1.5, 0.5]}, design="zip"))
    assert [tuple(p.values.values()) for p in points] == [(1, 0.5), (2, 1.5)] and dropped == 1


@pytest.mark.parametrize("design, n", [("lhs", 20), ("sobol", 16)])
def test_space_filling_designs_are_reproducible_and_in_bounds(design, n):
    factors = {
        "clients.users": {"low": 10, "high": 500, "integer": True},
        "backends.0.demand.mean": {"low": 0.001, "high": 0.1, "scale": "log"},
    }
    first, _ = expand(spec(factors, design=design, points=n, seed=4))
    again, _ = expand(spec(factors, design=design, points=n, seed=4))
    other, _ = expand(spec(factors, design=design, points=n, seed=5))
    assert [p.values for p in first] == [p.values for p in again]
    assert [p.values for p in first] != [p.values for p in other]
    users = [p.values["clients.users"] for p in first]
    cpu = [p.values["backends.0.demand.mean"] for p in first]
    assert all(isinstance(u, int) and 10 <= u <= 500 for u in users)
    assert all(0.001 <= c <= 0.1 for c in cpu)
    if design == "lhs":
        # a Latin hypercube has exactly one point in each of the n equal-probability strata
        import math

        strata = sorted(
            int(n * (math.log(c) - math.log(0.001)) / (math.log(0.1) - math.log(0.001)))
            for c in cpu
        )
        assert strata == list(range(n))
    assert len({p.id for p in first}) == len(first)


def test_point_seed_follows_the_values_not_the_position():
    assert point_seed(7, {"a": 1, "b": 2}) == point_seed(7, {"b": 2, "a": 1})
    assert point_seed(7, {"a": 1}) != point_seed(8, {"a": 1}) != point_seed(7, {"a": 2})
    assert 0 <= point_seed(7, {"a": 1}) < 2**63


# --------------------------------------------------------------------------- where points run
def test_serial_and_process_pool_give_the_same_table(tmp_path):
    plan = load_sweep(write_sweep(tmp_path, GRID))
    with SerialExecutor() as executor:
        serial = run_sweep(plan, ResultStore(tmp_path / "serial"), executor)
    with ProcessExecutor(2) as executor:
        pooled = run_sweep(plan, ResultStore(tmp_path / "pool"), executor)
    assert serial.ran == pooled.ran == 6 and not serial.failures
    a, b = metric_table(tmp_path / "serial"), metric_table(tmp_path / "pool")
    assert a["throughput"].notna().all() and (a["throughput"] > 0).all()
    assert a.equals(b)


def test_dask_local_cluster_gives_the_same_table(tmp_path):
    pytest.importorskip("dask.distributed")
    from sim.studies.sweep.execute import DaskExecutor

    text = GRID.replace("[2, 5, 8]", "[2, 8]")
    plan = load_sweep(write_sweep(tmp_path, text))
    with SerialExecutor() as executor:
        run_sweep(plan, ResultStore(tmp_path / "serial"), executor)
    with DaskExecutor(local_workers=2, processes=False) as executor:
        run_sweep(plan, ResultStore(tmp_path / "dask"), executor)
    assert metric_table(tmp_path / "serial").equals(metric_table(tmp_path / "dask"))


def test_sweep_command_runs_on_an_existing_dask_scheduler(tmp_path):
    distributed = pytest.importorskip("dask.distributed")

    path = write_sweep(tmp_path, GRID.replace("[2, 5, 8]", "[2]"))
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        result = CliRunner().invoke(
            main,
            [
                "sweep",
                str(path),
                "--results",
                str(tmp_path / "r"),
                "--scheduler",
                cluster.scheduler_address,
            ],
        )
    assert result.exit_code == 0, result.output
    assert f"on the Dask cluster at {cluster.scheduler_address}" in result.stdout
    run_sweep(load_sweep(path), ResultStore(tmp_path / "serial"), SerialExecutor())
    assert metric_table(tmp_path / "r").equals(metric_table(tmp_path / "serial"))
    bad = CliRunner().invoke(
        main, ["sweep", str(path), "--results", str(tmp_path / "x"), "--serial", "--workers", "2"]
    )
    assert bad.exit_code == 2 and "choose one way to run" in bad.stderr


# --------------------------------------------------------------------------- nothing lost
class InterruptedAfter(SerialExecutor):
    """Ctrl-C after k points have been recorded."""

    def __init__(self, k: int) -> None:
        self.k = k

    def map_unordered(self, tasks):
        for done, record in enumerate(super().map_unordered(tasks)):
            if done == self.k:
                raise KeyboardInterrupt
            yield record


def test_an_interrupted_sweep_resumes_without_loss_or_duplicates(tmp_path):
    plan = load_sweep(write_sweep(tmp_path, GRID))
    store = ResultStore(tmp_path / "resumed")
    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, store, InterruptedAfter(4))
    assert len(store.finished()) == 4
    outcome = run_sweep(plan, store, SerialExecutor())
    assert (outcome.skipped, outcome.ran, outcome.total) == (4, 2, 6)
    again = run_sweep(plan, store, SerialExecutor())
    assert (again.skipped, again.ran) == (6, 0)
    run_sweep(plan, ResultStore(tmp_path / "straight"), SerialExecutor())
    resumed = metric_table(tmp_path / "resumed")
    assert resumed["point_id"].is_unique and len(resumed) == 6
    assert resumed.equals(metric_table(tmp_path / "straight"))


def test_a_store_of_another_sweep_is_refused(tmp_path):
    plan = load_sweep(write_sweep(tmp_path, GRID))
    ResultStore(tmp_path / "r").open({"fingerprint": "other", "source": "elsewhere.toml"})
    with pytest.raises(StoreError, match="different sweep definition"):
        run_sweep(plan, ResultStore(tmp_path / "r"), SerialExecutor())
    result = CliRunner().invoke(
        main, ["sweep", str(tmp_path / "sweep.toml"), "--results", str(tmp_path / "r"), "--serial"]
    )
    assert result.exit_code == 2 and "different sweep definition" in result.stderr


def test_failed_points_are_recorded_and_the_sweep_goes_on(tmp_path):
    text = """
[sweep]
base = "tiny.toml"
set = ["clients={kind='open', rate_per_s=5.0}"]
replications = 2
[factors]
"backends.0.demand.mean" = [0.05, 0.5, -1.0]
"""
    path = write_sweep(tmp_path, text)
    result = CliRunner().invoke(
        main, ["sweep", str(path), "--results", str(tmp_path / "r"), "--serial"]
    )
    frame = load_results(tmp_path / "r").set_index("backends.0.demand.mean")
    assert list(frame["status"]) == ["ok", "failed", "failed"]
    assert (
        frame.loc[0.5, "error_kind"] == "unstable" and "backends.0.cores" in frame.loc[0.5, "error"]
    )
    assert (
        frame.loc[-1.0, "error_kind"] == "model" and "backends.0.demand" in frame.loc[-1.0, "error"]
    )
    assert frame.loc[0.05, "throughput"] > 0
    assert (
        result.exit_code == 3
    )  # the lowest code among the failures: invalid model (3), unstable (4)
    assert "2 point(s) failed" in result.stderr and "Traceback" not in result.output


def test_sweep_command_writes_results_and_resumes(tmp_path):
    path = write_sweep(tmp_path, GRID.replace("[2, 5, 8]", "[3]"))
    args = ["sweep", str(path), "--results", str(tmp_path / "r"), "--workers", "2"]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert "2 points, 2 run on 2 local worker processes, 0 already" in first.stdout
    second = CliRunner().invoke(main, args)
    assert "0 run" in second.stdout and "2 already" in second.stdout


# --------------------------------------------------------------------------- bad sweep files
@pytest.mark.parametrize(
    "text, needles",
    [
        (
            '[sweep]\nbase = "tiny.toml"\nreplication = 3\n[factors]\n"clients.users" = [1]\n',
            ["sweep.replication", "unknown field"],
        ),
        ('[sweep]\nbase = "tiny.toml"\n', ["factors", "required"]),
        (
            '[sweep]\nbase = "tiny.toml"\ndesign = "lhs"\n[factors]\n"clients.users" = {low = 1, high = 9}\n',
            ["needs sweep.points"],
        ),
        (
            '[sweep]\nbase = "tiny.toml"\ndesign = "sobol"\npoints = '
            '10\n[factors]\n"clients.users" = {low = 1, high = 9}\n',
            ["power of two", "sweep.points = 8 or 16"],
        ),
        (
            '[sweep]\nbase = "tiny.toml"\ndesign = "zip"\n[factors]\n"clients.users" = [1, 2]\n"run.seed" = [1]\n',
            ["one length", "clients.users: 2"],
        ),
        (
            '[sweep]\nbase = "tiny.toml"\n[factors]\n"clients.users" = {low = 1, high = 9}\n',
            ["clients.users is a range", "lists of values"],
        ),
        (
            '[sweep]\nbase = "tiny.toml"\ndesign = "lhs"\npoints = '
            '4\n[factors]\n"clients.users" = {low = 9, high = 1}\n',
            ["factors.'clients.users'", "must be below high"],
        ),
        (
            '[sweep]\nbase = "tiny.toml"\n[factors]\n"clients.userz" = [1, 2]\n',
            ["clients.userz", "no parameter"],
        ),
        (
            '[sweep]\nbase = "nope.toml"\n[factors]\n"clients.users" = [1]\n',
            ["nope.toml", "no such model file"],
        ),
        (
            '[sweep]\nbase = "tiny.toml"\nset = ["backends.0.threads=0"]\n[factors]\n"clients.users" = [1]\n',
            ["sweep.set", "backends.0.threads = 0"],
        ),
        ("[sweep\nbase = 1", ["not valid TOML"]),
    ],
)
def test_bad_sweep_files_name_the_field_and_exit_3(tmp_path, text, needles):
    path = write_sweep(tmp_path, text)
    with pytest.raises(SweepError):
        load_sweep(path)
    result = CliRunner().invoke(main, ["sweep", str(path), "--results", str(tmp_path / "r")])
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output and str(path) in result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


def test_the_bundled_sweep_files_are_valid():
    from pathlib import Path

    files = sorted((Path(__file__).resolve().parents[2] / "experiments" / "sweeps").glob("*.toml"))
    assert len(files) >= 2
    for path in files:
        plan = load_sweep(path)
        points, _ = expand(plan.spec)
        assert len(points) >= 5, path


def test_progress_bar_counts_points_and_failures_on_a_terminal_only():
    import io

    from rich.console import Console

    from sim.studies.sweep.progress import SweepProgress

    screen = io.StringIO()
    with SweepProgress(Console(file=screen, force_terminal=True, width=100)) as progress:
        progress.start(2, 5)
        progress.point({"status": "failed"}, 3, 5, 1)
    assert "3/5" in screen.getvalue() and "1 failed" in screen.getvalue()
    quiet = io.StringIO()
    with SweepProgress(Console(file=quiet, force_terminal=False)) as progress:
        progress.start(0, 5)
        progress.point({"status": "ok"}, 1, 5, 0)
    assert quiet.getvalue() == ""


def _dies_on_the_third_point(task):
    import os

    from sim.studies.sweep.point import run_point

    if task.index == 2:
        os._exit(9)  # a worker killed mid-point (the OOM killer, kill -9)
    return run_point(task)


def test_a_killed_worker_loses_only_unfinished_points_and_the_rerun_completes(
    tmp_path, monkeypatch
):
    import multiprocessing

    from sim.studies import executor
    from sim.studies.executor import LostPoints

    if multiprocessing.get_start_method() != "fork":
        pytest.skip(
            "the patched point function reaches the workers only with the fork start method"
        )
    plan = load_sweep(write_sweep(tmp_path, GRID))
    store = ResultStore(tmp_path / "r")
    monkeypatch.setattr(executor, "run_point", _dies_on_the_third_point)
    with pytest.raises(LostPoints, match="worker process died"), ProcessExecutor(1) as executor:
        run_sweep(plan, store, executor)
    monkeypatch.undo()
    kept = len(store.finished())
    assert kept == 2  # the points finished before the kill are all there
    with ProcessExecutor(2) as executor:
        outcome = run_sweep(plan, store, executor)
    assert (outcome.skipped, outcome.ran) == (2, 4)
    run_sweep(plan, ResultStore(tmp_path / "straight"), SerialExecutor())
    assert metric_table(tmp_path / "r").equals(metric_table(tmp_path / "straight"))
