"""A host's CPU: `cores` processor-shared among the threads that are running on it.

Threads are software, cores are hardware: a node may run 200 request threads on 2
cores.  With n runnable threads each progresses at min(1, cores/n) x speed.  This is the
egalitarian multi-server processor-sharing discipline, which is what a time-sliced OS
scheduler approximates; with n <= cores nobody is slowed down, so a pool of `cores`
threads on `cores` cores behaves exactly as a FCFS multi-server station.

Two regimes, one behaviour:
* unshared (n <= cores): each burst simply ends demand/speed later: one calendar entry
  per burst, nothing to recompute;
* shared (n > cores): "virtual time".  Every runnable job gains the same attained service,
  so only V(t) and each job's finishing tag V_start + demand are tracked; one calendar entry
  is kept for the smallest tag and re-issued (the old one lazily cancelled) only when the
  sharing rate or the head of the tag heap changes.
The CPU switches regime when n crosses `cores`, converting the remaining work of the
running jobs; the switch is exact, so the two regimes are one processor-sharing server.

A stop-the-world pause (`pause(until)`: a JVM's garbage collection at a safepoint) freezes
every burst on the CPU, request threads and replication work alike, and holds new ones until
it ends; each then finishes its remaining work, so a 1-s burst started at 0 and paused over
[0.5, 2) ends at 2.5.  The paused state is a class of its own (`_PausedCPU`): a CPU that is
never paused pays nothing for the capability on its hot path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from heapq import heapify, heappop, heappush
from itertools import count
from typing import Any

from sim.kernel.calendar import NORMAL, Wakeup
from sim.observe.probes import COUNT, FRACTION, Metric, Window

_EPS = 1e-12


def _unrepresentable(now: float, left: float, rate: float) -> bool:
    """Whether a wakeup for `left` virtual work at `rate` would come due at `now` itself.

    `_EPS` covers the rounding of virtual time while the clock's step (the spacing of floats
    at `now`) is below it; from 2**14 s on the step is 3.6e-12 s and a departure can fall short
    of its tag by more than `_EPS`.  Its wakeup for the rest, less than half a step away, then
    comes due at the same instant, advances nothing, and is rescheduled for ever: the run
    stands still.  Such a job's tag is reached as nearly as the clock can tell, so it leaves
    now.  Below 2**14 s the half step is under `_EPS` and, at a speed of at most 1, this never
    holds; wherever it holds the run stood still before, so no run that ended changes."""
    return now + left / rate == now


class ProcessorSharingCPU:
    fields = ("busy_area", "jobs_area", "completed")

    __slots__ = (
        "_after",
        "_burst_done_cb",
        "_eid",
        "_frozen",
        "_jobs",
        "_last",
        "_n",
        "_paused_until",
        "_queue",
        "_rate",
        "_resume",
        "_seq",
        "_unshared",
        "_virtual",
        "_wakeup",
        "busy_area",
        "completed",
        "cores",
        "env",
        "jobs_area",
        "kernel",
        "name",
        "speed",
    )

    def __init__(self, kernel, name: str, cores: int, speed: float = 1.0) -> None:
        self.name = name
        self.kernel = kernel
        self.env = kernel.env
        self.cores = cores
        self.speed = speed
        self._n = 0  # runnable jobs
        # unshared regime: calendar id -> (finish time, done, arg), insertion-ordered for
        # determinism; None while shared
        self._unshared: dict[int, tuple[float, Callable[[Any], None], Any]] | None = {}
        self._jobs: list[
            tuple[float, int, Callable[[Any], None], Any]
        ] = []  # shared regime: tag heap
        self._seq = count()
        self._virtual = 0.0  # attained service per job [s of work at speed 1], shared regime
        self._rate = 0.0
        self._last = 0.0
        self._wakeup: Wakeup | None = None
        self.busy_area = 0.0  # time integral of busy cores
        self.jobs_area = 0.0  # time integral of runnable jobs
        self.completed = 0
        self._after = kernel.after
        # Bursts go straight onto the calendar as bare entries keyed by their id: a burst is
        # one heap entry and one dict item, no objects (the hottest path of the engine).
        self._queue = kernel.env._queue
        self._eid = kernel.env._eid
        self._burst_done_cb = self._burst_done
        self._frozen: list[
            tuple[float, Callable[[Any], None], Any]
        ] = []  # paused: (work left, done, arg)
        self._paused_until = 0.0
        self._resume: Wakeup | None = None

    def _advance(self, now: float) -> None:
        dt = now - self._last
        if dt:
            n = self._n
            if n:
                if self._unshared is None:
                    self._virtual += self._rate * dt
                self.busy_area += (n if n < self.cores else self.cores) * dt
                self.jobs_area += n * dt
            self._last = now

    def _burst_done(self, key: int) -> None:
        """A burst of the unshared regime ends (unless it was moved to the shared regime)."""
        unshared = self._unshared
        item = None if unshared is None else unshared.pop(key, None)
        if item is None:
            return  # stale: moved to the shared regime at a switch
        _finish, done, arg = item
        now = self.env._now
        n = self._n
        dt = now - self._last
        if dt:
            self.busy_area += (n if n < self.cores else self.cores) * dt
            self.jobs_area += n * dt
            self._last = now
        self._n = n - 1
        self.completed += 1
        done(arg)

    def run(self, demand: float, done: Callable[[Any], None], arg: Any = None) -> None:
        """Execute `demand` seconds of CPU work (at speed 1), then call `done(arg)`."""
        now = self.env._now
        unshared = self._unshared
        n = self._n
        if unshared is not None:
            dt = now - self._last  # _advance inlined for the unshared regime
            if dt:
                if n:
                    self.busy_area += (n if n < self.cores else self.cores) * dt
                    self.jobs_area += n * dt
                self._last = now
        else:
            self._advance(now)
        self._n = n = n + 1
        if unshared is not None:
            if n <= self.cores:
                finish = now + demand / self.speed
                key = next(self._eid)
                heappush(self._queue, (finish, NORMAL, key, self._burst_done_cb, key))
                unshared[key] = (finish, done, arg)
                return
            self._share(now)
        jobs = self._jobs
        seq = next(self._seq)
        heappush(jobs, (self._virtual + demand, seq, done, arg))
        rate = self.speed * self.cores / self._n
        # The pending departure stays valid unless the rate changed or the new job is first.
        if rate != self._rate or jobs[0][1] == seq:
            self._rate = rate
            self._reschedule()

    # ------------------------------------------------------------------ unshared regime
    def _share(self, now: float) -> None:
        """n just exceeded the cores: move the running bursts onto the virtual-time heap."""
        self._virtual = 0.0
        jobs = []
        unshared = self._unshared
        assert unshared is not None  # called in the unshared regime only
        # Their calendar entries stay and are ignored when they come due (key no longer known).
        for finish, done, arg in unshared.values():
            jobs.append(((finish - now) * self.speed, next(self._seq), done, arg))
        heapify(jobs)
        self._jobs = jobs
        self._unshared = None
        self._rate = -1.0  # forces a reschedule

    def _unshare(self, now: float) -> None:
        """n fell back to the cores: every job runs at full speed to its own finish time."""
        unshared: dict[int, tuple[float, Callable[[Any], None], Any]] = {}
        for tag, _seq, done, arg in self._jobs:
            finish = now + max(tag - self._virtual, 0.0) / self.speed
            key = next(self._eid)
            heappush(self._queue, (finish, NORMAL, key, self._burst_done_cb, key))
            unshared[key] = (finish, done, arg)
        self._jobs = []
        self._unshared = unshared
        self._rate = 0.0

    # ------------------------------------------------------------------ shared regime
    def _reschedule(self) -> None:
        if self._wakeup is not None:
            self._wakeup.cancel()
        delay = (self._jobs[0][0] - self._virtual) / self._rate
        self._wakeup = self._after(delay if delay > 0 else 0.0, self._depart, None)

    def _depart(self, _arg: Any) -> None:
        self._wakeup = None
        now = self.env._now
        self._advance(now)
        jobs = self._jobs
        # Everything whose tag has been reached leaves now (ties and rounding).
        limit = self._virtual + _EPS * (1.0 + abs(self._virtual))
        finished = []
        while jobs and jobs[0][0] <= limit:
            finished.append(heappop(jobs))
        if not finished and jobs and _unrepresentable(now, jobs[0][0] - self._virtual, self._rate):
            finished.append(heappop(jobs))  # the clock cannot reach its tag: it leaves now
        if finished and finished[-1][0] > self._virtual:
            self._virtual = finished[-1][0]
        self._n -= len(finished)
        self.completed += len(finished)
        if self._n <= self.cores:
            self._unshare(now)
        else:
            self._rate = self.speed * self.cores / self._n
            self._reschedule()
        for _tag, _seq, done, arg in finished:
            done(arg)

    def counters(self, now: float) -> tuple[float, float, float]:
        """Cumulative (busy-core area, runnable-job area, completions) up to `now`.

        Reads without advancing the CPU's clock: advancing would round the virtual time and the
        areas differently than the run itself does, and a snapshot (a --timeseries sample, a
        warm-up checkpoint) must not change the answer of the run it observes."""
        dt = now - self._last
        n = self._n
        if dt and n:
            busy = self.busy_area + (n if n < self.cores else self.cores) * dt
            return (busy, self.jobs_area + n * dt, float(self.completed))
        return (self.busy_area, self.jobs_area, float(self.completed))

    def metrics(self, w: Window) -> Iterator[Metric]:
        """Utilisation of the cores, and the mean number of runnable bursts."""
        yield "utilization", w.mean_level("busy_area", self.cores), FRACTION
        yield "runnable", w.mean_level("jobs_area"), COUNT

    # ------------------------------------------------------------------ stop-the-world pauses
    @property
    def paused(self) -> bool:
        return False

    def pause(self, until: float) -> None:
        """Freeze every burst until simulated time `until` (a stop-the-world pause).  Bursts
        due now are left to finish; the others keep their remaining work for after the pause.
        The pause is not counted as busy time of the bursts (the collector's own time is the
        JVM's to report)."""
        now = self.env._now
        if until <= now:
            return
        self._advance(now)
        frozen = self._frozen
        if self._unshared is not None:
            keep = {}
            for key, (finish, done, arg) in self._unshared.items():
                if finish <= now:
                    keep[key] = (finish, done, arg)  # its calendar entry is due at this instant
                else:
                    frozen.append(((finish - now) * self.speed, done, arg))
            self._unshared = keep  # the moved bursts' calendar entries become stale
            self._n = len(keep)
        else:
            if self._wakeup is not None:
                self._wakeup.cancel()
                self._wakeup = None
            for tag, _seq, done, arg in sorted(self._jobs, key=lambda job: job[:2]):
                frozen.append((max(tag - self._virtual, 0.0), done, arg))
            self._jobs = []
            self._unshared = {}
            self._n = 0
            self._rate = 0.0
        self._paused_until = until
        self._resume = self._after(until - now, self._resumed, None)
        self.__class__ = _PausedCPU

    def _resumed(self, _arg: Any) -> None:
        self._resume = None
        self.__class__ = ProcessorSharingCPU
        self._last = self.env._now
        frozen, self._frozen = self._frozen, []
        for work, done, arg in frozen:
            self.run(work, done, arg)


class _PausedCPU(ProcessorSharingCPU):
    """A `ProcessorSharingCPU` inside a stop-the-world pause: bursts wait, nothing progresses."""

    __slots__ = ()

    @property
    def paused(self) -> bool:
        return True

    def run(self, demand: float, done: Callable[[Any], None], arg: Any = None) -> None:
        self._frozen.append((demand, done, arg))

    def pause(self, until: float) -> None:
        """A pause that begins inside another one extends it."""
        if until > self._paused_until:
            assert self._resume is not None  # set by the pause that began this one
            self._resume.cancel()
            self._paused_until = until
            self._resume = self._after(until - self.env._now, self._resumed, None)

    # counters: inherited; only the bursts left to finish at the pause's first instant count


class DedicatedCPU:
    """A host CPU that can never be shared: the slot pool in front of it has no more slots
    than the host has cores, so at most `cores` bursts run at once and each runs at full
    speed.  This is exactly `ProcessorSharingCPU` restricted to its unshared regime, without
    the bookkeeping that a switch to sharing needs (chosen by `build` when slots <= cores).

    Busy time is kept as a signed sum (minus the start of each running burst, plus its end),
    so no per-event interval arithmetic is needed: busy area up to t = busy_signed + n t.
    """

    fields = ProcessorSharingCPU.fields

    __slots__ = (
        "_busy_signed",
        "_done_cb",
        "_eid",
        "_n",
        "_queue",
        "completed",
        "cores",
        "env",
        "kernel",
        "name",
        "speed",
    )

    def __init__(self, kernel, name: str, cores: int, speed: float = 1.0) -> None:
        self.name = name
        self.kernel = kernel
        self.env = kernel.env
        self.cores = cores
        self.speed = speed
        self._n = 0
        self._busy_signed = 0.0
        self.completed = 0
        self._queue = kernel.env._queue
        self._eid = kernel.env._eid
        self._done_cb = self._burst_done

    def run(self, demand: float, done: Callable[[Any], None], arg: Any = None) -> None:
        """Execute `demand` seconds of CPU work (at speed 1), then call `done(arg)`."""
        now = self.env._now
        self._n += 1
        self._busy_signed -= now
        heappush(
            self._queue,
            (now + demand / self.speed, NORMAL, next(self._eid), self._done_cb, (done, arg)),
        )

    def _burst_done(self, pair: tuple[Callable[[Any], None], Any]) -> None:
        self._n -= 1
        self._busy_signed += self.env._now
        self.completed += 1
        done, arg = pair
        done(arg)

    def counters(self, now: float) -> tuple[float, float, float]:
        """Cumulative (busy-core area, runnable-job area, completions) up to `now`."""
        area = self._busy_signed + self._n * now
        return (area, area, float(self.completed))

    def metrics(self, w: Window) -> Iterator[Metric]:
        """Utilisation of the cores, and the mean number of runnable bursts."""
        yield "utilization", w.mean_level("busy_area", self.cores), FRACTION
        yield "runnable", w.mean_level("jobs_area"), COUNT
