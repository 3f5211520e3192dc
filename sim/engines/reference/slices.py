"""The reference engine's pauses: its calendar run in slices of simulated time, so that a long
replication reports how far it has come and answers Ctrl-C and SIGTERM between two slices
(`sim.engines.pauses`), as the compiled loop does at its pauses.

A slice is `Kernel.run(until=t)`: every event due by `t` is processed (a horizon entry after
every event due at `t`, `sim.kernel.calendar`), and the next slice pops the calendar where it
stopped.  Each slice's horizon entry takes a sequence number, which only shifts the numbers of
the events scheduled after it, all by the same amount: their order, and so the replication, is
that of one run to the horizon, bit for bit.  A run that `Kernel.stop` ends (a finite
workload's last response) ends in its slice, as it would have ended the one run.

A slice's length is simulated time, but what the user waits for is wall time: each slice is
sized from the last one's wall time so that a slice takes about `SLICE_WALL_S`.  The sizes
depend on the machine's load; the trajectory does not.
"""

from __future__ import annotations

import math
import time

from sim.engines.pauses import SimulatedProgress, signals_at_pauses
from sim.kernel.calendar import Kernel

SLICE_WALL_S = 0.1  # the wall time a slice aims at: a signal is answered well within a second
FIRST_SLICE_S = 0.05  # simulated seconds of the first slice, before any wall time is known
# a slice at most this many times longer (or shorter) than the last: a sudden change of the
# event rate (a warm-up, a burst of a schedule) is followed within a few slices
MAX_CHANGE = 4.0


def run_in_slices(kernel: Kernel, horizon_s: float, simulated: SimulatedProgress | None) -> None:
    """Run `kernel` to `horizon_s` (or until it is stopped) as `kernel.run(until=horizon_s)`
    would, pausing between slices: `simulated(now_s, horizon_s)` hears the simulated time
    reached, and a signal noted during a slice is handed to its handler."""
    step = FIRST_SLICE_S
    with signals_at_pauses() as deliver_signals:
        while True:
            started = time.perf_counter()
            # at least a few units in the last place of the clock: every slice moves it on
            until = min(kernel.now + max(step, 4 * math.ulp(kernel.now)), horizon_s)
            kernel.run(until=until)
            if kernel.stopped or until >= horizon_s:
                return
            if kernel.env.peek() == math.inf:  # nothing more will happen: on to the horizon
                kernel.run(until=horizon_s)
                return
            deliver_signals()
            if simulated is not None:
                simulated(kernel.now, horizon_s)
            wall_s = time.perf_counter() - started
            change = SLICE_WALL_S / wall_s if wall_s > 0 else MAX_CHANGE
            step *= min(max(change, 1.0 / MAX_CHANGE), MAX_CHANGE)
