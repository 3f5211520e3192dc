"""Policies that look at load: uniform random (the state-blind baseline), least outstanding,
lighttpd `sqf`, mod_proxy_balancer `bybusyness` and `bytraffic`, power of d choices, P2C with
peak-EWMA latency (Finagle) and join-idle-queue."""

from __future__ import annotations

import math
from collections import deque

from sim.tiers.balancer.policies.base import Policy, UniformDraws


class UniformRandom(Policy):
    """A uniform pick among the usable members.  lighttpd 1.5 mod_proxy_core's
    `balancer = "round-robin"` is this ("instead of real RoundRobin we just do a RandomSelect",
    src: mod_proxy_core.c `proxy_backend_balancer`); so is JBoss `RandomRobin` and Envoy `RANDOM`."""

    policy_names = ("random", "lighttpd_round_robin", "jboss_random_robin")  # balancer.policy
    product_form = "a random split by share: Bernoulli routing"
    approximation = None

    __slots__ = ("draw",)

    def __init__(self, weights, names, rng, **params) -> None:
        super().__init__(weights, names, rng)
        self.draw = UniformDraws(rng)

    def pick(self, request) -> int:
        active = self.active
        return active[int(self.draw() * len(active))]


class LeastOutstanding(Policy):
    """Fewest requests in flight; ties broken by a rotating start so no member is favoured
    (HAProxy `leastconn` without weights, nginx `least_conn` with equal weights)."""

    policy_names = ("least_outstanding",)  # balancer.policy

    split = "adaptive"
    uses_load = True
    __slots__ = ("_next",)

    def __init__(self, weights, names, rng, **params) -> None:
        super().__init__(weights, names, rng)
        self._next = 0

    def pick(self, request) -> int:
        active, load = self.active, self.load
        n = len(active)
        start = self._next % n
        self._next = start + 1
        best = active[start]
        best_load = load[best]
        for offset in range(1, n):
            i = active[(start + offset) % n]
            if load[i] < best_load:
                best, best_load = i, load[i]
        return best


class ShortestQueueFirst(Policy):
    """lighttpd 1.5 mod_proxy_core `balancer = "sqf"`: the active backend with the fewest
    open connections in its pool (`pool->used`, idle plus busy); the first one wins ties
    (src: mod_proxy_core.c `proxy_backend_balancer`).  With the default
    `max-keep-alive-requests = 0` a backend connection lives exactly as long as its request,
    so open connections are requests in flight."""

    policy_names = ("sqf",)  # balancer.policy

    split = "adaptive"
    uses_load = True
    __slots__ = ()

    def pick(self, request) -> int:
        load = self.load
        best = -1
        best_load = 0
        for i in self.active:
            if best < 0 or load[i] < best_load:
                best, best_load = i, load[i]
        return best


class ByBusyness(Policy):
    """mod_proxy_balancer `lbmethod=bybusyness` (src: modules/proxy/balancers/
    mod_lbmethod_bybusyness.c, 2.4): the member with the fewest requests assigned (`busy`,
    counted across all children; not divided by `loadfactor`), ties to the larger
    byrequests `lbstatus`, which every pick also updates."""

    policy_names = ("bybusyness",)  # balancer.policy

    split = "adaptive"
    uses_load = True
    __slots__ = ("lbstatus",)

    def __init__(self, weights, names, rng, **params) -> None:
        super().__init__(weights, names, rng)
        self.lbstatus = [0.0] * len(self.weights)

    def pick(self, request) -> int:
        lbstatus, weights, busy = self.lbstatus, self.weights, self.load
        total = 0.0
        best = -1
        for i in self.active:
            lbstatus[i] += weights[i]
            total += weights[i]
            if (
                best < 0
                or busy[i] < busy[best]
                or (busy[i] == busy[best] and lbstatus[i] > lbstatus[best])
            ):
                best = i
        lbstatus[best] -= total
        return best


class ByTraffic(Policy):
    """mod_proxy_balancer `lbmethod=bytraffic` (src: mod_lbmethod_bytraffic.c): the member
    with the fewest bytes (`transferred` + `read`) per `loadfactor`, cumulative and never
    aged; the first one wins ties.  Bytes are counted when the response is complete, so
    between two completions every pick goes to the same member (it herds at high load)."""

    policy_names = ("bytraffic",)  # balancer.policy
    parameters = ("response_bytes",)  # the balancer.* parameters it reads

    split = "weighted"
    on_complete = True
    __slots__ = ("bytes_per_response", "traffic")

    def __init__(self, weights, names, rng, *, response_bytes=None, **params) -> None:
        super().__init__(weights, names, rng)
        self.traffic = [0.0] * len(self.weights)
        self.bytes_per_response = response_bytes  # () -> bytes of one request + response

    def pick(self, request) -> int:
        traffic, weights = self.traffic, self.weights
        best = -1
        best_value = 0.0
        for i in self.active:
            value = traffic[i] / weights[i]
            if best < 0 or value < best_value:
                best, best_value = i, value
        return best

    def completed(self, index, request, ok, response_s) -> None:
        self.traffic[index] += self.bytes_per_response()


class PowerOfChoices(Policy):
    """Power of d choices (Mitzenmacher 2001, the supermarket model): draw d distinct usable
    members at random, send to the one with the fewest requests outstanding (the first drawn
    on ties).  HAProxy `balance random(2)`, Envoy least request, Finagle's default P2C."""

    policy_names = ("power_of_d",)  # balancer.policy
    parameters = ("choices",)  # the balancer.* parameters it reads

    split = "adaptive"
    uses_load = True
    __slots__ = ("choices", "draw")

    def __init__(self, weights, names, rng, *, choices: int = 2, **params) -> None:
        super().__init__(weights, names, rng)
        self.draw = UniformDraws(rng)
        self.choices = choices

    def pick(self, request) -> int:
        active, load, draw = self.active, self.load, self.draw
        n = len(active)
        if n == 1:
            return active[0]
        if self.choices == 2:
            a = int(draw() * n)
            b = int(draw() * (n - 1))
            if b >= a:
                b += 1  # a second, distinct member
            first, second = active[a], active[b]
            return second if load[second] < load[first] else first
        drawn = _distinct(draw, n, min(self.choices, n))
        best = active[drawn[0]]
        for k in drawn[1:]:
            if load[active[k]] < load[best]:
                best = active[k]
        return best


def _distinct(draw, n: int, d: int) -> list[int]:
    """d distinct indices of 0..n-1, uniformly, in draw order (a partial Fisher-Yates)."""
    pool = list(range(n))
    out = []
    for k in range(d):
        j = k + int(draw() * (n - k))
        pool[k], pool[j] = pool[j], pool[k]
        out.append(pool[k])
    return out


class PeakEwma(Policy):
    """Finagle `P2C + Peak EWMA` (src: finagle-core .../loadbalancer/PeakEwma.scala): two
    distinct members at random, the lower cost wins, cost = ewma_rtt x (outstanding + 1).  The
    EWMA jumps to any sample above it (peak-sensitive) and otherwise decays with weight
    exp(-elapsed / decayTime), also towards 0 when read (`observe(0.0)` in `load`).  A member
    with no history but requests pending costs a huge penalty plus its pending count."""

    policy_names = ("p2c_peak_ewma",)  # balancer.policy
    parameters = ("decay_s",)  # the balancer.* parameters it reads

    split = "adaptive"
    uses_load = True
    on_complete = True
    PENALTY = float((2**63 - 1) >> 16)  # Finagle: Long.MaxValue >> 16
    __slots__ = ("cost", "decay_s", "draw", "stamp")

    def __init__(self, weights, names, rng, *, decay_s: float = 10.0, **params) -> None:
        super().__init__(weights, names, rng)
        self.draw = UniformDraws(rng)
        self.decay_s = decay_s  # Finagle decayTime (default 10 s)
        self.cost = [0.0] * len(self.weights)
        self.stamp = [0.0] * len(self.weights)

    def _observe(self, i: int, rtt: float) -> None:
        clock = self.now
        assert clock is not None  # attached by the dispatcher
        now = clock()
        w = math.exp(-max(now - self.stamp[i], 0.0) / self.decay_s)
        cost = self.cost[i]
        self.cost[i] = rtt if rtt > cost else cost * w + rtt * (1.0 - w)
        self.stamp[i] = now

    def cost_of(self, i: int) -> float:
        self._observe(i, 0.0)
        pending = self.load[i]
        if self.cost[i] == 0.0 and pending:
            return self.PENALTY + pending
        return self.cost[i] * (pending + 1)

    def pick(self, request) -> int:
        active = self.active
        n = len(active)
        if n == 1:
            return active[0]
        a = int(self.draw() * n)
        b = int(self.draw() * (n - 1))
        if b >= a:
            b += 1
        first, second = active[a], active[b]
        return second if self.cost_of(second) < self.cost_of(first) else first

    def completed(self, index, request, ok, response_s) -> None:
        self._observe(index, response_s)


class JoinIdleQueue(Policy):
    """Join-idle-queue (Lu, Xie, Kliot, Geller, Larus & Greenberg, Performance Evaluation
    68(11), 2011), one dispatcher: a member that becomes idle reports itself to the
    dispatcher's I-queue (once); a request goes to the oldest member in the I-queue, or to a
    uniformly random member when the I-queue is empty.  Every member starts idle."""

    policy_names = ("join_idle_queue",)  # balancer.policy

    split = "adaptive"
    on_complete = True
    __slots__ = ("draw", "idle", "queued")

    def __init__(self, weights, names, rng, **params) -> None:
        super().__init__(weights, names, rng)
        self.draw = UniformDraws(rng)
        self.idle = deque(range(len(self.weights)))
        self.queued = [True] * len(self.weights)

    def pick(self, request) -> int:
        idle, queued = self.idle, self.queued
        while idle:
            i = idle.popleft()
            queued[i] = False
            if i in self.active:
                return i
        active = self.active
        return active[int(self.draw() * len(active))]

    def completed(self, index, request, ok, response_s) -> None:
        if self.outstanding[index] == 0 and not self.queued[index]:
            self.queued[index] = True
            self.idle.append(index)

    def recovered(self, index: int) -> None:
        self.completed(index, None, True, 0.0)
