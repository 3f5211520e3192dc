"""Load that changes over the run (`sim.tiers.clients.populations`): a closed population's ramp
(`clients.ramp`, also an access log replayed as one) and an open schedule of rates
(`clients.schedule`).

A ramp's changes (`ramp_changes`: users called and retired, each at its time) are scheduled
all at once by the reference when the clients start; here they come due one after the other
(RAMP, in calendar order), each with the sequence number the reference's entry took, reserved
at the start, so that every change comes due in the reference's place among the other events
of its instant (a --timeseries sample, a think time that ends then).  A retired user finishes
the request it has under way and stops at its next outcome or when its think time ends
(U_RETIRED); called back before that, it goes on with the cycle it is in (U_CYCLING).  A user
that has sent its `requests_per_user` is done for good (STOPPED): called back, it sends nothing.

An open schedule's next arrival spends an Exp(1) amount of integrated rate across its steps,
repeated cyclically (`OpenArrivals._piecewise_poisson_delay`): the same unit exponential from
the same stream, the same floating-point steps.  Its changes of rate are no events, on either
engine.  The ramp's changes reuse the open arrival's event kind (EV_ARRIVAL): closed clients
have no open arrivals, and the kinds a calendar entry can hold are few (`KIND_BITS`).
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import calendar, streams
from sim.engines.compiled.kernel.layout import (
    C_RAMP_CHANGES,
    C_RATE_STEPS,
    C_ST_ARRIVALS,
    EV_ARRIVAL,
    I_RAMP_SEQ,
    RAMP_AT,
    RAMP_CALLED,
    RAMP_ORDER,
    RAMP_USER,
    RATE_END,
    RATE_PER_S,
    STOPPED,
    U_CYCLING,
    U_RETIRED,
)


# --------------------------------------------------------------------------- a closed ramp
@njit(cache=True)
def start(S):
    """`ClosedPopulation.start` with a ramp: its changes take their sequence numbers now, in the
    order the reference schedules them; the first comes due."""
    S.I[I_RAMP_SEQ] = calendar.reserve(S, S.C[C_RAMP_CHANGES])
    _schedule(S, 0)


@njit(cache=True)
def _schedule(S, row):
    R = S.RAMP
    seq = S.I[I_RAMP_SEQ] + int(R[row, RAMP_ORDER])
    calendar.push_reserved(S, R[row, RAMP_AT], seq, EV_ARRIVAL, row)


@njit(cache=True)
def change(S, row):
    """The ramp's change `row` is due (`_activate` or `_retire`): the user to start cycling
    now, or -1."""
    R, UI = S.RAMP, S.UI
    if row + 1 < S.C[C_RAMP_CHANGES]:
        _schedule(S, row + 1)
    user = int(R[row, RAMP_USER])
    if R[row, RAMP_CALLED] == 0.0:
        UI[user, U_RETIRED] = 1  # it stops when its cycle ends (`stops`)
        return -1
    UI[user, U_RETIRED] = 0
    if UI[user, U_CYCLING] == 1:
        return -1  # retired, then called back before its cycle ended: that cycle goes on
    if UI[user, U_CYCLING] == STOPPED:
        return -1  # it sent all its requests_per_user: nothing is left for it to do
    UI[user, U_CYCLING] = 1
    return user


@njit(cache=True)
def stops(S, user):
    """`ClosedPopulation.done` and `_thought`: a user its ramp retired ends its cycle here (its
    request had its outcome, or its think time ended) instead of going on."""
    UI = S.UI
    if UI[user, U_RETIRED] == 1:
        UI[user, U_CYCLING] = 0
        return True
    return False


# --------------------------------------------------------------------------- an open schedule
@njit(cache=True)
def arrival_delay(S, now):
    """The time to the next open arrival: a draw of `clients.arrivals`, or with a schedule the
    piecewise-constant-rate Poisson process's next arrival (`_piecewise_poisson_delay`)."""
    C = S.C
    if C[C_RATE_STEPS] == 0:
        return streams.draw(S, C[C_ST_ARRIVALS])
    R = S.RATES
    steps = C[C_RATE_STEPS]
    work = streams.draw(S, C[C_ST_ARRIVALS])  # a unit exponential
    cycle = R[steps - 1, RATE_END]
    t = now
    while True:
        phase = t % cycle
        index = min(_step_at(R, steps, phase), steps - 1)
        rate = R[index, RATE_PER_S]
        left = R[index, RATE_END] - phase
        if rate > 0 and work <= rate * left:
            return t + work / rate - now
        work -= rate * left
        t += left if left > 0 else 1e-12 * cycle


@njit(cache=True)
def _step_at(R, steps, phase):
    """`bisect_right` of `phase` in the steps' ends: the first step that ends after it."""
    low, high = 0, steps
    while low < high:
        middle = (low + high) // 2
        if phase < R[middle, RATE_END]:
            high = middle
        else:
            low = middle + 1
    return low
