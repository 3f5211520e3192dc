"""mod_jk's lb worker: `method` = Request (R), Session (S), Traffic (T) or Busyness (B), with
its `lb_value` accounting (src: tomcat-connectors native/common/jk_lb_worker.c;
https://tomcat.apache.org/connectors-doc/reference/workers.html)."""

from __future__ import annotations

import math
from functools import reduce

from sim.tiers.balancer.policies.base import Policy


def lb_multiplicities(lbfactors: list[int]) -> list[int]:
    """`update_mult`: lb_mult_i = LCM(all lbfactors) / lbfactor_i, so a member with a larger
    `lbfactor` accumulates `lb_value` more slowly."""
    lcm = reduce(lambda a, b: a * b // math.gcd(a, b), lbfactors, 1)
    return [lcm // f for f in lbfactors]


class ModJk(Policy):
    """Lowest `lb_value` among usable members, scanning from a rotating `next_offset` (set to
    winner + 1) so that ties go round robin (`find_best_byvalue`).  Accounting per method:

    * R: `lb_value += lb_mult` for every request, at dispatch;
    * S: the same, only for requests without a session id (new sessions);
    * T: `lb_value += bytes x lb_mult` when the response is complete;
    * B: `+= lb_mult` at dispatch, `-= lb_mult` at completion (requests in flight / lbfactor).

    Every `worker.maintain` seconds (default 60) R, S and T halve their values
    (`decay_load`: `lb_value >>= floor(elapsed / maintain)`), a sliding window of load.  The
    decay is applied when the next request finds it due, as mod_jk's request-driven
    maintenance does.  A member back from error starts at the current maximum
    (`recover_workers`), so it is not flooded."""

    method = "R"
    split = "weighted"
    __slots__ = (
        "bytes_per_response",
        "last_maintain",
        "lb_value",
        "maintain_s",
        "mult",
        "next_offset",
    )

    def __init__(
        self, weights, names, rng, *, maintain_s: float = 60.0, response_bytes=None, **params
    ) -> None:
        super().__init__(weights, names, rng)
        self.mult = lb_multiplicities([max(1, round(w)) for w in self.weights])
        self.lb_value = [0] * len(self.weights)
        self.next_offset = 0
        self.maintain_s = maintain_s
        self.last_maintain = 0.0
        self.bytes_per_response = response_bytes

    def _maintain(self) -> None:
        now = self.now
        assert now is not None  # pick() calls this only once attached
        elapsed = now() - self.last_maintain
        if elapsed >= self.maintain_s:
            exponent = int(elapsed // self.maintain_s)
            self.last_maintain += exponent * self.maintain_s
            if self.method != "B":
                self.lb_value = [v >> exponent for v in self.lb_value]

    def pick(self, request) -> int:
        if self.now is not None:
            self._maintain()
        lb_value = self.lb_value
        n = len(self.weights)
        usable = self.active
        offset = self.next_offset
        best = -1
        for j in range(offset, offset + n):
            i = j % n
            if i in usable and (best < 0 or lb_value[i] < lb_value[best]):
                best = i
        self.next_offset = best + 1
        return best

    def recovered(self, index: int) -> None:
        others = [self.lb_value[i] for i in self.active if i != index]
        self.lb_value[index] = max(others, default=0)


class ModJkRequest(ModJk):
    policy_names = ("mod_jk_request",)  # balancer.policy
    parameters = ("maintain_s",)  # the balancer.* parameters it reads
    method = "R"
    on_dispatch = True
    __slots__ = ()

    def dispatched(self, index, request, new_session) -> None:
        self.lb_value[index] += self.mult[index]


class ModJkSession(ModJk):
    policy_names = ("mod_jk_session",)  # balancer.policy
    parameters = ("maintain_s",)  # the balancer.* parameters it reads
    method = "S"
    on_dispatch = True
    __slots__ = ()

    def dispatched(self, index, request, new_session) -> None:
        if new_session:
            self.lb_value[index] += self.mult[index]


class ModJkTraffic(ModJk):
    policy_names = ("mod_jk_traffic",)  # balancer.policy
    parameters = ("maintain_s", "response_bytes")  # the balancer.* parameters it reads
    method = "T"
    on_complete = True
    __slots__ = ()

    def completed(self, index, request, ok, response_s) -> None:
        self.lb_value[index] += int(self.bytes_per_response()) * self.mult[index]


class ModJkBusyness(ModJk):
    policy_names = ("mod_jk_busyness",)  # balancer.policy
    parameters = ("maintain_s",)  # the balancer.* parameters it reads
    method = "B"
    split = "adaptive"
    on_dispatch = True
    on_complete = True
    __slots__ = ()

    def dispatched(self, index, request, new_session) -> None:
        self.lb_value[index] += self.mult[index]

    def completed(self, index, request, ok, response_s) -> None:
        self.lb_value[index] -= self.mult[index]
