"""Stop-the-world pauses of a processor-sharing CPU (`ProcessorSharingCPU.pause`): exact times."""

from __future__ import annotations

import pytest

from sim.kernel.calendar import Kernel
from sim.kernel.cpu import ProcessorSharingCPU


def run_with_pauses(jobs, cores, pauses):
    """Start `jobs` = [(start, demand)] and `pauses` = [(at, until)]; return completion times."""
    kernel = Kernel()
    cpu = ProcessorSharingCPU(kernel, "cpu", cores)
    done = {}
    for index, (start, demand) in enumerate(jobs):
        kernel.after(
            start,
            lambda i, d=demand: cpu.run(d, lambda _a, i=i: done.__setitem__(i, kernel.now)),
            index,
        )
    for at, until in pauses:
        kernel.after(at, lambda u: cpu.pause(u), until)
    kernel.run()
    return [done[i] for i in range(len(jobs))], cpu


def test_a_pause_delays_a_running_burst_by_its_length():
    # Unshared regime: 0.5 s done before the pause, 0.5 s left after it.
    times, cpu = run_with_pauses([(0.0, 1.0)], cores=1, pauses=[(0.5, 2.0)])
    assert times == [pytest.approx(2.5, abs=1e-12)]
    assert not cpu.paused
    assert cpu.counters(2.5) == pytest.approx((1.0, 1.0, 1.0))  # the pause is no busy time


def test_a_pause_freezes_the_shared_regime():
    # Three 1-s jobs on two cores progress at 2/3: at 0.75 each has 0.5 s done.  After the
    # pause the three 0.5-s remainders share again (0.75 s): all end at 2.0 + 0.75.
    times, _ = run_with_pauses([(0.0, 1.0)] * 3, cores=2, pauses=[(0.75, 2.0)])
    assert times == pytest.approx([2.75] * 3, abs=1e-12)


def test_bursts_started_during_a_pause_wait_for_its_end():
    # The second burst arrives at 1.0, inside the pause: it starts at 2.0 beside the first's
    # remaining 0.5 s (one core each) and ends at 3.0.
    times, _ = run_with_pauses([(0.0, 1.0), (1.0, 1.0)], cores=2, pauses=[(0.5, 2.0)])
    assert times == pytest.approx([2.5, 3.0], abs=1e-12)


def test_a_pause_inside_a_pause_extends_it():
    times, _ = run_with_pauses([(0.0, 1.0)], cores=1, pauses=[(0.5, 2.0), (1.0, 3.0), (1.5, 2.5)])
    assert times == [pytest.approx(3.5, abs=1e-12)]


def test_a_burst_due_at_the_pause_instant_still_finishes_then():
    times, _ = run_with_pauses([(0.0, 0.5), (0.0, 1.0)], cores=2, pauses=[(0.5, 2.0)])
    assert times == pytest.approx([0.5, 2.5], abs=1e-12)
