"""The calendar (`sim.kernel.calendar.Kernel`): a binary heap of (time, sequence number,
payload), popped in the reference's order, and the lazy timers of idle connections.
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel.layout import (
    I_HEAP_N,
    I_SEQ,
    KIND_BITS,
)


@njit(cache=True)
def _before(ta, sa, tb, sb):
    return ta < tb or (ta == tb and sa < sb)


@njit(cache=True)
def _calendar_siftdown(ht, hs, hp, start, pos):
    t, s, p = ht[pos], hs[pos], hp[pos]
    while pos > start:
        parent = (pos - 1) >> 1
        if _before(t, s, ht[parent], hs[parent]):
            ht[pos], hs[pos], hp[pos] = ht[parent], hs[parent], hp[parent]
            pos = parent
            continue
        break
    ht[pos], hs[pos], hp[pos] = t, s, p


@njit(cache=True)
def _calendar_siftup(ht, hs, hp, n, pos):
    start = pos
    t, s, p = ht[pos], hs[pos], hp[pos]
    child = 2 * pos + 1
    while child < n:
        right = child + 1
        if right < n and not _before(ht[child], hs[child], ht[right], hs[right]):
            child = right
        ht[pos], hs[pos], hp[pos] = ht[child], hs[child], hp[child]
        pos = child
        child = 2 * pos + 1
    ht[pos], hs[pos], hp[pos] = t, s, p
    _calendar_siftdown(ht, hs, hp, start, pos)


@njit(cache=True)
def push(S, time, kind, arg):
    """Schedule an event; returns its sequence number (its identity, for lazy cancelling)."""
    counters = S.I
    seq = counters[I_SEQ]
    counters[I_SEQ] = seq + 1
    _push_at(S, time, seq, kind, arg)
    return seq


@njit(cache=True)
def reserve(S, count):
    """Take `count` sequence numbers at once, for events the reference schedules together
    and this engine one after the other (`push_reserved`); returns the first."""
    counters = S.I
    first = counters[I_SEQ]
    counters[I_SEQ] = first + count
    return first


@njit(cache=True)
def push_reserved(S, time, seq, kind, arg):
    """Schedule an event with a sequence number taken before (`reserve`): it comes due in
    the place the reference's entry, scheduled when the number was taken, has."""
    _push_at(S, time, seq, kind, arg)


# Idle timeouts (KeepAliveTimeout, a node's idle timeout of a pooled connection) are armed at
# every response and cancelled at the next request, nearly always long before they expire.
# Scheduling each would fill the calendar with cancelled entries that come due later; instead
# a row keeps at most one entry, at or before its armed deadline.  Arming takes the sequence
# number the reference's `after` would take; when the entry comes due and the timer has been
# armed again since, it goes back into the calendar at the armed deadline with the armed
# sequence number -- the place the reference's own entry has -- so every live event comes due
# in the reference's order.
@njit(cache=True)
def timer_arm(S, rows, times, r, seq_col, entry_col, at_col, entry_at_col, deadline, kind):
    """Arm row r's timer for `deadline`; returns its sequence number (-1 cancels it)."""
    counters = S.I
    seq = counters[I_SEQ]
    counters[I_SEQ] = seq + 1
    rows[r, seq_col] = seq
    times[r, at_col] = deadline
    if rows[r, entry_col] < 0 or times[r, entry_at_col] > deadline:
        # no entry yet, or a former occupant's that is due later: a new one (the other,
        # no longer the row's, is dropped when it comes due)
        _push_at(S, deadline, seq, kind, r)
        rows[r, entry_col] = seq
        times[r, entry_at_col] = deadline
    return seq


@njit(cache=True)
def timer_due(S, rows, times, r, seq, seq_col, entry_col, at_col, entry_at_col, kind):
    """Row r's calendar entry `seq` came due: True when its armed timer expires now."""
    if rows[r, entry_col] != seq:
        return False  # not the row's entry any more
    rows[r, entry_col] = -1
    live = rows[r, seq_col]
    if live < 0:
        return False  # cancelled
    if live != seq:  # armed again since: on to the armed deadline, in its own place
        at = times[r, at_col]
        _push_at(S, at, live, kind, r)
        rows[r, entry_col] = live
        times[r, entry_at_col] = at
        return False
    return True


@njit(cache=True)
def _push_at(S, time, seq, kind, arg):
    counters = S.I
    n = counters[I_HEAP_N]
    ht, hs, hp = S.HT, S.HS, S.HP
    ht[n] = time
    hs[n] = seq
    hp[n] = (arg << KIND_BITS) | kind
    counters[I_HEAP_N] = n + 1
    _calendar_siftdown(ht, hs, hp, 0, n)


@njit(cache=True)
def pop(S):
    counters = S.I
    ht, hs, hp = S.HT, S.HS, S.HP
    n = counters[I_HEAP_N] - 1
    counters[I_HEAP_N] = n
    t, s, p = ht[0], hs[0], hp[0]
    if n > 0:
        ht[0], hs[0], hp[0] = ht[n], hs[n], hp[n]
        _calendar_siftup(ht, hs, hp, n, 0)
    return t, s, p
