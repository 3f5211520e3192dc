"""A processor-sharing CPU far into a run, where the clock's step passes the CPU's rounding
tolerance (2**14 s of simulated time): every burst still ends, when exact arithmetic says."""

from __future__ import annotations

from fractions import Fraction

import pytest

from sim.kernel.calendar import Kernel
from sim.kernel.cpu import ProcessorSharingCPU

# Eight bursts on two cores from t = 20000 s.  Before the fix, a departure here fell short of
# its tag by more than the tolerance, its wakeup for the rest came due at the same instant,
# and the run stood still at t = 20000.0843 s (found by a search over random bursts).
BURSTS = [
    (20000.02450980039, 0.0008233776739489879),
    (20000.02437592998, 0.003003062179126116),
    (20000.055120475492, 0.0029422608017278615),
    (20000.007512979224, 0.0403562122156092),
    (20000.02908215504, 0.0628442341226456),
    (20000.049326104276, 0.07940861696080512),
    (20000.015417959617, 0.02784041790772596),
    (20000.079498349376, 0.0032096785057092723),
]


class CountedCPU(ProcessorSharingCPU):
    """The CPU with its departures counted, so that one standing still fails the test."""

    __slots__ = ("departures",)

    def _depart(self, arg):
        self.departures = getattr(self, "departures", 0) + 1
        assert self.departures < 1000, f"the CPU stands still at t = {self.env._now!r}"
        super()._depart(arg)


def simulated(bursts, cores):
    kernel = Kernel()
    cpu = CountedCPU(kernel, "cpu", cores)
    done: dict[int, float] = {}
    for index, (start, demand) in enumerate(bursts):
        kernel.after(
            start,
            lambda i, d=demand: cpu.run(d, lambda _a, i=i: done.__setitem__(i, kernel.now)),
            index,
        )
    kernel.run()
    return [done.get(i) for i in range(len(bursts))]


def exact(bursts, cores):
    """Egalitarian processor sharing on `cores`, in rational arithmetic: each of n runnable
    bursts is served at min(1, cores / n)."""
    starts = [Fraction(s) for s, _ in bursts]
    left = {i: Fraction(d) for i, (_, d) in enumerate(bursts)}
    ends: dict[int, Fraction] = {}
    now = min(starts)
    while len(ends) < len(bursts):
        running = [i for i in left if starts[i] <= now]
        arriving = [starts[i] for i in left if starts[i] > now]
        rate = min(Fraction(1), Fraction(cores, len(running))) if running else Fraction(0)
        first_end = now + min(left[i] for i in running) / rate if running else None
        step_to = min([t for t in [first_end, *arriving] if t is not None])
        for i in running:
            left[i] -= rate * (step_to - now)
        now = step_to
        for i in [i for i in running if left[i] == 0]:
            ends[i] = now
            del left[i]
    return [float(ends[i]) for i in range(len(bursts))]


def test_every_burst_ends_past_the_clocks_fine_range():
    times = simulated(BURSTS, cores=2)
    assert None not in times
    # within a few steps of the clock at 20000 s (3.6e-12 s each) of the exact answer
    assert times == pytest.approx(exact(BURSTS, cores=2), abs=1e-10)


def test_a_replication_past_the_clocks_fine_range_ends_the_same_on_both_engines():
    """Four users on two cores for 17,000 s: the run stood still near 16,400 s on both engines
    before; now each ends, with the same replication bit for bit."""
    from sim.run.replication import run_replication
    from tests.conftest import differing, model_from

    data = {
        "clients": {"kind": "closed", "users": 4, "think": {"dist": "exponential", "mean": 1.0}},
        "backends": [
            {
                "name": "app",
                "threads": 4,
                "cores": 2,
                "demand": {"dist": "exponential", "mean": 0.1},
            }
        ],
    }
    results = {
        engine: run_replication(
            model_from(data, duration_s=17000.0, warmup="none", engine=engine), 0, 1
        )
        for engine in ("reference", "compiled")
    }
    assert results["compiled"].engine == "compiled"
    assert results["reference"].metrics["count.completed"] > 40000
    assert not differing(results["reference"].metrics, results["compiled"].metrics)
