"""httpd's children (`sim.tiers.proxy.children.ChildProcesses`, and the parent's process
management of `sim.tiers.proxy.process_management`): the front's workers as children's
threads, the accept line (children waiting in accept(), oldest first) and, event, each
child's connection limit.  The front pool's row keeps the statistics and the listen queue.
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import backend_pool, calendar, client_connections, slots
from sim.engines.compiled.kernel.layout import (
    C_ASYNC_FACTOR,
    C_CLIENT_KEEP_ALIVE,
    C_FRONT,
    C_LEVELS,
    C_MAX_CHILDREN,
    C_MAX_SPARE,
    C_MIN_SPARE,
    C_SPARE_CHILDREN,
    C_THREADS_PER_CHILD,
    CH_BUSY,
    CH_CONNECTIONS,
    CH_DISABLED,
    CH_EXITING,
    CH_IN_LINE,
    CH_NEXT,
    CH_NUMBER,
    CH_PRESENT,
    CH_PREV,
    CN_CHILD,
    CN_KEPT,
    CN_REFS,
    EV_MAINTAIN,
    F_NOW,
    GRANTED,
    I_CH_FREE_TOP,
    I_CH_HEAD,
    I_CH_NUMBER,
    I_CH_PRESENT,
    I_CH_ROWS,
    I_CH_TAIL,
    I_HOLD_OFF,
    I_SPAWN_RATE,
    J_WAIT_NEXT,
    JF_STARTED,
    JF_WAIT_SINCE,
    PO_ACQUIRED,
    PO_CAPACITY,
    PO_HEAD,
    PO_IN_USE,
    PO_TAIL,
    PO_WAITING,
    POF_BUSY,
    POF_QUEUE,
    POF_WAIT,
    QUEUED,
    R_CHILD,
    REFUSED,
    ST_POOL,
)


# `sim.tiers.proxy.children.ChildProcesses`: the front's workers as children's threads, the
# accept line (children waiting in accept(), oldest first) and, event, each child's
# connection limit.  The front pool's row keeps the statistics and the listen queue.
@njit(cache=True)
def _line_remove(S, ch):
    CH, counters = S.CH, S.I
    before, after = CH[ch, CH_PREV], CH[ch, CH_NEXT]
    if before >= 0:
        CH[before, CH_NEXT] = after
    else:
        counters[I_CH_HEAD] = after
    if after >= 0:
        CH[after, CH_PREV] = before
    else:
        counters[I_CH_TAIL] = before
    CH[ch, CH_IN_LINE] = 0


@njit(cache=True)
def _line_append(S, ch):
    CH, counters = S.CH, S.I
    tail = counters[I_CH_TAIL]
    CH[ch, CH_PREV] = tail
    CH[ch, CH_NEXT] = -1
    if tail >= 0:
        CH[tail, CH_NEXT] = ch
    else:
        counters[I_CH_HEAD] = ch
    counters[I_CH_TAIL] = ch
    CH[ch, CH_IN_LINE] = 1


@njit(cache=True)
def _can_accept(S, ch):
    CH, C = S.CH, S.C
    idle = C[C_THREADS_PER_CHILD] - CH[ch, CH_BUSY]
    if CH[ch, CH_EXITING] or idle <= 0:
        return False
    factor = C[C_ASYNC_FACTOR]
    if factor == 0 or CH[ch, CH_CONNECTIONS] == 0:
        return True
    limit = C[C_THREADS_PER_CHILD] + (idle - CH[ch, CH_DISABLED]) * factor
    return CH[ch, CH_CONNECTIONS] < limit


@njit(cache=True)
def _line_update(S, ch):
    """Put the child at the end of the accept line, or out of it."""
    if S.CH[ch, CH_IN_LINE]:
        _line_remove(S, ch)
    if _can_accept(S, ch):
        S.CH[ch, CH_DISABLED] = 0
        _line_append(S, ch)


@njit(cache=True)
def _child_take(S, ch):
    p = S.STI[S.C[C_FRONT], ST_POOL]
    S.CH[ch, CH_BUSY] += 1
    S.POI[p, PO_IN_USE] += 1
    S.POF[p, POF_BUSY] -= S.F[F_NOW]


@njit(cache=True)
def _child_accept(S, ch, j):
    """The child accepts job j's connection (its request learns its child)."""
    S.CH[ch, CH_CONNECTIONS] += 1
    S.RI[j // S.C[C_LEVELS], R_CHILD] = ch
    _child_take(S, ch)
    S.POI[S.STI[S.C[C_FRONT], ST_POOL], PO_ACQUIRED] += 1
    _line_update(S, ch)  # back to the end of the line, if it can accept again


@njit(cache=True)
def children_acquire(S, j):
    """ChildProcesses.acquire: the first listening child accepts the connection, or it waits
    in the listen queue, or is refused."""
    head = S.I[I_CH_HEAD]
    if head >= 0:
        _child_accept(S, head, j)
        return GRANTED
    p = S.STI[S.C[C_FRONT], ST_POOL]
    if slots.refuses(S, p):
        return REFUSED
    _disable_listeners(S)
    slots.enqueue(S, p, j)
    return QUEUED


@njit(cache=True)
def _disable_listeners(S):
    """event: a connection waits in the listen queue, so every listener disables its socket."""
    if S.C[C_ASYNC_FACTOR]:
        CH = S.CH
        for ch in range(S.I[I_CH_ROWS]):
            if CH[ch, CH_PRESENT]:
                CH[ch, CH_DISABLED] = 1


@njit(cache=True)
def _serve_waiters(S):
    """Connections in the listen queue go to the listening children, oldest first."""
    POI, POF, JI, JF, counters = S.POI, S.POF, S.JI, S.JF, S.I
    s = S.C[C_FRONT]
    p = S.STI[s, ST_POOL]
    while POI[p, PO_WAITING] and counters[I_CH_HEAD] >= 0:
        now = S.F[F_NOW]
        j = POI[p, PO_HEAD]
        after = JI[j, J_WAIT_NEXT]
        POI[p, PO_HEAD] = after
        if after < 0:
            POI[p, PO_TAIL] = -1
        POI[p, PO_WAITING] -= 1
        POF[p, POF_QUEUE] += now
        POF[p, POF_WAIT] += now - JF[j, JF_WAIT_SINCE]
        _child_accept(S, counters[I_CH_HEAD], j)
        JF[j, JF_STARTED] = now
        client_connections.front_granted(S, j, s)
    if POI[p, PO_WAITING]:
        _disable_listeners(S)


@njit(cache=True)
def _child_changed(S, ch):
    if S.CH[ch, CH_EXITING]:
        _exit_if_done(S, ch)
        return
    if not S.CH[ch, CH_IN_LINE]:
        _line_update(S, ch)
    _serve_waiters(S)


@njit(cache=True)
def child_free(S, ch):
    """ChildProcesses.free: a worker of the child is free again."""
    p = S.STI[S.C[C_FRONT], ST_POOL]
    S.CH[ch, CH_BUSY] -= 1
    S.POI[p, PO_IN_USE] -= 1
    S.POF[p, POF_BUSY] += S.F[F_NOW]
    _child_changed(S, ch)


@njit(cache=True)
def child_connection_closed(S, ch):
    S.CH[ch, CH_CONNECTIONS] -= 1
    _child_changed(S, ch)


@njit(cache=True)
def take_worker(S, ch):
    """event: a request on one of the child's idle keep-alive connections gets an idle worker
    of the child without an accept (the listener keeps its place in the line), or none."""
    if S.C[C_THREADS_PER_CHILD] - S.CH[ch, CH_BUSY] <= 0:
        return False
    _child_take(S, ch)
    S.POI[S.STI[S.C[C_FRONT], ST_POOL], PO_ACQUIRED] += 1
    if S.CH[ch, CH_IN_LINE] and not _can_accept(S, ch):
        _line_remove(S, ch)
    return True


@njit(cache=True)
def fork(S, count):
    """New children, idle at once, at the end of the accept line; they take waiting
    connections."""
    CH, counters = S.CH, S.I
    p = S.STI[S.C[C_FRONT], ST_POOL]
    for _ in range(count):
        top = counters[I_CH_FREE_TOP] - 1
        counters[I_CH_FREE_TOP] = top
        ch = S.CHFREE[top]
        if ch + 1 > counters[I_CH_ROWS]:
            counters[I_CH_ROWS] = ch + 1
        counters[I_CH_PRESENT] += 1
        CH[ch, CH_NUMBER] = counters[I_CH_NUMBER]
        counters[I_CH_NUMBER] += 1
        CH[ch, CH_BUSY] = 0
        CH[ch, CH_CONNECTIONS] = 0
        CH[ch, CH_DISABLED] = 0
        CH[ch, CH_EXITING] = 0
        CH[ch, CH_PRESENT] = 1
        # its pools are new (the reference makes them at its first request)
        backend_pool.reset(S, ch)
        S.POI[p, PO_CAPACITY] += S.C[C_THREADS_PER_CHILD]
        _line_append(S, ch)
    _serve_waiters(S)


@njit(cache=True)
def _stop_child(S, ch):
    """ChildProcesses.stop (the pipe of death): the child accepts nothing more; event closes
    its idle keep-alive connections at once (FrontConnections._child_stopping); it exits once
    its workers and connections are done."""
    CH, CN = S.CH, S.CN
    CH[ch, CH_EXITING] = 1
    S.POI[S.STI[S.C[C_FRONT], ST_POOL], PO_CAPACITY] -= S.C[C_THREADS_PER_CHILD]
    if CH[ch, CH_IN_LINE]:
        _line_remove(S, ch)
    if S.C[C_CLIENT_KEEP_ALIVE]:
        for c in range(CN.shape[0]):
            if CN[c, CN_REFS] > 0 and CN[c, CN_KEPT] and CN[c, CN_CHILD] == ch:
                client_connections.front_idle_expired(S, c)  # its KeepAliveTimeout cancelled
    _exit_if_done(S, ch)


@njit(cache=True)
def maintain(S):
    """Spawner._maintain (`perform_idle_server_maintenance`), then the next tick a second
    later (the reference's calendar always holds the horizon)."""
    tick(S)
    calendar.push(S, S.F[F_NOW] + 1.0, EV_MAINTAIN, 0)


@njit(cache=True)
def tick(S):
    """Spawner.tick: above MaxSpare* idle, stop a child (prefork: the youngest waiting for a
    connection; worker, event: the oldest not yet told to stop, busy or not, the first
    blocked on the pipe of death); below MinSpare*, fork `spawn_rate` children into the free
    scoreboard slots and double the rate up to 32 (held at 1 for 10 ticks after a graceful
    restart); else the rate goes back to 1."""
    C, CH, counters = S.C, S.CH, S.I
    tpc = C[C_THREADS_PER_CHILD]
    live = 0
    idle = 0
    youngest = -1
    oldest = -1
    for ch in range(counters[I_CH_ROWS]):
        if not CH[ch, CH_PRESENT] or CH[ch, CH_EXITING]:
            continue
        live += 1
        free_threads = tpc - CH[ch, CH_BUSY]
        if C[C_SPARE_CHILDREN]:
            idle += CH[ch, CH_BUSY] == 0
        else:
            idle += free_threads
        if free_threads > 0 and (youngest < 0 or CH[ch, CH_NUMBER] > CH[youngest, CH_NUMBER]):
            youngest = ch
        if oldest < 0 or CH[ch, CH_NUMBER] < CH[oldest, CH_NUMBER]:
            oldest = ch
    if idle > C[C_MAX_SPARE]:
        _stop_child(S, youngest if C[C_SPARE_CHILDREN] else oldest)
        counters[I_SPAWN_RATE] = 1
    elif idle < C[C_MIN_SPARE]:
        slots = C[C_MAX_CHILDREN] - live
        if slots <= 0:
            counters[I_SPAWN_RATE] = 1  # the scoreboard is full: MaxRequestWorkers reached
        else:
            rate = counters[I_SPAWN_RATE]
            fork(S, min(rate, slots))
            if counters[I_HOLD_OFF]:
                counters[I_HOLD_OFF] -= 1
            elif rate < 32:
                counters[I_SPAWN_RATE] = 2 * rate
    else:
        counters[I_SPAWN_RATE] = 1


@njit(cache=True)
def _exit_if_done(S, ch):
    """A stopping child exits once its workers and connections are done."""
    CH, counters = S.CH, S.I
    if CH[ch, CH_BUSY] or CH[ch, CH_CONNECTIONS] or not CH[ch, CH_PRESENT]:
        return
    CH[ch, CH_PRESENT] = 0
    counters[I_CH_PRESENT] -= 1
    top = counters[I_CH_FREE_TOP]
    S.CHFREE[top] = ch
    counters[I_CH_FREE_TOP] = top + 1
    backend_pool.child_exited(S, ch)


# --------------------------------------------------------------------------- events
EVENTS = (EV_MAINTAIN,)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """httpd's parent: once a second, fork or stop children."""
    maintain(S)
