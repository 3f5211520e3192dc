"""What an autoscaler reads and what it decides."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PodSample:
    """One node (pod, instance) of the group as the autoscaler sees it at an evaluation.

    `value` is its metric sample in the policy's unit (CPU utilisation of its request in per
    cent, requests per second); None when the metric pipeline has no sample for it (a pod
    the metrics API does not list: the HPA's "missing pods").  `ready` is its readiness
    (the pod's Ready condition, or a node not yet through its readiness probe)."""

    value: float | None
    ready: bool = True


@dataclass(frozen=True)
class Decision:
    """The desired replica count after one evaluation, and why (the controller's own words
    where it has them: the HPA's `ScalingLimited` / `AbleToScale` condition reasons)."""

    desired: int
    reason: str

    def change(self, current: int) -> int:
        """Nodes to add (positive) or remove (negative)."""
        return self.desired - current
