"""Ctrl-C (SIGINT) and SIGTERM sent to a running `tiersim`: exit 130 (143), one line, no
traceback, finished work kept, the interrupted piece never stored as a result, and a rerun
resumes.  The signal is sent to a real process, as a terminal or a scheduler sends it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "models" / "demo.toml"


def as_a_terminal_starts_it() -> None:
    # A shell starts a foreground command with SIGINT and SIGTERM at their default actions.
    # A process inherits an *ignored* signal across exec, and Python then leaves it ignored:
    # when something earlier in the test session left SIGINT ignored in this process, the
    # command would never see the Ctrl-C this test sends.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def start(*args: str) -> subprocess.Popen:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    env.pop("TIERSIM_DEBUG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "sim.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
        preexec_fn=as_a_terminal_starts_it,
    )


def stop(process: subprocess.Popen, sent: int) -> tuple[int, str]:
    """Send `sent`; the exit code and standard error, within the second the issue allows
    (a few more on a loaded machine)."""
    process.send_signal(sent)
    sent_at = time.monotonic()
    try:
        _, stderr = process.communicate(timeout=15)
    finally:
        process.kill()
    assert time.monotonic() - sent_at < 10, "the command did not answer the signal"
    assert "Traceback" not in stderr, stderr
    assert "internal error" not in stderr, stderr
    return process.returncode, stderr


def wait_for(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the command did not get that far"
        time.sleep(0.05)


def sweep_file(tmp_path: Path) -> Path:
    (tmp_path / "base.toml").write_text(DEMO.read_text())
    path = tmp_path / "sweep.toml"
    path.write_text(
        '[sweep]\nname = "interrupted"\nbase = "base.toml"\nreplications = 1\nseed = 3\n'
        # the reference engine: the sweep's own bookkeeping is under test, not an engine's
        # answer to the signal (the compiled engine's: `test_compiled_interrupts`)
        'set = ["run.duration_s=1000", "run.engine=\\"reference\\""]\nmetrics = ["throughput"]\n\n'
        '[factors]\n"clients.users" = [10, 20]\n'
    )
    return path


def test_sweep_keeps_finished_points_and_a_rerun_redoes_the_interrupted_one(tmp_path):
    import pandas as pd

    sweep = sweep_file(tmp_path)
    results = tmp_path / "results"
    points = results / "points"
    process = start("sweep", str(sweep), "--serial", "--results", str(results))
    wait_for(lambda: points.is_dir() and any(points.glob("*.parquet")))
    returncode, stderr = stop(process, signal.SIGINT)
    assert returncode == 130, stderr
    # the one line, beside (at most) the work estimate's warning printed before the signal
    lines = stderr.strip().splitlines()
    said = [line for line in lines if not line.startswith("warning:")]
    assert len(said) == 1 and said[0].startswith("interrupted"), stderr
    kept = sorted(points.glob("*.parquet"))
    assert len(kept) == 1  # the finished points, not the one interrupted
    statuses = [pd.read_parquet(p)["status"].iloc[0] for p in kept]
    assert statuses == ["ok"] * len(kept)
    rerun = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim.cli",
            "sweep",
            str(sweep),
            "--serial",
            "--results",
            str(results),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "2 points, 1 run serially, 1 already in" in rerun.stdout
    assert len(list(points.glob("*.parquet"))) == 2


def long_run(engine: str) -> subprocess.Popen:
    return start(
        "run",
        str(DEMO),
        "--set",
        "run.duration_s=40000",
        "--set",
        f'run.engine="{engine}"',
        "-r",
        "1",
    )


def interrupted_at_once(process: subprocess.Popen) -> None:
    returncode, stderr = stop(process, signal.SIGINT)
    assert returncode == 130, stderr
    # the one line, beside (at most) the work estimate's warning and the progress lines
    lines = stderr.strip().splitlines()
    said = [line for line in lines if not line.startswith(("warning:", "replications:"))]
    assert len(said) == 1 and said[0].startswith("interrupted"), stderr


def test_a_long_run():
    # (on the reference engine; the compiled engine's long replication:
    # `test_compiled_interrupts`)
    process = long_run("reference")
    time.sleep(3)  # past start-up, into the replication
    interrupted_at_once(process)


def test_import_writes_nothing_when_terminated(tmp_path):
    jtl = tmp_path / "big.jtl"
    with jtl.open("w") as handle:
        handle.write("timeStamp,elapsed,label,success\n")
        handle.writelines(
            f"{1700000000000 + 7 * i},{5 + i % 40},home,true\n" for i in range(600_000)
        )
    output = tmp_path / "table.csv"
    process = start("import", "jtl", str(jtl), "-o", str(output))
    time.sleep(2.5)  # reading the file takes several seconds
    returncode, stderr = stop(process, signal.SIGTERM)  # a scheduler's stop: as Ctrl-C, 143
    assert returncode == 143, stderr
    assert stderr.strip().splitlines() == ["interrupted"]
    assert not output.exists()  # no half table left behind


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("notanaddress", "expected PROTOCOL://HOST:PORT"),
        ("http://localhost:8786", "http:// is not a Dask scheduler's protocol"),
        ("tcp://host:99999", "port 99999 is not a TCP port"),
    ],
)
def test_a_scheduler_address_is_checked_before_use(tmp_path, address, said):
    from click.testing import CliRunner

    from sim.cli import main

    sweep = sweep_file(tmp_path)
    result = CliRunner().invoke(
        main, ["sweep", str(sweep), "--scheduler", address, "--results", str(tmp_path / "r")]
    )
    assert result.exit_code == 2, result.output
    assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_a_silent_scheduler_is_reported_within_the_connect_timeout(tmp_path):
    """A port that accepts and never answers (Dask's own connect would wait minutes)."""
    import socket

    from click.testing import CliRunner

    from sim.cli import main

    sweep = sweep_file(tmp_path)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(5)
        port = silent.getsockname()[1]
        started = time.monotonic()
        address = f"tcp://127.0.0.1:{port}"
        args = ["sweep", str(sweep), "--scheduler", address, "--connect-timeout", "1"]
        result = CliRunner().invoke(main, [*args, "--results", str(tmp_path / "r")])
        waited = time.monotonic() - started
    assert result.exit_code == 2, result.output
    assert "nothing answered within 1 s" in result.stderr
    assert waited < 10
