"""A replication's pauses, on either engine: where a long replication reports how far it has
come and answers Ctrl-C and SIGTERM.

Each engine stops its run now and then at a point where nothing is half done -- the compiled
loop every `PAUSE_EVENTS` events (`sim.engines.compiled.pauses`), the reference calendar at
the end of a slice of simulated time (`sim.engines.reference.slices`) -- and goes on exactly
where it stopped, so a replication that pauses is the one that runs through, bit for bit.

A signal that comes while the engine runs is noted and handed to its handler at the next
pause (`signals_at_pauses`): the handler (Python's Ctrl-C, the CLI's SIGTERM) then raises
KeyboardInterrupt in the engine's driver, never inside one of its callbacks (a block of
random numbers being refilled, a --timeseries sample being written).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

# What a long replication reports at each pause: (simulated seconds so far, the horizon in
# simulated seconds: run.duration_s after the warm-up, or run.max_duration_s)
SimulatedProgress = Callable[[float, float], None]


@contextmanager
def signals_at_pauses() -> Iterator[Callable[[], None]]:
    """While the engine runs, SIGINT and SIGTERM are noted rather than handled; the function
    this yields hands the noted ones to the handlers they had (which may raise
    KeyboardInterrupt): the driver calls it at every pause.  A signal whose action is the
    default or ignore keeps it (the process ends at once, or nothing happens), and off the
    main thread, where no handler can be set, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    noted: list[int] = []
    handlers: dict[int, Callable[[int, FrameType | None], object]] = {}

    def note(signum: int, _frame: FrameType | None) -> None:
        noted.append(signum)

    def deliver() -> None:
        while noted:
            signum = noted.pop(0)
            handlers[signum](signum, None)

    for sent in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sent)
        if callable(handler):
            handlers[sent] = handler
            signal.signal(sent, note)
    try:
        yield deliver
    finally:
        for number, previous in handlers.items():
            signal.signal(number, previous)
    deliver()  # a signal noted after the last pause: answered now the run has ended
