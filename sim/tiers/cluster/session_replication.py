"""Session replication between backend nodes: sender CPU, the cluster network, receiver CPU, acks.

After a request's own work, while its thread is still held, a node replicates the state the
request changed (with the probability its `replication-trigger` gives):

1. the sender serializes it on its own CPU (`message_cpu_s` + size x `serialize_s_per_kb`);
2. the message crosses the cluster network: with `multicast` one transmission on the sender's
   link reaches every receiver (JGroups UDP), otherwise one unicast copy per receiver; on a
   switched network each copy then crosses its receiver's link (all-to-all replication makes
   every node's incoming link carry the other N - 1 nodes' updates); on a shared segment one
   link carries everything;
3. every receiver deserializes and applies it on *its* CPU, competing with its own request
   threads (so a receiver that is overloaded, or whose CPU is paused, delays the sender);
4. every receiver acknowledges (`ack_bytes`) back over the network.

Synchronous replication (REPL_SYNC) holds the request thread until the last acknowledgement:
the response waits for the slowest receiver.  Asynchronous replication (REPL_ASYNC) lets the
request go on at once, but a sender may have at most `max_credits_bytes` unacknowledged
(JGroups FC): when they are used up the next replicating request blocks, holding its
thread, until acknowledgements return credits.  Receivers are every other node (total
replication) or the next `buddies` nodes in ring order (buddy replication / BackupManager).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from sim.kernel.slots import GRANTED, Pool
from sim.observe.probes import BYTES, MESSAGES, SECONDS, Metric, Window


class Link:
    """A FIFO network link: one frame at a time at `bandwidth_bps`, then `latency_s` in flight.
    Its `pool` (capacity 1) gives the link's utilisation and queue in the metrics."""

    __slots__ = ("kernel", "latency_s", "pool", "seconds_per_byte")

    def __init__(self, kernel, pool: Pool, bandwidth_bps: float, latency_s: float) -> None:
        self.kernel = kernel
        self.pool = pool
        self.seconds_per_byte = 8.0 / bandwidth_bps
        self.latency_s = latency_s

    def send(self, nbytes: int, done, arg) -> None:
        frame = (nbytes, done, arg)
        if self.pool.acquire(self._transmit, frame) == GRANTED:
            self._transmit(frame)

    def _transmit(self, frame) -> None:
        self.kernel.call_after(frame[0] * self.seconds_per_byte, self._sent, frame)

    def _sent(self, frame) -> None:
        self.pool.release()
        self.kernel.call_after(self.latency_s, frame[1], frame[2])


class Network:
    """The cluster network between nodes `0..n-1`: per-node links (switched) or one segment."""

    def __init__(
        self,
        kernel,
        make_pool,
        names: list[str],
        *,
        switched: bool,
        multicast: bool,
        bandwidth_bps: float,
        latency_s: float,
    ) -> None:
        self.multicast = multicast
        self.switched = switched
        if switched:
            # Full duplex: a node's outgoing and incoming directions are separate links; the
            # latency is split between the two hops.
            self.tx = [
                Link(kernel, make_pool(f"net.{n}.tx"), bandwidth_bps, latency_s / 2) for n in names
            ]
            self.rx = [
                Link(kernel, make_pool(f"net.{n}.rx"), bandwidth_bps, latency_s / 2) for n in names
            ]
        else:
            segment = Link(kernel, make_pool("net.segment"), bandwidth_bps, latency_s)
            self.tx = self.rx = [segment] * len(names)

    def deliver(self, sender: int, receivers: list[int], nbytes: int, arrived, arg) -> None:
        """Carry `nbytes` from `sender` to each receiver; `arrived((arg, receiver))` per receiver."""
        if self.multicast:
            self.tx[sender].send(nbytes, self._fan_out, (receivers, nbytes, arrived, arg))
        else:
            for receiver in receivers:
                self.tx[sender].send(nbytes, self._fan_out, ([receiver], nbytes, arrived, arg))

    def _fan_out(self, state) -> None:
        receivers, nbytes, arrived, arg = state
        for receiver in receivers:
            if self.switched:
                self.rx[receiver].send(nbytes, arrived, (arg, receiver))
            else:  # the one transmission on the segment was the delivery
                arrived((arg, receiver))

    def reply(self, sender: int, receiver: int, nbytes: int, arrived, arg) -> None:
        """A small message from `sender` back to `receiver` (an acknowledgement)."""
        if self.switched:
            self.tx[sender].send(nbytes, self._to_rx, (receiver, nbytes, arrived, arg))
        else:
            self.tx[sender].send(nbytes, arrived, arg)

    def _to_rx(self, state) -> None:
        receiver, nbytes, arrived, arg = state
        self.rx[receiver].send(nbytes, arrived, arg)


class _Message:
    __slots__ = ("arg", "nbytes", "pending", "sender", "then")

    def __init__(self, sender: int, nbytes: int, pending: int, then, arg) -> None:
        self.sender = sender
        self.nbytes = nbytes
        self.pending = pending  # acknowledgements still to come
        self.then = then  # sync: the request's continuation; async: None
        self.arg = arg


class Replicator:
    """One replicated tier (`SessionReplication`) over the backend nodes (their CPUs)."""

    def __init__(
        self, kernel, cpus: list, network: Network, spec, uniform, receivers: list[list[int]]
    ) -> None:
        self.kernel = kernel
        self.cpus = cpus
        self.network = network
        self.sync = spec.mode == "sync"
        self.fraction = spec.replicate_fraction
        self.invocations = spec.invocations
        self.nbytes = spec.message_bytes
        kib = self.nbytes / 1024.0
        self.serialize_s = spec.message_cpu_s + kib * spec.serialize_s_per_kb
        self.apply_s = spec.message_cpu_s + kib * spec.apply_s_per_kb
        self.ack_bytes = spec.ack_bytes
        self.max_credits = spec.max_credits_bytes
        self.uniform = uniform  # draws U(0, 1): does this request replicate?
        n = len(cpus)
        # per sender, the nodes that receive its sessions: every other node (scope "all") or
        # its next buddies, as the stack decides (`sim.model.parts.replication`)
        self.receivers = receivers
        self.outstanding = [0] * n  # async: unacknowledged bytes per sender
        self.blocked: list[deque] = [
            deque() for _ in range(n)
        ]  # async: senders waiting for credits
        # counters (cumulative)
        self.replicated = 0
        self.bytes_sent = 0
        self.wait_sum = 0.0  # time requests spent replicating (serialize .. last ack / credit)
        self.credit_waits = 0

    # ------------------------------------------------------------------ the sender
    def after_request(self, node: int, then, arg) -> None:
        """Replicate what the request on `node` changed, then call `then(arg)`."""
        count = sum(self.uniform() < self.fraction for _ in range(self.invocations))
        if not count:
            then(arg)
            return
        self._next(node, count, self.kernel.now, then, arg)

    def replicate(self, node: int, then, arg) -> None:
        """Replicate after a request known to have changed the state (a request class that
        writes the session): every invocation replicates, no draw."""
        self._next(node, self.invocations, self.kernel.now, then, arg)

    def _next(self, node: int, left: int, started: float, then, arg) -> None:
        if not left:
            self.wait_sum += self.kernel.now - started
            then(arg)
            return
        self.cpus[node].run(self.serialize_s, self._serialized, (node, left, started, then, arg))

    def _serialized(self, state) -> None:
        node = state[0]
        if self.sync:
            self._send(node, self._acknowledged_all, state)
        elif self.outstanding[node] + self.nbytes <= self.max_credits:
            self._send(node, None, None)
            self._continue(state)
        else:
            self.credit_waits += 1
            self.blocked[node].append(state)

    def _continue(self, state) -> None:
        node, left, started, then, arg = state
        self._next(node, left - 1, started, then, arg)

    def _send(self, node: int, then, arg) -> None:
        receivers = self.receivers[node]
        self.replicated += 1
        self.bytes_sent += self.nbytes
        self.outstanding[node] += self.nbytes
        message = _Message(node, self.nbytes, len(receivers), then, arg)
        self.network.deliver(node, receivers, self.nbytes, self._arrived, message)

    def _acknowledged_all(self, state) -> None:
        self._continue(state)

    # ------------------------------------------------------------------ the receivers
    def _arrived(self, pair) -> None:
        _message, receiver = pair
        self.cpus[receiver].run(self.apply_s, self._applied, pair)

    def _applied(self, pair) -> None:
        message, receiver = pair
        self.network.reply(receiver, message.sender, self.ack_bytes, self._acked, message)

    def _acked(self, message: _Message) -> None:
        message.pending -= 1
        if message.pending:
            return
        node = message.sender
        self.outstanding[node] -= message.nbytes
        if message.then is not None:
            message.then(message.arg)
        blocked = self.blocked[node]
        while blocked and self.outstanding[node] + self.nbytes <= self.max_credits:
            state = blocked.popleft()
            self._send(node, None, None)
            self._continue(state)

    def counters(self) -> tuple[float, float, float, float]:
        return (
            float(self.replicated),
            float(self.bytes_sent),
            self.wait_sum,
            float(self.credit_waits),
        )


class AfterRequest:
    """A node's replication after each request: every replicated tier in turn (web, then EJB),
    then `finish(visit)`.  Installed as the node's `Station.post`."""

    __slots__ = ("node", "replicators")

    def __init__(self, replicators: list[Replicator], node: int) -> None:
        self.replicators = replicators
        self.node = node

    def __call__(self, visit, finish) -> None:
        self._step((0, visit, finish))

    def _step(self, state) -> None:
        index, visit, finish = state
        if index == len(self.replicators):
            finish(visit)
            return
        self.replicators[index].after_request(self.node, self._step, (index + 1, visit, finish))


class ClassedAfterRequest(AfterRequest):
    """Replication after each request when request classes say whether they write the
    session (`classes.N.writes_session`): true replicates every time, false never, none
    leaves it to the tier's trigger fractions."""

    __slots__ = ("writes",)

    def __init__(self, replicators: list[Replicator], node: int, writes: tuple) -> None:
        super().__init__(replicators, node)
        self.writes = writes  # per class: True, False or None

    def _step(self, state) -> None:
        index, visit, finish = state
        if index == len(self.replicators):
            finish(visit)
            return
        writes = self.writes[visit.request.klass]
        following = (index + 1, visit, finish)
        if writes is None:
            self.replicators[index].after_request(self.node, self._step, following)
        elif writes:
            self.replicators[index].replicate(self.node, self._step, following)
        else:
            self._step(following)


class ReplicationProbe:
    """Replication counters for the recorder (one probe per replicated tier)."""

    fields = ("replicated", "bytes", "wait_sum", "credit_waits")

    def __init__(self, name: str, replicator: Replicator) -> None:
        self.name = name
        self.replicator = replicator

    def counters(self, now: float) -> tuple[float, float, float, float]:
        return self.replicator.counters()

    def metrics(self, w: Window) -> Iterator[Metric]:
        """Messages and bytes sent, the time a replicating request spent on it (thread held),
        and the waits for JGroups flow-control credits."""
        yield "replicated", w.delta["replicated"], MESSAGES
        yield "bytes", w.delta["bytes"], BYTES
        yield "wait", w.per("wait_sum", "replicated"), SECONDS
        yield "credit_waits", w.delta["credit_waits"], MESSAGES
