"""The event calendar: SimPy's `Environment`, driven by a loop that dispatches callbacks.

Components schedule calls (a function and its argument) on the environment's own
calendar, as bare entries or as cancellable `Wakeup`s.  `Kernel.run` pops the calendar itself: a
`Wakeup` is dispatched with one call,
any other SimPy event (a process, a `simpy.Timeout`, a resource request) is processed
exactly as `Environment.step` does.  So SimPy processes can live alongside the callback
components, while the hot path pays one Python call per event instead of SimPy's
callback-list protocol.  This uses the environment's calendar attributes (`_queue`,
`_now`), stable across SimPy 4.x (the dependency is pinned to <5).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import Any, cast

import simpy
from simpy.core import StopSimulation

URGENT = 0
NORMAL = 1
LATE = 2  # after every event due at the same instant


class Wakeup:
    """A scheduled call of `fn(arg)`, dispatched by `Kernel.run`.  `cancel()` is lazy: the
    entry stays in the calendar and is skipped when it comes due."""

    __slots__ = ("arg", "fn")

    def __init__(self, fn: Callable[[Any], None] | None, arg: Any) -> None:
        self.fn = fn
        self.arg = arg

    def cancel(self) -> None:
        self.fn = None


class Kernel:
    """Owns the SimPy environment; components call `after(delay, fn, arg)`."""

    def __init__(self) -> None:
        self.env = simpy.Environment()
        # SimPy types its calendar as 4-tuples (events); it also holds 5-tuple calls.
        self._queue = cast("list[Any]", self.env._queue)
        self._eid = self.env._eid
        # stop() was called: the run ends at that instant, whatever horizon `run` was given
        # (a driver that runs the calendar in slices of time does not start another)
        self.stopped = False
        env = self.env
        queue = self._queue
        eid = self._eid

        def after(delay: float, fn: Callable[[Any], None], arg: Any = None) -> Wakeup:
            wakeup = Wakeup(fn, arg)
            heappush(queue, (env._now + delay, NORMAL, next(eid), _dispatch, wakeup))
            return wakeup

        def call_after(delay: float, fn: Callable[[Any], None], arg: Any = None) -> None:
            heappush(queue, (env._now + delay, NORMAL, next(eid), fn, arg))

        self.after = after  # closures: the most called functions of the engine
        self.call_after = call_after

    @property
    def now(self) -> float:
        return self.env._now

    # after(delay, fn, arg) -> Wakeup: call fn(arg) `delay` simulated seconds from now; the
    # Wakeup can be cancelled.  call_after(delay, fn, arg): the same without a handle (the
    # calendar entry is a 5-tuple (time, priority, id, fn, arg): no object per event).
    # Both are defined in __init__ as closures for speed.

    def stop(self) -> None:
        """End the run at the current instant (a finite workload's last response arrived)."""
        self.stopped = True
        heappush(self._queue, (self.env._now, URGENT, next(self._eid), _raise_stop, None))

    def run(self, until: float | None = None) -> None:
        """Process events until simulated time `until` (the clock is then set to it), until
        the calendar is empty, or until `stop()`."""
        env = self.env
        queue = self._queue
        if until is not None:
            # The horizon is a calendar entry of its own, after every event due at `until`:
            # the loop needs no per-event time check.
            heappush(queue, (until, LATE, next(self._eid), _raise_stop, None))
        # The engine allocates short-lived, acyclic objects (requests, visits, calendar
        # tuples) that reference counting frees; the cyclic collector's frequent young-
        # generation passes over them are pure overhead, so they are made rarer while the
        # calendar runs.  (Not gc.freeze(): unfreezing after the run moves everything built
        # for it into the oldest generation without counting it towards the next full
        # collection, so each run's cyclic garbage -- tens of MB -- piled up across runs.)
        threshold = gc.get_threshold()
        gc.set_threshold(max(threshold[0], 100_000), *threshold[1:])
        try:
            while queue:
                entry = heappop(queue)
                env._now = entry[0]
                try:
                    _, _, _, fn, arg = entry
                except ValueError:  # a genuine SimPy event: exactly what Environment.step does
                    event = entry[3]
                    callbacks, event.callbacks = event.callbacks, None
                    for callback in callbacks:
                        callback(event)
                    if not event._ok and not hasattr(event, "_defused"):
                        exc = type(event._value)(*event._value.args)
                        exc.__cause__ = event._value
                        raise exc from event._value
                    continue
                fn(arg)
            if until is not None:
                env._now = until
        except StopSimulation:
            if until is not None:  # drop the horizon entry if it is still pending
                queue[:] = [e for e in queue if not (len(e) == 5 and e[3] is _raise_stop)]
                heapify(queue)
            return
        finally:
            gc.set_threshold(*threshold)


def _dispatch(wakeup: Wakeup) -> None:
    fn = wakeup.fn
    if fn is not None:
        fn(wakeup.arg)


def _raise_stop(_arg: object) -> None:
    raise StopSimulation(None)
