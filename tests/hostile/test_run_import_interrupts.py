"""Ctrl-C (SIGINT) and SIGTERM sent to `tiersim run` and `tiersim import` mid-way: exit 130
(143), the finished work kept (a run's replications, an import's files read), and a rerun that
replays it, says how much, and writes what a command never interrupted writes; and the same
of a calibrated run's parameter draws and `capacity --what-next`'s runs at the draws, from a
cache cut as an interrupt leaves it.  (sweep: `test_interrupts`; capacity's search and
calibrate: `test_study_interrupts`.)"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest

from sim.studies.kept_replications import default_cache as DEFAULT_CACHE
from sim.studies.kept_samples import default_cache as DEFAULT_IMPORT_CACHE
from tests.conftest import one_server_file
from tests.hostile.test_interrupts import start, stop, wait_for

REPLICATIONS = 8


def server_model(folder: Path) -> Path:
    """The one-server model at half load: a replication of 400 s runs in some 0.15 s."""
    path = folder / "server.toml"
    text = one_server_file(duration_s=400, warmup_s=20, replications=REPLICATIONS)
    path.write_text(text.replace("mean = 0.3", "mean = 0.1"))
    return path


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
    """The command in this process, its code read afresh: the digest each kept line's key
    holds is the one the interrupted process took, unless a file of the package changed since
    (it is remembered per process, and this one may have started long before)."""
    from click.testing import CliRunner

    from sim.cli import main
    from sim.studies.source_digest import code_digest

    code_digest.cache_clear()
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


def test_a_calibrated_run_resumes_its_parameter_draws(tmp_path):
    """`run --calibration`: the run at the fitted values and each parameter draw are kept as
    they finish; a cache cut after two draws (as Ctrl-C leaves it) gives a rerun that replays
    the replications and those two draws, runs the other two, and prints the prediction
    intervals of a run never interrupted."""
    from tests.hostile.test_study_interrupts import DEMAND_FIT

    model, cache = server_model(tmp_path), tmp_path / "run.jsonl"
    calibration = tmp_path / "fit.json"
    calibration.write_text(json.dumps(DEMAND_FIT))
    run = ("run", str(model), "--set", 'run.engine="reference"', "-r", "2", "--json")
    run += ("--calibration", str(calibration), "--draws", "4", "--serial")
    first = invoke(*run, "--cache", str(cache))
    lines = lines_of(cache)
    assert len(lines) == 2 + 4  # two replications, four draws
    cache.write_text("\n".join(lines[:4]) + "\n" + lines[4][:100])
    rerun = invoke(*run, "--cache", str(cache))
    assert f"resumed: 2 of 2 replications from {cache}" in rerun.stderr
    assert f"resumed: 2 of 4 parameter draws from {cache}" in rerun.stderr
    whole = invoke(*run, "--no-cache")
    assert "prediction" in json.loads(whole.stdout)
    assert without_wall_time(rerun.stdout) == without_wall_time(whole.stdout)
    assert without_wall_time(first.stdout) == without_wall_time(whole.stdout)


def test_capacity_what_next_keeps_its_runs_at_the_draws(tmp_path):
    """`capacity --what-next`'s runs at the range's draws are kept beside the search's
    evaluations: a cache cut before the last two (as Ctrl-C leaves it) gives a rerun that
    replays everything else and weighs the measurement as a command never interrupted."""
    from tests.studies.test_next_measurement import MM1, calibration

    model, fit, cache = tmp_path / "m.toml", tmp_path / "cal.json", tmp_path / "capacity.jsonl"
    model.write_text(MM1)
    fit.write_text(json.dumps(calibration()))
    question = ("capacity", str(model), "--slo", "response.mean<0.5", "--vary")
    question += ("clients.rate_per_s", "--min", "1", "--max", "20", "--knee", "0", "--serial")
    question += ("--calibration", str(fit), "--draws", "3", "--json")
    question += ("--candidate", "clients.rate_per_s=5:response.mean")
    first = invoke(*question, "--cache", str(cache))
    lines = lines_of(cache)
    runs = [line for line in lines if "figures" in json.loads(line)["record"]]
    assert len(runs) == 3 and lines[-3:] == runs  # one run at each draw, kept last
    cache.write_text("\n".join(lines[:-2]) + "\n")
    rerun = invoke(*question, "--cache", str(cache))
    assert f"resumed: 1 of 3 candidate runs at draws from {cache}" in rerun.stderr
    assert rerun.stdout == first.stdout
    assert json.loads(rerun.stdout)["what_next"]["measurements"]


def test_a_run_where_its_default_cache_cannot_be_written_runs_and_says_so(tmp_path, monkeypatch):
    """The default cache is a convenience: a folder where it cannot be made (here a file named
    `.tiersim-cache` stands in its way) gets the run all the same, and one warning."""
    from sim.studies import kept_replications

    monkeypatch.setattr(kept_replications, "default_cache", DEFAULT_CACHE)
    monkeypatch.chdir(tmp_path)
    Path(".tiersim-cache").write_text("not a folder")
    model = server_model(tmp_path).name
    done = invoke("run", model, "--set", 'run.engine="reference"', "-r", "2", "--json")
    warnings = [line for line in done.stderr.splitlines() if "are not kept" in line]
    assert len(warnings) == 1 and "--cache FILE keeps them elsewhere" in warnings[0], done.stderr
    assert len(json.loads(done.stdout)["replications"]) == 2
