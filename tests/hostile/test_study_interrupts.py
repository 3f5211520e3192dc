"""Ctrl-C (SIGINT) and SIGTERM sent to `tiersim capacity` and `tiersim calibrate` while they
simulate: exit 130 (143), one line, no traceback; their finished evaluations are kept in their
caches and a rerun resumes from them, with the answer of a run never interrupted.  (sweep, run
and import: `test_interrupts`.)"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sim.studies.capacity.kept import default_cache as DEFAULT_CACHE
from tests.conftest import one_server_file
from tests.hostile.test_interrupts import DEMO, ROOT, start, stop, wait_for
from tests.hostile.test_reference_interrupts import StandardError


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_capacity_answers_a_signal(sent, code, tmp_path):
    cache = tmp_path / "capacity.jsonl"
    process = start(
        "capacity",
        str(DEMO),
        "--slo",
        "p95<1",
        "--vary",
        "clients.users",
        "--set",
        "run.duration_s=600",
        "--set",
        'run.engine="reference"',
        "-r",
        "2",
        "--serial",
        "--cache",
        str(cache),
    )
    stderr = StandardError(process, r"capacity search: working")
    try:
        # the reporter's first plain line comes once the search has simulated for 5 s
        assert stderr.wait(60), f"the search did not start:\n{stderr}"
        assert process.poll() is None
        process.send_signal(sent)
        process.wait(timeout=30)
    finally:
        process.kill()
    stderr.thread.join(5)
    assert process.returncode == code, str(stderr)
    said = [line for line in stderr.lines if not line.startswith(("warning:", "capacity search"))]
    assert said == [
        f"interrupted: finished evaluations are kept in {cache}; rerun the same command to go on"
    ], str(stderr)
    # what the cache holds is whole evaluations: the interrupted one is not among them
    lines = cache.read_text().splitlines() if cache.exists() else []
    kinds = {json.loads(line)["record"]["error_kind"] for line in lines}
    assert kinds <= {None, "unstable", "unfinished"}, kinds


def search_of(model, *more: str) -> tuple[str, ...]:
    """A capacity search of the one-server model's arrival rate: about ten evaluations."""
    return (
        "capacity",
        str(model),
        "--slo",
        "response.mean<1",
        "--vary",
        "clients.rate_per_s",
        "--serial",
        "--knee",
        "0",
        "--no-analytic",
        "--json",
        *more,
    )


@pytest.mark.slow  # about 15 s: three searches of about ten evaluations, two of them whole
def test_capacity_keeps_its_finished_evaluations_and_a_rerun_resumes(tmp_path):
    """Ctrl-C after a few evaluations; the rerun replays them, runs the rest and answers as a
    search never interrupted does (the fast twin: `test_capacity_resumes_from_a_cut_cache`)."""
    model = tmp_path / "server.toml"
    model.write_text(one_server_file(duration_s=1000, warmup_s=20, replications=2))
    cache = tmp_path / "capacity.jsonl"
    search = search_of(model, "--set", 'run.engine="reference"', "--cache", str(cache))

    def evaluations() -> int:
        return len(cache.read_text().splitlines()) if cache.exists() else 0

    process = start(*search)
    wait_for(lambda: evaluations() >= 3, seconds=120)
    returncode, stderr = stop(process, signal.SIGINT)
    assert returncode == 130, stderr
    assert f"interrupted: finished evaluations are kept in {cache}" in stderr
    kept = evaluations()
    assert kept >= 3
    assert all(json.loads(line) for line in cache.read_text().splitlines())  # no half line

    rerun = tiersim(*search)
    whole = tiersim(*search_of(model, "--set", 'run.engine="reference"', "--no-cache"))
    total = len(json.loads(whole.stdout)["evaluations"])
    assert kept < total, "the search finished before the signal: nothing left to resume"
    assert f"resumed: {kept} of {total} evaluations from {cache}" in rerun.stderr
    assert "resumed" not in whole.stderr
    assert json.loads(rerun.stdout) == json.loads(whole.stdout)
    assert rerun.stdout == whole.stdout  # bit for bit, as printed


def jtl(path, users: int, rate: int, low: int, high: int) -> None:
    draw = random.Random(users)
    start_ms = 1_700_000_000_000
    rows = (
        f"{start_ms + i * 1000 // rate},{draw.randint(low, high)},home,true,{users}\n"
        for i in range(rate * 120)
    )
    path.write_text("timeStamp,elapsed,label,success,allThreads\n" + "".join(rows))


def tiersim(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "sim.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_calibrate_keeps_its_finished_evaluations_and_a_rerun_resumes(tmp_path):
    jtl(tmp_path / "light.jtl", 10, 20, 20, 60)
    jtl(tmp_path / "heavy.jtl", 40, 70, 40, 120)
    table = tmp_path / "levels.csv"
    tiersim(
        "import", "jtl", str(tmp_path / "light.jtl"), str(tmp_path / "heavy.jtl"), "-o", str(table)
    )
    experiment = tmp_path / "experiment"
    tiersim("plan", str(table), "--fit", "light", "--fit", "heavy", "-o", str(experiment))
    cache = tmp_path / "calibrate.jsonl"
    # a few evaluations, before and after the signal: the cache's bookkeeping is under test,
    # not the fit's answer
    calibrate = ("calibrate", str(experiment), "--serial", "--no-uncertainty", "--cache")
    calibrate += (str(cache), "--max-evaluations", "8")

    def evaluations() -> int:
        return len(cache.read_text().splitlines()) if cache.exists() else 0

    process = start(*calibrate)
    wait_for(lambda: evaluations() >= 3, seconds=240)
    returncode, stderr = stop(process, signal.SIGINT)
    assert returncode == 130, stderr
    said = [line for line in stderr.strip().splitlines() if line.startswith("interrupted")]
    assert said == [
        f"interrupted: finished evaluations are kept in {cache}; rerun the same command to go on"
    ]
    kept = evaluations()
    assert kept >= 3
    assert all(json.loads(line) for line in cache.read_text().splitlines())  # no half line
    rerun = tiersim(*calibrate)
    assert f"{kept} from the cache" in rerun.stdout + rerun.stderr


def test_capacity_resumes_from_a_cut_cache(tmp_path, monkeypatch):
    """The fast twin of the test above, in this process: a search kept in the default cache
    (`.tiersim-cache/capacity-NAME.jsonl` of the current folder), the cache cut after three
    evaluations and in the middle of the fourth (as an interrupted write leaves it), a rerun:
    three replayed, the rest run, the answer of a search without any cache, bit for bit."""
    from click.testing import CliRunner

    from sim.cli import main
    from sim.studies.capacity import kept

    monkeypatch.setattr(kept, "default_cache", DEFAULT_CACHE)  # the suite keeps none by default
    monkeypatch.chdir(tmp_path)
    Path("server.toml").write_text(one_server_file(duration_s=200, warmup_s=20, replications=3))

    def capacity(*more: str):
        done = CliRunner().invoke(main, list(search_of("server.toml", *more)))
        assert done.exit_code == 0, done.output
        return done

    first = capacity()
    cache = Path(".tiersim-cache/capacity-server.jsonl")
    lines = cache.read_text().splitlines()
    total = len(json.loads(first.stdout)["evaluations"])
    assert len(lines) == total > 4
    assert "resumed" not in first.stderr
    cache.write_text("\n".join(lines[:3]) + "\n" + lines[3][: len(lines[3]) // 2])

    rerun = capacity()
    assert f"resumed: 3 of {total} evaluations from {cache}" in rerun.stderr
    assert len(cache.read_text().splitlines()) == total + 1  # the torn line stays, skipped
    whole = capacity("--no-cache")
    assert "resumed" not in whole.stderr
    assert rerun.stdout == whole.stdout == first.stdout
    again = capacity()
    assert f"resumed: {total} of {total} evaluations" in again.stderr
    assert again.stdout == first.stdout


# the one-server model's demand fitted at 0.1 s (the file's 0.3 s is unstable at 5 per s)
DEMAND_FIT = {
    "experiment": "one server",
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


@pytest.mark.slow  # about 20 s: a range of two draws' searches, whole and resumed
def test_capacity_interrupted_in_its_draws_shows_the_answer_and_resumes(tmp_path):
    """Ctrl-C once the parameter draws' searches have begun: the answer at the fitted values is
    printed, the command ends with 130, and the rerun replays the search at the fitted values
    and the draws' finished evaluations, and answers as a range never interrupted."""
    model, calibration = tmp_path / "server.toml", tmp_path / "fit.json"
    model.write_text(one_server_file(duration_s=400, warmup_s=20, replications=2))
    calibration.write_text(json.dumps(DEMAND_FIT))
    cache = tmp_path / "capacity.jsonl"
    search = search_of(model, "--set", 'run.engine="reference"', "--calibration")
    search += (str(calibration), "--draws", "2", "--min", "1", "--max", "20", "--tolerance", "0.1")
    whole = tiersim(*search, "--no-cache")
    fitted = len(json.loads(whole.stdout)["evaluations"])

    def evaluations() -> int:
        return len(cache.read_text().splitlines()) if cache.exists() else 0

    process = start(*search, "--cache", str(cache))
    wait_for(lambda: evaluations() >= fitted + 2, seconds=120)  # two of the draws'
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert (
        "interrupted: the answer at the fitted values is below; finished evaluations are "
        f"kept in {cache}" in stderr
    )
    shown = json.loads(stdout)
    assert "calibrated_range" not in shown
    assert shown["best"] == json.loads(whole.stdout)["best"]
    kept = evaluations()
    rerun = tiersim(*search, "--cache", str(cache))
    assert f"resumed: {kept} of " in rerun.stderr
    assert rerun.stdout == whole.stdout
