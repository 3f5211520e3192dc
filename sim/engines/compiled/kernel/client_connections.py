"""The front's connections (`sim.tiers.proxy.client_connections.FrontConnections`): a
connection of a prefork/worker front holds its worker through KeepAliveTimeout and the
lingering close; with children as individuals a connection belongs to the child that
accepted it.
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import calendar, children, classed, cpu, slots, streams
from sim.engines.compiled.kernel.layout import (
    C_CHILDREN,
    C_CLIENT,
    C_FRONT,
    C_LEVELS,
    C_LISTENER_IDLE,
    C_MAX_KA_REQUESTS,
    C_PROXY_KEEP_ALIVE,
    C_ST_CONN_DEMAND,
    CF_KA_TIMEOUT,
    CF_LINGER_HOLD,
    CH_EXITING,
    CLIENT_OPEN,
    CN_CHILD,
    CN_CLIENT_CLOSED,
    CN_HOLDS,
    CN_IDLE_ENTRY,
    CN_IDLE_SEQ,
    CN_KEPT,
    CN_OPEN,
    CN_REFS,
    CN_REQUESTS,
    CNF_ENTRY_AT,
    CNF_IDLE_AT,
    EV_IDLE,
    EV_LINGER,
    EV_STOP,
    F_LAST_CLOSE,
    F_NOW,
    I_CN_FREE_TOP,
    I_CN_USED,
    I_FRONT_502,
    I_FRONT_503,
    I_FRONT_504,
    I_FRONT_AFTER_ERROR,
    I_FRONT_CLOSED,
    I_FRONT_NO_WORKER,
    I_FRONT_OPEN,
    I_FRONT_OPENED,
    I_STOP_ON_CLOSE,
    R_ATTEMPT,
    R_CHILD,
    R_CONN,
    R_STATUS,
    R_USER,
    ST_CPU,
    ST_IN_PROGRESS,
    ST_POOL,
    U_CONN,
)


# `sim.tiers.proxy.client_connections.FrontConnections`: a connection of a prefork/worker front
# holds its worker through KeepAliveTimeout and the lingering close; with children as
# individuals a connection belongs to the child that accepted it.
@njit(cache=True)
def _conn_new(S):
    """A new client connection (`Connection()`): open, no requests yet, no one refers to it."""
    counters, CN = S.I, S.CN
    top = counters[I_CN_FREE_TOP] - 1
    counters[I_CN_FREE_TOP] = top
    counters[I_CN_USED] += 1
    c = S.CNFREE[top]
    CN[c, CN_OPEN] = 1
    CN[c, CN_HOLDS] = 0
    CN[c, CN_REQUESTS] = 0
    CN[c, CN_IDLE_SEQ] = -1
    CN[c, CN_CLIENT_CLOSED] = 0
    CN[c, CN_REFS] = 0
    CN[c, CN_CHILD] = -1
    CN[c, CN_KEPT] = 0
    return c


@njit(cache=True)
def conn_unref(S, c):
    """One reference to connection c fewer; with none left its row is free."""
    CN = S.CN
    refs = CN[c, CN_REFS] - 1
    CN[c, CN_REFS] = refs
    if refs == 0:
        counters = S.I
        top = counters[I_CN_FREE_TOP]
        S.CNFREE[top] = c
        counters[I_CN_FREE_TOP] = top + 1
        counters[I_CN_USED] -= 1


@njit(cache=True)
def connection_for(S, r):
    """Clients.send with keep-alive: request r travels on its user's open connection, or on
    a new one (a retry always opens one; open arrivals never return); True when new."""
    C, RI, CN, UI = S.C, S.RI, S.CN, S.UI
    owner = C[C_CLIENT] != CLIENT_OPEN
    user = RI[r, R_USER]
    c = UI[user, U_CONN] if owner else -1
    # A connection the client hung up on (its timeout fired) is gone even while the server
    # still works on its request: the next request connects anew.
    fresh = RI[r, R_ATTEMPT] > 0 or c < 0 or not CN[c, CN_OPEN] or CN[c, CN_CLIENT_CLOSED]
    if fresh:
        made = _conn_new(S)
        if owner:
            if c >= 0:
                conn_unref(S, c)
            UI[user, U_CONN] = made
            CN[made, CN_REFS] += 1
        c = made
    RI[r, R_CONN] = c
    CN[c, CN_REFS] += 1
    return fresh


@njit(cache=True)
def front_reuses_worker(S, j):
    """FrontConnections.reuses_worker: the next request on an open connection cancels its
    KeepAliveTimeout, and keeps the worker the connection holds (prefork/worker) or, event
    with children, takes an idle worker of the connection's child -- with none, the
    listener closes the connection and the client connects anew."""
    r = j // S.C[C_LEVELS]
    c = S.RI[r, R_CONN]
    if c < 0:
        return False
    CN = S.CN
    if not CN[c, CN_OPEN]:
        # KeepAliveTimeout closed it while the client's own CPU was sending on it: the client
        # sends again on a new connection (as the reference does)
        CN[c, CN_OPEN] = 1
        CN[c, CN_REQUESTS] = 0
        CN[c, CN_CHILD] = -1
        CN[c, CN_HOLDS] = 0
        CN[c, CN_KEPT] = 0
        return False
    if CN[c, CN_IDLE_SEQ] >= 0:
        CN[c, CN_IDLE_SEQ] = -1  # the calendar entry goes stale
        conn_unref(S, c)
    if CN[c, CN_HOLDS]:
        CN[c, CN_REQUESTS] += 1
        S.RI[r, R_CHILD] = CN[c, CN_CHILD]
        return True
    child = CN[c, CN_CHILD]
    if not S.C[C_CHILDREN] or child < 0 or CN[c, CN_REQUESTS] == 0:
        return False  # event without children, or a new connection: it waits for a worker
    CN[c, CN_KEPT] = 0
    if children.take_worker(S, child):
        CN[c, CN_REQUESTS] += 1
        S.RI[r, R_CHILD] = child
        return True
    S.I[I_FRONT_NO_WORKER] += 1
    _front_server_closed(S)
    children.child_connection_closed(S, child)
    CN[c, CN_REQUESTS] = 0
    CN[c, CN_CHILD] = -1
    return False


@njit(cache=True)
def front_granted(S, j, s):
    """FrontStation's `front_granted`: the worker accepts the connection (`accepted`); the
    first request on a new connection also pays its set-up CPU (`proxy.connection_demand`)."""
    C, CN, STI, counters = S.C, S.CN, S.STI, S.I
    r = j // C[C_LEVELS]
    c = S.RI[r, R_CONN]
    opened = c < 0 or CN[c, CN_REQUESTS] == 0  # read before it counts this request
    if opened:
        counters[I_FRONT_OPENED] += 1
        counters[I_FRONT_OPEN] += 1
    if c >= 0:  # (event without children: the next request on an idle connection)
        CN[c, CN_REQUESTS] += 1
        if opened:
            CN[c, CN_HOLDS] = 1 - C[C_LISTENER_IDLE]
            CN[c, CN_CHILD] = S.RI[r, R_CHILD]
    STI[s, ST_IN_PROGRESS] += 1
    per_connection = C[C_ST_CONN_DEMAND]
    if opened and per_connection >= 0:
        work = streams.draw(S, per_connection)
        work += classed.burst(S, s, j)
    else:
        work = classed.burst(S, s, j)
    cpu.run(S, STI[s, ST_CPU], work, j)


@njit(cache=True)
def front_responded(S, j, ok):
    """FrontConnections.responded: keep the connection (and, prefork/worker, its worker)
    through KeepAliveTimeout, or close it.  An error response has the status set where it
    arose (503 if none), and a 503 drops the connection."""
    C, CN, counters = S.C, S.CN, S.I
    now = S.F[F_NOW]
    r = j // C[C_LEVELS]
    c = S.RI[r, R_CONN]
    child = S.RI[r, R_CHILD]
    drops = False
    if not ok:
        # the status set where the error arose, 503 if none (DEFAULT_ERROR_STATUS); a 503
        # drops the connection (ap_status_drops_connection), a 502 keeps it
        status = S.RI[r, R_STATUS]
        if status == 502:
            counters[I_FRONT_502] += 1
        elif status == 504:  # mod_jk's reply timeout (keeps the connection)
            counters[I_FRONT_504] += 1
        else:
            counters[I_FRONT_503] += 1
            drops = True
    max_requests = C[C_MAX_KA_REQUESTS]
    if (
        not drops
        and c >= 0
        and CN[c, CN_OPEN]
        and not CN[c, CN_CLIENT_CLOSED]
        and C[C_PROXY_KEEP_ALIVE]
        and (child < 0 or not S.CH[child, CH_EXITING])
        and (max_requests == 0 or CN[c, CN_REQUESTS] < max_requests)
    ):
        deadline = now + S.CF[CF_KA_TIMEOUT]
        calendar.timer_arm(
            S,
            CN,
            S.CNF,
            c,
            CN_IDLE_SEQ,
            CN_IDLE_ENTRY,
            CNF_IDLE_AT,
            CNF_ENTRY_AT,
            deadline,
            EV_IDLE,
        )
        CN[c, CN_REFS] += 1  # the pending timeout refers to it
        if C[C_LISTENER_IDLE]:
            if child >= 0:
                CN[c, CN_KEPT] = 1
            release_worker(S, child)
        return
    if drops and c >= 0 and CN[c, CN_OPEN]:
        counters[I_FRONT_AFTER_ERROR] += 1
    _front_server_closed(S)
    if c >= 0:
        CN[c, CN_OPEN] = 0
        CN[c, CN_HOLDS] = 0
        if CN[c, CN_CLIENT_CLOSED]:
            _connection_gone(S, child)
            release_worker(S, child)  # the client has gone: nothing to drain
            return
    _connection_gone(S, child)
    _close_worker(S, child)


@njit(cache=True)
def front_idle_expired(S, c):
    """KeepAliveTimeout: the server closes the idle connection (and drains it, if a worker
    holds it)."""
    CN = S.CN
    CN[c, CN_IDLE_SEQ] = -1
    CN[c, CN_OPEN] = 0
    _front_server_closed(S)
    child = CN[c, CN_CHILD]
    CN[c, CN_KEPT] = 0
    if CN[c, CN_HOLDS]:
        CN[c, CN_HOLDS] = 0
        _connection_gone(S, child)
        _close_worker(S, child)
    else:
        _connection_gone(S, child)
    conn_unref(S, c)


@njit(cache=True)
def _front_server_closed(S):
    """The server closed a client connection; a finished workload waiting for its last
    connection stops, after the events due now."""
    counters = S.I
    counters[I_FRONT_CLOSED] += 1
    counters[I_FRONT_OPEN] -= 1
    S.F[F_LAST_CLOSE] = S.F[F_NOW]
    if counters[I_FRONT_OPEN] == 0 and counters[I_STOP_ON_CLOSE]:
        calendar.push(S, S.F[F_NOW], EV_STOP, 0)


@njit(cache=True)
def _connection_gone(S, child):
    if child >= 0:
        children.child_connection_closed(S, child)


@njit(cache=True)
def _close_worker(S, child):
    """The lingering close holds the worker until the client closes, or one idle read."""
    hold = S.CF[CF_LINGER_HOLD]
    if hold > 0:
        calendar.push(S, S.F[F_NOW] + hold, EV_LINGER, max(child, 0))
    else:
        release_worker(S, child)


@njit(cache=True)
def release_worker(S, child):
    if S.C[C_CHILDREN]:
        children.child_free(S, child)
    else:
        slots.release(S, S.STI[S.C[C_FRONT], ST_POOL])


# --------------------------------------------------------------------------- events
EVENTS = (EV_IDLE, EV_LINGER)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """An idle connection's KeepAliveTimeout, or a lingering close that lets its worker go."""
    if kind == EV_IDLE:
        if calendar.timer_due(
            S, S.CN, S.CNF, arg, seq, CN_IDLE_SEQ, CN_IDLE_ENTRY, CNF_IDLE_AT, CNF_ENTRY_AT, EV_IDLE
        ):
            front_idle_expired(S, arg)
        # else the next request came in time (or the row serves another)
    else:
        release_worker(S, arg)
