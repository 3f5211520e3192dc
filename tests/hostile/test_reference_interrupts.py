"""A long replication on the reference engine (`tiersim run` of 40,000 s of the demo, forced
with `run.engine = "reference"`): progress said off a terminal while it runs, and Ctrl-C or
SIGTERM answered within a couple of seconds with exit 130 (143), between two of its calendar's
slices (`sim.engines.reference.slices`), as the compiled engine answers at its pauses
(`test_compiled_interrupts`).  The finished replications of a run are kept."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time

import pytest

from tests.hostile.test_interrupts import DEMO, long_run, start


class StandardError:
    """The command's standard error, read as it comes (a pipe: plain lines, no live bar)."""

    def __init__(self, process: subprocess.Popen, wanted: str) -> None:
        self.lines: list[str] = []
        self.seen = threading.Event()
        self.closed = threading.Event()
        self.wanted = re.compile(wanted)
        self.thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self.thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            self.lines.append(line.rstrip("\n"))
            if self.wanted.search(line):
                self.seen.set()
        self.closed.set()

    def wait(self, seconds: float) -> bool:
        """Whether a wanted line came within `seconds` (False at once if the command ended)."""
        deadline = time.monotonic() + seconds
        while not self.seen.wait(0.1):
            if self.closed.is_set() or time.monotonic() > deadline:
                return self.seen.is_set()
        return True

    def first(self) -> str:
        return next(line for line in self.lines if self.wanted.search(line))

    def __str__(self) -> str:
        return "\n".join(self.lines)


def signalled(process: subprocess.Popen, sent: int) -> float:
    """Send `sent` and wait for the process to end: the seconds it took to answer."""
    process.send_signal(sent)
    sent_at = time.monotonic()
    process.wait(timeout=30)
    return time.monotonic() - sent_at


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_long_reference_replication_says_its_progress_and_answers_a_signal(sent, code):
    process = long_run("reference")
    stderr = StandardError(process, "s simulated")
    try:
        # the first plain line comes after the reporter's quiet 5 s: well inside the replication
        assert stderr.wait(60), f"no progress within the replication:\n{stderr}"
        line = stderr.first()
        match = re.match(r"replications: 0/1 .*?([\d,]+) of 40,000 s simulated", line)
        assert match is not None, line
        assert 0 < float(match.group(1).replace(",", "")) < 40000, line
        assert process.poll() is None  # still running: the signal lands mid-replication
        answered_s = signalled(process, sent)
    finally:
        process.kill()
    stderr.thread.join(5)
    assert process.returncode == code, str(stderr)
    assert answered_s < 3, f"answered the signal after {answered_s:.1f} s"
    said = [line for line in stderr.lines if not line.startswith(("warning:", "replications:"))]
    assert said == ["interrupted"], str(stderr)


def test_an_interrupted_run_keeps_its_finished_replications():
    """Five replications of 300 s (a few seconds each): Ctrl-C as the next one starts after
    one, two or three finished shows the finished ones' figures and says so, with exit 130.
    (The first plain line comes after the reporter's quiet 5 s, at the next replication's
    end.)"""
    process = start(
        "run",
        str(DEMO),
        "--set",
        "run.duration_s=300",
        "--set",
        'run.engine="reference"',
        "-r",
        "5",
        "--no-cache",  # kept and resumed: `test_run_import_interrupts`
    )
    stderr = StandardError(process, r"^replications: [1-3]/5 ")
    try:
        assert stderr.wait(90), f"no replication under way after a finished one:\n{stderr}"
        assert process.poll() is None
        answered_s = signalled(process, signal.SIGINT)
        assert process.stdout is not None
        stdout = process.stdout.read()
    finally:
        process.kill()
    stderr.thread.join(5)
    assert process.returncode == 130, str(stderr)
    assert answered_s < 3, f"answered the signal after {answered_s:.1f} s"
    assert "Traceback" not in str(stderr) and "internal error" not in str(stderr)
    finished = stderr.first().split("/")[0].removeprefix("replications: ")
    said = [line for line in stderr.lines if not line.startswith(("warning:", "replications:"))]
    assert said == [f"interrupted: the {finished} finished replication(s) are shown above"], str(
        stderr
    )
    assert "throughput" in stdout, stdout  # the finished replications' figures
