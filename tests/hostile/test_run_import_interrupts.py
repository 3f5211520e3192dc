"""Ctrl-C (SIGINT) and SIGTERM sent to `tiersim run` and `tiersim import` mid-way: exit 130
(143), the finished work kept (a run's replications, an import's files read), and a rerun that
replays it, says how much, and writes what a command never interrupted writes.  (sweep:
`test_interrupts`; capacity and calibrate: `test_study_interrupts`.)"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sim.studies.kept_replications import default_cache as DEFAULT_CACHE
from tests.conftest import one_server_file
from tests.hostile.test_interrupts import ROOT, start, stop, wait_for

REPLICATIONS = 8


def server_model(folder: Path) -> Path:
    """The one-server model at half load: a replication of 400 s runs in some 0.15 s."""
    path = folder / "server.toml"
    text = one_server_file(duration_s=400, warmup_s=20, replications=REPLICATIONS)
    path.write_text(text.replace("mean = 0.3", "mean = 0.1"))
    return path


def tiersim(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "sim.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def without_wall_time(text: str) -> str:
    """A run's output less the wall time of the process that printed it (its one figure that
    is not the model's)."""
    text = re.sub(r'"wall_s": [0-9.e+-]+', '"wall_s": -', text)
    return re.sub(r"[0-9.]+ s wall", "- s wall", text)


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_keeps_its_replications_and_a_rerun_resumes(sent, code, tmp_path):
    model, cache = server_model(tmp_path), tmp_path / "run.jsonl"
    run = ("run", str(model), "--set", 'run.engine="reference"', "--json")
    process = start(*run, "--cache", str(cache))
    wait_for(lambda: len(lines_of(cache)) >= 2, seconds=60)  # two replications finished
    returncode, stderr = stop(process, sent)
    assert returncode == code, stderr
    kept = lines_of(cache)
    assert 2 <= len(kept) < REPLICATIONS, "the run finished before the signal"
    # whole lines, the finished replications in order: not the one the signal stopped
    indices = [json.loads(line)["record"]["replication"] for line in kept]
    assert indices == list(range(len(kept)))
    said = [line for line in stderr.splitlines() if line.startswith("interrupted")]
    assert said == [
        f"interrupted: the {len(kept)} finished replication(s) are shown above and kept in "
        f"{cache}; rerun the same command to go on"
    ], stderr

    # the rerun and the run never interrupted in this process: one start-up less each
    rerun = invoke(*run, "--cache", str(cache))
    assert f"resumed: {len(kept)} of {REPLICATIONS} replications from {cache}" in rerun.stderr
    assert len(lines_of(cache)) == REPLICATIONS  # the rest kept after them
    whole = invoke(*run, "--no-cache")
    assert "resumed" not in whole.stderr
    assert len(json.loads(whole.stdout)["replications"]) == REPLICATIONS
    assert without_wall_time(rerun.stdout) == without_wall_time(whole.stdout)


def invoke(*args: str):
    from click.testing import CliRunner

    from sim.cli import main

    done = CliRunner().invoke(main, list(args))
    assert done.exit_code == 0, done.output
    return done


def test_a_run_resumes_from_its_default_cache_and_removes_it_once_whole(tmp_path, monkeypatch):
    """In this process: Ctrl-C as the fourth replication runs (raised where the signal lands),
    the default file keeps three; the rerun replays them, runs the rest and prints the table a
    run never interrupted prints; the file is gone once the run is whole."""
    from click.testing import CliRunner

    from sim.cli import main
    from sim.run import replications
    from sim.studies import kept_replications

    # the suite keeps no default cache (conftest); this test is of the default
    monkeypatch.setattr(kept_replications, "default_cache", DEFAULT_CACHE)
    monkeypatch.chdir(tmp_path)
    model = str(server_model(tmp_path).name)
    run = ["run", model, "--set", 'run.engine="reference"', "-r", "6"]
    replication = replications.run_replication

    def interrupted_at_the_fourth(model, index, *args):
        if index == 3:
            raise KeyboardInterrupt
        return replication(model, index, *args)

    monkeypatch.setattr(replications, "run_replication", interrupted_at_the_fourth)
    stopped = CliRunner().invoke(main, run)
    assert stopped.exit_code == 130, stopped.output
    (cache,) = Path(".tiersim-cache").glob("run-server-*.jsonl")
    assert len(lines_of(cache)) == 3
    assert f"shown above and kept in {cache}; rerun the same command" in stopped.stderr

    monkeypatch.setattr(replications, "run_replication", replication)
    rerun = CliRunner().invoke(main, run)
    assert rerun.exit_code == 0, rerun.output
    assert f"resumed: 3 of 6 replications from {cache}" in rerun.stderr
    assert not cache.exists()  # whole: nothing left to resume
    whole = CliRunner().invoke(main, [*run, "--no-cache"])
    assert "resumed" not in whole.stderr
    assert without_wall_time(rerun.stdout) == without_wall_time(whole.stdout)
    again = CliRunner().invoke(main, run)  # a finished run runs again, as it always did
    assert "resumed" not in again.stderr
    assert not list(Path(".tiersim-cache").glob("run-*.jsonl"))


def test_a_kept_line_that_is_not_a_replication_is_run_again(tmp_path):
    """A hand-edited cache: a line whose arrays are not what they say, and a torn last line,
    are run again (and kept after them); the figures are a whole run's."""
    from click.testing import CliRunner

    from sim.cli import main

    model, cache = server_model(tmp_path), tmp_path / "run.jsonl"
    run = ["run", str(model), "--set", 'run.engine="reference"', "-r", "3", "--json"]
    first = CliRunner().invoke(main, [*run, "--cache", str(cache)])
    assert first.exit_code == 0, first.output
    lines = lines_of(cache)
    entry = json.loads(lines[1])
    entry["record"]["window"]["rows"]["shape"] = [10**9, 10**9]  # more than its bytes
    cache.write_text(lines[0] + "\n" + json.dumps(entry) + "\n" + lines[2][:500])
    rerun = CliRunner().invoke(main, [*run, "--cache", str(cache)])
    assert rerun.exit_code == 0, rerun.output
    assert f"resumed: 1 of 3 replications from {cache}" in rerun.stderr
    assert without_wall_time(rerun.stdout) == without_wall_time(first.stdout)


def test_timeseries_keeps_no_replication(tmp_path):
    """A replayed replication would write no --timeseries samples: --cache with --timeseries
    is refused, and by default none is kept."""
    from click.testing import CliRunner

    from sim.cli import main

    model = server_model(tmp_path)
    timeseries, cache = str(tmp_path / "t.csv"), str(tmp_path / "c.jsonl")
    refused = CliRunner().invoke(
        main, ["run", str(model), "--timeseries", timeseries, "--cache", cache]
    )
    assert refused.exit_code == 2
    assert "--timeseries" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
