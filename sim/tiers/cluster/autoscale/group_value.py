"""What an AWS policy reads: one value for the whole group, from what the HPA reads per pod.

An AWS policy's alarm watches one CloudWatch metric of the group, not each instance:

- `cpu_utilization`: `ASGAverageCPUUtilization` (namespace AWS/EC2, dimension
  `AutoScalingGroupName`), the instances' `CPUUtilization` averaged — a per cent of each
  instance's vCPUs, here of the node's `cores`;
- `pods`: `ALBRequestCountPerTarget`, the target group's requests over its healthy targets —
  here per second, as the HPA's per-pod metric (CloudWatch counts per period: multiply the
  target by 60 for a one-minute `RequestCountPerTarget`);
- `external`: a group value the balancer measures (`external_source`: the answers' p95 as
  ALB `TargetResponseTime` p95, or their rate as `RequestCount`).

An instance still in its warm-up (here: not ready, or ready only part of the period) does
not count towards the aggregated metric (target tracking's `DefaultInstanceWarmup`, step
scaling's `EstimatedInstanceWarmup`); with no instance left, the datapoint is missing and the
alarm stays as it was (`INSUFFICIENT_DATA`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from sim.tiers.cluster.autoscale.decision import Decision, PodSample

# what an external metric measures of the requests the balancer answered from the group
ExternalSource = Literal["response_p95_s", "requests_per_s"]
EXTERNAL_SOURCES: tuple[ExternalSource, ...] = ("response_p95_s", "requests_per_s")


class GroupPolicy(Protocol):
    """`aws_step.StepScaling`, `aws_target.TargetTracking`: a decision from one value."""

    @property
    def evaluation_period_s(self) -> float: ...

    def decide(self, now_s: float, current: int, value: float | None) -> Decision: ...


@dataclass
class GroupValue:
    """An AWS policy driven as the engines drive the HPA (`decide(now, replicas, pods,
    external)`): the group's value is formed here, then handed to the policy."""

    policy: GroupPolicy
    metric: str  # cpu_utilization, pods or external
    node_cores: float = 1.0  # a node's CPU: cpu_utilization is a per cent of it

    @property
    def evaluation_period_s(self) -> float:
        return self.policy.evaluation_period_s

    def value(self, pods: Sequence[PodSample], external: float | None) -> float | None:
        """The datapoint the alarm sees, or None when it has none."""
        if self.metric == "external":
            return external
        # a sample over the whole period of a node ready throughout it (`ready`); a node
        # ready for part of it is in its warm-up for the CPU metric (`elastic_group`)
        values = [p.value for p in pods if p.ready and p.value is not None]
        if not values:
            return None
        mean = sum(values) / len(values)
        return 100.0 * mean / self.node_cores if self.metric == "cpu_utilization" else mean

    def decide(
        self,
        now_s: float,
        current: int,
        pods: Sequence[PodSample] = (),
        external: float | None = None,
    ) -> Decision:
        return self.policy.decide(now_s, current, self.value(pods, external))
