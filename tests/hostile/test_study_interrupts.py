"""Ctrl-C (SIGINT) and SIGTERM sent to `tiersim capacity` and `tiersim calibrate` while they
simulate: exit 130 (143), one line, no traceback; calibrate's finished evaluations are kept in
its cache and a rerun resumes from them.  (sweep, run and import: `test_interrupts`.)"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys

import pytest

from tests.hostile.test_interrupts import DEMO, ROOT, start, stop, wait_for
from tests.hostile.test_reference_interrupts import StandardError


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_capacity_answers_a_signal(sent, code):
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
    assert said == ["interrupted"], str(stderr)


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
        "interrupted: finished evaluations are in the cache; rerun the same command to go on"
    ]
    kept = evaluations()
    assert kept >= 3
    assert all(json.loads(line) for line in cache.read_text().splitlines())  # no half line
    rerun = tiersim(*calibrate)
    assert f"{kept} from the cache" in rerun.stdout + rerun.stderr
