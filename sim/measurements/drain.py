"""The drain at the end of a closed-loop run: the load generator's threads stopping one by one.

When a JMeter thread group's duration (`ThreadGroup.duration`, or the scheduler's end) runs
out, each thread finishes the sample it is in and stops; the samples that complete after the
first thread stopped record fewer active threads (`allThreads` 19, 18, ... 1 after 20).  They
are no longer the level's load: averaged into the run's users they give 19.9 users for a test
of 20 threads.  The run's steady part ends with the last sample at its full thread count, and
its users are counted up to there (`sim.measurements.importer`); the samples themselves stay
in the statistics (`--until` cuts them).

Only a short tail is a drain: at most a few samples per thread (each finishes the one it is
in).  A longer stretch below the peak is a change of load (a stepping thread group, a
ramp-down): its users stay averaged, and the experiment says the run's users are not a whole
number of threads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.measurements.windows import SampleLog

SAMPLES_PER_THREAD = 2  # a stopping thread completes the sample it is in; others, one or two more


@dataclass(frozen=True)
class Drain:
    """The drain of a run: it starts `start_s` after the run's time zero."""

    start_s: float
    samples: int  # the samples completing after the last one at full load
    full_users: float  # the thread count before it (`allThreads`)
    last_users: float  # the count at its last sample


def find_drain(log: SampleLog, zero_s: float) -> Drain | None:
    """The drain at the end of `log`'s samples (times relative to `zero_s`, seconds since the
    epoch), or None: the file records no users, or its tail is not a short drain."""
    frame = log.frame
    users = frame["users"].to_numpy(dtype=float)
    if len(users) == 0 or np.isnan(users).any():
        return None
    ended = (frame["start_s"] + frame["elapsed_s"]).to_numpy(dtype=float)
    order = np.argsort(ended, kind="stable")
    by_completion = users[order]
    full = float(by_completion.max())
    last_full = int(np.flatnonzero(by_completion == full)[-1])
    tail = by_completion[last_full + 1 :]
    if len(tail) == 0 or len(tail) > SAMPLES_PER_THREAD * full:
        return None
    return Drain(
        start_s=float(ended[order][last_full]) - zero_s,
        samples=len(tail),
        full_users=full,
        last_users=float(tail[-1]),
    )
