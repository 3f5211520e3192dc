"""mod_jk (`sim.tiers.proxy.mod_jk.JkBackendPool`, mod_jk's ajp13 worker) on the backend pools."""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import backend_pool, calendar, populations, slots, station
from sim.engines.compiled.kernel.layout import (
    BC_NEXT,
    BC_NODE,
    BC_POOL,
    BC_THREAD,
    BCF_RELEASED,
    BN_ACQUIRE_TIMEOUTS,
    BN_JK_ABANDONED,
    BN_JK_ABANDONED_SERVED,
    BN_JK_ATTEMPTS,
    BN_JK_CONNECT_FAILURES,
    BN_JK_MIN_SIZE,
    BN_JK_RECOVERABLE,
    BN_JK_REPLY_TIMEOUTS,
    BN_JK_RETRIES,
    BN_MAX,
    BN_PINS,
    BN_TTL_CLOSES,
    BNF_ACQUIRE,
    BNF_JK_CONNECT,
    BNF_JK_MAINTAIN,
    BNF_JK_POLL,
    BNF_JK_POOL_TIMEOUT,
    BNF_JK_REPLY,
    BNF_JK_RETRY_INTERVAL,
    BNF_JK_SYN_RETRIES,
    BNF_JK_SYN_RTO,
    BP_IDLE_HEAD,
    BP_OPEN,
    BPF_JK_MAINTAINED,
    C_LEVELS,
    C_N_NODES,
    CARRIER,
    EV_MOD_JK,
    F_NOW,
    GRANTED,
    J_BCONN,
    J_BPOOL,
    J_JK_ATTEMPT,
    J_JK_ENDPOINT,
    J_JK_LOOKS,
    J_JK_SYNS,
    J_JK_TIMER,
    J_JK_VISIT,
    J_STATION,
    J_VIA_MEMBER,
    J_VIA_POOL,
    JF_JK_CONNECT_AT,
    QUEUED,
    R_CLASS,
    R_JK_ABANDONED,
    R_JK_CALL,
    R_STATE,
    R_STATUS,
    REPLY_FAIL,
)

# `sim.tiers.proxy.mod_jk.JkBackendPool` (mod_jk's ajp13 worker) on the pools above: the same
# endpoint cache per child and node, but a request that finds no free endpoint looks again
# every JK_SLEEP_DEF (`poll`) instead of waiting in line, connection_pool_timeout acts at
# each process's maintenance (`_maintain`), and each request's `JkCall` makes up to
# `retries` attempts, each under `reply_timeout`, a connect whose SYNs the node's full accept
# queue drops retransmitting them.  The request's job at the node's level is the call (the
# endpoint, the attempt, its timers); each attempt's visit to the node runs on a *carrier*, a
# request row of its own at the same level (`_carrier`), because the node keeps working on
# an attempt mod_jk gave up on while the next attempt is already there.  `station.reply_up` hands the
# answer of a carrier's visit to the call (`answered`).  mod_jk's timers share one
# calendar kind (EV_MOD_JK), the job and the timer's kind in its argument.
JK_LOOK, JK_GIVE_UP, JK_SYN, JK_CONNECT_FAILED, JK_RETRY, JK_REPLY = range(6)

JK_KIND_BITS = 3

JK_KIND_MASK = 7


@njit(cache=True)
def _after(S, time, timer, j):
    return calendar.push(S, time, EV_MOD_JK, (j << JK_KIND_BITS) | timer)


@njit(cache=True)
def event(S, arg, seq):
    j = arg >> JK_KIND_BITS
    timer = arg & JK_KIND_MASK
    if timer == JK_LOOK:
        _look(S, j)
    elif timer == JK_GIVE_UP:
        _give_up(S, j)
    elif timer == JK_SYN:
        _connect(S, j, S.JF[j, JF_JK_CONNECT_AT], S.JI[j, J_JK_SYNS])
    elif timer == JK_CONNECT_FAILED:
        S.BN[_node(S, j), BN_JK_CONNECT_FAILURES] += 1
        _attempt_failed(S, j, 503, True)
    elif timer == JK_RETRY:
        _attempt(S, j)
    elif S.JI[j, J_JK_TIMER] == seq:  # JK_REPLY, not cancelled by the answer
        _reply_expired(S, j)


@njit(cache=True)
def _node(S, j):
    return S.JI[j, J_BPOOL] % S.C[C_N_NODES]


@njit(cache=True)
def maintain_due(S, pool, node):
    """JkBackendPool.serve: the process runs its maintenance (`wc_maintain`) at a request at
    least `worker.maintain` after its previous run, or at its first."""
    now = S.F[F_NOW]
    if now - S.BPF[pool, BPF_JK_MAINTAINED] >= S.BNF[node, BNF_JK_MAINTAIN]:
        S.BPF[pool, BPF_JK_MAINTAINED] = now
        _maintain(S, pool, node, now)


@njit(cache=True)
def _maintain(S, pool, node, now):
    """`ajp_maintain`: close the idle connections unused for longer than
    connection_pool_timeout, oldest first, until connection_pool_minsize are open.  (The idle
    list is in release order, which is the reference's sort by release time.)"""
    BC, BN = S.BC, S.BN
    timeout = S.BNF[node, BNF_JK_POOL_TIMEOUT]
    open_now = S.BP[pool, BP_OPEN]
    floor = BN[node, BN_JK_MIN_SIZE]
    closed = 0
    c = S.BP[pool, BP_IDLE_HEAD]
    while c >= 0:
        after = BC[c, BC_NEXT]
        if now - S.BCF[c, BCF_RELEASED] > timeout:
            backend_pool.idle_remove(S, c)
            BN[node, BN_TTL_CLOSES] += 1
            closed += 1
            backend_pool.close(S, c)
        if open_now <= floor + closed:
            break
        c = after


@njit(cache=True)
def poll(S, j, looks):
    """BackendPool._poll: no free endpoint at the look; sleep, then look again while looks x
    JK_SLEEP_DEF < connection_acquire_timeout, else give up."""
    node = _node(S, j)
    S.JI[j, J_JK_LOOKS] = looks
    poll = S.BNF[node, BNF_JK_POLL]
    acquire = S.BNF[node, BNF_ACQUIRE]
    later = S.F[F_NOW] + poll
    if acquire >= 0 and float(looks) * poll >= acquire:
        _after(S, later, JK_GIVE_UP, j)
    else:
        _after(S, later, JK_LOOK, j)


@njit(cache=True)
def _look(S, j):
    """BackendPool._look_again."""
    pool = S.JI[j, J_BPOOL]
    node = pool % S.C[C_N_NODES]
    c = backend_pool.pop_idle(S, pool)
    if c < 0:
        limit = S.BN[node, BN_MAX]
        if limit < 0 or S.BP[pool, BP_OPEN] < limit:
            c = backend_pool.open(S, pool, node)
    if c >= 0:
        send(S, c, j)
    else:
        poll(S, j, S.JI[j, J_JK_LOOKS] + 1)


@njit(cache=True)
def _give_up(S, j):
    """JkBackendPool._give_up: no endpoint within connection_acquire_timeout, 503."""
    S.BN[_node(S, j), BN_ACQUIRE_TIMEOUTS] += 1
    S.RI[j // S.C[C_LEVELS], R_STATUS] = 503
    station.reply_up(S, j, REPLY_FAIL)


@njit(cache=True)
def send(S, c, j):
    """JkBackendPool._send: the request holds endpoint c; its `ajp_service` starts."""
    JI = S.JI
    JI[j, J_JK_ENDPOINT] = c
    JI[j, J_JK_ATTEMPT] = 1
    JI[j, J_JK_VISIT] = -1
    JI[j, J_JK_TIMER] = -1
    _attempt(S, j)


@njit(cache=True)
def _attempt(S, j):
    """JkBackendPool._attempt: send on the endpoint's connection, or connect it first."""
    S.BN[_node(S, j), BN_JK_ATTEMPTS] += 1
    c = S.JI[j, J_JK_ENDPOINT]
    if S.BC[c, BC_THREAD]:
        _exchange(S, j, c, _carrier(S, j))
    else:
        _connect(S, j, S.F[F_NOW], 0)


@njit(cache=True)
def _carrier(S, j):
    """A request row to carry an attempt of call j to the node: its job at j's level."""
    levels = S.C[C_LEVELS]
    r = populations.alloc_request(S, -1, 0, S.F[F_NOW])
    S.RI[r, R_STATE] = CARRIER
    S.RI[r, R_JK_CALL] = j
    S.RI[r, R_JK_ABANDONED] = 0
    # the node serves the call's own request (the reference passes it): its class's work
    S.RI[r, R_CLASS] = S.RI[j // levels, R_CLASS]
    visit = r * levels + j % levels
    S.JI[visit, J_STATION] = S.JI[j, J_STATION]
    S.JI[visit, J_VIA_MEMBER] = -1  # the call answers the balancer
    S.JI[visit, J_VIA_POOL] = -1
    return visit


@njit(cache=True)
def _connect(S, j, started, syns):
    """JkBackendPool._connect: the node's connector accepts the new connection onto what it
    pins, queues it (the request is sent; the node serves it once it takes the connection),
    or its full accept queue drops the SYN: retransmitted after 1, 3, 7 ... s from the start,
    connect() giving up at socket_connect_timeout or after the last retransmission."""
    JI, BC = S.JI, S.BC
    now = S.F[F_NOW]
    c = JI[j, J_JK_ENDPOINT]
    node = BC[c, BC_NODE]
    visit = _carrier(S, j)
    JI[visit, J_BCONN] = c
    p = S.BN[node, BN_PINS]
    status = GRANTED if p < 0 else slots.acquire(S, p, visit)
    if status == GRANTED:
        BC[c, BC_THREAD] = 1
        _exchange(S, j, c, visit)
    elif status == QUEUED:
        JI[j, J_JK_VISIT] = visit
        _start_timer(S, j)
    else:
        populations.free_request(S, visit // S.C[C_LEVELS])
        BNF = S.BNF
        give_up = BNF[node, BNF_JK_CONNECT]
        next_syn = BNF[node, BNF_JK_SYN_RTO] * float(2 ** (syns + 1) - 1)
        if syns < BNF[node, BNF_JK_SYN_RETRIES] and next_syn < give_up:
            JF = S.JF
            JF[j, JF_JK_CONNECT_AT] = started
            JI[j, J_JK_SYNS] = syns + 1
            _after(S, now + (started + next_syn - now), JK_SYN, j)
        else:
            _after(S, now + (started + give_up - now), JK_CONNECT_FAILED, j)


@njit(cache=True)
def accepted(S, visit):
    """JkBackendPool._accepted: a node thread took the connection out of the accept queue and
    serves its request, even if mod_jk has given up on it (it is in the socket's buffer)."""
    c = S.JI[visit, J_BCONN]
    S.BC[c, BC_THREAD] = 1
    backend_pool.node_nested(S, c, visit)


@njit(cache=True)
def _exchange(S, j, c, visit):
    """JkBackendPool._exchange: the attempt's request goes to the node on c, under the reply
    timeout."""
    S.JI[j, J_JK_VISIT] = visit
    _start_timer(S, j)
    S.JI[visit, J_BCONN] = c
    station.arrive(S, visit, S.JI[visit, J_STATION], -1, -1)


@njit(cache=True)
def _start_timer(S, j):
    reply = S.BNF[_node(S, j), BNF_JK_REPLY]
    if reply >= 0:
        S.JI[j, J_JK_TIMER] = _after(S, S.F[F_NOW] + reply, JK_REPLY, j)


@njit(cache=True)
def _reply_expired(S, j):
    """JkBackendPool._reply_expired: no reply within reply_timeout; mod_jk closes the
    connection, the node keeps the request.  The endpoint stays in the pool without a socket
    (the abandoned connection's count passes to it): the next attempt connects."""
    JI, BC, BN = S.JI, S.BC, S.BN
    JI[j, J_JK_TIMER] = -1
    visit = JI[j, J_JK_VISIT]
    JI[j, J_JK_VISIT] = -1
    S.RI[visit // S.C[C_LEVELS], R_JK_ABANDONED] = 1
    node = _node(S, j)
    BN[node, BN_JK_REPLY_TIMEOUTS] += 1
    BN[node, BN_JK_ABANDONED] += 1
    old = JI[j, J_JK_ENDPOINT]
    JI[j, J_JK_ENDPOINT] = backend_pool.row(S, BC[old, BC_POOL], BC[old, BC_NODE])
    _attempt_failed(S, j, 504, BN[node, BN_JK_RECOVERABLE] != 0)


@njit(cache=True)
def _attempt_failed(S, j, status, recoverable):
    """JkBackendPool._attempt_failed: retry after retry_interval while attempts are left,
    else the endpoint goes back without a socket and the request fails with `status`."""
    JI = S.JI
    node = _node(S, j)
    if recoverable and JI[j, J_JK_ATTEMPT] < S.BN[node, BN_JK_RETRIES]:
        JI[j, J_JK_ATTEMPT] += 1
        _after(S, S.F[F_NOW] + S.BNF[node, BNF_JK_RETRY_INTERVAL], JK_RETRY, j)
        return
    # (no request ever waits in line for a mod_jk endpoint: `_next_waiter` finds none)
    backend_pool.forget(S, JI[j, J_JK_ENDPOINT])
    S.RI[j // S.C[C_LEVELS], R_STATUS] = status
    JI[j, J_BCONN] = -1
    station.reply_up(S, j, REPLY_FAIL)


@njit(cache=True)
def answered(S, visit):
    """JkBackendPool._answered: the node finished the visit of an attempt.  Abandoned, its
    response goes into a closed socket and the node closes the connection, freeing what it
    pinned; else the call's connection returns to the pool as `station.reply_up` goes on from the
    call's job (returned; -1: nothing more to answer)."""
    BC = S.BC
    r = visit // S.C[C_LEVELS]
    j = S.RI[r, R_JK_CALL]
    abandoned = S.RI[r, R_JK_ABANDONED]
    c = S.JI[visit, J_BCONN]
    S.JI[visit, J_BCONN] = -1
    populations.free_request(S, r)
    if abandoned:
        node = BC[c, BC_NODE]
        S.BN[node, BN_JK_ABANDONED_SERVED] += 1
        bound = BC[c, BC_THREAD]
        BC[c, BC_THREAD] = 0
        p = S.BN[node, BN_PINS]
        if bound and p >= 0:
            slots.release(S, p)  # may hand the thread to a connection in the accept queue
        backend_pool.free_row(S, c)
        return -1
    JI = S.JI
    JI[j, J_JK_VISIT] = -1
    JI[j, J_JK_TIMER] = -1  # the reply timeout goes stale
    JI[j, J_BCONN] = c
    return j


# --------------------------------------------------------------------------- events
EVENTS = (EV_MOD_JK,)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """mod_jk's timers, their kind in the argument's low bits."""
    event(S, arg, seq)
