"""The event loop: start, pop the calendar's next entry and hand it to its module's handler,
until the horizon, the stop rule, a runaway queue, a full table or the driver's pause point.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim.engines.compiled.kernel import (
    backend_pool,
    calendar,
    children,
    client_connections,
    cpu,
    hooks,
    jvm,
    mod_jk,
    populations,
    ramps,
    recorder,
    session_replication,
    state,
    station,
    streams,
)
from sim.engines.compiled.kernel.layout import (
    C_BACKEND_POOLS,
    C_CHILDREN,
    C_CLASSES,
    C_CLIENT,
    C_CLIENT_KEEP_ALIVE,
    C_GRID,
    C_LEVELS,
    C_MANAGED,
    C_MAX_CORES,
    C_N_JVMS,
    C_RAMP_CHANGES,
    C_REPEAT,
    C_SAMPLE,
    C_ST_ARRIVALS,
    C_START_CHILDREN,
    C_USERS,
    C_WARMUP,
    CF_GRID_STEP,
    CF_SAMPLE_INTERVAL,
    CF_UPTIME,
    CF_WARMUP_S,
    CLIENT_AB,
    CLIENT_CLOSED,
    CLIENT_OPEN,
    CLIENT_SESSIONS,
    DONE,
    EV_ARRIVAL,
    EV_CHECKPOINT,
    EV_MAINTAIN,
    EV_SAMPLE,
    EV_SESSION_ARRIVAL,
    EV_WARMUP,
    F_NOW,
    F_UNTIL,
    GRID_NONE,
    GRID_TIME,
    GROW,
    I_BC_USED,
    I_CH_PRESENT,
    I_CN_USED,
    I_EVENTS,
    I_FINISHED,
    I_HEAP_N,
    I_KLOG_N,
    I_PAUSE_AT,
    I_REQ_USED,
    I_RUNAWAY,
    I_STARTED,
    I_STOP,
    I_UNSUPPORTED,
    I_USR_USED,
    KIND_BITS,
    KIND_MASK,
    PAUSE,
    RUNAWAY,
    U_CYCLING,
    U_RETIRED,
    U_ROUTE,
    U_SENT,
    UNSUPPORTED,
    WARMUP_FIXED,
)
from sim.engines.compiled.kernel.state import unref


@njit(cache=True)
def _start(S):
    C, CF, counters, UI = S.C, S.CF, S.I, S.UI
    now = S.F[F_NOW]
    jvm.start(S)  # the JVMs' session sweeps, scheduled as the nodes are built
    if C[C_CHILDREN]:  # ChildProcesses, made with the components: StartServers children
        children.fork(S, C[C_START_CHILDREN])
        if C[C_MANAGED]:  # the parent's clock: the ticks before the load, then the next one
            before = int(np.floor(CF[CF_UPTIME]))
            for _ in range(before):
                children.tick(S)
            calendar.push(S, now + before + 1.0 - CF[CF_UPTIME], EV_MAINTAIN, 0)
    if C[C_WARMUP] == WARMUP_FIXED:
        if CF[CF_WARMUP_S] > 0:
            calendar.push(S, now + CF[CF_WARMUP_S], EV_WARMUP, 0)
        else:
            recorder.start_recording(S)
    else:
        recorder.start_recording(S)
    if C[C_SAMPLE]:  # the first sample's window starts here, before the clients start
        recorder.sample(S, 1)
        calendar.push(S, now + CF[CF_SAMPLE_INTERVAL], EV_SAMPLE, 0)
    grid = C[C_GRID]
    if grid != GRID_NONE:  # sim.observe.checkpoints.Checkpoints, built before the clients start
        recorder.take(S)
        if grid == GRID_TIME:
            calendar.push(S, now + CF[CF_GRID_STEP], EV_CHECKPOINT, 1)
    kind = C[C_CLIENT]
    if C[C_REPEAT] > 1:  # ab run again: the first run's window starts here
        populations.ab_mark(S)
    if kind == CLIENT_CLOSED:
        ramped = C[C_RAMP_CHANGES] >= 0  # its users come and go (`ramps`); else all start now
        for user in range(C[C_USERS]):
            UI[user, U_ROUTE] = -1
            UI[user, U_SENT] = 0
            UI[user, U_RETIRED] = 0
            UI[user, U_CYCLING] = 0 if ramped else 1
            if not ramped:
                populations.closed_issue(S, user)
        if ramped and C[C_RAMP_CHANGES] > 0:
            ramps.start(S)
    elif kind == CLIENT_AB:
        for loop in range(C[C_USERS]):
            populations.ab_issue(S, loop)
    elif kind == CLIENT_OPEN:
        calendar.push(S, now + ramps.arrival_delay(S, now), EV_ARRIVAL, 0)
    else:
        calendar.push(S, now + streams.draw(S, C[C_ST_ARRIVALS]), EV_SESSION_ARRIVAL, 0)
    counters[I_STARTED] = 1


@njit(cache=True)
def _needs_room(S):
    """Room for the worst event: every live job continuing at once, a CPU unsharing."""
    counters, C = S.I, S.C
    used = counters[I_REQ_USED]
    if 2 * used + 8 > S.RI.shape[0]:
        return True
    if counters[I_HEAP_N] + 4 * C[C_LEVELS] * used + C[C_MAX_CORES] + 64 > S.HT.shape[0]:
        return True
    if C[C_CLIENT_KEEP_ALIVE] and 2 * counters[I_CN_USED] + max(C[C_USERS], 1) + 16 > S.CN.shape[0]:
        return True  # an event opens at most a connection per user (ab's loops at once)
    if C[C_CHILDREN] and counters[I_CH_PRESENT] + 40 > S.CH.shape[0]:
        return True  # a tick forks at most 32 children
    if C[C_BACKEND_POOLS] and counters[I_BC_USED] + S.RI.shape[0] + 16 > S.BC.shape[0]:
        return True  # an event opens at most a backend connection per request
    if C[C_CLASSES] and counters[I_KLOG_N] + used + 8 > S.KLOG.shape[0]:
        return True  # an event completes at most the requests in use
    if C[C_N_JVMS] and jvm.needs_room(S):
        return True
    return C[C_CLIENT] == CLIENT_SESSIONS and 2 * counters[I_USR_USED] + 8 > S.UI.shape[0]


@njit(cache=True)
def run_events(S):
    """Run until the horizon, the stop rule, a runaway queue, a full table (GROW: the driver
    enlarges the arrays and calls again; the run resumes exactly where it stopped) or the
    driver's pause point (PAUSE at `I_PAUSE_AT` events: the driver reports progress, lets a
    signal through and calls again; the run resumes exactly where it stopped)."""
    borrowed = state.borrowed(S)
    status = _run(unref(borrowed))
    state.hold(borrowed)
    return status


@njit(cache=True)
def _run(S):
    counters, F = S.I, S.F
    if not counters[I_STARTED]:
        _start(S)
    ht = S.HT
    until = F[F_UNTIL]
    while True:
        populations.ab_send_queued(S)
        if counters[I_STOP]:
            break
        if _needs_room(S):
            return GROW
        # between two events, where GROW stops too: nothing is half done, no draw is pending
        if counters[I_PAUSE_AT] and counters[I_EVENTS] >= counters[I_PAUSE_AT]:
            return PAUSE
        if counters[I_HEAP_N] == 0 or ht[0] > until:
            F[F_NOW] = until
            break
        now, seq, payload = calendar.pop(S)
        F[F_NOW] = now
        counters[I_EVENTS] += 1
        _handle(S, payload & KIND_MASK, payload >> KIND_BITS, seq, now)
    if counters[I_RUNAWAY]:
        return RUNAWAY
    if counters[I_UNSUPPORTED]:
        return UNSUPPORTED
    if not counters[I_FINISHED]:
        recorder.finish_recording(S)
    return DONE


@njit(cache=True)
def _handle(S, kind, arg, seq, now):
    """The event to the module whose `EVENTS` hold its kind (the commonest first)."""
    if kind in cpu.EVENTS:
        cpu.on_event(S, kind, arg, seq, now)
    elif kind in station.EVENTS:
        station.on_event(S, kind, arg, seq, now)
    elif kind in populations.EVENTS:
        populations.on_event(S, kind, arg, seq, now)
    elif kind in client_connections.EVENTS:
        client_connections.on_event(S, kind, arg, seq, now)
    elif kind in backend_pool.EVENTS:
        backend_pool.on_event(S, kind, arg, seq, now)
    elif kind in mod_jk.EVENTS:
        mod_jk.on_event(S, kind, arg, seq, now)
    elif kind in session_replication.EVENTS:
        session_replication.on_event(S, kind, arg, seq, now)
    elif kind in jvm.EVENTS:
        jvm.on_event(S, kind, arg, seq, now)
    elif kind in hooks.EVENTS:
        hooks.on_event(S, kind, arg, seq, now)
    elif kind in children.EVENTS:
        children.on_event(S, kind, arg, seq, now)
    elif kind in recorder.EVENTS:
        recorder.on_event(S, kind, arg, seq, now)


# the modules `_handle` hands events to, in its order
HANDLERS = (
    cpu,
    station,
    populations,
    client_connections,
    backend_pool,
    mod_jk,
    session_replication,
    jvm,
    hooks,
    children,
    recorder,
)
