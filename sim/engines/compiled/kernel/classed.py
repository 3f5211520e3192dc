"""Request classes and session scripts (`sim.tiers.classed`, `sim.tiers.clients.scripts`)."""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import streams
from sim.engines.compiled.kernel.layout import (
    C_CLASS_CHOICE,
    C_CLASSES,
    C_CLIENT,
    C_LEVELS,
    C_PATH_LEN,
    C_ST_MIX,
    C_ST_THINK,
    CHOICE_CHAIN,
    CHOICE_MIX,
    CHOICE_SCRIPT,
    CHOICE_USERS,
    CLIENT_SESSIONS,
    I_KLOG_N,
    JVF_FACTOR,
    K_ARRIVED,
    K_COMPLETED,
    K_MIX,
    K_RESPONSE_SUM,
    K_RETRIED,
    K_WRITES,
    N_OUTCOMES,
    R_ATTEMPT,
    R_CLASS,
    R_USER,
    ST_BURST,
    ST_CALLS,
    ST_JVM,
    STEP_CLASS,
    STEP_THINK,
    U_REMAINING,
    U_STEP,
)


@njit(cache=True, inline="always")  # numba's own inlining: LLVM left it a call (2-3 %)
def burst(S, s, j):
    """Visit j's next burst at station s: its class's sampler (`ClassedVisit.burst`), times
    its node's JVM's JIT factor of the moment (`Jvm.burst_sampler` wraps the classes' samplers
    too)."""
    C = S.C
    stream = S.STI[s, ST_BURST] if C[C_CLASSES] == 0 else S.KST[s, S.RI[j // C[C_LEVELS], R_CLASS]]
    demand = streams.draw(S, stream)
    v = S.STI[s, ST_JVM]
    if v >= 0:
        return demand * S.JVF[v, JVF_FACTOR]
    return demand


@njit(cache=True)
def calls(S, s, j):
    """Visit j's downstream calls at station s: its class's (`classed._start`)."""
    C = S.C
    if C[C_CLASSES] == 0:
        return S.STI[s, ST_CALLS]
    return S.KST[s, C[C_CLASSES] + S.RI[j // C[C_LEVELS], R_CLASS]]


@njit(cache=True)
def _bound(S, n, value):
    """bisect_right over the classes' bounds (KF[:, K_MIX]), the last class at most."""
    KF = S.KF
    k = 0
    while k < n - 1 and KF[k, K_MIX] <= value:
        k += 1
    return k


@njit(cache=True)
def _script_step(S, user):
    """ScriptChoice.choose: the user's next step (a new path when its own is used up)."""
    C, UI = S.C, S.UI
    if C[C_CLIENT] == CLIENT_SESSIONS:  # drawn whole at the session's start: its length
        return C[C_PATH_LEN] - 1 - UI[user, U_REMAINING]
    step = UI[user, U_STEP]
    if step < 0 or step >= C[C_PATH_LEN]:
        step = 0
    UI[user, U_STEP] = step + 1
    return step


@njit(cache=True)
def choose_class(S, r):
    """`Clients.send` with classes: the first attempt picks the request's class (a retry
    keeps it), which counts the arrival (and the retry)."""
    C, RI, KF = S.C, S.RI, S.KF
    n = C[C_CLASSES]
    if RI[r, R_CLASS] < 0:
        choice = C[C_CLASS_CHOICE]
        if choice == CHOICE_MIX:  # MixPerRequest
            klass = _bound(S, n, streams.draw(S, C[C_ST_MIX]))
        elif choice == CHOICE_USERS:  # MixPerUser: the first n_1 users are class 1, ...
            klass = _bound(S, n, float(RI[r, R_USER]))
        elif choice == CHOICE_CHAIN:  # ScriptChoice with transitions
            user = RI[r, R_USER]
            step = streams.chain_choose(S.TOKEN, user)
            S.UI[user, U_STEP] = step
            klass = S.KSTEP[step, STEP_CLASS]
        else:
            klass = S.KSTEP[_script_step(S, RI[r, R_USER]), STEP_CLASS]
        RI[r, R_CLASS] = klass
    klass = RI[r, R_CLASS]
    KF[klass, K_ARRIVED] += 1
    if RI[r, R_ATTEMPT]:
        KF[klass, K_RETRIED] += 1


@njit(cache=True)
def think_stream(S, user):
    """ClassChoice.think: a script's step has its own think time, else the population's."""
    C = S.C
    choice = C[C_CLASS_CHOICE]
    if C[C_CLASSES] == 0 or choice < CHOICE_SCRIPT:
        return C[C_ST_THINK]
    if choice == CHOICE_CHAIN:
        last = S.UI[user, U_STEP]
    elif C[C_CLIENT] == CLIENT_SESSIONS:
        last = C[C_PATH_LEN] - 1 - S.UI[user, U_REMAINING]
    else:
        last = S.UI[user, U_STEP] - 1
    return S.KSTEP[last, STEP_THINK]


@njit(cache=True)
def class_count(S, r, outcome):
    """One more `outcome` (a K_* column) for request r's class."""
    if S.C[C_CLASSES]:
        S.KF[S.RI[r, R_CLASS], outcome] += 1


@njit(cache=True)
def class_completed(S, r, response):
    """ClassStats.complete, after the recorder's (a batch row taken now precedes it)."""
    if S.C[C_CLASSES] == 0:
        return
    KF = S.KF
    klass = S.RI[r, R_CLASS]
    KF[klass, K_COMPLETED] += 1
    KF[klass, K_RESPONSE_SUM] += response
    n = S.I[I_KLOG_N]
    S.KLOG[n, 0] = klass
    S.KLOG[n, 1] = response
    S.I[I_KLOG_N] = n + 1


@njit(cache=True)
def writes_session(S, j):
    """ClassedAfterRequest: whether visit j's class writes the replicated session (-1: the
    tier's trigger decides, as without classes)."""
    C = S.C
    if C[C_CLASSES] == 0:
        return -1
    return int(S.KF[S.RI[j // C[C_LEVELS], R_CLASS], K_WRITES])


@njit(cache=True)
def snapshot_classes(S, v, k):
    """The classes' probes (`ClassProbe.counters`), the last columns of the recorder's row."""
    KF = S.KF
    for klass in range(S.C[C_CLASSES]):
        for outcome in range(N_OUTCOMES):
            v[k + outcome] = KF[klass, outcome]
        k += N_OUTCOMES
