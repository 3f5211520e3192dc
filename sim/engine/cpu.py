"""A host's CPU: `cores` processor-shared among the threads that are running on it.

Threads are software, cores are hardware: a node may run 200 request threads on 2
cores.  With n runnable threads each progresses at min(1, cores/n) x speed.  This is the
egalitarian multi-server processor-sharing discipline, which is what a time-sliced OS
scheduler approximates; with n <= cores nobody is slowed down, so a pool of `cores`
threads on `cores` cores behaves exactly as a FCFS multi-server station.

Implementation: "virtual time".  Every runnable job gains the same attained service, so
the scheduler only tracks V(t), the service each job has attained since the epoch, and
each job's finishing tag V_start + demand.  The next departure is the smallest tag; one
calendar entry is kept for it and re-issued (the old one lazily cancelled) only when the
sharing rate or the head of the tag heap changes.
"""
from __future__ import annotations

from heapq import heappop, heappush
from itertools import count
from typing import Any, Callable

_EPS = 1e-12


class ProcessorSharingCPU:
    fields = ("busy_area", "jobs_area", "completed")

    __slots__ = (
        "name", "kernel", "cores", "speed", "_jobs", "_seq", "_virtual", "_rate", "_last",
        "_wakeup", "busy_area", "jobs_area", "completed", "_after",
    )

    def __init__(self, kernel, name: str, cores: int, speed: float = 1.0) -> None:
        self.name = name
        self.kernel = kernel
        self.cores = cores
        self.speed = speed
        self._jobs: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._seq = count()
        self._virtual = 0.0  # attained service per job since the epoch [s of work at speed 1]
        self._rate = 0.0  # current attained-service rate per job
        self._last = 0.0
        self._wakeup = None
        self.busy_area = 0.0  # time integral of busy cores
        self.jobs_area = 0.0  # time integral of runnable jobs
        self.completed = 0
        self._after = kernel.after

    def _advance(self, now: float) -> None:
        dt = now - self._last
        if dt:
            n = len(self._jobs)
            if n:
                self._virtual += self._rate * dt
                self.busy_area += (n if n < self.cores else self.cores) * dt
                self.jobs_area += n * dt
            self._last = now

    def run(self, demand: float, done: Callable[[Any], None], arg: Any = None) -> None:
        """Execute `demand` seconds of CPU work (at speed 1), then call `done(arg)`."""
        self._advance(self.kernel.env._now)  # noqa: SLF001 - hot path
        jobs = self._jobs
        seq = next(self._seq)
        heappush(jobs, (self._virtual + demand, seq, done, arg))
        n = len(jobs)
        rate = self.speed if n <= self.cores else self.speed * self.cores / n
        # The pending departure stays valid unless the sharing rate changed or the new job
        # would finish first.
        if rate != self._rate or jobs[0][1] == seq:
            self._rate = rate
            self._reschedule()

    def _reschedule(self) -> None:
        if self._wakeup is not None:
            self._wakeup.cancel()
        if self._jobs:
            delay = (self._jobs[0][0] - self._virtual) / self._rate
            self._wakeup = self._after(delay if delay > 0 else 0.0, self._depart, None)
        else:
            self._wakeup = None

    def _depart(self, _arg: Any) -> None:
        self._wakeup = None
        self._advance(self.kernel.env._now)  # noqa: SLF001
        jobs = self._jobs
        # Everything whose tag has been reached leaves now (ties and rounding).
        limit = self._virtual + _EPS * (1.0 + abs(self._virtual))
        finished = []
        while jobs and jobs[0][0] <= limit:
            finished.append(heappop(jobs))
        if finished:
            top = finished[-1][0]
            if top > self._virtual:
                self._virtual = top
        n = len(jobs)
        if n:
            self._rate = self.speed if n <= self.cores else self.speed * self.cores / n
            self._reschedule()
        else:
            self._rate = 0.0
        self.completed += len(finished)
        for _tag, _seq, done, arg in finished:
            done(arg)

    def counters(self, now: float) -> tuple[float, float, float]:
        """Cumulative (busy-core area, runnable-job area, completions) up to `now`."""
        self._advance(now)
        return (self.busy_area, self.jobs_area, float(self.completed))
