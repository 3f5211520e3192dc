"""Build the autoscaled groups (`backends.N.autoscale`) over the assembled nodes.

The plan builds `max_replicas` nodes for such a group (`sim.model.plan`); the first `count`
serve from the start, the others wait outside the balancer's members until the autoscaler
asks for them (`sim.tiers.cluster.elastic_group`, `sim.tiers.cluster.node_life`).
"""

from __future__ import annotations

from sim.model.parts.autoscale import AutoscaledGroup
from sim.tiers.balancer.dispatcher import Dispatcher
from sim.tiers.balancer.slow_start import SlowStart
from sim.tiers.cluster.elastic_group import ElasticGroup
from sim.tiers.cluster.node_life import NodeLife, NodeTiming
from sim.tiers.proxy.backend_pool import BackendPool


def elastic_groups(
    groups: tuple[AutoscaledGroup, ...],
    kernel,
    nodes: list,
    jvms: list,
    entries: list,
    dispatcher,
    jdbc_pools: dict | None = None,
) -> list[ElasticGroup]:
    """One control loop per autoscaled group (`sim.model.parts.autoscale`); none when no
    group scales."""
    made: list[ElasticGroup] = []
    for group in groups:
        spec = group.settings
        # validated at load (`sim.model.autoscale.refuse_autoscale`): the group is a member of
        # the balancer and can grow past one node, so a dispatcher chooses among its nodes
        assert isinstance(dispatcher, Dispatcher)
        dispatcher.track_in_flight()  # a node killed after its grace period fails them
        members = group.members
        slow = (
            SlowStart(kernel, dispatcher.policy.weights, spec.slow_start_s)
            if spec.slow_start_s > 0
            else None
        )
        timing = NodeTiming(
            provisioning_s=spec.provisioning_s,
            jvm_start_s=spec.jvm_start_s,
            readiness_delay_s=spec.readiness_delay_s,
            readiness_period_s=spec.readiness_period_s,
            drain_s=spec.drain_s,
            warm_pool=spec.warm_pool,
        )
        lives = [
            NodeLife(
                kernel,
                dispatcher,
                member,
                nodes[member].name,
                timing,
                jvm=jvms[member],
                connections=entries[member] if isinstance(entries[member], BackendPool) else None,
                jdbc=(jdbc_pools or {}).get(member),
                slow_start=slow,
                ready=k < group.ready,
            )
            for k, member in enumerate(members)
        ]
        elastic = ElasticGroup(
            kernel,
            group.name,
            spec.autoscaler(node_cores=nodes[members[0]].cpu.cores),
            spec.metric,
            lives,
            [nodes[m].cpu for m in members],
            [nodes[m] for m in members],
            spec.scrape_s,
            group.ready,
            spec.external_source,
        )
        if spec.external_source is not None:
            # the external metric is what the balancer saw of the group's answers
            dispatcher.watch_answers(elastic.answered)
        made.append(elastic)
    return made
