"""The HPA's proposal from one metric: kube-controller-manager's `replica_calculator.go`.

`desired = ceil(ready pods x current / target)`, with no change while the ratio is within
the tolerance (`--horizontal-pod-autoscaler-tolerance`, 0.1; per direction as
`behavior.scaleUp/scaleDown.tolerance` since Kubernetes 1.33), and the controller's care for
pods that have no sample yet:

- a pod the metrics API does not list ("missing") counts, once the ratio is known, as using
  the target (100 % of its request, or the target if above 100 %, for CPU) when the group
  would shrink and as using nothing when it would grow: both damp the change;
- a pod not ready (Pending; for CPU also a pod in its `--horizontal-pod-autoscaler-cpu-
  initialization-period` whose Ready condition is false) is left out, and counted as using
  nothing when the group would grow;
- if those corrections bring the ratio within the tolerance or reverse its direction, nothing
  changes.

Quantities are compared as the metrics API gives them, in thousandths (Kubernetes'
milli-values), and CPU utilisation is a whole per cent (`GetResourceUtilizationRatio`:
`int32(metricsTotal * 100 / requestsTotal)`), so the hand-computed decisions of the tests are
the controller's own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sim.tiers.cluster.autoscale.decision import PodSample

# The HPA v2 metric sources this family reads (autoscaling/v2 `MetricSpec`):
#   cpu_utilization  Resource cpu, target.averageUtilization [% of the pod's CPU request]
#   pods             Pods metric, target.averageValue (requests per second per pod)
#   external         External metric, target.value (a group-wide value such as p95 [s])
#   external_average External metric, target.averageValue (the value divided among the pods)
MetricKind = Literal["cpu_utilization", "pods", "external", "external_average"]
METRIC_KINDS: tuple[MetricKind, ...] = ("cpu_utilization", "pods", "external", "external_average")


@dataclass(frozen=True)
class Tolerances:
    """`isWithin`: no change while 1 - scale_down <= ratio <= 1 + scale_up."""

    scale_down: float = 0.1
    scale_up: float = 0.1

    def within(self, ratio: float) -> bool:
        return 1.0 - self.scale_down <= ratio <= 1.0 + self.scale_up


def milli(value: float) -> int:
    """A quantity as the metrics API carries it (`resource.Quantity.MilliValue`)."""
    return round(value * 1000)


def pods_proposal(
    kind: MetricKind,
    target: float,
    current: int,
    pods: Sequence[PodSample],
    tolerances: Tolerances,
    cpu_request_cores: float = 1.0,
) -> int | None:
    """`GetResourceReplicas` (cpu_utilization) and `calcPlainMetricReplicas` (pods): the
    proposal from the pods' samples, or None when no ready pod has one ("did not receive
    metrics for any ready pods": the controller then leaves the group as it is)."""
    ready = [milli(p.value) for p in pods if p.ready and p.value is not None]
    if not ready:
        return None
    missing = sum(1 for p in pods if p.ready and p.value is None)
    unready = sum(1 for p in pods if not p.ready)
    request = milli(cpu_request_cores)
    if kind == "cpu_utilization":
        target_usage = round(target)  # averageUtilization is a whole per cent

        def ratio_of(values: list[int]) -> float:
            return ((sum(values) * 100) // (request * len(values))) / target_usage

        fallback = request * max(100, target_usage) // 100
    else:
        target_usage = milli(target)

        def ratio_of(values: list[int]) -> float:
            return (sum(values) // len(values)) / target_usage

        fallback = target_usage
    ratio = ratio_of(ready)
    scale_up_with_unready = unready > 0 and ratio > 1.0
    if not scale_up_with_unready and missing == 0:
        if tolerances.within(ratio):
            return current
        return math.ceil(ratio * len(ready))
    values = list(ready)
    if missing and ratio < 1.0:
        values += [fallback] * missing
    elif missing and ratio > 1.0:
        values += [0] * missing
    if scale_up_with_unready:
        values += [0] * unready
    new_ratio = ratio_of(values)
    if tolerances.within(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current
    proposal = math.ceil(new_ratio * len(values))
    if (new_ratio < 1.0 and proposal > current) or (new_ratio > 1.0 and proposal < current):
        return current
    return proposal


def external_proposal(
    kind: MetricKind,
    target: float,
    current: int,
    value: float | None,
    ready_pods: int,
    tolerances: Tolerances,
) -> int | None:
    """`GetExternalMetricReplicas` (target.value: `ceil(ready pods x value / target)`) and
    `GetExternalPerPodMetricReplicas` (target.averageValue: `ceil(value / target)`, the
    tolerance judged on `value / (target x replicas)`); None when the metric has no value."""
    if value is None:
        return None
    usage = milli(value)
    target_usage = milli(target)
    if kind == "external_average":
        if tolerances.within(usage / (target_usage * current)):
            return current
        return math.ceil(usage / target_usage)
    ratio = usage / target_usage
    if tolerances.within(ratio):
        return current
    return math.ceil(ratio * ready_pods)
