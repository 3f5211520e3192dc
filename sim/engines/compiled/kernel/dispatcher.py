"""The balancer (`sim.tiers.balancer.dispatcher`, its policies in
`sim.tiers.balancer.policies`): sticky sessions, then the policy's pick among the members.
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import session_replication, station, streams
from sim.engines.compiled.kernel.layout import (
    B_DISPATCHED,
    B_OUTSTANDING,
    B_STATION,
    BF_LBSTATUS,
    BF_WEIGHT,
    C_KEEPS_SESSIONS,
    C_LEVELS,
    C_N_MEMBERS,
    C_POLICY,
    C_ST_BALANCER,
    C_STICKY,
    I_RR_NEXT,
    I_SESS_CREATED,
    I_SESS_LOST,
    POLICY_BYREQUESTS,
    POLICY_LEAST_OUTSTANDING,
    POLICY_RANDOM,
    POLICY_ROUND_ROBIN,
    POLICY_SQF,
    R_USER,
    U_ROUTE,
)


@njit(cache=True)
def _pick(S):
    C, counters = S.C, S.I
    n = C[C_N_MEMBERS]
    policy = C[C_POLICY]
    if policy == POLICY_ROUND_ROBIN:
        index = counters[I_RR_NEXT]
        counters[I_RR_NEXT] = (index + 1) % n
        return index
    if policy == POLICY_RANDOM:
        return int(streams.draw(S, C[C_ST_BALANCER]) * n)
    if policy == POLICY_BYREQUESTS:
        BF = S.BF
        total = 0.0
        best = -1
        for i in range(n):
            BF[i, BF_LBSTATUS] += BF[i, BF_WEIGHT]
            total += BF[i, BF_WEIGHT]
            if best < 0 or BF[i, BF_LBSTATUS] > BF[best, BF_LBSTATUS]:
                best = i
        BF[best, BF_LBSTATUS] -= total
        return best
    if policy in (POLICY_SQF, POLICY_LEAST_OUTSTANDING):
        return _pick_by_load(S, policy)
    return 0  # static: the first active member


@njit(cache=True)
def dispatch(S, j):
    """The balancer sends the request of job j's row to a member (j is the member's visit)."""
    C, UI, BI, counters = S.C, S.UI, S.BI, S.I
    user = S.RI[j // C[C_LEVELS], R_USER]
    keeps = C[C_KEEPS_SESSIONS]
    member = -1
    if keeps:
        route = UI[user, U_ROUTE]
        if route >= 0 and C[C_STICKY]:
            member = route
            if C[C_POLICY] == POLICY_BYREQUESTS:  # a sticky request still counts
                BF = S.BF
                total = 0.0
                for i in range(C[C_N_MEMBERS]):
                    BF[i, BF_LBSTATUS] += BF[i, BF_WEIGHT]
                    total += BF[i, BF_WEIGHT]
                BF[member, BF_LBSTATUS] -= total
    if member < 0:
        member = _pick(S)
    BI[member, B_OUTSTANDING] += 1
    BI[member, B_DISPATCHED] += 1
    if keeps:
        # The session table: a session found on another member is lost and made anew.
        route = UI[user, U_ROUTE]
        if route != member:
            if route < 0:
                counters[I_SESS_CREATED] += 1
            elif not session_replication.holds_replica(S, route, member):
                counters[I_SESS_LOST] += 1
                counters[I_SESS_CREATED] += 1
            UI[user, U_ROUTE] = member
    station.forward(S, j, BI[member, B_STATION], member)


# The load-aware policies (`sim.tiers.balancer.policies.least_load`), over the live count of
# requests each member has not answered yet (B_OUTSTANDING: the dispatcher's `outstanding`;
# without `balancer.report_interval_s`, which stays on the reference engine, it is what they
# read).  Every member is usable: members fail only through `backends.N.events`.
@njit(cache=True)
def _pick_by_load(S, policy):
    """lighttpd `sqf` (ShortestQueueFirst): the fewest outstanding, the first on ties; or
    `least_outstanding` (LeastOutstanding): the fewest, ties to the first from a start that
    rotates by one at every pick."""
    BI = S.BI
    n = S.C[C_N_MEMBERS]
    start = 0
    if policy == POLICY_LEAST_OUTSTANDING:
        counters = S.I
        start = counters[I_RR_NEXT] % n
        counters[I_RR_NEXT] = start + 1
    best = start
    best_load = BI[best, B_OUTSTANDING]
    for offset in range(1, n):
        i = (start + offset) % n
        if BI[i, B_OUTSTANDING] < best_load:
            best, best_load = i, BI[i, B_OUTSTANDING]
    return best
