"""Policies that rotate or stick, blind to load: strict round robin, smooth weighted round
robin (mod_proxy_balancer `byrequests`, nginx's default), lighttpd `static`, and the JBoss
smart-stub policies (`RoundRobin`, `FirstAvailable`, `FirstAvailableIdenticalAllProxies`)."""

from __future__ import annotations

from sim.tiers.balancer.policies.base import Policy, UniformDraws


class StrictRoundRobin(Policy):
    """Each request to the next usable member in configuration order (A1, A2, A3, A1 ...)."""

    policy_names = ("round_robin",)  # balancer.policy

    __slots__ = ("_next",)

    def __init__(self, weights, names, rng, **params) -> None:
        super().__init__(weights, names, rng)
        self._next = 0

    def pick(self, request) -> int:
        active = self.active
        n = len(self.weights)
        if len(active) == n:  # the usual case: everyone usable
            index = self._next
            self._next = (index + 1) % n
            return index
        # The first usable member at or after the pointer (rotation skips members in error).
        start = self._next
        for index in active:
            if index >= start:
                break
        else:
            index = active[0]
        self._next = (index + 1) % n
        return index


class SmoothWeightedRoundRobin(Policy):
    """mod_proxy_balancer `lbmethod=byrequests` (src: modules/proxy/balancers/
    mod_lbmethod_byrequests.c) = nginx's default weighted round robin (src:
    ngx_http_upstream_round_robin.c `ngx_http_upstream_get_peer`): every usable member adds
    its `loadfactor` (nginx `weight`) to its `lbstatus`; the largest `lbstatus` wins (the
    first one on ties) and gives back the sum of the weights.  Weights 5, 1, 1 give
    a a b a c a a: the heavy member is spread out, not bunched."""

    policy_names = ("byrequests",)  # balancer.policy

    split = "weighted"
    reads_weights_live = True
    __slots__ = ("lbstatus",)

    def __init__(self, weights, names, rng, **params) -> None:
        super().__init__(weights, names, rng)
        self.lbstatus = [0.0] * len(self.weights)

    def pick(self, request) -> int:
        lbstatus, weights = self.lbstatus, self.weights
        total = 0.0
        best = -1
        for i in self.active:
            lbstatus[i] += weights[i]
            total += weights[i]
            if best < 0 or lbstatus[i] > lbstatus[best]:
                best = i
        lbstatus[best] -= total
        return best

    def sticky(self, index: int) -> None:
        """A sticky request still counts (mod_proxy_balancer.c `find_session_route`: the
        byrequests bookkeeping is applied with the routed member as the winner)."""
        total = 0.0
        for i in self.active:
            self.lbstatus[i] += self.weights[i]
            total += self.weights[i]
        self.lbstatus[index] -= total


class FirstActive(Policy):
    """lighttpd mod_proxy_core `balancer = "static"`: the first active backend takes every
    request; the others are there for failover only."""

    policy_names = ("static",)  # balancer.policy

    split = "single"
    __slots__ = ()

    def pick(self, request) -> int:
        return self.active[0]


class _PerStub(Policy):
    """JBoss smart stubs choose on the client side: each client (stub) keeps its own state.
    A client population whose users never come back (open arrivals) gets a fresh stub per request."""

    __slots__ = ("draw", "state")

    def __init__(self, weights, names, rng, **params) -> None:
        super().__init__(weights, names, rng)
        self.draw = UniformDraws(rng)
        self.state: dict = {}

    def forget(self, user) -> None:
        self.state.pop(user, None)


class JBossRoundRobin(_PerStub):
    """JBoss `org.jboss.ha.framework.interfaces.RoundRobin`: each call to the next target of
    the stub's list, the first one chosen at random (so stubs do not start in step)."""

    policy_names = ("jboss_round_robin",)  # balancer.policy

    __slots__ = ()

    def pick(self, request) -> int:
        active = self.active
        key = request.user if request.origin.returning_users else None
        cursor = self.state.get(key) if key is not None else None
        cursor = self.draw.index(len(active)) if cursor is None else (cursor + 1) % len(active)
        if key is not None:
            self.state[key] = cursor
        return active[cursor]


class JBossFirstAvailable(_PerStub):
    """JBoss `FirstAvailable`: a stub elects one target at random and sends every call
    there; it re-elects only when that target leaves the list.  Stubs elect independently."""

    policy_names = ("jboss_first_available",)  # balancer.policy

    __slots__ = ()

    def pick(self, request) -> int:
        key = request.user if request.origin.returning_users else None
        target = self.state.get(key) if key is not None else None
        if target is None or target not in self.active:
            target = self.active[self.draw.index(len(self.active))]
            if key is not None:
                self.state[key] = target
        return target


class JBossFirstAvailableIdenticalAllProxies(_PerStub):
    """JBoss `FirstAvailableIdenticalAllProxies` (3.2+): one elected target shared by every
    stub of the proxy family, re-elected at random when it leaves the list."""

    policy_names = ("jboss_first_available_identical_all_proxies",)  # balancer.policy

    split = "single"
    __slots__ = ("target",)

    def __init__(self, weights, names, rng, **params) -> None:
        super().__init__(weights, names, rng)
        self.target = -1

    def pick(self, request) -> int:
        if self.target not in self.active:
            self.target = self.active[self.draw.index(len(self.active))]
        return self.target
