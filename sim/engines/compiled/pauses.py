"""The compiled loop's pause points: where a long replication reports its progress and answers
Ctrl-C and SIGTERM.

The loop returns to the driver every PAUSE_EVENTS events (`kernel.loop.run_events` answers
PAUSE at `I_PAUSE_AT`) between two events, where it stops for a full table too: nothing is
half done and no random number is pending, so the call that resumes it goes on exactly where
it stopped, with the same event order and the same draws as one call would have.

A count of events rather than a clock: numba has no clean reading of the wall clock inside a
compiled function, and a count keeps every pause at the same place of the trajectory whatever
the machine's load.  PAUSE_EVENTS is chosen so that a stretch between two pauses is well under
a second of wall time: the loop runs 1 to 4 million events a second on a busy 2-core machine,
so 2**17 events are 0.03 to 0.15 s.

A signal that comes while the loop runs is noted and handed to its handler at the next pause
(`signals_at_pauses`): the handler (Python's Ctrl-C, the CLI's SIGTERM) then raises
KeyboardInterrupt in the driver, never inside one of the loop's callbacks into Python (a
block of random numbers being refilled, a --timeseries sample), and never misses a stretch of
the loop that calls none of them.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

PAUSE_EVENTS = 1 << 17  # events between two pauses: 0.03 to 0.15 s of the loop

# What a long replication reports at each pause: (simulated seconds so far, the horizon in
# simulated seconds: run.duration_s after the warm-up, or run.max_duration_s)
SimulatedProgress = Callable[[float, float], None]


@contextmanager
def signals_at_pauses() -> Iterator[Callable[[], None]]:
    """While the loop runs, SIGINT and SIGTERM are noted rather than handled; the function
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
    deliver()  # a signal noted after the last pause: answered now the loop has ended
