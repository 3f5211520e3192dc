"""Session replication (`sim.tiers.cluster.session_replication`, synchronous): a visit
serializes its session, sends it to the nodes that hold replicas, and answers once they
acknowledge; the links and the shared segment are slot pools.
"""

from __future__ import annotations

from numba import njit

from sim.engines.compiled.kernel import calendar, classed, cpu, populations, slots, station, streams
from sim.engines.compiled.kernel.layout import (
    B_STATION,
    C_LEVELS,
    C_MULTICAST,
    C_N_NODES,
    C_N_TIERS,
    C_NET_RX0,
    C_NET_SWITCHED,
    C_NET_TX0,
    CF_NET_LATENCY,
    CF_NET_S_PER_BYTE,
    EV_LINK_ARRIVED,
    EV_LINK_SENT,
    F_NOW,
    FRAME_ACK_IN,
    FRAME_ACK_OUT,
    FRAME_IN,
    FRAME_OUT,
    GRANTED,
    J_LINK,
    J_OWNER,
    J_PEER,
    J_PENDING,
    J_PHASE,
    J_REP_LEFT,
    J_REP_TIER,
    J_STATION,
    JF_REP_STARTED,
    JF_TX_S,
    PHASE_APPLY,
    PHASE_SERIALIZE,
    PHASE_VISIT,
    RP_ACK_BYTES,
    RP_APPLY_S,
    RP_BUDDIES,
    RP_BYTES,
    RP_BYTES_SENT,
    RP_FRACTION,
    RP_INVOCATIONS,
    RP_REPLICATED,
    RP_SERIALIZE_S,
    RP_STREAM,
    RP_WAIT_SUM,
    RP_WEB,
    ST_CPU,
    ST_NODE,
)


@njit(cache=True)
def replicate(S, j, tier):
    """AfterRequest: each replicated tier in turn (from `tier`) replicates what visit j's
    request changed, with the probability its trigger gives, once per invocation; then the
    visit ends (its thread held throughout: synchronous replication)."""
    RP, JI, JF = S.RP, S.JI, S.JF
    while tier < S.C[C_N_TIERS]:
        count = 0
        stream = int(RP[tier, RP_STREAM])
        fraction = RP[tier, RP_FRACTION]
        writes = classed.writes_session(S, j)
        if writes < 0:  # the tier's trigger decides, a draw per invocation
            for _ in range(int(RP[tier, RP_INVOCATIONS])):
                if streams.draw(S, stream) < fraction:
                    count += 1
        elif writes:  # a class that writes the session replicates every invocation
            count = int(RP[tier, RP_INVOCATIONS])
        if count:
            JI[j, J_REP_TIER] = tier
            JI[j, J_REP_LEFT] = count
            JF[j, JF_REP_STARTED] = S.F[F_NOW]
            _serialize(S, j)
            return
        tier += 1
    station.finish(S, j, True)


@njit(cache=True)
def _serialize(S, j):
    """The sender serializes one message on its own CPU (Replicator._next)."""
    S.JI[j, J_PHASE] = PHASE_SERIALIZE
    c = S.STI[S.JI[j, J_STATION], ST_CPU]
    cpu.run(S, c, S.RP[S.JI[j, J_REP_TIER], RP_SERIALIZE_S], j)


@njit(cache=True)
def holds_replica(S, home, member):
    """SessionTable.replicated: does `member` hold a copy of the sessions made on `home`?
    Every web-tier replication sends them to its receivers."""
    RP = S.RP
    n = S.C[C_N_NODES]
    for t in range(S.C[C_N_TIERS]):
        if RP[t, RP_WEB]:
            buddies = int(RP[t, RP_BUDDIES])
            if buddies == 0 or 1 <= (member - home) % n <= buddies:
                return True
    return False


@njit(cache=True)
def _node_of(S, j):
    return S.STI[S.JI[j, J_STATION], ST_NODE]


@njit(cache=True)
def _tx(S, node):
    return S.C[C_NET_TX0] + (node if S.C[C_NET_SWITCHED] else 0)


@njit(cache=True)
def _rx(S, node):
    return S.C[C_NET_RX0] + (node if S.C[C_NET_SWITCHED] else 0)


@njit(cache=True)
def serialized(S, j):
    """Replicator._send (sync): the message goes out to every receiver, and the thread
    waits for all their acknowledgements."""
    RP, JI = S.RP, S.JI
    tier = JI[j, J_REP_TIER]
    nbytes = RP[tier, RP_BYTES]
    RP[tier, RP_REPLICATED] += 1
    RP[tier, RP_BYTES_SENT] += nbytes
    sender = _node_of(S, j)
    n = S.C[C_N_NODES]
    buddies = int(RP[tier, RP_BUDDIES])
    JI[j, J_PENDING] = (n - 1) if buddies == 0 else buddies
    if S.C[C_MULTICAST]:
        _link_send(S, _tx(S, sender), nbytes, FRAME_OUT, j, -1)
    else:
        # one unicast copy per receiver, in the receivers' order
        if buddies == 0:
            for r in range(n):
                if r != sender:
                    _link_send(S, _tx(S, sender), nbytes, FRAME_OUT, j, r)
        else:
            for step in range(1, buddies + 1):
                _link_send(S, _tx(S, sender), nbytes, FRAME_OUT, j, (sender + step) % n)


@njit(cache=True)
def _aux_job(S):
    """A job row of its own for a frame or a receiver's work (a request row taken for it)."""
    return populations.alloc_request(S, -1, 0, 0.0) * S.C[C_LEVELS]


@njit(cache=True)
def _link_send(S, link, nbytes, phase, owner, peer):
    """Link.send: the frame waits for the link (FIFO), takes nbytes x 8 / bandwidth on it,
    then the latency in flight."""
    JI, JF = S.JI, S.JF
    f = _aux_job(S)
    JI[f, J_PHASE] = phase
    JI[f, J_OWNER] = owner
    JI[f, J_PEER] = peer
    JI[f, J_LINK] = link
    JF[f, JF_TX_S] = nbytes * S.CF[CF_NET_S_PER_BYTE]
    if slots.acquire(S, link, f) == GRANTED:
        calendar.push(S, S.F[F_NOW] + JF[f, JF_TX_S], EV_LINK_SENT, f)


@njit(cache=True)
def _arrived(S, owner, receiver):
    """A message reached a receiver, which applies it on its CPU."""
    JI = S.JI
    a = _aux_job(S)
    station = S.BI[receiver, B_STATION]
    JI[a, J_STATION] = station
    JI[a, J_PHASE] = PHASE_APPLY
    JI[a, J_OWNER] = owner
    JI[a, J_PEER] = receiver
    cpu.run(S, S.STI[station, ST_CPU], S.RP[JI[owner, J_REP_TIER], RP_APPLY_S], a)


@njit(cache=True)
def applied(S, a):
    """The receiver acknowledges, back over the network (Network.reply)."""
    JI = S.JI
    owner, receiver = JI[a, J_OWNER], JI[a, J_PEER]
    populations.free_request(S, a // S.C[C_LEVELS])
    ack = S.RP[JI[owner, J_REP_TIER], RP_ACK_BYTES]
    if S.C[C_NET_SWITCHED]:
        _link_send(S, _tx(S, receiver), ack, FRAME_ACK_OUT, owner, -1)
    else:
        _link_send(S, _tx(S, receiver), ack, FRAME_ACK_IN, owner, -1)


@njit(cache=True)
def link_arrived(S, f):
    """A frame came out of its link's latency: fan out, apply, relay the ack, or count it."""
    JI = S.JI
    phase, owner, peer = JI[f, J_PHASE], JI[f, J_OWNER], JI[f, J_PEER]
    populations.free_request(S, f // S.C[C_LEVELS])
    if phase == FRAME_OUT:  # Network._fan_out
        tier = JI[owner, J_REP_TIER]
        nbytes = S.RP[tier, RP_BYTES]
        switched = S.C[C_NET_SWITCHED]
        if peer >= 0:
            if switched:
                _link_send(S, _rx(S, peer), nbytes, FRAME_IN, owner, peer)
            else:
                _arrived(S, owner, peer)
            return
        sender = _node_of(S, owner)
        n = S.C[C_N_NODES]
        buddies = int(S.RP[tier, RP_BUDDIES])
        count = n - 1 if buddies == 0 else buddies
        for i in range(count):
            # every other node in order, or the next buddies in ring order
            r = (i if i < sender else i + 1) if buddies == 0 else (sender + i + 1) % n
            if switched:
                _link_send(S, _rx(S, r), nbytes, FRAME_IN, owner, r)
            else:
                _arrived(S, owner, r)
    elif phase == FRAME_IN:
        _arrived(S, owner, peer)
    elif phase == FRAME_ACK_OUT:  # Network._to_rx: on to the sender's incoming link
        ack = S.RP[JI[owner, J_REP_TIER], RP_ACK_BYTES]
        _link_send(S, _rx(S, _node_of(S, owner)), ack, FRAME_ACK_IN, owner, -1)
    else:
        _acked(S, owner)


@njit(cache=True)
def _acked(S, j):
    """Replicator._acked (sync): with the last acknowledgement the thread goes on: the next
    invocation's message, the next tier, or the end of the visit."""
    JI = S.JI
    JI[j, J_PENDING] -= 1
    if JI[j, J_PENDING]:
        return
    left = JI[j, J_REP_LEFT] - 1
    JI[j, J_REP_LEFT] = left
    if left:
        _serialize(S, j)
        return
    tier = JI[j, J_REP_TIER]
    S.RP[tier, RP_WAIT_SUM] += S.F[F_NOW] - S.JF[j, JF_REP_STARTED]
    JI[j, J_PHASE] = PHASE_VISIT
    replicate(S, j, tier + 1)


# --------------------------------------------------------------------------- events
EVENTS = (EV_LINK_SENT, EV_LINK_ARRIVED)


@njit(cache=True)
def on_event(S, kind, arg, seq, now):
    """A frame sent on its link (`Link._sent`: the link is free for the next frame), or
    arrived after the network's latency."""
    if kind == EV_LINK_SENT:
        slots.release(S, S.JI[arg, J_LINK])
        calendar.push(S, now + S.CF[CF_NET_LATENCY], EV_LINK_ARRIVED, arg)
    else:
        link_arrived(S, arg)
