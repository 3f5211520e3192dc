"""Backend pools (`sim.tiers.proxy.backend_pool.BackendPool`, mod_proxy): the front's
connections to each node, one pool per child and node (apr_reslist) or, for an unbounded
front, one per node (a visit reaches them through `station.forward`).

In the reference these calls nest: a response hands its connection to a waiting request,
whose node may refuse it, whose error goes back up before the first response does.  numba's
cache cannot load recursive functions, so what runs below `station.reply_up` or a pool's
hand-over uses variants that cannot answer (`_nested`).  A new connection the node can
neither take nor queue waits for SYN retransmissions and may fail and put the worker in
error state, a mechanism of its own (`proxy.backend_pool.connect_failures`) that keeps such a
model on the reference engine: here the node never refuses a connection.  Should it happen
anyway, the run stops loudly (`_unanswerable`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim.engines.compiled.kernel import calendar, classed, cpu, mod_jk, slots, station
from sim.engines.compiled.kernel.layout import (
    BC_IDLE_ENTRY,
    BC_IDLE_SEQ,
    BC_JOB,
    BC_NEXT,
    BC_NODE,
    BC_POOL,
    BC_PREV,
    BC_READ_SEQ,
    BC_THREAD,
    BCF_ENTRY_AT,
    BCF_IDLE_AT,
    BCF_RELEASED,
    BN_ACQUIRE_TIMEOUTS,
    BN_EXIT_CLOSES,
    BN_IDLE,
    BN_IDLE_CLOSES,
    BN_MAX,
    BN_OPEN,
    BN_PINS,
    BN_POOLED,
    BN_READ_TIMEOUTS,
    BN_TTL_CLOSES,
    BN_WAITERS,
    BNF_ACQUIRE,
    BNF_IDLE,
    BNF_JK_POOL_TIMEOUT,
    BNF_READ,
    BNF_TTL,
    BP_IDLE_HEAD,
    BP_IDLE_TAIL,
    BP_OPEN,
    BP_WAIT_HEAD,
    BP_WAIT_TAIL,
    BPF_JK_MAINTAINED,
    C_BACKEND_POOLS,
    C_CHILDREN,
    C_DISABLE_REUSE,
    C_LEVELS,
    C_MOD_JK,
    C_N_NODES,
    C_READ_STATUS,
    EV_ACQUIRE,
    EV_BACKEND_IDLE,
    EV_READ,
    F_NOW,
    GRANTED,
    I_BC_FREE_TOP,
    I_BC_USED,
    I_STOP,
    I_UNSUPPORTED,
    J_BCONN,
    J_BPOOL,
    J_BTIMER,
    J_BW_NEXT,
    J_BW_PREV,
    J_STATION,
    J_VIA_MEMBER,
    J_VIA_POOL,
    QUEUED,
    R_CHILD,
    R_STATUS,
    REFUSED,
    REPLY_FAIL,
    ST_CPU,
    ST_FAILED,
    ST_IN_PROGRESS,
    ST_NODE,
    ST_POOL,
)


@njit(cache=True)
def _unanswerable(S):
    S.I[I_UNSUPPORTED] = 1
    S.I[I_STOP] = 1


@njit(cache=True)
def reset(S, ch):
    """A new child's pools: empty (the reference makes them at the child's first request)."""
    if not S.C[C_BACKEND_POOLS]:
        return
    BP = S.BP
    n = S.C[C_N_NODES]
    for node in range(n):
        pool = ch * n + node
        BP[pool, BP_OPEN] = 0
        BP[pool, BP_IDLE_HEAD] = -1
        BP[pool, BP_IDLE_TAIL] = -1
        BP[pool, BP_WAIT_HEAD] = -1
        BP[pool, BP_WAIT_TAIL] = -1
        S.BPF[pool, BPF_JK_MAINTAINED] = -np.inf  # a new process: maintained at its first request


@njit(cache=True)
def open(S, pool, node):
    """BackendPool._open: a new connection of the pool, not yet accepted by the node."""
    S.BP[pool, BP_OPEN] += 1
    S.BN[node, BN_OPEN] += 1
    return row(S, pool, node)


@njit(cache=True)
def row(S, pool, node):
    """A free connection row of the pool, unbound (the pool's counts are the caller's)."""
    counters, BC = S.I, S.BC
    top = counters[I_BC_FREE_TOP] - 1
    counters[I_BC_FREE_TOP] = top
    counters[I_BC_USED] += 1
    c = S.BCFREE[top]
    BC[c, BC_POOL] = pool
    BC[c, BC_NODE] = node
    BC[c, BC_THREAD] = 0
    BC[c, BC_IDLE_SEQ] = -1
    BC[c, BC_READ_SEQ] = -1
    BC[c, BC_JOB] = -1
    S.BCF[c, BCF_RELEASED] = 0.0
    return c


@njit(cache=True)
def forget(S, c):
    """BackendPool._forget: the connection no longer counts; its row is free (read it first)."""
    counters = S.I
    S.BP[S.BC[c, BC_POOL], BP_OPEN] -= 1
    S.BN[S.BC[c, BC_NODE], BN_OPEN] -= 1
    top = counters[I_BC_FREE_TOP]
    S.BCFREE[top] = c
    counters[I_BC_FREE_TOP] = top + 1
    counters[I_BC_USED] -= 1


@njit(cache=True)
def _idle_push(S, pool, c):
    BC, BP = S.BC, S.BP
    tail = BP[pool, BP_IDLE_TAIL]
    BC[c, BC_PREV] = tail
    BC[c, BC_NEXT] = -1
    if tail >= 0:
        BC[tail, BC_NEXT] = c
    else:
        BP[pool, BP_IDLE_HEAD] = c
    BP[pool, BP_IDLE_TAIL] = c
    S.BN[BC[c, BC_NODE], BN_IDLE] += 1


@njit(cache=True)
def idle_remove(S, c):
    BC, BP = S.BC, S.BP
    pool = BC[c, BC_POOL]
    before, after = BC[c, BC_PREV], BC[c, BC_NEXT]
    if before >= 0:
        BC[before, BC_NEXT] = after
    else:
        BP[pool, BP_IDLE_HEAD] = after
    if after >= 0:
        BC[after, BC_PREV] = before
    else:
        BP[pool, BP_IDLE_TAIL] = before
    S.BN[BC[c, BC_NODE], BN_IDLE] -= 1


@njit(cache=True)
def _wait(S, pool, node, j):
    """The request waits for a connection of its pool (FIFO)."""
    JI, BP = S.JI, S.BP
    tail = BP[pool, BP_WAIT_TAIL]
    JI[j, J_BW_PREV] = tail
    JI[j, J_BW_NEXT] = -1
    if tail >= 0:
        JI[tail, J_BW_NEXT] = j
    else:
        BP[pool, BP_WAIT_HEAD] = j
    BP[pool, BP_WAIT_TAIL] = j
    S.BN[node, BN_WAITERS] += 1


@njit(cache=True)
def _unwait(S, j):
    """The request leaves its pool's waiters; its `acquire` timer goes stale."""
    JI, BP = S.JI, S.BP
    pool = JI[j, J_BPOOL]
    before, after = JI[j, J_BW_PREV], JI[j, J_BW_NEXT]
    if before >= 0:
        JI[before, J_BW_NEXT] = after
    else:
        BP[pool, BP_WAIT_HEAD] = after
    if after >= 0:
        JI[after, J_BW_PREV] = before
    else:
        BP[pool, BP_WAIT_TAIL] = before
    S.BN[pool % S.C[C_N_NODES], BN_WAITERS] -= 1
    JI[j, J_BTIMER] = -1


@njit(cache=True)
def serve(S, j, s, member):
    """BackendPool.serve: the last released idle connection of the request's child's pool, a
    new one while fewer than `max` are open, or a wait for one (mod_proxy `acquire`)."""
    JI, C = S.JI, S.C
    node = S.STI[s, ST_NODE]
    JI[j, J_STATION] = s
    JI[j, J_VIA_MEMBER] = member
    JI[j, J_VIA_POOL] = -1
    JI[j, J_BCONN] = -1
    child = S.RI[j // C[C_LEVELS], R_CHILD] if C[C_CHILDREN] else 0
    pool = child * C[C_N_NODES] + node
    JI[j, J_BPOOL] = pool
    jk = C[C_MOD_JK]
    if jk and S.BNF[node, BNF_JK_POOL_TIMEOUT] >= 0:
        mod_jk.maintain_due(S, pool, node)
    c = pop_idle(S, pool)
    if c < 0:
        limit = S.BN[node, BN_MAX]
        if limit < 0 or S.BP[pool, BP_OPEN] < limit:
            c = open(S, pool, node)
    if c >= 0:
        if jk:
            mod_jk.send(S, c, j)
        else:
            _send(S, c, j)
        return
    if jk:  # mod_jk looks again every JK_SLEEP_DEF instead of waiting in line
        mod_jk.poll(S, j, 1)
        return
    acquire = S.BNF[node, BNF_ACQUIRE]
    JI[j, J_BTIMER] = calendar.push(S, S.F[F_NOW] + acquire, EV_ACQUIRE, j) if acquire >= 0 else -1
    _wait(S, pool, node, j)


@njit(cache=True)
def pop_idle(S, pool):
    """BackendPool._pop_idle: the last released idle connection, its idle timeout cancelled;
    one idle for `ttl` or longer is closed instead."""
    BC, BP = S.BC, S.BP
    now = S.F[F_NOW]
    while BP[pool, BP_IDLE_TAIL] >= 0:
        c = BP[pool, BP_IDLE_TAIL]
        idle_remove(S, c)
        node = BC[c, BC_NODE]
        ttl = S.BNF[node, BNF_TTL]
        if ttl >= 0 and now - S.BCF[c, BCF_RELEASED] >= ttl:
            S.BN[node, BN_TTL_CLOSES] += 1
            close(S, c)
            continue
        BC[c, BC_IDLE_SEQ] = -1
        return c
    return -1


@njit(cache=True)
def _bind(S, c, j):
    """A new connection asks the node for what it pins (`pins.acquire`): GRANTED, REFUSED, or
    QUEUED in the node's accept queue under the front's read timeout."""
    BC = S.BC
    node = BC[c, BC_NODE]
    p = S.BN[node, BN_PINS]
    if p < 0:  # Unpinned: nothing to take
        BC[c, BC_THREAD] = 1
        return GRANTED
    S.JI[j, J_BCONN] = c  # the hand-over (`bound`) finds the connection by the visit
    status = slots.acquire(S, p, j)
    if status == GRANTED:
        BC[c, BC_THREAD] = 1
    elif status == QUEUED:
        BC[c, BC_JOB] = j
        read = S.BNF[node, BNF_READ]
        if read >= 0:
            BC[c, BC_READ_SEQ] = calendar.push(S, S.F[F_NOW] + read, EV_READ, c)
    return status


@njit(cache=True)
def _send(S, c, j):
    """BackendPool._send, from the front's own call: the request goes to the node on c (a
    connection the node cannot queue is the reference's: see above)."""
    JI = S.JI
    if S.BC[c, BC_THREAD]:
        JI[j, J_BCONN] = c
        station.arrive(S, j, JI[j, J_STATION], JI[j, J_VIA_MEMBER], -1)
        return
    status = _bind(S, c, j)
    if status == GRANTED:
        JI[j, J_BCONN] = c
        station.arrive(S, j, JI[j, J_STATION], JI[j, J_VIA_MEMBER], -1)
    elif status == REFUSED:
        _unanswerable(S)


@njit(cache=True)
def node_nested(S, c, j):
    """Station.serve on the node for a visit on the bound connection c, where the node cannot
    refuse it (see above)."""
    JI, STI = S.JI, S.STI
    JI[j, J_BCONN] = c
    s = JI[j, J_STATION]
    station.open_visit(S, j, s, JI[j, J_VIA_MEMBER], -1)
    p = STI[s, ST_POOL]
    status = GRANTED if p < 0 else slots.acquire(S, p, j)
    if status == GRANTED:
        STI[s, ST_IN_PROGRESS] += 1
        cpu.run(S, STI[s, ST_CPU], classed.burst(S, s, j), j)
    elif status == REFUSED:
        STI[s, ST_FAILED] += 1
        _unanswerable(S)


@njit(cache=True)
def _send_nested(S, c, j):
    """BackendPool._send below a response or a hand-over (see above)."""
    if S.BC[c, BC_THREAD]:
        node_nested(S, c, j)
        return
    status = _bind(S, c, j)
    if status == GRANTED:
        node_nested(S, c, j)
    elif status == REFUSED:
        _unanswerable(S)


@njit(cache=True)
def bound(S, j):
    """BackendPool._bound: the node took the connection out of its accept queue."""
    if S.C[C_MOD_JK]:
        mod_jk.accepted(S, j)
        return
    BC = S.BC
    c = S.JI[j, J_BCONN]
    BC[c, BC_JOB] = -1
    BC[c, BC_THREAD] = 1
    BC[c, BC_READ_SEQ] = -1  # the read timeout goes stale
    node_nested(S, c, j)


@njit(cache=True)
def _next_waiter(S, pool, node):
    """BackendPool._next_waiter: a connection of the pool closed; a waiting request opens one."""
    j = S.BP[pool, BP_WAIT_HEAD]
    limit = S.BN[node, BN_MAX]
    if j >= 0 and (limit < 0 or S.BP[pool, BP_OPEN] < limit):
        _unwait(S, j)
        _send_nested(S, open(S, pool, node), j)


@njit(cache=True)
def released(S, c):
    """BackendPool.released: the response came back on c; it goes to the pool's oldest waiting
    request, or back to the pool (its thread or slot stays pinned) under the node's idle
    timeout; with disablereuse it closes."""
    if S.C[C_DISABLE_REUSE]:
        close(S, c)
        return
    BC = S.BC
    pool = BC[c, BC_POOL]
    j = S.BP[pool, BP_WAIT_HEAD]
    if j >= 0:
        _unwait(S, j)
        _send_nested(S, c, j)
        return
    now = S.F[F_NOW]
    S.BCF[c, BCF_RELEASED] = now
    idle = S.BNF[BC[c, BC_NODE], BNF_IDLE]
    if idle >= 0:
        deadline = now + idle
        calendar.timer_arm(
            S,
            BC,
            S.BCF,
            c,
            BC_IDLE_SEQ,
            BC_IDLE_ENTRY,
            BCF_IDLE_AT,
            BCF_ENTRY_AT,
            deadline,
            EV_BACKEND_IDLE,
        )
    _idle_push(S, pool, c)


@njit(cache=True)
def close(S, c):
    """BackendPool._close: the connection closes, freeing what it pinned (which may bind a
    waiting connection at once); a request waiting for a connection may open one."""
    BC = S.BC
    BC[c, BC_IDLE_SEQ] = -1
    pool, node, bound = BC[c, BC_POOL], BC[c, BC_NODE], BC[c, BC_THREAD]
    forget(S, c)
    p = S.BN[node, BN_PINS]
    if bound and p >= 0:
        slots.release(S, p)
    _next_waiter(S, pool, node)


@njit(cache=True)
def idle_expired(S, c):
    """The node's idle timeout (connectionTimeout / keepAliveTimeout) closes the connection."""
    S.BC[c, BC_IDLE_SEQ] = -1
    idle_remove(S, c)
    S.BN[S.BC[c, BC_NODE], BN_IDLE_CLOSES] += 1
    close(S, c)


@njit(cache=True)
def acquire_expired(S, j):
    """mod_proxy `acquire`: no connection came in time, 503."""
    pool = S.JI[j, J_BPOOL]
    _unwait(S, j)
    S.BN[pool % S.C[C_N_NODES], BN_ACQUIRE_TIMEOUTS] += 1
    S.RI[j // S.C[C_LEVELS], R_STATUS] = 503
    station.reply_up(S, j, REPLY_FAIL)


@njit(cache=True)
def read_expired(S, c):
    """The front's read timeout: the node never took the connection; the front gives up on
    it (withdrawn from the accept queue) and answers 502 (http) or 503 (ajp)."""
    BC = S.BC
    j, pool, node = BC[c, BC_JOB], BC[c, BC_POOL], BC[c, BC_NODE]
    BC[c, BC_READ_SEQ] = -1
    BC[c, BC_JOB] = -1
    slots.withdraw(S, S.BN[node, BN_PINS], j)
    S.BN[node, BN_READ_TIMEOUTS] += 1
    S.JI[j, J_BCONN] = -1
    forget(S, c)
    _next_waiter(S, pool, node)
    S.RI[j // S.C[C_LEVELS], R_STATUS] = S.C[C_READ_STATUS]
    station.reply_up(S, j, REPLY_FAIL)


@njit(cache=True)
def child_exited(S, ch):
    """BackendPool._child_exited: the child's idle connections close with it (it exits only
    when it serves nothing), oldest first."""
    C, BC, BP = S.C, S.BC, S.BP
    if not C[C_BACKEND_POOLS]:
        return
    n = C[C_N_NODES]
    for node in range(n):
        if not S.BN[node, BN_POOLED]:
            continue
        pool = ch * n + node
        c = BP[pool, BP_IDLE_HEAD]
        BP[pool, BP_IDLE_HEAD] = -1
        BP[pool, BP_IDLE_TAIL] = -1
        while c >= 0:
            after = BC[c, BC_NEXT]
            S.BN[node, BN_IDLE] -= 1
            S.BN[node, BN_EXIT_CLOSES] += 1
            close(S, c)
            c = after


@njit(cache=True)
def free_row(S, c):
    """A connection row back to the free rows, without the pool's counts (an abandoned socket,
    whose count passed to its endpoint)."""
    counters = S.I
    top = counters[I_BC_FREE_TOP]
    S.BCFREE[top] = c
    counters[I_BC_FREE_TOP] = top + 1
    counters[I_BC_USED] -= 1


# --------------------------------------------------------------------------- events
EVENTS = (EV_BACKEND_IDLE, EV_ACQUIRE, EV_READ)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """A pooled connection's idle timeout on its node, a request's `acquire` timeout, or the
    front's read timeout of a connection the node never accepted."""
    if kind == EV_BACKEND_IDLE:
        if calendar.timer_due(
            S,
            S.BC,
            S.BCF,
            arg,
            seq,
            BC_IDLE_SEQ,
            BC_IDLE_ENTRY,
            BCF_IDLE_AT,
            BCF_ENTRY_AT,
            EV_BACKEND_IDLE,
        ):
            idle_expired(S, arg)
        # else taken again in time, or closed
    elif kind == EV_ACQUIRE:
        if S.JI[arg, J_BTIMER] == seq:  # else it got a connection in time
            acquire_expired(S, arg)
    elif S.BC[arg, BC_READ_SEQ] == seq:  # else the node accepted the connection in time
        read_expired(S, arg)
