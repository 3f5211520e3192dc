"""A long replication on the compiled engine (`tiersim run` of 40,000 s of the demo): progress
said off a terminal while it runs, and Ctrl-C or SIGTERM answered within a couple of seconds
with exit 130 (143), at the loop's next pause (`sim.engines.compiled.pauses`)."""

from __future__ import annotations

import re
import signal
import threading
import time

import pytest

from tests.hostile.test_interrupts import long_run


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_long_compiled_replication_says_its_progress_and_answers_a_signal(sent, code):
    process = long_run("compiled")
    assert process.stderr is not None
    lines: list[str] = []
    progress = threading.Event()

    def read() -> None:  # standard error is a pipe here: plain lines, no live bar
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            if "s simulated" in line:
                progress.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # the first plain line comes after the reporter's quiet 5 s: well inside the replication
        assert progress.wait(60), "no progress within the replication:\n" + "\n".join(lines)
        line = next(line for line in lines if "s simulated" in line)
        match = re.match(r"replications: 0/1 .*?([\d,]+) of 40,000 s simulated", line)
        assert match is not None, line
        assert 0 < float(match.group(1).replace(",", "")) < 40000, line
        assert process.poll() is None  # still running: the signal lands mid-replication
        process.send_signal(sent)
        sent_at = time.monotonic()
        process.wait(timeout=30)
        answered_s = time.monotonic() - sent_at
    finally:
        process.kill()
    reader.join(5)
    assert process.returncode == code, "\n".join(lines)
    assert answered_s < 3, f"answered the signal after {answered_s:.1f} s"
    said = [line for line in lines if not line.startswith(("warning:", "replications:"))]
    assert said == ["interrupted"], "\n".join(lines)
