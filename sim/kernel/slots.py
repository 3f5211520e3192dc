"""A counted pool of identical slots: workers, threads, pooled connections.

One class serves every pool in the stack (Apache `MaxClients` workers, Tomcat
`maxThreads`, a JDBC pool, a listen backlog in front of them) because they share one
mechanism: take a free slot at once, otherwise wait first-come first-served in a bounded
or unbounded queue, otherwise be refused.  The continuation style (`acquire` returns
GRANTED, or later calls `granted(arg)`) avoids one SimPy event per acquisition.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from sim.observe.probes import COUNT, FRACTION, REQUESTS, SECONDS, Metric, Window

GRANTED = 0
QUEUED = 1
REFUSED = 2

INFINITE = float("inf")


class Waiter:
    """A place in a pool's queue; `cancel()` withdraws it (e.g. mod_proxy `acquire` expired)."""

    __slots__ = ("arg", "granted", "pool", "since")

    def __init__(self, pool: Pool, granted: Callable[[Any], None], arg: Any, since: float) -> None:
        self.pool = pool
        self.granted: Callable[[Any], None] | None = granted  # None: granted or withdrawn
        self.arg = arg
        self.since = since

    def cancel(self) -> bool:
        """Leave the queue; False if the slot was already granted."""
        if self.granted is None:
            return False
        self.granted = None
        self.pool._withdraw()
        return True


class Pool:
    """`capacity` slots (None = unbounded) with a FIFO queue of at most `queue_limit` waiters.

    Statistics are cumulative and time-weighted (busy-slot area, queue-length area) so the
    recorder can difference them over any window, e.g. after warm-up.
    """

    fields = ("busy_area", "queue_area", "acquired", "refused", "wait_sum", "in_use", "waiting")

    __slots__ = (
        "_busy_signed",
        "_pick",
        "_queue",
        "_queue_signed",
        "acquired",
        "capacity",
        "env",
        "in_use",
        "kernel",
        "name",
        "queue_limit",
        "refused",
        "wait_sum",
        "waiting",
        "withdrawn",
    )

    def __init__(
        self, kernel, name: str, capacity: int | None, queue_limit: int | None = None
    ) -> None:
        self.name = name
        self.kernel = kernel
        self.env = kernel.env
        self.capacity = INFINITE if capacity is None else capacity
        self.queue_limit = INFINITE if queue_limit is None else queue_limit
        self.in_use = 0
        self.waiting = 0  # live waiters (cancelled entries may still sit in _queue)
        self._queue: deque[Waiter] = deque()
        # Areas as signed sums: minus the time each slot is taken (or each waiter joins),
        # plus the time it is freed (or leaves); area up to t = signed sum + count x t.
        # Exact, and no interval arithmetic on the hot path.
        self._busy_signed = 0.0
        self._queue_signed = 0.0
        self.acquired = 0
        self.refused = 0
        self.wait_sum = 0.0
        self.withdrawn = 0
        self._pick: Callable[[int], int] | None = None  # None: the oldest waiter goes first

    def serve_in_random_order(self, draw: Callable[[], float]) -> None:
        """Hand a released slot to any live waiter alike instead of the oldest: `draw()` gives
        a uniform [0, 1) number, drawn only when two or more wait (a hot row's lock, whose
        waiters race for it at each release)."""

        def pick(waiting: int) -> int:
            return min(int(draw() * waiting), waiting - 1)

        self._pick = pick

    def acquire(self, granted: Callable[[Any], None], arg: Any = None) -> int | Waiter:
        """GRANTED: the caller holds a slot now.  REFUSED: queue full.  Otherwise a `Waiter`:
        `granted(arg)` will be called when a slot is handed over."""
        if self.in_use < self.capacity:
            self.in_use += 1
            self._busy_signed -= self.env._now
            self.acquired += 1
            return GRANTED
        if self.waiting >= self.queue_limit:
            self.refused += 1
            return REFUSED
        now = self.env._now
        self.waiting += 1
        self._queue_signed -= now
        waiter = Waiter(self, granted, arg, now)
        self._queue.append(waiter)
        return waiter

    def release(self) -> None:
        """Free a slot; hand it straight to the oldest live waiter, if any."""
        if self._queue and self._hand_over():
            return  # the slot passed over without being freed
        self.in_use -= 1
        self._busy_signed += self.env._now

    def _hand_over(self) -> bool:
        """Give a held or new slot to the oldest live waiter; False if there is none."""
        queue = self._queue
        if self._pick is not None and self.waiting > 1:
            self._random_waiter_first()
        while queue:
            waiter = queue.popleft()
            granted = waiter.granted
            if granted is None:
                continue  # withdrawn
            now = self.env._now
            waiter.granted = None
            self.waiting -= 1
            self._queue_signed += now
            self.acquired += 1
            self.wait_sum += now - waiter.since
            granted(waiter.arg)
            return True
        return False

    def _random_waiter_first(self) -> None:
        """Move the waiter `_pick` chooses among the live ones to the queue's head."""
        queue = self._queue
        live = [waiter for waiter in queue if waiter.granted is not None]
        chosen = live.pop(self._pick(len(live)))  # type: ignore[misc]
        queue.clear()
        queue.append(chosen)
        queue.extend(live)

    def _withdraw(self) -> None:
        self.waiting -= 1
        self._queue_signed += self.env._now
        self.withdrawn += 1

    def counters(self, now: float) -> tuple[float, ...]:
        """Cumulative (busy area, queue area, acquisitions, refusals, total wait) up to `now`,
        and the gauges (slots in use, waiters) at `now`."""
        return (
            self._busy_signed + self.in_use * now,
            self._queue_signed + self.waiting * now,
            float(self.acquired),
            float(self.refused),
            self.wait_sum,
            float(self.in_use),
            float(self.waiting),
        )

    def metrics(self, w: Window) -> Iterator[Metric]:
        """Mean slots busy and, when bounded, their utilisation; mean queue; refusals; the mean
        wait per acquisition; slots in use and waiters at the window's end."""
        yield "busy", w.mean_level("busy_area"), COUNT
        if math.isfinite(self.capacity):
            yield "utilization", w.mean_level("busy_area", self.capacity), FRACTION
        yield "queue", w.mean_level("queue_area"), COUNT
        yield "refused", w.delta["refused"], REQUESTS
        yield "wait", w.per("wait_sum", "acquired"), SECONDS
        yield "in_use_now", w.level["in_use"], COUNT
        yield "waiting_now", w.level["waiting"], COUNT
