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
(`sim.engines.pauses.signals_at_pauses`, which the reference engine's slices share): never
inside one of the loop's callbacks into Python (a block of random numbers being refilled, a
--timeseries sample), and never missing a stretch of the loop that calls none of them.
"""

from __future__ import annotations

PAUSE_EVENTS = 1 << 17  # events between two pauses: 0.03 to 0.15 s of the loop
