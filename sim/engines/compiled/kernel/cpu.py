"""The CPUs (`sim.kernel.cpu`): a dedicated core per job, or processor sharing with its two
exact regimes (every job on a core of its own; more jobs than cores, a heap of finishing tags
in virtual time); and their events (a burst done, a departure).
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import calendar, jvm, populations, station
from sim.engines.compiled.kernel.layout import (
    CP_COMPLETED,
    CP_CORES,
    CP_DEDICATED,
    CP_HEAP_N,
    CP_JVM,
    CP_N,
    CP_RUN_HEAD,
    CP_RUN_TAIL,
    CP_SEQ,
    CP_UNSHARED,
    CP_WAKEUP,
    CPF_BUSY,
    CPF_JOBS,
    CPF_LAST,
    CPF_RATE,
    CPF_SIGNED,
    CPF_SPEED,
    CPF_VIRTUAL,
    EPS,
    EV_BURST,
    EV_DEDICATED_BURST,
    EV_DEPART,
    F_NOW,
    J_BURST_SEQ,
    J_NEXT,
    J_PREV,
    J_STATION,
    J_TAG_SEQ,
    JF_FINISH,
    JF_TAG,
    JV_PAUSED,
    ST_CPU,
)


@njit(cache=True)
def _tag_before(JF, JI, a, b):
    ta, tb = JF[a, JF_TAG], JF[b, JF_TAG]
    return ta < tb or (ta == tb and JI[a, J_TAG_SEQ] < JI[b, J_TAG_SEQ])


@njit(cache=True)
def _tag_siftdown(heap, JF, JI, start, pos):
    item = heap[pos]
    while pos > start:
        parent = (pos - 1) >> 1
        if _tag_before(JF, JI, item, heap[parent]):
            heap[pos] = heap[parent]
            pos = parent
            continue
        break
    heap[pos] = item


@njit(cache=True)
def tag_siftup(heap, JF, JI, n, pos):
    start = pos
    item = heap[pos]
    child = 2 * pos + 1
    while child < n:
        right = child + 1
        if right < n and not _tag_before(JF, JI, heap[child], heap[right]):
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    heap[pos] = item
    _tag_siftdown(heap, JF, JI, start, pos)


@njit(cache=True)
def advance(S, c, now):
    CPI, CPF = S.CPI, S.CPF
    dt = now - CPF[c, CPF_LAST]
    if dt != 0.0:
        n = CPI[c, CP_N]
        if n:
            if not CPI[c, CP_UNSHARED]:
                CPF[c, CPF_VIRTUAL] += CPF[c, CPF_RATE] * dt
            cores = CPI[c, CP_CORES]
            CPF[c, CPF_BUSY] += (n if n < cores else cores) * dt
            CPF[c, CPF_JOBS] += n * dt
        CPF[c, CPF_LAST] = now


@njit(cache=True)
def _run_append(S, c, j):
    CPI, JI = S.CPI, S.JI
    tail = CPI[c, CP_RUN_TAIL]
    JI[j, J_PREV] = tail
    JI[j, J_NEXT] = -1
    if tail >= 0:
        JI[tail, J_NEXT] = j
    else:
        CPI[c, CP_RUN_HEAD] = j
    CPI[c, CP_RUN_TAIL] = j


@njit(cache=True)
def run_remove(S, c, j):
    CPI, JI = S.CPI, S.JI
    before, after = JI[j, J_PREV], JI[j, J_NEXT]
    if before >= 0:
        JI[before, J_NEXT] = after
    else:
        CPI[c, CP_RUN_HEAD] = after
    if after >= 0:
        JI[after, J_PREV] = before
    else:
        CPI[c, CP_RUN_TAIL] = before


@njit(cache=True)
def reschedule(S, c):
    CPI, CPF, JF = S.CPI, S.CPF, S.JF
    head = S.CPH[c, 0]
    delay = (JF[head, JF_TAG] - CPF[c, CPF_VIRTUAL]) / CPF[c, CPF_RATE]
    now = S.F[F_NOW]
    CPI[c, CP_WAKEUP] = calendar.push(S, now + (delay if delay > 0 else 0.0), EV_DEPART, c)


@njit(cache=True)
def _share(S, c, now):
    """n just exceeded the cores: the running bursts move onto the virtual-time heap (in the
    order they started; their calendar entries become stale)."""
    CPI, CPF, JI, JF = S.CPI, S.CPF, S.JI, S.JF
    heap = S.CPH[c]
    CPF[c, CPF_VIRTUAL] = 0.0
    speed = CPF[c, CPF_SPEED]
    k = 0
    j = CPI[c, CP_RUN_HEAD]
    while j >= 0:
        JF[j, JF_TAG] = (JF[j, JF_FINISH] - now) * speed
        JI[j, J_TAG_SEQ] = CPI[c, CP_SEQ]
        CPI[c, CP_SEQ] += 1
        JI[j, J_BURST_SEQ] = -1
        heap[k] = j
        k += 1
        j = JI[j, J_NEXT]
    for i in range(k // 2 - 1, -1, -1):  # heapq.heapify
        tag_siftup(heap, JF, JI, k, i)
    CPI[c, CP_HEAP_N] = k
    CPI[c, CP_RUN_HEAD] = -1
    CPI[c, CP_RUN_TAIL] = -1
    CPI[c, CP_UNSHARED] = 0
    CPF[c, CPF_RATE] = -1.0


@njit(cache=True)
def unshare(S, c, now):
    """n fell back to the cores: every job runs at full speed to its own finish time."""
    CPI, CPF, JI, JF = S.CPI, S.CPF, S.JI, S.JF
    heap = S.CPH[c]
    speed = CPF[c, CPF_SPEED]
    virtual = CPF[c, CPF_VIRTUAL]
    for i in range(CPI[c, CP_HEAP_N]):
        j = heap[i]
        left = JF[j, JF_TAG] - virtual
        finish = now + max(left, 0.0) / speed
        JI[j, J_BURST_SEQ] = calendar.push(S, finish, EV_BURST, j)
        JF[j, JF_FINISH] = finish
        _run_append(S, c, j)
    CPI[c, CP_HEAP_N] = 0
    CPI[c, CP_UNSHARED] = 1
    CPF[c, CPF_RATE] = 0.0


@njit(cache=True)
def run(S, c, demand, j):
    """Job j computes `demand` seconds of work (at speed 1) on CPU c, then `_computed(j)`."""
    CPI, CPF, JI, JF = S.CPI, S.CPF, S.JI, S.JF
    now = S.F[F_NOW]
    if CPI[c, CP_DEDICATED]:
        # Never shared (no more slots than cores): the reference's DedicatedCPU.
        CPI[c, CP_N] += 1
        CPF[c, CPF_SIGNED] -= now
        calendar.push(S, now + demand / CPF[c, CPF_SPEED], EV_DEDICATED_BURST, j)
        return
    # a stop-the-world pause holds the burst until its end (a JVM's CPU is never dedicated)
    v = CPI[c, CP_JVM]
    if v >= 0 and S.JV[v, JV_PAUSED]:
        jvm.frozen_append(S, v, j, demand)
        return
    n = CPI[c, CP_N]
    unshared = CPI[c, CP_UNSHARED]
    cores = CPI[c, CP_CORES]
    if unshared:
        dt = now - CPF[c, CPF_LAST]
        if dt != 0.0:
            if n:
                CPF[c, CPF_BUSY] += (n if n < cores else cores) * dt
                CPF[c, CPF_JOBS] += n * dt
            CPF[c, CPF_LAST] = now
    else:
        advance(S, c, now)
    n += 1
    CPI[c, CP_N] = n
    if unshared:
        if n <= cores:
            finish = now + demand / CPF[c, CPF_SPEED]
            JI[j, J_BURST_SEQ] = calendar.push(S, finish, EV_BURST, j)
            JF[j, JF_FINISH] = finish
            _run_append(S, c, j)
            return
        _share(S, c, now)
    heap = S.CPH[c]
    JF[j, JF_TAG] = CPF[c, CPF_VIRTUAL] + demand
    JI[j, J_TAG_SEQ] = CPI[c, CP_SEQ]
    CPI[c, CP_SEQ] += 1
    size = CPI[c, CP_HEAP_N]
    heap[size] = j
    CPI[c, CP_HEAP_N] = size + 1
    _tag_siftdown(heap, JF, JI, 0, size)
    rate = CPF[c, CPF_SPEED] * cores / n
    # The pending departure stays valid unless the rate changed or the new job is first.
    if rate != CPF[c, CPF_RATE] or heap[0] == j:
        CPF[c, CPF_RATE] = rate
        reschedule(S, c)


# --------------------------------------------------------------------------- events
EVENTS = (EV_BURST, EV_DEPART, EV_DEDICATED_BURST)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """A burst done on a dedicated core or alone on a shared one, or the shared regime's
    next departure (`ProcessorSharingCPU._depart`)."""
    if kind == EV_DEDICATED_BURST:
        c = S.STI[S.JI[arg, J_STATION], ST_CPU]
        CPI = S.CPI
        CPI[c, CP_N] -= 1
        S.CPF[c, CPF_SIGNED] += now
        CPI[c, CP_COMPLETED] += 1
        station.computed(S, arg)
    elif kind == EV_BURST:
        _burst_done(S, arg, seq, now)
    else:
        _depart(S, arg, seq, now)


@njit(cache=True)
def _burst_done(S, j, seq, now):
    JI, CPI, CPF = S.JI, S.CPI, S.CPF
    if JI[j, J_BURST_SEQ] != seq:
        return  # moved to the shared regime
    JI[j, J_BURST_SEQ] = -1
    c = S.STI[JI[j, J_STATION], ST_CPU]
    run_remove(S, c, j)
    n = CPI[c, CP_N]
    dt = now - CPF[c, CPF_LAST]
    if dt != 0.0:
        cores = CPI[c, CP_CORES]
        CPF[c, CPF_BUSY] += (n if n < cores else cores) * dt
        CPF[c, CPF_JOBS] += n * dt
        CPF[c, CPF_LAST] = now
    CPI[c, CP_N] = n - 1
    CPI[c, CP_COMPLETED] += 1
    station.computed(S, j)


@njit(cache=True)
def _unrepresentable(now, left, rate):
    """Whether the wakeup for `left` virtual work at `rate` would come due at `now` itself:
    the reference's `ProcessorSharingCPU._unrepresentable` (the clock's step passes EPS at
    2**14 s, and the departure would be rescheduled at the same instant for ever)."""
    return now + left / rate == now


@njit(cache=True)
def _depart(S, c, seq, now):
    JI, CPI, CPF = S.JI, S.CPI, S.CPF
    if CPI[c, CP_WAKEUP] != seq:
        return  # cancelled
    CPI[c, CP_WAKEUP] = -1
    advance(S, c, now)
    JF, heap, scratch = S.JF, S.CPH[c], S.SCRATCH
    virtual = CPF[c, CPF_VIRTUAL]
    limit = virtual + EPS * (1.0 + abs(virtual))
    k = 0
    size = CPI[c, CP_HEAP_N]
    # Everything whose tag has been reached leaves now (ties and rounding).
    while size > 0 and JF[heap[0], JF_TAG] <= limit:
        scratch[k] = heap[0]
        k += 1
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            tag_siftup(heap, JF, JI, size, 0)
    if (
        k == 0
        and size > 0
        and _unrepresentable(now, JF[heap[0], JF_TAG] - virtual, CPF[c, CPF_RATE])
    ):
        scratch[0] = heap[0]  # the clock cannot reach its tag: it leaves now (`_unrepresentable`)
        k = 1
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            tag_siftup(heap, JF, JI, size, 0)
    CPI[c, CP_HEAP_N] = size
    if k > 0 and JF[scratch[k - 1], JF_TAG] > virtual:
        CPF[c, CPF_VIRTUAL] = JF[scratch[k - 1], JF_TAG]
    CPI[c, CP_N] -= k
    CPI[c, CP_COMPLETED] += k
    if CPI[c, CP_N] <= CPI[c, CP_CORES]:
        unshare(S, c, now)
    else:
        CPF[c, CPF_RATE] = CPF[c, CPF_SPEED] * CPI[c, CP_CORES] / CPI[c, CP_N]
        reschedule(S, c)
    for i in range(k):
        station.computed(S, scratch[i])
        populations.ab_send_queued(S)  # before the next departure's continuation, as inside
