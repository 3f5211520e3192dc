"""An AWS target tracking scaling policy (Application Auto Scaling
`TargetTrackingScalingPolicyConfiguration`; EC2 Auto Scaling's `TargetTrackingConfiguration`).

AWS creates and manages two CloudWatch alarms for the policy and documents their behaviour
but not a formula:

- a high alarm: the metric above `TargetValue` for `scale_out_datapoints` periods in a row
  (3 one-minute datapoints for a one-minute metric); it "scales out proportionally to the
  metric as fast as it can";
- a low alarm: the metric below the target by a margin ("usually more than 10 % lower") for
  `scale_in_datapoints` periods in a row (15); it "scales in more gradually", never removing
  capacity that would bring the metric above the target, and not at all with
  `DisableScaleIn`.

Proportional here is the capacity that brings the metric back to its target if the metric
divides among the capacity (a utilisation or a per-target request count, as AWS requires of a
target tracking metric): `ceil(capacity x metric / target)`, rounded up both ways so that a
scale-in never overshoots the target.  That rounding is this model's reading of the
documented behaviour (AWS publishes none); the alarm counts are the documented defaults of a
one-minute metric before AWS's 2024 change to self-tuning alarms.

`ScaleOutCooldown` (default 300 s): during it the policy "won't increase the desired capacity
again unless a larger scale out is triggered", the capacity the first added counting towards
the next (the proportional capacity is computed from the capacity before the cooldown
began).  `ScaleInCooldown` (default 300 s) blocks further scale-ins; a scale-out goes ahead
and ends it.  A missing datapoint changes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim.tiers.cluster.autoscale.decision import Decision


@dataclass(frozen=True)
class TargetTrackingSpec:
    target: float
    min_capacity: int
    max_capacity: int
    scale_out_cooldown_s: float = 300.0
    scale_in_cooldown_s: float = 300.0
    disable_scale_in: bool = False
    period_s: float = 60.0
    scale_out_datapoints: int = 3
    scale_in_datapoints: int = 15
    scale_in_margin: float = 0.1  # the low alarm's threshold: target x (1 - margin)

    def __post_init__(self) -> None:
        if self.target <= 0 or not 0 <= self.min_capacity <= self.max_capacity:
            raise ValueError("a target above 0 and 0 <= min_capacity <= max_capacity")


@dataclass
class TargetTracking:
    spec: TargetTrackingSpec
    _high: int = 0
    _low: int = 0
    _scale_out_since: tuple[float, int] | None = None  # (time, capacity before it)
    _scale_in_at: float | None = None

    @property
    def evaluation_period_s(self) -> float:
        return self.spec.period_s

    def proportional(self, capacity: int, value: float) -> int:
        wanted = math.ceil(capacity * value / self.spec.target)
        return min(max(wanted, self.spec.min_capacity), self.spec.max_capacity)

    def decide(self, now_s: float, current: int, value: float | None) -> Decision:
        spec = self.spec
        if value is None:
            return Decision(current, "INSUFFICIENT_DATA")
        self._high = self._high + 1 if value > spec.target else 0
        low_threshold = spec.target * (1 - spec.scale_in_margin)
        self._low = self._low + 1 if value < low_threshold else 0
        if self._high >= spec.scale_out_datapoints:
            return self._out(now_s, current, value)
        if self._low >= spec.scale_in_datapoints and not spec.disable_scale_in:
            return self._in(now_s, current, value)
        return Decision(current, "OK")

    def _out(self, now_s: float, current: int, value: float) -> Decision:
        since = self._scale_out_since
        cooling = since is not None and now_s < since[0] + self.spec.scale_out_cooldown_s
        base = since[1] if cooling and since is not None else current
        desired = max(current, self.proportional(base, value))
        if desired > current:
            self._scale_out_since = (now_s, base)
            self._scale_in_at = None
            return Decision(desired, "scale-out")
        return Decision(current, "scale-out cooldown" if cooling else "at MaxCapacity")

    def _in(self, now_s: float, current: int, value: float) -> Decision:
        at = self._scale_in_at
        if at is not None and now_s < at + self.spec.scale_in_cooldown_s:
            return Decision(current, "scale-in cooldown")
        desired = min(current, self.proportional(current, value))
        if desired < current:
            self._scale_in_at = now_s
            return Decision(desired, "scale-in")
        return Decision(current, "at MinCapacity")
