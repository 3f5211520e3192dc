"""What an autoscaler reads and what it decides."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PodSample:
    """One node (pod, instance) of the group as the autoscaler sees it at an evaluation.

    `value` is its metric sample in the policy's unit: CPU used in cores for the HPA's
    cpu_utilization (the HPA divides by the request), requests per second for a per-pod
    metric; None when the metric pipeline has no sample for it (a pod the metrics API does
    not list: the HPA's "missing pods").  `ready` is False for a pod the HPA leaves out as
    unready (`groupPods`): a Pending pod (provisioning, image pull); for the CPU metric also a
    pod within `--horizontal-pod-autoscaler-cpu-initialization-period` (5 min) of its start
    whose Ready condition is false or whose sample began before it became ready, and a pod
    never ready within `--horizontal-pod-autoscaler-initial-readiness-delay` (30 s).  The
    engine decides this from the node's life (JVM start, readiness probe)."""

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
