"""Kubernetes' HorizontalPodAutoscaler (autoscaling/v2), one `reconcileAutoscaler` per sync.

Every `sync_period_s` (kube-controller-manager `--horizontal-pod-autoscaler-sync-period`,
15 s) the controller (`pkg/controller/podautoscaler/horizontal.go`):

1. clamps a group outside its bounds at once: above `maxReplicas` to it, below
   `minReplicas` to it (no stabilisation, no rate limit);
2. otherwise proposes a count from the metric (`hpa_metrics`); with no metric it changes
   nothing and remembers nothing (the `FailedGetResourceMetric` path returns early);
3. stabilises the proposal (`stabilizeRecommendationWithBehaviors`): growing, the *lowest*
   proposal of the last `scaleUp.stabilizationWindowSeconds` (default 0: none); shrinking,
   the *highest* of the last `scaleDown.stabilizationWindowSeconds` (default 300 s) -- the
   proposal itself included, and the group's size at the first sync counting as a proposal;
4. limits the rate (`convertDesiredReplicasWithBehaviorRate`): each policy of the direction
   (`Pods`: so many pods, `Percent`: so many per cent, per `periodSeconds`) allows a count
   from the size the group had at the start of its period (the current size less what the
   scale events of the last `periodSeconds` added, plus what they removed); `selectPolicy`
   `Max` takes the policy allowing the largest change, `Min` the smallest, `Disabled` none;
   the result never goes past `maxReplicas` / `minReplicas`;
5. records the scale event (its size and time) when the count changes.

The defaults are the API server's for autoscaling/v2 (the HPA documentation's "default
behavior"): scale up by the larger of 100 % and 4 pods per 15 s with no stabilisation; scale
down by up to 100 % per 15 s after a 300 s window.  Time is compared as the controller does:
an entry counts in a window when it is *after* `now - window` (strictly).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sim.tiers.cluster.autoscale.decision import Decision, PodSample
from sim.tiers.cluster.autoscale.hpa_metrics import (
    MetricKind,
    Tolerances,
    external_proposal,
    pods_proposal,
)

SelectPolicy = Literal["Max", "Min", "Disabled"]


@dataclass(frozen=True)
class RatePolicy:
    """`HPAScalingPolicy`: `type` Pods or Percent, `value`, `periodSeconds`."""

    kind: Literal["Pods", "Percent"]
    value: int
    period_s: float


@dataclass(frozen=True)
class ScalingRules:
    """`HPAScalingRules` of one direction."""

    stabilization_window_s: float
    policies: tuple[RatePolicy, ...]
    select_policy: SelectPolicy = "Max"
    tolerance: float = 0.1


DEFAULT_SCALE_UP = ScalingRules(
    0.0, (RatePolicy("Percent", 100, 15.0), RatePolicy("Pods", 4, 15.0))
)
DEFAULT_SCALE_DOWN = ScalingRules(300.0, (RatePolicy("Percent", 100, 15.0),))


@dataclass(frozen=True)
class HpaSpec:
    """The HPA's spec as this family reads it (`minReplicas`, `maxReplicas`, one metric,
    `behavior`), and the controller's sync period."""

    max_replicas: int
    metric: MetricKind
    target: float  # per cent of the request, per-pod value, or the external value
    min_replicas: int = 1
    scale_up: ScalingRules = DEFAULT_SCALE_UP
    scale_down: ScalingRules = DEFAULT_SCALE_DOWN
    sync_period_s: float = 15.0
    cpu_request_cores: float = 1.0  # the pods' CPU request (cpu_utilization divides by it)

    def __post_init__(self) -> None:
        if not 1 <= self.min_replicas <= self.max_replicas:
            raise ValueError("need 1 <= min_replicas <= max_replicas")
        if self.target <= 0:
            raise ValueError("the metric's target must be above 0")


@dataclass
class HorizontalPodAutoscaler:
    """The controller's state for one HPA: recent recommendations and scale events."""

    spec: HpaSpec
    recommendations: list[tuple[float, int]] = field(default_factory=list)
    scale_up_events: list[tuple[float, int]] = field(default_factory=list)
    scale_down_events: list[tuple[float, int]] = field(default_factory=list)

    @property
    def evaluation_period_s(self) -> float:
        return self.spec.sync_period_s

    def decide(
        self,
        now_s: float,
        current: int,
        pods: Sequence[PodSample] = (),
        external: float | None = None,
    ) -> Decision:
        """One sync at `now_s` of a group of `current` replicas (`scale.spec.replicas`),
        given its pods' samples and, for an external metric, the metric's value."""
        spec = self.spec
        if not self.recommendations:  # recordInitialRecommendation
            self.recommendations.append((now_s, current))
        if current == 0:  # a target scaled to zero by hand: "ScalingDisabled"
            return Decision(0, "ScalingDisabled")
        if current > spec.max_replicas:
            return self._scaled(now_s, current, spec.max_replicas, "TooManyReplicas")
        if current < spec.min_replicas:
            return self._scaled(now_s, current, spec.min_replicas, "TooFewReplicas")
        proposal = self._proposal(current, pods, external)
        if proposal is None:
            return Decision(current, "FailedGetMetric")
        stabilised, reason = self._stabilise(now_s, current, proposal)
        desired, limit = self._limit_rate(now_s, current, stabilised)
        if limit is not None:
            reason = limit
        return self._scaled(now_s, current, desired, reason)

    def _proposal(
        self, current: int, pods: Sequence[PodSample], external: float | None
    ) -> int | None:
        spec = self.spec
        tolerances = Tolerances(spec.scale_down.tolerance, spec.scale_up.tolerance)
        if spec.metric in ("external", "external_average"):
            ready = sum(1 for p in pods if p.ready) if pods else current
            return external_proposal(spec.metric, spec.target, current, external, ready, tolerances)
        return pods_proposal(
            spec.metric, spec.target, current, pods, tolerances, spec.cpu_request_cores
        )

    def _stabilise(self, now_s: float, current: int, proposal: int) -> tuple[int, str]:
        up, down = self.spec.scale_up, self.spec.scale_down
        if proposal >= current:
            window, pick, reason = up.stabilization_window_s, min, "ScaleUpStabilized"
        else:
            window, pick, reason = down.stabilization_window_s, max, "ScaleDownStabilized"
        recommendation = proposal
        for at, count in self.recommendations:
            if at > now_s - window:
                recommendation = pick(recommendation, count)
        # what no window can reach again is forgotten (the controller overwrites it)
        longest = max(up.stabilization_window_s, down.stabilization_window_s)
        self.recommendations = [(at, c) for at, c in self.recommendations if at >= now_s - longest]
        self.recommendations.append((now_s, proposal))
        return recommendation, (reason if recommendation != proposal else "ReadyForNewScale")

    def _limit_rate(self, now_s: float, current: int, desired: int) -> tuple[int, str | None]:
        spec = self.spec
        if desired > current:
            limit = max(self._up_limit(now_s, current), current)
            if spec.max_replicas > limit:
                bound, reason = limit, "ScaleUpLimit"
            else:
                bound, reason = spec.max_replicas, "TooManyReplicas"
            return (bound, reason) if desired > bound else (desired, None)
        if desired < current:
            limit = min(self._down_limit(now_s, current), current)
            if spec.min_replicas < limit:
                bound, reason = limit, "ScaleDownLimit"
            else:
                bound, reason = spec.min_replicas, "TooFewReplicas"
            return (bound, reason) if desired < bound else (desired, None)
        return desired, None

    def _period_start(self, now_s: float, current: int, period_s: float) -> int:
        added = sum(c for at, c in self.scale_up_events if at > now_s - period_s)
        removed = sum(c for at, c in self.scale_down_events if at > now_s - period_s)
        return current - added + removed

    def _up_limit(self, now_s: float, current: int) -> int:
        """`calculateScaleUpLimitWithScalingRules`."""
        rules = self.spec.scale_up
        if rules.select_policy == "Disabled":
            return current
        pick = min if rules.select_policy == "Min" else max
        allowed: int | None = None
        for policy in rules.policies:
            start = self._period_start(now_s, current, policy.period_s)
            # a percentage is rounded up, or a small group could never grow
            proposed = (
                start + policy.value
                if policy.kind == "Pods"
                else math.ceil(start * (1 + policy.value / 100))
            )
            allowed = proposed if allowed is None else pick(allowed, proposed)
        return current if allowed is None else allowed

    def _down_limit(self, now_s: float, current: int) -> int:
        """`calculateScaleDownLimitWithBehaviors`: the lowest count allowed."""
        rules = self.spec.scale_down
        if rules.select_policy == "Disabled":
            return current
        # shrinking, the policy allowing the smallest change leaves the highest count
        pick = max if rules.select_policy == "Min" else min
        allowed: int | None = None
        for policy in rules.policies:
            start = self._period_start(now_s, current, policy.period_s)
            # int32(float64(start) * (1 - value/100)): a percentage is truncated
            proposed = (
                start - policy.value
                if policy.kind == "Pods"
                else int(start * (1 - policy.value / 100))
            )
            allowed = proposed if allowed is None else pick(allowed, proposed)
        return current if allowed is None else allowed

    def _scaled(self, now_s: float, current: int, desired: int, reason: str) -> Decision:
        """`storeScaleEvent`: events older than the direction's longest period are dropped."""
        if desired > current:
            longest = max((p.period_s for p in self.spec.scale_up.policies), default=0.0)
            self.scale_up_events = [e for e in self.scale_up_events if e[0] >= now_s - longest]
            self.scale_up_events.append((now_s, desired - current))
        elif desired < current:
            longest = max((p.period_s for p in self.spec.scale_down.policies), default=0.0)
            self.scale_down_events = [e for e in self.scale_down_events if e[0] >= now_s - longest]
            self.scale_down_events.append((now_s, current - desired))
        return Decision(desired, reason)
