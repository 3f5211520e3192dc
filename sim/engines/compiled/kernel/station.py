"""Stations (`sim.tiers.station`): a request's visit at one level of the stack -- its pool,
its CPU bursts, its I/O and disk, its downstream calls -- and the reply that travels back up
(`reply_up`); and their events (I/O and disk done).
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import (
    backend_pool,
    calendar,
    children,
    classed,
    client_connections,
    cpu,
    dispatcher,
    hooks,
    jvm,
    mod_jk,
    populations,
    session_replication,
    slots,
    streams,
)
from sim.engines.compiled.kernel.layout import (
    B_OUTSTANDING,
    BN_POOLED,
    C_CHILDREN,
    C_FRONT,
    C_LEVELS,
    C_MOD_JK,
    C_N_TIERS,
    CARRIER,
    DOWN_BALANCER,
    EV_DISK,
    EV_IO,
    F_NOW,
    GRANTED,
    J_BCONN,
    J_CALLS_LEFT,
    J_PHASE,
    J_STATION,
    J_VIA_MEMBER,
    J_VIA_POOL,
    JF_ARRIVED,
    JF_CALL_STARTED,
    JF_DOWNSTREAM,
    JF_STARTED,
    PHASE_APPLY,
    PHASE_CLIENT,
    PHASE_SERIALIZE,
    PHASE_VISIT,
    R_JK_CALL,
    R_STATE,
    REFUSED,
    REPLY_FAIL,
    REPLY_OK,
    REPLY_REFUSED,
    ST_ACCEPTS,
    ST_CPU,
    ST_DISK_POOL,
    ST_DISK_STREAM,
    ST_DOWN,
    ST_FAILED,
    ST_IN_PROGRESS,
    ST_IO,
    ST_JDBC,
    ST_JVM,
    ST_NODE,
    ST_POOL,
    ST_TARGET,
    ST_VISITS,
    STF_DOWNSTREAM,
    STF_RESIDENCE,
    STF_WAIT,
)


@njit(cache=True)
def open_visit(S, j, s, member, via_pool):
    JI, JF = S.JI, S.JF
    now = S.F[F_NOW]
    JI[j, J_STATION] = s
    JF[j, JF_ARRIVED] = now
    JF[j, JF_STARTED] = now
    JI[j, J_CALLS_LEFT] = classed.calls(S, s, j)
    JF[j, JF_DOWNSTREAM] = 0.0
    JI[j, J_VIA_MEMBER] = member
    JI[j, J_VIA_POOL] = via_pool
    JI[j, J_PHASE] = PHASE_VISIT


@njit(cache=True)
def arrive_queued_target(S, j, s, via_pool):
    """A visit to a station whose queue is unbounded (the database behind a JDBC pool):
    granted or queued, never refused."""
    open_visit(S, j, s, -1, via_pool)
    STI = S.STI
    p = STI[s, ST_POOL]
    if p < 0 or slots.acquire(S, p, j) == GRANTED:
        STI[s, ST_IN_PROGRESS] += 1
        cpu.run(S, STI[s, ST_CPU], classed.burst(S, s, j), j)


@njit(cache=True)
def arrive(S, j, s, member, via_pool):
    """Station.serve: take a slot (or wait for one, or be refused), then the first burst."""
    open_visit(S, j, s, member, via_pool)
    STI = S.STI
    front = s == S.C[C_FRONT]
    if front and client_connections.front_reuses_worker(S, j):
        # the worker of an open connection (FrontStation.serve): nothing to accept
        STI[s, ST_IN_PROGRESS] += 1
        cpu.run(S, STI[s, ST_CPU], classed.burst(S, s, j), j)
        return
    p = STI[s, ST_POOL]
    status = GRANTED
    if front and S.C[C_CHILDREN]:  # httpd's children: the first listening one accepts
        status = children.children_acquire(S, j)
    elif p >= 0:
        status = slots.acquire(S, p, j)
    if status == GRANTED:
        if front:
            client_connections.front_granted(S, j, s)
            return
        STI[s, ST_IN_PROGRESS] += 1
        cpu.run(S, STI[s, ST_CPU], classed.burst(S, s, j), j)
    elif status == REFUSED:
        # The listen queue of the tier the clients connect to drops the SYN; a deeper
        # tier answers its caller with an error.
        STI[s, ST_FAILED] += 1
        reply_up(S, j, REPLY_REFUSED if STI[s, ST_ACCEPTS] else REPLY_FAIL)


@njit(cache=True)
def _close_visit(S, j, ok):
    """The visit's statistics, and its slot freed (handed to the next waiter first)."""
    JF, STI, STF = S.JF, S.STI, S.STF
    now = S.F[F_NOW]
    s = S.JI[j, J_STATION]
    STI[s, ST_VISITS] += 1
    STI[s, ST_IN_PROGRESS] -= 1
    STF[s, STF_WAIT] += JF[j, JF_STARTED] - JF[j, JF_ARRIVED]
    STF[s, STF_RESIDENCE] += now - JF[j, JF_ARRIVED]
    STF[s, STF_DOWNSTREAM] += JF[j, JF_DOWNSTREAM]
    if not ok:
        STI[s, ST_FAILED] += 1
    if s == S.C[C_FRONT]:
        # keep-alive and lingering close decide when it frees
        client_connections.front_responded(S, j, ok)
        return
    p = STI[s, ST_POOL]
    if p >= 0:
        slots.release(S, p)


@njit(cache=True)
def forward(S, j, s, member):
    """A call to node station s: through the front's pool of connections to it, if built."""
    node = S.STI[s, ST_NODE]
    if node >= 0 and S.BN[node, BN_POOLED]:
        backend_pool.serve(S, j, s, member)
    else:
        arrive(S, j, s, member, -1)


@njit(cache=True)
def reply_up(S, j, code):
    """The visit j answers its caller; a failure travels up the nested visits."""
    JI, JF, STI, BI = S.JI, S.JF, S.STI, S.BI
    levels = S.C[C_LEVELS]
    now = S.F[F_NOW]
    carriers = S.C[C_MOD_JK]
    while True:
        if carriers:
            r = j // levels
            if S.RI[r, R_STATE] == CARRIER and j % levels == S.RI[r, R_JK_CALL] % levels:
                # a mod_jk attempt's visit answered: on to its call, unless mod_jk gave up
                j = mod_jk.answered(S, j)
                if j < 0:
                    return
        c = JI[j, J_BCONN]
        if c >= 0:  # the response came back on a pooled connection: it returns first
            JI[j, J_BCONN] = -1
            backend_pool.released(S, c)
        # what a mechanism holds goes back before the JDBC connection
        hooks.released(S, j)
        via_pool = JI[j, J_VIA_POOL]
        if via_pool >= 0:  # the JDBC connection goes back before the caller resumes
            slots.release(S, via_pool)
        member = JI[j, J_VIA_MEMBER]
        if member >= 0:
            BI[member, B_OUTSTANDING] -= 1
        if j % levels == 0:
            populations.client_replied(S, j // levels, code)
            return
        caller = j - 1
        JF[caller, JF_DOWNSTREAM] += now - JF[caller, JF_CALL_STARTED]
        if code == REPLY_OK:
            s = JI[caller, J_STATION]
            cpu.run(S, STI[s, ST_CPU], classed.burst(S, s, caller), caller)
            return
        _close_visit(S, caller, False)
        j = caller
        code = REPLY_FAIL


@njit(cache=True)
def finish(S, j, ok):
    _close_visit(S, j, ok)
    reply_up(S, j, REPLY_OK if ok else REPLY_FAIL)


@njit(cache=True)
def disk_start(S, j):
    STI = S.STI
    s = S.JI[j, J_STATION]
    if slots.acquire(S, STI[s, ST_DISK_POOL], j) == GRANTED:
        calendar.push(S, S.F[F_NOW] + streams.draw(S, STI[s, ST_DISK_STREAM]), EV_DISK, j)


@njit(cache=True)
def computed(S, j):
    """A burst of visit j ended: the next downstream call, the non-CPU wait, the disk, the
    session replication, or done; or a replication burst ended."""
    JI, JF, STI = S.JI, S.JF, S.STI
    phase = JI[j, J_PHASE]
    if phase == PHASE_SERIALIZE:
        session_replication.serialized(S, j)
        return
    if phase == PHASE_APPLY:
        session_replication.applied(S, j)
        return
    if phase == PHASE_CLIENT:
        populations.host_done(S, j)
        return
    s = JI[j, J_STATION]
    if JI[j, J_CALLS_LEFT] > 0:
        JI[j, J_CALLS_LEFT] -= 1
        JF[j, JF_CALL_STARTED] = S.F[F_NOW]
        if STI[s, ST_DOWN] == DOWN_BALANCER:
            dispatcher.dispatch(S, j + 1)
            return
        target = STI[s, ST_TARGET]
        p = STI[s, ST_JDBC]
        if p < 0:
            if not hooks.call(S, j, target):
                forward(S, j + 1, target, -1)
            return
        status = slots.acquire(S, p, j)
        if status == GRANTED:
            if not hooks.call(S, j, target):
                arrive(S, j + 1, target, -1, p)
        elif status == REFUSED:
            finish(S, j, False)
        return
    io = STI[s, ST_IO]
    if io >= 0:
        calendar.push(S, S.F[F_NOW] + streams.draw(S, io), EV_IO, j)
    elif STI[s, ST_DISK_POOL] >= 0:
        disk_start(S, j)
    elif STI[s, ST_NODE] >= 0 and (S.C[C_N_TIERS] > 0 or STI[s, ST_JVM] >= 0):
        jvm.after_request(S, j)
    else:
        finish(S, j, True)


# --------------------------------------------------------------------------- events
EVENTS = (EV_IO, EV_DISK)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """A visit's I/O wait or its disk access done."""
    JI, STI = S.JI, S.STI
    if kind == EV_IO:
        s = JI[arg, J_STATION]
        if STI[s, ST_DISK_POOL] >= 0:
            disk_start(S, arg)
        elif STI[s, ST_NODE] >= 0 and (S.C[C_N_TIERS] > 0 or STI[s, ST_JVM] >= 0):
            jvm.after_request(S, arg)
        else:
            finish(S, arg, True)
    else:
        slots.release(S, STI[JI[arg, J_STATION], ST_DISK_POOL])
        finish(S, arg, True)
