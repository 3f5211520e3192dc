"""Slot pools (`sim.kernel.slots.Pool`): FIFO pools of slots with a bounded queue -- Apache
`MaxClients` with `ListenBacklog`, Tomcat `maxThreads` with `acceptCount`, a JDBC pool, the
database's connections and disks.
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import (
    backend_pool,
    calendar,
    classed,
    client_connections,
    cpu,
    hooks,
    station,
    streams,
)
from sim.engines.compiled.kernel.layout import (
    C_FRONT,
    EV_DISK,
    EV_LINK_SENT,
    F_NOW,
    GRANTED,
    J_STATION,
    J_WAIT_NEXT,
    JF_STARTED,
    JF_TX_S,
    JF_WAIT_SINCE,
    PO_ACQUIRED,
    PO_CAPACITY,
    PO_HEAD,
    PO_IN_USE,
    PO_QUEUE_LIMIT,
    PO_REFUSED,
    PO_ROLE,
    PO_TAIL,
    PO_WAITING,
    POF_BUSY,
    POF_QUEUE,
    POF_WAIT,
    QUEUED,
    REFUSED,
    ROLE_DECLARED,
    ROLE_JDBC,
    ROLE_LINK,
    ROLE_PIN,
    ROLE_STATION,
    ST_CPU,
    ST_DISK_STREAM,
    ST_IN_PROGRESS,
    ST_TARGET,
)


@njit(cache=True)
def acquire(S, p, j):
    POI, POF = S.POI, S.POF
    now = S.F[F_NOW]
    capacity = POI[p, PO_CAPACITY]
    if capacity < 0 or POI[p, PO_IN_USE] < capacity:
        POI[p, PO_IN_USE] += 1
        POF[p, POF_BUSY] -= now
        POI[p, PO_ACQUIRED] += 1
        return GRANTED
    if refuses(S, p):
        return REFUSED
    enqueue(S, p, j)
    return QUEUED


@njit(cache=True)
def refuses(S, p):
    """The pool's queue is at its limit (a listen backlog, acceptCount): count a refusal."""
    POI = S.POI
    limit = POI[p, PO_QUEUE_LIMIT]
    if limit >= 0 and POI[p, PO_WAITING] >= limit:
        POI[p, PO_REFUSED] += 1
        return True
    return False


@njit(cache=True)
def enqueue(S, p, j):
    """Job j waits at the tail of the pool's FIFO queue."""
    POI, POF, JI, JF = S.POI, S.POF, S.JI, S.JF
    now = S.F[F_NOW]
    POI[p, PO_WAITING] += 1
    POF[p, POF_QUEUE] -= now
    JI[j, J_WAIT_NEXT] = -1
    JF[j, JF_WAIT_SINCE] = now
    tail = POI[p, PO_TAIL]
    if tail >= 0:
        JI[tail, J_WAIT_NEXT] = j
    else:
        POI[p, PO_HEAD] = j
    POI[p, PO_TAIL] = j


@njit(cache=True)
def release(S, p):
    """Free a slot, or hand it straight to the oldest waiter (who continues at once) -- or,
    for a mechanism's pool whose waiters race, to the one it picks (`hooks.next_holder`)."""
    POI, POF = S.POI, S.POF
    now = S.F[F_NOW]
    if POI[p, PO_HEAD] < 0:
        POI[p, PO_IN_USE] -= 1
        POF[p, POF_BUSY] += now
        return
    if POI[p, PO_ROLE] >= ROLE_DECLARED and POI[p, PO_WAITING] > 1:
        _to_head(S, p, hooks.next_holder(S, POI[p, PO_ROLE], POI[p, PO_WAITING]))
    JI, JF, STI = S.JI, S.JF, S.STI
    j = POI[p, PO_HEAD]
    after = JI[j, J_WAIT_NEXT]
    POI[p, PO_HEAD] = after
    if after < 0:
        POI[p, PO_TAIL] = -1
    POI[p, PO_WAITING] -= 1
    POF[p, POF_QUEUE] += now
    POI[p, PO_ACQUIRED] += 1
    POF[p, POF_WAIT] += now - JF[j, JF_WAIT_SINCE]
    role = POI[p, PO_ROLE]
    if role == ROLE_LINK:  # a frame's turn on a network link
        calendar.push(S, now + JF[j, JF_TX_S], EV_LINK_SENT, j)
        return
    if role == ROLE_PIN:  # the node accepts a pooled connection (a slot, a thread)
        backend_pool.bound(S, j)
        return
    s = JI[j, J_STATION]
    if role == ROLE_STATION:  # a worker / thread / connection for the visit itself
        JF[j, JF_STARTED] = now
        if s == S.C[C_FRONT]:
            client_connections.front_granted(S, j, s)
            return
        STI[s, ST_IN_PROGRESS] += 1
        cpu.run(S, STI[s, ST_CPU], classed.burst(S, s, j), j)
    elif role == ROLE_JDBC:  # the caller's JDBC connection: its database call starts
        if not hooks.call(S, j, STI[s, ST_TARGET]):
            station.arrive_queued_target(S, j + 1, STI[s, ST_TARGET], p)
    elif role >= ROLE_DECLARED:  # a mechanism's pool: the caller's call holds it
        hooks.granted(S, role, j)
    else:  # a disk spindle
        calendar.push(S, now + streams.draw(S, STI[s, ST_DISK_STREAM]), EV_DISK, j)


@njit(cache=True)
def _to_head(S, p, position):
    """Move the waiter at `position` (0: the head) of pool p's queue to its head, the others
    keeping their order (`Pool._random_waiter_first`)."""
    if position == 0:
        return
    POI, JI = S.POI, S.JI
    before = POI[p, PO_HEAD]
    for _ in range(position - 1):
        before = JI[before, J_WAIT_NEXT]
    j = JI[before, J_WAIT_NEXT]
    after = JI[j, J_WAIT_NEXT]
    JI[before, J_WAIT_NEXT] = after
    if after < 0:
        POI[p, PO_TAIL] = before
    JI[j, J_WAIT_NEXT] = POI[p, PO_HEAD]
    POI[p, PO_HEAD] = j


@njit(cache=True)
def withdraw(S, p, j):
    """Waiter.cancel: job j leaves the pool's queue (a pooled connection's read timeout)."""
    POI, JI = S.POI, S.JI
    before = -1
    w = POI[p, PO_HEAD]
    while w != j:
        before = w
        w = JI[w, J_WAIT_NEXT]
    after = JI[j, J_WAIT_NEXT]
    if before >= 0:
        JI[before, J_WAIT_NEXT] = after
    else:
        POI[p, PO_HEAD] = after
    if after < 0:
        POI[p, PO_TAIL] = before
    POI[p, PO_WAITING] -= 1
    S.POF[p, POF_QUEUE] += S.F[F_NOW]
