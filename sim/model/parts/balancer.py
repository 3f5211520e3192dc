"""The balancer (`[balancer]`: mod_proxy_balancer, or mod_jk's lb worker behind a front that
forwards through mod_jk) as the reference engine builds it: its error state and retries,
sticky sessions, the load reports a policy sees, and the mod_jk lb worker's own settings.  The
policy's class and its declared parameters are the stack's (`StackPlan.policy`,
`StackPlan.policy_parameters`); each member's weight and events are its node's
(`sim.model.parts.nodes`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.features import Declaration, StackPart, approximate, exact
from sim.tiers.balancer.policies import policy_class


@dataclass(frozen=True)
class BalancerPart(StackPart):
    """The balancer over the nodes (or the front's pools to them).  Its policy's feature
    (`policy.<name>`) is declared on the policy's class (`sim.tiers.balancer.policies`)."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "balancer": exact("the split over nodes by each node's share"),
        "balancer.sticky_session": exact(
            "open arrivals carry no session; with returning users the approximation "
            "`balancer.sticky_session` is named"
        ),
        "balancer.report_interval_s": approximate(
            "the balancer acts on stale load reports (herding), which no routing matrix describes"
        ),
    }

    # a member whose connections fail stays in error this long before real requests try it
    # again (`balancer.retry_s`: mod_proxy `retry=`, mod_jk `recover_time`) [s]; also a lone
    # mod_proxy worker's error state after a connect that timed out
    retry_s: float
    # members tried per request when connections are refused (`balancer.max_attempts`:
    # mod_proxy_balancer `maxattempts` + 1); None: every member
    max_attempts: int | None
    # the policy sees a member's requests outstanding only as reported this often
    # (`balancer.report_interval_s`) [s]; None: at once
    report_interval_s: float | None
    # `balancer.sticky_session` (mod_proxy_balancer `stickysession`, mod_jk `sticky_session`)
    sticky_session: bool
    # a session's member in error answers 503 rather than failing over
    # (`balancer.sticky_session_force`: mod_jk `sticky_session_force`, mod_proxy `nofailover=On`)
    sticky_session_force: bool
    maintain_s: float  # mod_jk `worker.maintain`: the lb values' halving interval [s]
    # the response sizes a bytes-aware policy draws (`balancer.response_bytes`, a distribution
    # spec, on the stream `balancer.response_bytes`); None when the policy does not ask for them
    response_bytes: Any
    # mod_jk's lb worker (`proxy.backend_pool.lb`: `error_escalation_time`, ...), the schema's
    # section, when the front forwards through mod_jk; None: mod_proxy_balancer
    jk_lb: Any
    # the nodes it balances over (`Plan.nodes`): with one, no balancer acts
    members: int
    policy: str  # `balancer.policy`, as the model file names it

    def features(self) -> dict[str, str]:
        if self.members < 2:
            return {}
        chosen = policy_class(self.policy)
        out = {
            "balancer": "more than one node",
            chosen.feature: f"balancer.policy = {self.policy!r}",
        }
        if self.sticky_session:
            out["balancer.sticky_session"] = "balancer.sticky_session"
        if self.report_interval_s is not None and chosen.uses_load:
            out["balancer.report_interval_s"] = "balancer.report_interval_s"
        return out


def balancer_part(model: Any, mod_jk: bool, members: int) -> BalancerPart:
    """The balancer of `model` (a `sim.model.schema.Model`) over `members` nodes; `mod_jk`:
    the front forwards through mod_jk (`Front.mod_jk`)."""
    spec = model.balancer
    return BalancerPart(
        retry_s=spec.retry_s,
        max_attempts=spec.max_attempts,
        report_interval_s=spec.report_interval_s,
        sticky_session=spec.sticky_session,
        sticky_session_force=spec.sticky_session_force,
        maintain_s=spec.maintain_s,
        response_bytes=spec.response_bytes,
        jk_lb=model.proxy.backend_pool.lb if mod_jk else None,
        members=members,
        policy=spec.policy,
    )
