"""An AWS step scaling policy (Application Auto Scaling `StepScalingPolicyConfiguration`;
EC2 Auto Scaling's `PutScalingPolicy` with `PolicyType=StepScaling` has the same steps).

A CloudWatch alarm compares the metric with its threshold once per `period_s` (the alarm's
`Period`) and goes to ALARM after `evaluation_periods` breaching datapoints in a row; while
it is in ALARM, the policy is invoked at each evaluation.  The policy picks the step whose
interval holds `metric - threshold` (`MetricIntervalLowerBound` / `UpperBound`; above the
threshold the lower bound is inclusive and the upper exclusive, below it the reverse) and
applies its `ScalingAdjustment` by `AdjustmentType`:

- `ChangeInCapacity`: add the adjustment (negative removes);
- `ExactCapacity`: set the capacity to it;
- `PercentChangeInCapacity`: add that per cent of the current capacity, a change between 0
  and 1 in size made 1, a larger one truncated toward zero (12.7 -> 12, -6.67 -> -6), and at
  least `MinAdjustmentMagnitude` in size when that is given;

then keeps the capacity within `MinCapacity..MaxCapacity`.  `Cooldown` (default 300 s): after a
scale-out, a further scale-out counts the capacity the first one added (an alarm asking for +3
after a +2 adds 1: the step is applied to the capacity before the cooldown began, and the
group grows only if that is more than it has); after a scale-in, further scale-ins wait for
the cooldown, while a scale-out goes ahead at once and ends it.  With a scale-out and a
scale-in alarm both in ALARM, the scale-out is taken (the policy giving the larger capacity).

A datapoint the metric does not have leaves the alarms as they were and invokes nothing
(CloudWatch's `TreatMissingData = missing` as seen by one evaluation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from sim.tiers.cluster.autoscale.decision import Decision

AdjustmentType = Literal["ChangeInCapacity", "ExactCapacity", "PercentChangeInCapacity"]
Comparison = Literal[
    "GreaterThanOrEqualToThreshold",
    "GreaterThanThreshold",
    "LessThanThreshold",
    "LessThanOrEqualToThreshold",
]


@dataclass(frozen=True)
class StepAdjustment:
    """`StepAdjustment`: the interval of `metric - threshold` (None: unbounded) and the
    `ScalingAdjustment`."""

    lower: float | None
    upper: float | None
    adjustment: int

    def holds(self, difference: float) -> bool:
        if difference >= 0:
            return (self.lower is None or self.lower <= difference) and (
                self.upper is None or difference < self.upper
            )
        return (self.lower is None or self.lower < difference) and (
            self.upper is None or difference <= self.upper
        )


@dataclass(frozen=True)
class StepPolicy:
    """One alarm and the policy it invokes."""

    threshold: float
    comparison: Comparison
    steps: tuple[StepAdjustment, ...]
    adjustment_type: AdjustmentType = "ChangeInCapacity"
    min_adjustment_magnitude: int | None = None
    cooldown_s: float = 300.0
    evaluation_periods: int = 1

    def breached(self, value: float) -> bool:
        match self.comparison:
            case "GreaterThanOrEqualToThreshold":
                return value >= self.threshold
            case "GreaterThanThreshold":
                return value > self.threshold
            case "LessThanThreshold":
                return value < self.threshold
            case _:
                return value <= self.threshold

    def step_for(self, value: float) -> StepAdjustment | None:
        difference = value - self.threshold
        return next((s for s in self.steps if s.holds(difference)), None)

    def capacity(self, current: int, adjustment: int) -> int:
        """The capacity the adjustment asks for, before MinCapacity/MaxCapacity."""
        if self.adjustment_type == "ExactCapacity":
            return adjustment
        if self.adjustment_type == "ChangeInCapacity":
            return current + adjustment
        raw = current * adjustment / 100
        change = int(math.copysign(1, raw)) if 0 < abs(raw) < 1 else math.trunc(raw)
        floor = self.min_adjustment_magnitude
        if floor is not None and change and abs(change) < floor:
            change = int(math.copysign(floor, change))
        return current + change


@dataclass
class StepScaling:
    """A scalable target with a scale-out and/or a scale-in step policy."""

    min_capacity: int
    max_capacity: int
    scale_out: StepPolicy | None = None
    scale_in: StepPolicy | None = None
    period_s: float = 60.0
    _breaches: dict[str, int] = field(default_factory=lambda: {"out": 0, "in": 0})
    _scale_out_since: tuple[float, int] | None = None  # (time, capacity before it)
    _scale_in_at: float | None = None

    @property
    def evaluation_period_s(self) -> float:
        return self.period_s

    def decide(self, now_s: float, current: int, value: float | None) -> Decision:
        if value is None:
            return Decision(current, "INSUFFICIENT_DATA")
        out = self._in_alarm("out", self.scale_out, value)
        into = self._in_alarm("in", self.scale_in, value)
        if out and self.scale_out is not None:
            return self._out(now_s, current, self.scale_out, value)
        if into and self.scale_in is not None:
            return self._in(now_s, current, self.scale_in, value)
        return Decision(current, "OK")

    def _in_alarm(self, name: str, policy: StepPolicy | None, value: float) -> bool:
        if policy is None:
            return False
        self._breaches[name] = self._breaches[name] + 1 if policy.breached(value) else 0
        return self._breaches[name] >= policy.evaluation_periods

    def _clamp(self, capacity: int) -> int:
        return min(max(capacity, self.min_capacity), self.max_capacity)

    def _out(self, now_s: float, current: int, policy: StepPolicy, value: float) -> Decision:
        step = policy.step_for(value)
        if step is None:
            return Decision(current, "no step holds the metric")
        since = self._scale_out_since
        cooling = since is not None and now_s < since[0] + policy.cooldown_s
        base = since[1] if cooling and since is not None else current
        desired = max(current, self._clamp(policy.capacity(base, step.adjustment)))
        if desired > current:
            self._scale_out_since = (now_s, base)
            self._scale_in_at = None  # a scale-out ends the scale-in cooldown
            return Decision(
                desired,
                "scale-out cooldown: the added capacity counted" if cooling else "scale-out",
            )
        return Decision(current, "scale-out cooldown" if cooling else "at MaxCapacity")

    def _in(self, now_s: float, current: int, policy: StepPolicy, value: float) -> Decision:
        if self._scale_in_at is not None and now_s < self._scale_in_at + policy.cooldown_s:
            return Decision(current, "scale-in cooldown")
        step = policy.step_for(value)
        if step is None:
            return Decision(current, "no step holds the metric")
        desired = min(current, self._clamp(policy.capacity(current, step.adjustment)))
        if desired < current:
            self._scale_in_at = now_s
            return Decision(desired, "scale-in")
        return Decision(current, "at MinCapacity")
