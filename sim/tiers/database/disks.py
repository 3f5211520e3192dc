"""The database host's disks: a FCFS queue in front of `disks` spindles.

A database call computes on the host's CPU, then reads or writes its pages on a disk, still
holding its connection (a server process or thread per connection in PostgreSQL, MySQL, MaxDB).
The disk serves one request at a time per spindle, in arrival order, so a slow disk queues the
calls behind it while the CPU idles -- the I/O-bound database of capacity-planning texts
(Menascé & Almeida, *Capacity Planning for Web Services*, 2002, ch. 8: CPU and disk as separate
service centres).
"""

from __future__ import annotations

from collections.abc import Callable

from sim.kernel.slots import GRANTED, Pool


class Disks:
    """Called after a visit's CPU work (a station's `post` hook); continues it with `then(visit)`
    once its disk service is done.  `pool` has one slot per spindle and an unbounded queue;
    `service` draws one I/O's service time [s]."""

    __slots__ = ("kernel", "pool", "service")

    def __init__(self, kernel, pool: Pool, service: Callable[[], float]) -> None:
        self.kernel = kernel
        self.pool = pool
        self.service = service

    def __call__(self, visit, then) -> None:
        job = (visit, then)
        if self.pool.acquire(self._start, job) == GRANTED:
            self._start(job)

    def _start(self, job) -> None:
        self.kernel.call_after(self.service(), self._done, job)

    def _done(self, job) -> None:
        self.pool.release()
        job[1](job[0])
