"""The event calendar: a SimPy `Environment` plus a light path for scheduling callbacks."""
from __future__ import annotations

from typing import Any, Callable

import simpy
from simpy.core import StopSimulation

URGENT = 0
NORMAL = 1


class Wakeup:
    """A scheduled callback.  Duck-types the part of `simpy.Event` that `Environment.step` uses.

    Creating a full `simpy.Timeout` costs several Python calls; a request touches a dozen
    such events, so this is the single biggest saving of the engine.  `cancel()` is lazy:
    the entry stays in the calendar and is skipped when it comes due.
    """

    __slots__ = ("callbacks", "fn", "arg")
    _ok = True

    def __init__(self, fn: Callable[[Any], None], arg: Any) -> None:
        self.fn = fn
        self.arg = arg
        self.callbacks = [self._fire]

    def _fire(self, _event: "Wakeup") -> None:
        fn = self.fn
        if fn is not None:
            fn(self.arg)

    def cancel(self) -> None:
        self.fn = None


class Kernel:
    """Owns the SimPy environment; components call `after(delay, fn, arg)`."""

    def __init__(self) -> None:
        self.env = simpy.Environment()
        self._schedule = self.env.schedule

    @property
    def now(self) -> float:
        return self.env.now

    def after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> Wakeup:
        """Call `fn(arg)` after `delay` simulated seconds; returns a cancellable handle."""
        wakeup = Wakeup(fn, arg)
        self._schedule(wakeup, NORMAL, delay)  # type: ignore[arg-type]
        return wakeup

    def run(self, until: float | None = None) -> None:
        """Run until simulated time `until`, until the calendar empties, or until `stop()`."""
        self.env.run(until=until)

    def stop(self) -> None:
        """End the run at the current instant (a finite workload's last response arrived)."""
        self._schedule(Wakeup(_raise_stop, None), URGENT, 0)  # type: ignore[arg-type]


def _raise_stop(_arg: object) -> None:
    raise StopSimulation(None)
