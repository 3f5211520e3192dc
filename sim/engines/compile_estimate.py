"""How long numba's first compilation of the compiled engine will take on this machine, so
that its announcement gives a measured figure rather than a hope.

The compilation is one thread of CPU work (numba's type inference in Python, then LLVM).  Its
CPU time was measured once on a reference machine beside a short pure-Python probe
(`REFERENCE`); here the probe runs again (a few hundredths of a second) and the ratio of the
two probe times scales the reference's CPU time to this machine's speed.  The wall time is
that CPU time over the share of one core the compiling process gets: with the run queue's
load average L on n cores (`os.getloadavg`, `os.cpu_count`), Linux's fair scheduler gives one
more runnable process about n / (L + 1) of a core, and at most one.  The load moves while the
compilation runs, so the estimate is a range: from the lightest of the 1-, 5- and 15-minute
loads to the heaviest, with `CPU_SPREAD` either side of the scaled CPU time for the probe's
own error (a busy core's shared caches slow compiled code and the probe unevenly).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    """A measured compilation: its CPU seconds and the probe's, on the same machine at the
    same time (`python -m sim.engines.compile_estimate --measure` measures both)."""

    compile_cpu_s: float
    probe_cpu_s: float
    measured: str  # where and when, for the reader of this file


# The kernel as of 2026-11-27, compiled from an empty NUMBA_CACHE_DIR on the project's 2-core
# machine (numba 0.68, Python 3.11) at a load average of 7-10, at nice 5 beside another
# compilation: 25.8 min of wall time.  The estimate for that run said 12-21 min (its load rose
# from 6.8 to 10 and its niceness took a smaller share than the model gives); for the 374 s a
# first `make demo` took at load 3 it says 6-10 min.  Measured on the kernel as one module; its
# split into a package (68bc17f) then compiled in 12.9 min at load 8-10 and nice 5, where the
# estimate at load 10 said 10-26 min.  A kernel that grows much makes this stale: measure again.
REFERENCE = Reference(
    compile_cpu_s=248.4,
    probe_cpu_s=0.0248,
    measured="2026-11-27, 2 cores at load 7.9, numba 0.68, Python 3.11",
)

# The scaled CPU time's error either way: the probe is pure Python and the compilation half
# LLVM, whose speed on another processor scales differently.
CPU_SPREAD = 0.25
PROBE_REPEATS = 9


def _probe_work() -> int:
    """Work shaped like a compiler's front end: dictionaries, strings and small lists."""
    table: dict[str, list[int]] = {}
    for i in range(40_000):
        key = f"v{i % 509}.{i % 7}"
        table.setdefault(key, []).append(i)
    return sum(len(sorted(v, reverse=True)) for v in table.values())


def probe_cpu_s(repeats: int = PROBE_REPEATS) -> float:
    """CPU seconds of the probe, the median of `repeats` (about 0.2 s in all).  Even CPU time
    varies twofold from one repeat to the next on a busy machine (other processes evict the
    core's caches), and a compilation of minutes runs at the typical speed, not the best."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        _probe_work()
        times.append(time.process_time() - started)
    return statistics.median(times)


def core_share(load: float, cores: int) -> float:
    """The share of one core a new runnable process gets beside `load` others on `cores`."""
    return min(1.0, cores / (max(load, 0.0) + 1.0))


@dataclass(frozen=True)
class CompileEstimate:
    cpu_s: float  # the reference's CPU time scaled to this machine
    wall_low_s: float
    wall_high_s: float
    load: float  # the 1-minute load average when estimated
    cores: int

    def phrase(self) -> str:
        """`3–6 min here (2 cores at load 3.1; about 2 min of CPU)`."""
        return (
            f"{_span(self.wall_low_s, self.wall_high_s)} here "
            f"({self.cores} cores at load {self.load:.1f}; about {_duration(self.cpu_s)} of CPU)"
        )

    def progress(self, elapsed_s: float) -> str:
        """A line while compiling: the time so far against the estimate."""
        return (
            f"still compiling: {_duration(elapsed_s)} of an estimated "
            f"{_span(self.wall_low_s, self.wall_high_s)}"
        )


def estimate(
    reference: Reference = REFERENCE,
    probe_s: float | None = None,
    loads: tuple[float, ...] | None = None,
    cores: int | None = None,
) -> CompileEstimate | None:
    """This machine's estimate, or None when the reference or the load cannot be had (the
    announcement then says only that it compiles, with its progress)."""
    if not (reference.compile_cpu_s > 0 and reference.probe_cpu_s > 0):
        return None
    if loads is None:
        try:
            loads = os.getloadavg()
        except OSError:  # no load average on this platform
            return None
    cores = cores or os.cpu_count() or 1
    probe_s = probe_cpu_s() if probe_s is None else probe_s
    cpu_s = reference.compile_cpu_s * probe_s / reference.probe_cpu_s
    return CompileEstimate(
        cpu_s=cpu_s,
        wall_low_s=cpu_s * (1 - CPU_SPREAD) / core_share(min(loads), cores),
        wall_high_s=cpu_s * (1 + CPU_SPREAD) / core_share(max(loads), cores),
        load=loads[0],
        cores=cores,
    )


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def _span(low_s: float, high_s: float) -> str:
    """`40–90 s`, `2–5 min`: one unit for both ends, the unit of the upper one."""
    if high_s < 90:
        return f"{low_s:.0f}–{high_s:.0f} s"
    low_min, high_min = max(1, round(low_s / 60)), max(1, round(high_s / 60))
    return f"{low_min}–{high_min} min" if low_min < high_min else f"about {high_min} min"


_MEASURE = """
import time
from sim.engines.compile_estimate import probe_cpu_s
from sim.engines.compiled.warm import warm
probe = probe_cpu_s()
started = time.process_time()
warm()
print(time.process_time() - started, probe)
"""


def measure() -> Reference:
    """Compile the engine from an empty numba cache in a fresh process (the installed cache is
    left alone) and return its CPU time beside the probe's: the figures for `REFERENCE`."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tiersim-numba-") as cache:
        out = subprocess.run(
            [sys.executable, "-c", _MEASURE],
            env={**os.environ, "NUMBA_CACHE_DIR": cache},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    compile_cpu_s, probe_s = (float(word) for word in out.split()[-2:])
    return Reference(
        compile_cpu_s=compile_cpu_s,
        probe_cpu_s=probe_s,
        measured=f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
    )


if __name__ == "__main__":  # python -m sim.engines.compile_estimate [--measure]
    import sys

    if "--measure" in sys.argv[1:]:
        print(measure())
    else:
        found = estimate()
        print(found.phrase() if found else "no reference measured")
