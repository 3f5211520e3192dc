"""The recorder (`sim.observe.recorder`): batch rows, the cumulative log-binned histogram,
the checkpoint grid of an MSER run, --timeseries samples; and their events.
"""

from __future__ import annotations

from numba import njit, objmode

from sim.engines.compiled.kernel import calendar, classed, jvm, streams
from sim.engines.compiled.kernel.layout import (
    B_DISPATCHED,
    B_STATION,
    BN_ACQUIRE_TIMEOUTS,
    BN_EXIT_CLOSES,
    BN_IDLE,
    BN_IDLE_CLOSES,
    BN_JK_ABANDONED,
    BN_JK_ABANDONED_SERVED,
    BN_JK_ATTEMPTS,
    BN_JK_CONNECT_FAILURES,
    BN_JK_REPLY_TIMEOUTS,
    BN_OPEN,
    BN_POOLED,
    BN_READ_TIMEOUTS,
    BN_TTL_CLOSES,
    BN_WAITERS,
    C_CANDIDATES,
    C_CELLS,
    C_FRONT,
    C_HAS_DISPATCHER,
    C_MAX_BATCHES,
    C_MOD_JK,
    C_N_CPUS,
    C_N_MEMBERS,
    C_N_NODES,
    C_N_POOLS,
    C_N_STATIONS,
    C_N_TIERS,
    CF_GRID_STEP,
    CF_SAMPLE_INTERVAL,
    CP_COMPLETED,
    CP_CORES,
    CP_DEDICATED,
    CP_N,
    CPF_BUSY,
    CPF_JOBS,
    CPF_LAST,
    CPF_SIGNED,
    EV_CHECKPOINT,
    EV_SAMPLE,
    EV_STOP,
    EV_WARMUP,
    F_NOW,
    F_RESPONSE_SUM,
    I_ARRIVED,
    I_BATCH,
    I_CK_N,
    I_COMPLETED,
    I_ERRORS,
    I_FAILED,
    I_FRONT_502,
    I_FRONT_503,
    I_FRONT_504,
    I_FRONT_AFTER_ERROR,
    I_FRONT_CLOSED,
    I_FRONT_NO_WORKER,
    I_FRONT_OPEN,
    I_FRONT_OPENED,
    I_KLOG_N,
    I_LATE,
    I_NROWS,
    I_PENDING,
    I_RECORDING,
    I_RETRIED,
    I_SESS_CREATED,
    I_SESS_LOST,
    I_STOP,
    I_STOP_AFTER,
    I_STOP_AT,
    I_SYN,
    I_TIMED_OUT,
    PO_ACQUIRED,
    PO_IN_USE,
    PO_REFUSED,
    PO_WAITING,
    POF_BUSY,
    POF_QUEUE,
    POF_WAIT,
    RP_BYTES_SENT,
    RP_CREDIT_WAITS,
    RP_REPLICATED,
    RP_WAIT_SUM,
    ST_FAILED,
    ST_IN_PROGRESS,
    ST_VISITS,
    STF_DOWNSTREAM,
    STF_RESIDENCE,
    STF_WAIT,
)


@njit(cache=True)
def sample(S, first):
    """--timeseries (`sim.engines.reference.replication._sample_periodically`): the recorder's row now,
    handed to the driver, which turns the window since the last sample into metrics."""
    snapshot(S, S.TSROW)
    token = S.TOKEN
    with objmode():
        streams.emit_sample(token, first)


@njit(cache=True)
def snapshot(S, v):
    """The recorder's row (`Recorder.snapshot`) into v: the base counts, then each probe's
    fields in the reference's order (`plan.STATION_FIELDS`, ...).  It only reads the state: a
    CPU's clock is not advanced, as the reference's `counters` does not advance it."""
    counters, F, C = S.I, S.F, S.C
    STI, STF, POI, POF, CPI, CPF = S.STI, S.STF, S.POI, S.POF, S.CPI, S.CPF
    now = F[F_NOW]
    v[0] = now
    v[1] = counters[I_COMPLETED]
    v[2] = F[F_RESPONSE_SUM]
    v[3] = counters[I_ARRIVED]
    v[4] = counters[I_TIMED_OUT]
    v[5] = counters[I_ERRORS]
    v[6] = counters[I_FAILED]
    v[7] = counters[I_RETRIED]
    v[8] = counters[I_LATE]
    v[9] = counters[I_SYN]
    k = 10
    for s in range(C[C_N_STATIONS]):
        v[k] = STI[s, ST_VISITS]
        v[k + 1] = STF[s, STF_WAIT]
        v[k + 2] = STF[s, STF_RESIDENCE]
        v[k + 3] = STF[s, STF_DOWNSTREAM]
        v[k + 4] = STI[s, ST_FAILED]
        v[k + 5] = STI[s, ST_IN_PROGRESS]
        k += 6
    for p in range(C[C_N_POOLS]):
        v[k] = POF[p, POF_BUSY] + POI[p, PO_IN_USE] * now
        v[k + 1] = POF[p, POF_QUEUE] + POI[p, PO_WAITING] * now
        v[k + 2] = POI[p, PO_ACQUIRED]
        v[k + 3] = POI[p, PO_REFUSED]
        v[k + 4] = POF[p, POF_WAIT]
        v[k + 5] = POI[p, PO_IN_USE]
        v[k + 6] = POI[p, PO_WAITING]
        k += 7
    for c in range(C[C_N_CPUS]):
        n = CPI[c, CP_N]
        if CPI[c, CP_DEDICATED]:
            area = CPF[c, CPF_SIGNED] + n * now
            v[k] = area
            v[k + 1] = area
        else:
            dt = now - CPF[c, CPF_LAST]
            if dt != 0.0 and n:
                cores = CPI[c, CP_CORES]
                v[k] = CPF[c, CPF_BUSY] + (n if n < cores else cores) * dt
                v[k + 1] = CPF[c, CPF_JOBS] + n * dt
            else:
                v[k] = CPF[c, CPF_BUSY]
                v[k + 1] = CPF[c, CPF_JOBS]
        v[k + 2] = CPI[c, CP_COMPLETED]
        k += 3
    RP = S.RP
    for t in range(C[C_N_TIERS]):  # replication.<tier>: ReplicationProbe's fields
        v[k] = RP[t, RP_REPLICATED]
        v[k + 1] = RP[t, RP_BYTES_SENT]
        v[k + 2] = RP[t, RP_WAIT_SUM]
        v[k + 3] = RP[t, RP_CREDIT_WAITS]
        k += 4
    if C[C_FRONT] >= 0:
        # proxy.connections (opened, closed, closed_after_error, closed_no_worker, open) and
        # proxy.responses (500, 502, 503, 504)
        v[k] = counters[I_FRONT_OPENED]
        v[k + 1] = counters[I_FRONT_CLOSED]
        v[k + 2] = counters[I_FRONT_AFTER_ERROR]
        v[k + 3] = counters[I_FRONT_NO_WORKER]
        v[k + 4] = counters[I_FRONT_OPEN]
        v[k + 5] = 0.0
        v[k + 6] = counters[I_FRONT_502]
        v[k + 7] = counters[I_FRONT_503]
        v[k + 8] = counters[I_FRONT_504]
        k += 9
    k = jvm.snapshot(S, v, k)  # each JVM's probe (`Jvm.fields`)
    BN = S.BN
    for node in range(C[C_N_NODES]):
        if BN[node, BN_POOLED]:  # the node's BackendPool probe (plan.BACKEND_FIELDS)
            v[k] = BN[node, BN_READ_TIMEOUTS]
            v[k + 1] = BN[node, BN_ACQUIRE_TIMEOUTS]
            v[k + 2] = BN[node, BN_IDLE_CLOSES]
            v[k + 3] = BN[node, BN_TTL_CLOSES]
            v[k + 4] = BN[node, BN_EXIT_CLOSES]
            v[k + 5] = BN[node, BN_OPEN]
            v[k + 6] = BN[node, BN_IDLE]
            station = S.BI[node, B_STATION]
            awaiting = BN[node, BN_OPEN] - BN[node, BN_IDLE] - STI[station, ST_IN_PROGRESS]
            v[k + 7] = awaiting if awaiting > 0 else 0
            v[k + 8] = BN[node, BN_WAITERS]
            k += 9
            if C[C_MOD_JK]:  # JkBackendPool's own fields (plan.JK_FIELDS)
                v[k] = BN[node, BN_JK_ATTEMPTS]
                v[k + 1] = BN[node, BN_JK_REPLY_TIMEOUTS]
                v[k + 2] = BN[node, BN_JK_CONNECT_FAILURES]
                v[k + 3] = BN[node, BN_JK_ABANDONED]
                v[k + 4] = BN[node, BN_JK_ABANDONED_SERVED]
                k += 5
    if C[C_HAS_DISPATCHER]:
        BI = S.BI
        for m in range(C[C_N_MEMBERS]):
            v[k] = BI[m, B_DISPATCHED]
            k += 1
        for _ in range(4):  # failovers, refused_down, unavailable, sticky_refused
            v[k] = 0.0
            k += 1
        v[k] = counters[I_SESS_CREATED]
        v[k + 1] = counters[I_SESS_LOST]
        k += 2
    classed.snapshot_classes(S, v, k)


@njit(cache=True)
def copy_histogram(histogram, rows, row):
    """rows[row, :] = histogram, element by element, so that numba never has to convert a
    borrowed array into its own array type."""
    for b in range(histogram.shape[0]):
        rows[row, b] = histogram[b]


@njit(cache=True)
def take(S):
    """A point of the progress grid (`sim.observe.checkpoints.Checkpoints._take`): time,
    completions and summed response always; the full row and the histogram at the candidate
    window starts (the first points)."""
    counters = S.I
    n = counters[I_CK_N]
    grid = S.CKF
    if n >= grid.shape[0]:
        return
    grid[n, 0] = S.F[F_NOW]
    grid[n, 1] = counters[I_COMPLETED]
    grid[n, 2] = S.F[F_RESPONSE_SUM]
    if n < S.C[C_CANDIDATES]:
        snapshot(S, S.CKROWS[n])
        copy_histogram(S.HIST, S.CKHIST, n)
    counters[I_CK_N] = n + 1


@njit(cache=True)
def _append_row(S):
    counters = S.I
    row = counters[I_NROWS]
    snapshot(S, S.ROWS[row])
    copy_histogram(S.HIST, S.HROWS, row)
    S.KROWS[row] = counters[I_KLOG_N]
    counters[I_NROWS] = row + 1


@njit(cache=True)
def boundary(S):
    counters = S.I
    _append_row(S)
    n = counters[I_NROWS]
    if n > 2 * S.C[C_MAX_BATCHES]:
        # Merge adjacent batches: keep the base row and every second boundary.
        rows, hrows = S.ROWS, S.HROWS
        kept = 0
        for i in range(0, n, 2):
            rows[kept, :] = rows[i, :]
            hrows[kept, :] = hrows[i, :]
            S.KROWS[kept] = S.KROWS[i]
            kept += 1
        counters[I_NROWS] = kept
        counters[I_BATCH] *= 2


@njit(cache=True)
def start_recording(S):
    counters = S.I
    counters[I_RECORDING] = 1
    if counters[I_STOP_AFTER] >= 0:
        counters[I_STOP_AT] = counters[I_COMPLETED] + counters[I_STOP_AFTER]
    counters[I_PENDING] = 0
    _append_row(S)


@njit(cache=True)
def finish_recording(S):
    counters = S.I
    if not counters[I_RECORDING]:
        start_recording(S)
        return
    last = S.ROWS[counters[I_NROWS] - 1]
    if S.F[F_NOW] > last[0] or counters[I_COMPLETED] > last[1]:
        _append_row(S)


# --------------------------------------------------------------------------- events
EVENTS = (EV_WARMUP, EV_STOP, EV_SAMPLE, EV_CHECKPOINT)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """The end of a fixed warm-up, the stop rule's stop, a --timeseries sample, a point of
    the checkpoint grid."""
    if kind == EV_WARMUP:
        start_recording(S)
    elif kind == EV_STOP:
        S.I[I_STOP] = 1
    elif kind == EV_SAMPLE:
        sample(S, 0)
        calendar.push(S, now + S.CF[CF_SAMPLE_INTERVAL], EV_SAMPLE, 0)
    else:
        take(S)
        if arg + 1 < S.C[C_CELLS]:  # the last point is the end of the run
            calendar.push(S, now + S.CF[CF_GRID_STEP], EV_CHECKPOINT, arg + 1)
