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
from sim.studies.kept_samples import default_cache as DEFAULT_IMPORT_CACHE
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


FILES = 5


def jtl_files(folder: Path) -> list[str]:
    """Five JTL files of 40,000 samples at 100 per s (some 0.2 s each to read): one test's
    samples, each file a run of its own (its name: the file's content is keyed with it)."""
    start_ms = 1_700_000_000_000
    rows = (f"{start_ms + 10 * i},{5 + (i * 7) % 40},home,true,10\n" for i in range(40_000))
    text = "timeStamp,elapsed,label,success,allThreads\n" + "".join(rows)
    names = []
    for index in range(FILES):
        path = folder / f"level{index}.jtl"
        path.write_text(text)
        names.append(str(path))
    return names


def test_an_interrupted_import_keeps_the_files_read_and_a_rerun_reads_only_the_rest(tmp_path):
    files, cache = jtl_files(tmp_path), tmp_path / "import.jsonl"
    table = tmp_path / "levels.csv"
    process = start("import", "jtl", *files, "-o", str(table), "--cache", str(cache))
    wait_for(lambda: len(lines_of(cache)) >= 2, seconds=60)  # two files read
    returncode, stderr = stop(process, signal.SIGINT)
    assert returncode == 130, stderr
    kept = lines_of(cache)
    assert 2 <= len(kept) < FILES, "the import finished before the signal"
    assert [json.loads(line)["record"]["path"] for line in kept] == files[: len(kept)]
    assert stderr.strip().splitlines()[-1] == (
        f"interrupted: {len(kept)} file(s) read are kept in {cache}; rerun the same command "
        "to go on"
    ), stderr
    assert not table.exists()  # no half table

    rerun = invoke("import", "jtl", *files, "-o", str(table), "--cache", str(cache))
    assert f"resumed: {len(kept)} of {FILES} files from {cache}" in rerun.stderr
    whole = tmp_path / "whole.csv"
    never = invoke("import", "jtl", *files, "-o", str(whole), "--no-cache")
    assert "resumed" not in never.stderr
    assert table.read_bytes() == whole.read_bytes()
    sources = (tmp_path / "levels.sources.csv", tmp_path / "whole.sources.csv")
    assert sources[0].read_bytes() == sources[1].read_bytes()  # the files' spans, as read


def test_an_import_resumes_from_its_default_cache_and_removes_it_once_written(
    tmp_path, monkeypatch
):
    """In this process: Ctrl-C as the third file is read (raised where the signal lands); the
    default cache keeps two; the rerun reads three and writes the table an import never
    interrupted writes; the cache and its samples are gone once the table is written."""
    from sim.measurements import importer
    from sim.studies import kept_samples

    monkeypatch.setattr(kept_samples, "default_cache", DEFAULT_IMPORT_CACHE)
    monkeypatch.chdir(tmp_path)
    files = [Path(name).name for name in jtl_files(tmp_path)[:4]]
    read = importer.read_samples

    def interrupted_at_the_third(format, path, options):
        if path == files[2]:
            raise KeyboardInterrupt
        return read(format, path, options)

    monkeypatch.setattr(importer, "read_samples", interrupted_at_the_third)
    from click.testing import CliRunner

    from sim.cli import main

    stopped = CliRunner().invoke(main, ["import", "jtl", *files, "-o", "levels.csv"])
    assert stopped.exit_code == 130, stopped.output
    (cache,) = Path(".tiersim-cache").glob("import-*.jsonl")
    assert len(lines_of(cache)) == 2
    assert len(list(cache.with_suffix(".samples").glob("*.arrow"))) == 2
    assert f"interrupted: 2 file(s) read are kept in {cache}" in stopped.stderr

    monkeypatch.setattr(importer, "read_samples", read)
    rerun = invoke("import", "jtl", *files, "-o", "levels.csv")
    assert f"resumed: 2 of 4 files from {cache}" in rerun.stderr
    assert not cache.exists() and not cache.with_suffix(".samples").exists()
    invoke("import", "jtl", *files, "-o", "whole.csv", "--no-cache")
    assert Path("levels.csv").read_bytes() == Path("whole.csv").read_bytes()
