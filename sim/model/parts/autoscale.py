"""The autoscaled groups (`backends.N.autoscale`: a Kubernetes HorizontalPodAutoscaler over a
Deployment of `backends.N.count` replicas) as the engines build them: which of the plan's
nodes belong to each group, and how many of them serve from the start.

The plan builds `maxReplicas` nodes for such a group (`sim.model.plan`); the first
`backends.N.count` (the Deployment's `spec.replicas`) serve from the start, the others wait
outside the balancer's members until the autoscaler asks for them
(`sim.engines.reference.elastic`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.model.autoscale import Autoscale


@dataclass(frozen=True)
class AutoscaledGroup:
    """One autoscaled group of `backends`."""

    name: str  # its control loop's probe: `<group>.autoscale`
    members: tuple[int, ...]  # its nodes, as indices of `Plan.nodes`
    ready: int  # nodes serving at the start (`backends.N.count`, the Deployment's replicas)
    # the HPA and its nodes' lives (`backends.N.autoscale`: `metric`, `scrape_interval_s`,
    # `provisioning_s`, `slow_start_s`, ...), validated (`sim.model.autoscale.Autoscale`)
    settings: Autoscale


def autoscaled_groups(model: Any, nodes: tuple[Any, ...]) -> tuple[AutoscaledGroup, ...]:
    """The autoscaled groups of `model` (a `sim.model.schema.Model`) over the plan's `nodes`
    (`NodePlan`), in the order of `backends`."""
    return tuple(
        AutoscaledGroup(
            name=f"{group.name}.autoscale",
            members=tuple(i for i, planned in enumerate(nodes) if planned.group == g),
            ready=group.count,
            settings=group.autoscale,
        )
        for g, group in enumerate(model.backends)
        if group.autoscale is not None
    )
