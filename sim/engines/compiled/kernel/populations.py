"""The clients (`sim.tiers.clients.populations`): closed users, open arrivals, sessions and
ab's loops (run again: `clients.repeat`); their timeouts, retries and SYN retransmissions;
the load generator's CPU (`clients.host`); and their events.  A closed ramp and an open
schedule of rates are `ramps`'.
"""

from __future__ import annotations

import math

from numba import njit

from sim.engines.compiled.kernel import (
    calendar,
    classed,
    client_connections,
    cpu,
    dispatcher,
    jvm,
    ramps,
    recorder,
    station,
    streams,
)
from sim.engines.compiled.kernel.layout import (
    ABANDONED,
    ANSWERED,
    C_CLASSES,
    C_CLIENT,
    C_CLIENT_KEEP_ALIVE,
    C_ENTRY_KIND,
    C_ENTRY_TARGET,
    C_FIXED_LENGTH,
    C_FRONT,
    C_HAS_TIMEOUT,
    C_HOST_STATION,
    C_JVM_COOKIES,
    C_LEVELS,
    C_MAX_INSIDE,
    C_MAX_RETRIES,
    C_PER_USER,
    C_REPEAT,
    C_RETRY_ON_ERROR,
    C_RETRY_ON_TIMEOUT,
    C_ST_ARRIVALS,
    C_ST_CONNECT,
    C_ST_HOST_CONNECTION,
    C_ST_HOST_DEMAND,
    C_ST_LENGTH,
    C_SYN_RETRIES,
    C_TOTAL,
    C_USERS,
    CF_BACKOFF,
    CF_BIN_LOG_GROWTH,
    CF_BIN_MIN,
    CF_MAX_BACKOFF,
    CF_MULTIPLIER,
    CF_RTO,
    CF_TIMEOUT,
    CLIENT_CLOSED,
    CLIENT_OPEN,
    CLIENT_SESSIONS,
    CN_CLIENT_CLOSED,
    ENTRY_BALANCER,
    EV_ARRIVAL,
    EV_CONNECTED,
    EV_RESEND,
    EV_SESSION_ARRIVAL,
    EV_SESSION_THINK,
    EV_SYN,
    EV_THINK,
    EV_TIMEOUT,
    F_FINISHED_AT,
    F_NOW,
    F_RESPONSE_SUM,
    FREE,
    I_AB_BATCH,
    I_AB_HEAD,
    I_AB_MARKS,
    I_AB_WAITING,
    I_ARRIVED,
    I_BATCH,
    I_COMPLETED,
    I_ERRORS,
    I_FAILED,
    I_FINISHED,
    I_FRONT_OPEN,
    I_GENERATED,
    I_IN_FLIGHT,
    I_ISSUED,
    I_LATE,
    I_MARK_NEXT,
    I_OUTCOMES,
    I_PENDING,
    I_RECORDING,
    I_REQ_USED,
    I_RETRIED,
    I_RFREE_TOP,
    I_RUNAWAY,
    I_SESS_ENDED,
    I_SESS_STARTED,
    I_STOP,
    I_STOP_AT,
    I_STOP_ON_CLOSE,
    I_SYN,
    I_THINKING,
    I_TIMED_OUT,
    I_UFREE_TOP,
    I_USERS_DONE,
    I_USR_USED,
    IN_FLIGHT,
    J_BCONN,
    J_CALLS_LEFT,
    J_PHASE,
    J_STATION,
    K_ERRORS,
    K_FAILED,
    K_LATE,
    K_TIMED_OUT,
    NEVER,
    PENDING,
    PHASE_CLIENT,
    PHASE_VISIT,
    R_ATTEMPT,
    R_CHILD,
    R_CLASS,
    R_CONN,
    R_STATE,
    R_STATUS,
    R_SYN,
    R_TIMER,
    R_USER,
    REPLY_FAIL,
    REPLY_OK,
    REPLY_REFUSED,
    RF_SENT,
    ST_CPU,
    STOPPED,
    U_CONN,
    U_CYCLING,
    U_REFS,
    U_REMAINING,
    U_ROUTE,
    U_SENT,
)


@njit(cache=True)
def _ab_queue(S, loop):
    """An ab loop to send once the current continuation returns (`ab_send_queued`)."""
    counters = S.I
    queue = S.UFREE
    tail = (counters[I_AB_HEAD] + counters[I_AB_WAITING]) % queue.shape[0]
    queue[tail] = loop
    counters[I_AB_WAITING] += 1


@njit(cache=True)
def ab_mark(S):
    """ab run again: the recorder's row and histogram at a run's start or end
    (`_record_batches`' marks)."""
    counters = S.I
    m = counters[I_AB_MARKS]
    recorder.snapshot(S, S.BROWS[m])
    recorder.copy_histogram(S.HIST, S.BHIST, m)
    counters[I_AB_MARKS] = m + 1


@njit(cache=True)
def _ab_run_ended(S):
    """ApacheBench.done at a run's last outcome: its window ends; ab starts again (its -c
    loops in order, the servers' state carried over) until `repeat` runs were made."""
    C, counters = S.C, S.I
    if C[C_REPEAT] > 1:
        ab_mark(S)
    if counters[I_AB_BATCH] >= C[C_REPEAT]:
        _clients_finished(S)
        return
    counters[I_AB_BATCH] += 1
    counters[I_ISSUED] = 0
    counters[I_OUTCOMES] = 0
    for loop in range(C[C_USERS]):
        _ab_queue(S, loop)


@njit(cache=True)
def alloc_request(S, user, attempt, sent):
    counters, RI, RF = S.I, S.RI, S.RF
    top = counters[I_RFREE_TOP] - 1
    counters[I_RFREE_TOP] = top
    counters[I_REQ_USED] += 1
    r = S.RFREE[top]
    RI[r, R_STATE] = PENDING
    RI[r, R_USER] = user
    RI[r, R_ATTEMPT] = attempt
    RI[r, R_SYN] = 0
    RI[r, R_TIMER] = -1
    RI[r, R_CONN] = -1
    RI[r, R_CHILD] = -1
    RI[r, R_STATUS] = 0
    RI[r, R_CLASS] = -1
    RF[r, RF_SENT] = sent
    JI, levels = S.JI, S.C[C_LEVELS]
    for j in range(r * levels, r * levels + levels):
        JI[j, J_BCONN] = -1
    if user >= 0 and S.C[C_CLIENT] == CLIENT_SESSIONS:
        S.UI[user, U_REFS] += 1
    return r


@njit(cache=True)
def free_request(S, r):
    counters = S.I
    S.RI[r, R_STATE] = FREE
    c = S.RI[r, R_CONN]
    if c >= 0:
        S.RI[r, R_CONN] = -1
        client_connections.conn_unref(S, c)
    user = S.RI[r, R_USER]
    if user >= 0 and S.C[C_CLIENT] == CLIENT_SESSIONS:
        _session_unref(S, user)
    top = counters[I_RFREE_TOP]
    S.RFREE[top] = r
    counters[I_RFREE_TOP] = top + 1
    counters[I_REQ_USED] -= 1


@njit(cache=True)
def _session_unref(S, session):
    """One reference to the session's row fewer; with none left the row is free."""
    UI, counters = S.UI, S.I
    UI[session, U_REFS] -= 1
    if UI[session, U_REFS] == 0:
        if S.C[C_JVM_COOKIES]:  # nothing of the session is left to touch its sessions
            jvm.session_ended(S, session)
        top = counters[I_UFREE_TOP]
        S.UFREE[top] = session
        counters[I_UFREE_TOP] = top + 1
        counters[I_USR_USED] -= 1


@njit(cache=True)
def enter(S, r):
    C = S.C
    j = r * C[C_LEVELS]
    if C[C_ENTRY_KIND] == ENTRY_BALANCER:
        dispatcher.dispatch(S, j)
    else:
        station.arrive(S, j, C[C_ENTRY_TARGET], -1, -1)


@njit(cache=True)
def send(S, r):
    counters, C, CF, RI = S.I, S.C, S.CF, S.RI
    now = S.F[F_NOW]
    inside = counters[I_ARRIVED] - counters[I_COMPLETED] - counters[I_ERRORS] - counters[I_LATE]
    if inside > C[C_MAX_INSIDE]:
        counters[I_RUNAWAY] = inside
        counters[I_STOP] = 1
        return
    new_connection = True
    if C[C_CLIENT_KEEP_ALIVE]:
        new_connection = client_connections.connection_for(S, r)
    RI[r, R_STATE] = IN_FLIGHT
    counters[I_IN_FLIGHT] += 1
    counters[I_ARRIVED] += 1
    if RI[r, R_ATTEMPT]:
        counters[I_RETRIED] += 1
    if C[C_CLASSES]:
        classed.choose_class(S, r)
    if C[C_HAS_TIMEOUT]:
        # The timer covers the whole attempt, connection set-up included.
        RI[r, R_TIMER] = calendar.push(S, now + CF[CF_TIMEOUT], EV_TIMEOUT, r)
    if C[C_HOST_STATION] >= 0:
        _host_run(S, r, new_connection)
    elif new_connection and C[C_ST_CONNECT] >= 0:
        calendar.push(S, now + streams.draw(S, C[C_ST_CONNECT]), EV_CONNECTED, r)
    else:
        enter(S, r)


@njit(cache=True)
def _record(S, response):
    """Recorder.complete: counts, the histogram, batch boundaries, the stop rule."""
    counters, F, CF = S.I, S.F, S.CF
    counters[I_COMPLETED] += 1
    F[F_RESPONSE_SUM] += response
    hist = S.HIST
    if response < CF[CF_BIN_MIN]:
        index = 0
    else:
        raw = math.floor(math.log(response / CF[CF_BIN_MIN]) / CF[CF_BIN_LOG_GROWTH]) + 1
        last = hist.shape[0] - 1
        index = int(raw) if raw < last else last
    hist[index] += 1
    if counters[I_RECORDING]:
        counters[I_PENDING] += 1
        if counters[I_PENDING] >= counters[I_BATCH]:
            recorder.boundary(S)
            counters[I_PENDING] = 0
    marks = S.MARKS
    m = counters[I_MARK_NEXT]
    if m < marks.shape[0] and counters[I_COMPLETED] >= marks[m]:
        # points of a grid of completions (Recorder.at_completions), after the batch row
        while m < marks.shape[0] and counters[I_COMPLETED] >= marks[m]:
            recorder.take(S)
            m += 1
        counters[I_MARK_NEXT] = m
    if counters[I_COMPLETED] >= counters[I_STOP_AT]:
        counters[I_STOP_AT] = NEVER
        counters[I_STOP] = 1


@njit(cache=True)
def _done(S, user):
    """The user's request has had its final outcome (answered, or given up)."""
    C, counters, UI = S.C, S.I, S.UI
    now = S.F[F_NOW]
    kind = C[C_CLIENT]
    if kind == CLIENT_CLOSED:
        if ramps.stops(S, user):
            return  # retired by its ramp: it sends no more
        counters[I_THINKING] += 1
        calendar.push(S, now + streams.draw(S, classed.think_stream(S, user)), EV_THINK, user)
    elif kind == CLIENT_SESSIONS:
        if UI[user, U_REMAINING] > 0:
            calendar.push(
                S, now + streams.draw(S, classed.think_stream(S, user)), EV_SESSION_THINK, user
            )
        else:
            counters[I_SESS_ENDED] += 1
            c = UI[user, U_CONN]
            if c >= 0:  # the session's connection lives on only for the front
                UI[user, U_CONN] = -1
                client_connections.conn_unref(S, c)
            UI[user, U_ROUTE] = -1  # the balancer forgets the session
            _session_unref(S, user)
            if counters[I_SESS_ENDED] == C[C_TOTAL]:  # clients.total_sessions
                _clients_finished(S)
    elif kind == CLIENT_OPEN:
        counters[I_OUTCOMES] += 1
        if counters[I_OUTCOMES] == C[C_TOTAL]:  # clients.total_requests
            _clients_finished(S)
    else:  # ab: the loop sends its next request at once, until -n requests had an outcome
        counters[I_OUTCOMES] += 1
        if counters[I_OUTCOMES] < C[C_TOTAL]:
            # Queued, and sent by the loop as soon as the continuation that ended the request
            # returns (`ab_send_queued`): sending from here would make the compiled functions
            # recursive (send -> reply -> done -> send), which numba's cache cannot load.  A
            # loop with nothing left to send is not queued (ab's `_issue` returns at once): a
            # run that starts again before the queue is served must not send for it.
            if counters[I_ISSUED] < C[C_TOTAL]:
                _ab_queue(S, user)
        else:
            _ab_run_ended(S)


@njit(cache=True)
def _clients_finished(S):
    """A finite workload's last outcome (`Clients._finish`): the observation window and
    `makespan` end now, and so does the run (`Kernel.stop`: after the current event)."""
    counters = S.I
    counters[I_FINISHED] = 1
    S.F[F_FINISHED_AT] = S.F[F_NOW]
    recorder.finish_recording(S)
    if S.C[C_FRONT] >= 0 and counters[I_FRONT_OPEN] > 0:
        # the run goes on until the front has closed its last client connection
        counters[I_STOP_ON_CLOSE] = 1
    else:
        counters[I_STOP] = 1


@njit(cache=True)
def closed_issue(S, user):
    """ClosedPopulation._issue: with clients.requests_per_user a user that has sent its
    requests stops, and the last user to stop ends the workload."""
    C, counters, UI = S.C, S.I, S.UI
    per_user = C[C_PER_USER]
    if per_user >= 0:
        sent = UI[user, U_SENT]
        if sent >= per_user:
            UI[user, U_CYCLING] = STOPPED  # done for good, even if its ramp calls it back
            counters[I_USERS_DONE] += 1
            if counters[I_USERS_DONE] == C[C_USERS]:
                _clients_finished(S)
            return
        UI[user, U_SENT] = sent + 1
    send(S, alloc_request(S, user, 0, S.F[F_NOW]))


@njit(cache=True)
def ab_send_queued(S):
    """The ab loops whose request has ended, in that order, each sending its next one (which
    may end at once, refused, and queue its loop again)."""
    counters = S.I
    queue = S.UFREE
    while counters[I_AB_WAITING]:
        head = counters[I_AB_HEAD]
        loop = queue[head]
        counters[I_AB_HEAD] = (head + 1) % queue.shape[0]
        counters[I_AB_WAITING] -= 1
        ab_issue(S, loop)


@njit(cache=True)
def ab_issue(S, loop):
    """ApacheBench._issue: one of ab's -c loops sends, while fewer than -n were sent."""
    counters = S.I
    if counters[I_ISSUED] >= S.C[C_TOTAL]:
        return
    counters[I_ISSUED] += 1
    send(S, alloc_request(S, loop, 0, S.F[F_NOW]))


@njit(cache=True)
def after_failure(S, r, retry_allowed):
    C, CF, RI, counters = S.C, S.CF, S.RI, S.I
    attempt = RI[r, R_ATTEMPT]
    user = RI[r, R_USER]
    if retry_allowed and attempt < C[C_MAX_RETRIES]:
        delay = min(CF[CF_BACKOFF] * CF[CF_MULTIPLIER] ** float(attempt), CF[CF_MAX_BACKOFF])
        again = alloc_request(S, user, attempt + 1, S.RF[r, RF_SENT])
        RI[again, R_CLASS] = RI[r, R_CLASS]  # a retry keeps its request's class
        calendar.push(S, S.F[F_NOW] + delay, EV_RESEND, again)
    else:
        counters[I_FAILED] += 1  # the user gives up on this request
        classed.class_count(S, r, K_FAILED)
        _done(S, user)


@njit(cache=True)
def client_replied(S, r, code):
    C, CF, RI, counters = S.C, S.CF, S.RI, S.I
    now = S.F[F_NOW]
    if RI[r, R_STATE] != IN_FLIGHT:
        counters[I_LATE] += 1  # the server finished a request its client had abandoned
        classed.class_count(S, r, K_LATE)
        free_request(S, r)
        return
    if code == REPLY_REFUSED:
        # The SYN was dropped at a full listen queue: the kernel retransmits it after
        # 1, 2, 4 ... initial RTOs while the attempt (and its timer) stays in flight, and
        # after the last retransmission waits one more doubled RTO before connect() fails
        # (EV_SYN with R_SYN past the retries: 127 s with Linux's 6).
        syn = RI[r, R_SYN]
        RI[r, R_SYN] = syn + 1
        calendar.push(S, now + CF[CF_RTO] * float(2**syn), EV_SYN, r)
        return
    RI[r, R_STATE] = ANSWERED
    counters[I_IN_FLIGHT] -= 1
    RI[r, R_TIMER] = -1
    if code == REPLY_OK:
        response = now - S.RF[r, RF_SENT]
        _record(S, response)
        classed.class_completed(S, r, response)
        _done(S, RI[r, R_USER])
    else:
        counters[I_ERRORS] += 1
        classed.class_count(S, r, K_ERRORS)
        after_failure(S, r, C[C_RETRY_ON_ERROR])
    free_request(S, r)


@njit(cache=True)
def next_session_request(S, session):
    S.UI[session, U_REMAINING] -= 1
    send(S, alloc_request(S, session, 0, S.F[F_NOW]))


# The load generator's CPU (`clients.host`, `Clients.send`): before a request is sent, its
# client computes `clients.host.demand` (plus `connection_demand` on a new connection) on the
# generator's processor-shared cores -- ab's one process on one core queues its loops' work --
# and only then connects (`clients.connect`) or sends.  The timer started before, so the queue
# counts in the client's response time.  The work is the request's level-0 job (free until the
# request enters the servers) in phase PHASE_CLIENT, on a station row past the probed ones
# (C_HOST_STATION: no pool, no probe; the loop's burst events read its CPU from it).
@njit(cache=True)
def _host_run(S, r, new_connection):
    """Request r's work on the generator's CPU; it connects or is sent when that is done."""
    C, JI = S.C, S.JI
    work = streams.draw(S, C[C_ST_HOST_DEMAND])
    if new_connection and C[C_ST_HOST_CONNECTION] >= 0:
        work += streams.draw(S, C[C_ST_HOST_CONNECTION])
    j = r * C[C_LEVELS]
    s = C[C_HOST_STATION]
    JI[j, J_STATION] = s
    JI[j, J_PHASE] = PHASE_CLIENT
    JI[j, J_CALLS_LEFT] = 1 if new_connection else 0  # whether it connects next
    cpu.run(S, S.STI[s, ST_CPU], work, j)


@njit(cache=True)
def host_done(S, j):
    """`Clients._host_done_connect` / `_connected`: the generator's work for the request is
    done; it connects (a new connection with a set-up time) or goes to the servers now."""
    C, JI = S.C, S.JI
    r = j // C[C_LEVELS]
    new_connection = JI[j, J_CALLS_LEFT]
    JI[j, J_PHASE] = PHASE_VISIT
    if new_connection and C[C_ST_CONNECT] >= 0:
        calendar.push(S, S.F[F_NOW] + streams.draw(S, C[C_ST_CONNECT]), EV_CONNECTED, r)
    else:
        enter(S, r)


# --------------------------------------------------------------------------- events
EVENTS = (
    EV_THINK,
    EV_ARRIVAL,
    EV_TIMEOUT,
    EV_RESEND,
    EV_SYN,
    EV_CONNECTED,
    EV_SESSION_ARRIVAL,
    EV_SESSION_THINK,
)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """The clients' events: a think time over, an arrival (or a closed ramp's change), a
    response timeout, a retry, a SYN (re)sent, a connection made, a session's arrival or its
    next request."""
    counters, C = S.I, S.C
    if kind == EV_THINK:
        counters[I_THINKING] -= 1
        if not ramps.stops(S, arg):
            closed_issue(S, arg)
    elif kind == EV_ARRIVAL and C[C_CLIENT] == CLIENT_CLOSED:  # a change of the closed ramp
        user = ramps.change(S, arg)
        if user >= 0:
            closed_issue(S, user)
    elif kind == EV_ARRIVAL:
        counters[I_GENERATED] += 1
        send(S, alloc_request(S, counters[I_GENERATED], 0, now))
        total = C[C_TOTAL]
        if total < 0 or counters[I_GENERATED] < total:
            calendar.push(S, now + ramps.arrival_delay(S, now), EV_ARRIVAL, 0)
    elif kind == EV_TIMEOUT:
        _timed_out(S, arg, seq)
    elif kind == EV_RESEND:
        send(S, arg)
    elif kind == EV_SYN:
        _syn(S, arg, now)
    elif kind == EV_CONNECTED:
        enter(S, arg)
    elif kind == EV_SESSION_ARRIVAL:
        _session_arrival(S, now)
    else:
        next_session_request(S, arg)


@njit(cache=True)
def _timed_out(S, r, seq):
    RI, counters = S.RI, S.I
    if RI[r, R_TIMER] != seq or RI[r, R_STATE] != IN_FLIGHT:
        return  # answered (the timer was cancelled), or a later request's row
    RI[r, R_STATE] = ABANDONED  # the servers keep working on it
    RI[r, R_TIMER] = -1
    if RI[r, R_CONN] >= 0:  # the client hangs up on the connection
        S.CN[RI[r, R_CONN], CN_CLIENT_CLOSED] = 1
    counters[I_IN_FLIGHT] -= 1
    counters[I_TIMED_OUT] += 1
    classed.class_count(S, r, K_TIMED_OUT)
    after_failure(S, r, S.C[C_RETRY_ON_TIMEOUT])


@njit(cache=True)
def _syn(S, r, now):
    C = S.C
    if S.RI[r, R_STATE] != IN_FLIGHT:
        free_request(S, r)  # the client gave up while its kernel backed off
        return
    if S.RI[r, R_SYN] > C[C_SYN_RETRIES]:
        client_replied(S, r, REPLY_FAIL)  # connect() fails (ETIMEDOUT)
        return
    S.I[I_SYN] += 1
    if C[C_ST_CONNECT] >= 0:
        calendar.push(S, now + streams.draw(S, C[C_ST_CONNECT]), EV_CONNECTED, r)
    else:
        enter(S, r)


@njit(cache=True)
def _session_arrival(S, now):
    counters, C, UI = S.I, S.C, S.UI
    top = counters[I_UFREE_TOP] - 1
    counters[I_UFREE_TOP] = top
    counters[I_USR_USED] += 1
    session = S.UFREE[top]
    counters[I_SESS_STARTED] += 1
    UI[session, U_ROUTE] = -1
    UI[session, U_REFS] = 1  # the session itself
    if C[C_FIXED_LENGTH] >= 0:
        UI[session, U_REMAINING] = C[C_FIXED_LENGTH]
    elif C[C_ST_LENGTH] >= 0:
        UI[session, U_REMAINING] = int(streams.draw(S, C[C_ST_LENGTH]))
    else:  # a script's Markov chain: the session's path, drawn whole now
        UI[session, U_REMAINING] = streams.chain_begin(S.TOKEN, session)
    next_session_request(S, session)
    total = C[C_TOTAL]
    if total < 0 or counters[I_SESS_STARTED] < total:
        calendar.push(S, now + streams.draw(S, C[C_ST_ARRIVALS]), EV_SESSION_ARRIVAL, 0)
