"""The JVM (`sim.tiers.appserver.jvm`): a node's heap, its young and full collections as
stop-the-world pauses of the node's CPU (`ProcessorSharingCPU.pause`), the sessions it holds
(its own and the replicas of other nodes'), OutOfMemoryError and the JIT's warm-up.
"""

from __future__ import annotations

import math

from numba import njit

from sim.engines.compiled.kernel import calendar, cpu, session_replication, station
from sim.engines.compiled.kernel.layout import (
    C_JVM_COOKIES,
    C_LEVELS,
    C_N_JVMS,
    C_N_NODES,
    CARRIER,
    CP_HEAP_N,
    CP_JVM,
    CP_N,
    CP_RUN_HEAD,
    CP_UNSHARED,
    CP_WAKEUP,
    CPF_LAST,
    CPF_RATE,
    CPF_SPEED,
    CPF_VIRTUAL,
    DEAD,
    EV_CPU_RESUME,
    EV_JVM_RESUME,
    EV_SWEEP,
    F_NOW,
    I_REQ_USED,
    J_BURST_SEQ,
    J_NEXT,
    J_STATION,
    JF_FINISH,
    JF_TAG,
    JV_CPU,
    JV_CREATES,
    JV_FROZEN_HEAD,
    JV_FROZEN_TAIL,
    JV_FULL_GCS,
    JV_HOLDERS,
    JV_NODE,
    JV_OOM,
    JV_OVER_LIMIT,
    JV_OVERHEAD_LIMIT,
    JV_PAUSED,
    JV_RESUME,
    JV_SERVED,
    JV_SESS_HEAD,
    JV_SESS_TAIL,
    JV_SESSIONS,
    JV_WARMS,
    JV_YOUNG_GCS,
    JVF_ALLOCATION,
    JVF_BASELINE,
    JVF_COLD,
    JVF_CPU_UNTIL,
    JVF_EDEN,
    JVF_EDEN_USED,
    JVF_EXPIRY_CHECK,
    JVF_FACTOR,
    JVF_FREE_LIMIT,
    JVF_FULL_PAUSE,
    JVF_FULL_PER_MB,
    JVF_GC_AT_LAST_FULL,
    JVF_GC_TIME,
    JVF_HEAP,
    JVF_HIGH_WATER,
    JVF_LAST_FULL_END,
    JVF_NEW_LIVE,
    JVF_NON_HEAP_MB,
    JVF_OLD_CAPACITY,
    JVF_OLD_USED,
    JVF_PAUSED_UNTIL,
    JVF_SESSION_BYTES,
    JVF_SESSION_TIMEOUT,
    JVF_TIME_LIMIT,
    JVF_TOUCHED,
    JVF_WARM,
    JVF_WARMUP,
    JVF_YOUNG,
    JVF_YOUNG_PAUSE,
    JVF_YOUNG_PER_MB,
    JVF_YOUNG_RESIDENT,
    NO_KEY,
    R_JK_CALL,
    R_STATE,
    R_USER,
    ST_JVM,
)

OOM_HEAP_SPACE, OOM_OVERHEAD = 1, 2

MIB = 1024.0 * 1024.0

OVERHEAD_LIMIT_COLLECTIONS = 5  # HotSpot AdaptiveSizePolicyGCTimeLimitThreshold


@njit(cache=True)
def frozen_append(S, v, j, work):
    """A burst held by JVM v's pause (`_PausedCPU.run`): it runs `work` when the pause ends."""
    JV, JI = S.JV, S.JI
    S.JF[j, JF_TAG] = work
    JI[j, J_NEXT] = -1
    tail = JV[v, JV_FROZEN_TAIL]
    if tail >= 0:
        JI[tail, J_NEXT] = j
    else:
        JV[v, JV_FROZEN_HEAD] = j
    JV[v, JV_FROZEN_TAIL] = j


@njit(cache=True)
def _cpu_pause(S, c, until):
    """ProcessorSharingCPU.pause: freeze every burst on CPU c until `until`; bursts due now
    finish, the others keep their remaining work; a pause inside a pause extends it."""
    CPI, CPF, JI, JF, JV, JVF = S.CPI, S.CPF, S.JI, S.JF, S.JV, S.JVF
    v = CPI[c, CP_JVM]
    now = S.F[F_NOW]
    if JV[v, JV_PAUSED]:
        if until > JVF[v, JVF_CPU_UNTIL]:
            JVF[v, JVF_CPU_UNTIL] = until
            JV[v, JV_RESUME] = calendar.push(S, now + (until - now), EV_CPU_RESUME, c)
        return
    if until <= now:
        return
    cpu.advance(S, c, now)
    speed = CPF[c, CPF_SPEED]
    if CPI[c, CP_UNSHARED]:
        kept = 0
        j = CPI[c, CP_RUN_HEAD]
        while j >= 0:
            after = JI[j, J_NEXT]
            finish = JF[j, JF_FINISH]
            if finish <= now:
                kept += 1  # its calendar entry is due at this instant
            else:
                cpu.run_remove(S, c, j)
                JI[j, J_BURST_SEQ] = -1  # its calendar entry is stale
                frozen_append(S, v, j, (finish - now) * speed)
            j = after
        CPI[c, CP_N] = kept
    else:
        CPI[c, CP_WAKEUP] = -1
        heap = S.CPH[c]
        size = CPI[c, CP_HEAP_N]
        virtual = CPF[c, CPF_VIRTUAL]
        while size > 0:  # in (tag, sequence) order
            j = heap[0]
            size -= 1
            if size > 0:
                heap[0] = heap[size]
                cpu.tag_siftup(heap, JF, JI, size, 0)
            left = JF[j, JF_TAG] - virtual
            frozen_append(S, v, j, left if left > 0.0 else 0.0)
        CPI[c, CP_HEAP_N] = 0
        CPI[c, CP_UNSHARED] = 1
        CPI[c, CP_N] = 0
        CPF[c, CPF_RATE] = 0.0
    JVF[v, JVF_CPU_UNTIL] = until
    JV[v, JV_RESUME] = calendar.push(S, now + (until - now), EV_CPU_RESUME, c)
    JV[v, JV_PAUSED] = 1


@njit(cache=True)
def cpu_resumed(S, c):
    """ProcessorSharingCPU._resumed: the held bursts run, in the order they were held."""
    JV, JI = S.JV, S.JI
    v = S.CPI[c, CP_JVM]
    JV[v, JV_PAUSED] = 0
    JV[v, JV_RESUME] = -1
    S.CPF[c, CPF_LAST] = S.F[F_NOW]
    j = JV[v, JV_FROZEN_HEAD]
    JV[v, JV_FROZEN_HEAD] = -1
    JV[v, JV_FROZEN_TAIL] = -1
    while j >= 0:
        after = JI[j, J_NEXT]
        cpu.run(S, c, S.JF[j, JF_TAG], j)
        j = after


@njit(cache=True)
def start(S):
    """Each JVM that creates sessions starts its expiry sweep (Jvm.__init__), node by node."""
    JV, JVF = S.JV, S.JVF
    now = S.F[F_NOW]
    for v in range(S.C[C_N_JVMS]):
        if JV[v, JV_CREATES]:
            calendar.push(S, now + JVF[v, JVF_EXPIRY_CHECK], EV_SWEEP, v)


@njit(cache=True)
def sweep(S, v):
    """Jvm._sweep: expired sessions become garbage in the old generation."""
    JV, JSE, JQK = S.JV, S.JSE, S.JQK
    now = S.F[F_NOW]
    head, tail = JV[v, JV_SESS_HEAD], JV[v, JV_SESS_TAIL]
    while head < tail:
        key = JQK[v, head]
        if key != DEAD:
            if JSE[v, head] > now:
                break
            if key >= 0:
                S.JM[v, key] = -1
            JV[v, JV_SESSIONS] -= 1
        head += 1
    JV[v, JV_SESS_HEAD] = head
    calendar.push(S, now + S.JVF[v, JVF_EXPIRY_CHECK], EV_SWEEP, v)


@njit(cache=True)
def _hold(S, v, key, expires):
    """Jvm._hold: create or touch the session `key` (NO_KEY: a new one); returns the live
    bytes newly allocated for it."""
    JV, JQK = S.JV, S.JQK
    tail = JV[v, JV_SESS_TAIL]
    S.JSE[v, tail] = expires
    JQK[v, tail] = key
    JV[v, JV_SESS_TAIL] = tail + 1
    if key >= 0:
        JM = S.JM
        held = JM[v, key]
        JM[v, key] = tail
        if held >= 0:  # touched: from its place to the end (OrderedDict.move_to_end)
            JQK[v, held] = DEAD
            return 0.0
    JV[v, JV_SESSIONS] += 1
    return S.JVF[v, JVF_SESSION_BYTES]


@njit(cache=True)
def session_ended(S, row):
    """A session client's row is free (its session and every request of it ended): the
    session's sessions in the JVMs keep their places but no longer answer to the row's keys,
    which the row's next session will use."""
    JM, JQK = S.JM, S.JQK
    nodes = S.C[C_N_NODES]
    for v in range(S.C[C_N_JVMS]):
        for node in range(nodes):
            key = row * nodes + node
            if key < JM.shape[1]:
                held = JM[v, key]
                if held >= 0:
                    JQK[v, held] = NO_KEY
                    JM[v, key] = -1


@njit(cache=True)
def needs_room(S):
    """Room for the sessions of the worst event: every live visit ending on a node at once,
    each taking at most one place (a session, its own or a replica) in a JVM; and, with
    cookies, room for the keys of every user (or session client's row)."""
    if S.C[C_JVM_COOKIES] and S.UI.shape[0] * S.C[C_N_NODES] > S.JM.shape[1]:
        return True
    JV = S.JV
    last = 0
    for v in range(S.C[C_N_JVMS]):
        last = max(last, JV[v, JV_SESS_TAIL])
    return last + S.C[C_LEVELS] * S.I[I_REQ_USED] + 8 > S.JSE.shape[1]


@njit(cache=True)
def _live(S, v):
    """Jvm.live_bytes: the baseline and every session held."""
    JVF = S.JVF
    return JVF[v, JVF_BASELINE] + S.JV[v, JV_SESSIONS] * JVF[v, JVF_SESSION_BYTES]


@njit(cache=True)
def _full_collection(S, v, begin, young_pause):
    """Jvm._full_collection: mark-sweep-compact after a failed promotion; returns its pause."""
    JV, JVF = S.JV, S.JVF
    live = _live(S, v)
    pause = JVF[v, JVF_FULL_PAUSE] + JVF[v, JVF_FULL_PER_MB] * live / MIB
    JV[v, JV_FULL_GCS] += 1
    capacity = JVF[v, JVF_OLD_CAPACITY]
    old = live if live <= capacity else capacity
    JVF[v, JVF_OLD_USED] = old
    if old > JVF[v, JVF_HIGH_WATER]:
        JVF[v, JVF_HIGH_WATER] = old
    resident = live - old
    JVF[v, JVF_YOUNG_RESIDENT] = resident
    if resident >= JVF[v, JVF_EDEN]:
        JV[v, JV_OOM] = OOM_HEAP_SPACE
        return pause
    # -XX:+UseGCOverheadLimit, judged over the time since the previous full collection
    end = begin + young_pause + pause
    gc_time_at_end = JVF[v, JVF_GC_TIME] + young_pause + pause
    elapsed = end - JVF[v, JVF_LAST_FULL_END]
    in_gc = (gc_time_at_end - JVF[v, JVF_GC_AT_LAST_FULL]) / elapsed if elapsed > 0 else 1.0
    heap = JVF[v, JVF_HEAP]
    over = in_gc > JVF[v, JVF_TIME_LIMIT] and heap - live < JVF[v, JVF_FREE_LIMIT] * heap
    JV[v, JV_OVER_LIMIT] = JV[v, JV_OVER_LIMIT] + 1 if over else 0
    if JV[v, JV_OVERHEAD_LIMIT] and JV[v, JV_OVER_LIMIT] >= OVERHEAD_LIMIT_COLLECTIONS:
        JV[v, JV_OOM] = OOM_OVERHEAD
    JVF[v, JVF_LAST_FULL_END] = end
    JVF[v, JVF_GC_AT_LAST_FULL] = gc_time_at_end
    return pause


@njit(cache=True)
def _allocate(S, v, nbytes, live):
    """Jvm._allocate: a full eden triggers a young collection (and perhaps a full one), a
    pause of the node's CPU; returns how long from now the node is paused (0: none)."""
    JV, JVF = S.JV, S.JVF
    JVF[v, JVF_EDEN_USED] += nbytes
    JVF[v, JVF_NEW_LIVE] += live
    if JVF[v, JVF_EDEN_USED] < JVF[v, JVF_EDEN] - JVF[v, JVF_YOUNG_RESIDENT]:
        return 0.0
    now = S.F[F_NOW]
    paused_until = JVF[v, JVF_PAUSED_UNTIL]
    begin = paused_until if paused_until > now else now  # after a pause under way
    JVF[v, JVF_TOUCHED] = JVF[v, JVF_YOUNG]
    promoted = JVF[v, JVF_NEW_LIVE]
    young_pause = JVF[v, JVF_YOUNG_PAUSE] + JVF[v, JVF_YOUNG_PER_MB] * promoted / MIB
    JV[v, JV_YOUNG_GCS] += 1
    JVF[v, JVF_EDEN_USED] = 0.0
    JVF[v, JVF_NEW_LIVE] = 0.0
    pause = young_pause
    if JVF[v, JVF_OLD_USED] + promoted <= JVF[v, JVF_OLD_CAPACITY]:
        JVF[v, JVF_OLD_USED] += promoted
        if JVF[v, JVF_OLD_USED] > JVF[v, JVF_HIGH_WATER]:
            JVF[v, JVF_HIGH_WATER] = JVF[v, JVF_OLD_USED]
    else:
        pause += _full_collection(S, v, begin, young_pause)
    until = begin + pause
    JVF[v, JVF_PAUSED_UNTIL] = until
    JVF[v, JVF_GC_TIME] += pause
    _cpu_pause(S, JV[v, JV_CPU], until)
    return until - now


@njit(cache=True)
def _served(S, v, r):
    """Jvm.served: request r ends on JVM v's node: the JIT's count, its session (and the
    replicas), its allocation.  Returns how long its response waits for a collection it
    triggered (0: none), or -1 once the JVM has thrown OutOfMemoryError."""
    JV, JVF = S.JV, S.JVF
    if JV[v, JV_OOM]:
        return -1.0
    JV[v, JV_SERVED] += 1
    if JV[v, JV_WARMS]:
        cold, warm = JVF[v, JVF_COLD], JVF[v, JVF_WARM]
        JVF[v, JVF_FACTOR] = warm + (cold - warm) * math.exp(-JV[v, JV_SERVED] / JVF[v, JVF_WARMUP])
    live = 0.0
    if JV[v, JV_CREATES]:
        expires = S.F[F_NOW] + JVF[v, JVF_SESSION_TIMEOUT]
        # with cookies the key (node name, user); else a new session
        cookies = S.C[C_JVM_COOKIES]
        owner = r
        if S.RI[r, R_STATE] == CARRIER:  # a mod_jk attempt: the call's request is served
            owner = S.RI[r, R_JK_CALL] // S.C[C_LEVELS]
        key = S.RI[owner, R_USER] * S.C[C_N_NODES] + JV[v, JV_NODE] if cookies else NO_KEY
        live = _hold(S, v, key, expires)
        for i in range(JV[v, JV_HOLDERS]):  # Jvm.hold_replica
            h = S.JH[v, i]
            if JV[h, JV_OOM]:
                continue
            replica = _hold(S, h, key, expires)
            if replica:
                _allocate(S, h, replica, replica)
    wait = _allocate(S, v, JVF[v, JVF_ALLOCATION], live)
    if JV[v, JV_OOM]:
        return -1.0
    return wait


@njit(cache=True)
def after_request(S, j):
    """Station.post of a node: the JVM's accounting (JvmAfterRequest), holding the thread
    through a collection the request triggered, then session replication."""
    v = S.STI[S.JI[j, J_STATION], ST_JVM]
    if v >= 0:
        wait = _served(S, v, j // S.C[C_LEVELS])
        if wait < 0:
            station.finish(S, j, False)  # OutOfMemoryError: the container answers 500
            return
        if wait > 0:
            calendar.push(S, S.F[F_NOW] + wait, EV_JVM_RESUME, j)
            return
    session_replication.replicate(S, j, 0)


@njit(cache=True)
def snapshot(S, row, k):
    """Each JVM's counters (`Jvm.counters`) into `row` from column k; the next column."""
    JV, JVF = S.JV, S.JVF
    v = row
    for m in range(S.C[C_N_JVMS]):
        v[k] = JV[m, JV_YOUNG_GCS]
        v[k + 1] = JV[m, JV_FULL_GCS]
        v[k + 2] = JVF[m, JVF_GC_TIME]
        v[k + 3] = JV[m, JV_SESSIONS]
        v[k + 4] = _live(S, m) / MIB
        v[k + 5] = JVF[m, JVF_OLD_USED] / MIB
        touched, eden = JVF[m, JVF_TOUCHED], JVF[m, JVF_EDEN_USED]
        v[k + 6] = (
            JVF[m, JVF_NON_HEAP_MB]
            + ((touched if touched >= eden else eden) + JVF[m, JVF_HIGH_WATER]) / MIB
        )
        v[k + 7] = 1.0 if JV[m, JV_OOM] else 0.0
        k += 8
    return k


# --------------------------------------------------------------------------- events
EVENTS = (EV_CPU_RESUME, EV_JVM_RESUME, EV_SWEEP)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """A stop-the-world pause's end, a request held through the collection it triggered going
    on, or the session manager's expiry sweep."""
    if kind == EV_CPU_RESUME:
        if S.JV[S.CPI[arg, CP_JVM], JV_RESUME] == seq:  # not extended since
            cpu_resumed(S, arg)
    elif kind == EV_JVM_RESUME:
        session_replication.replicate(S, arg, 0)  # JvmAfterRequest._resume: then replication
    else:
        sweep(S, arg)
