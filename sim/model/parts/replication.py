"""Session replication between the nodes (`[cluster]`, `[[cluster.replication]]`: Tomcat's
`DeltaManager`/`BackupManager`, JBoss's JGroups-based tiers) as the engines build it: which
replications are active, what each is called, and which nodes receive each node's sessions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.features import Declaration, StackPart, approximate


@dataclass(frozen=True)
class ReplicationPart(StackPart):
    """One active replication (`cluster.replication.<index>`)."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "replication.sync": approximate(
            "synchronous replication holds the request thread until every replica acknowledges"
        ),
        "replication.async": approximate(
            "asynchronous replication adds serialization, network and receiver CPU work"
        ),
    }

    index: int  # its position in `cluster.replication`: its stream `cluster.replication.<index>`
    # its probe: `replication.<tier>`, or `replication.<index>` for a tier replicated twice
    name: str
    tier: str  # `web` (HTTP sessions) or `ejb` (stateful beans)
    # per sending node (in `Plan.nodes` order), the nodes that receive its sessions: every
    # other node (`scope = "all"`, DeltaManager) or its next `buddies` (BackupManager)
    receivers: tuple[tuple[int, ...], ...]
    settings: Any  # the replication's own parameters (the schema's section)

    def features(self) -> dict[str, str]:
        mode = self.settings.mode  # `cluster.replication.<index>.mode`: sync or async
        return {f"replication.{mode}": f"cluster.replication.{self.index}.mode = {mode!r}"}


@dataclass(frozen=True)
class ClusterNetwork:
    """The cluster's network (`cluster.network`): a switch with a full-duplex link per node
    (`net.<node>.tx`, `net.<node>.rx`), or one shared segment (`net.segment`)."""

    switched: bool
    multicast: bool  # one transmission reaches every receiver (`cluster.multicast`)
    bandwidth_bps: float
    latency_s: float


def replication_parts(model: Any, nodes: int) -> tuple[ReplicationPart, ...]:
    """The active replications of `model` (a `sim.model.schema.Model`) over `nodes` nodes."""
    active = model.cluster.active
    tiers = [spec.tier for _, spec in active]
    out = []
    for index, spec in active:
        if spec.scope == "all":
            receivers = tuple(tuple(r for r in range(nodes) if r != s) for s in range(nodes))
        else:
            receivers = tuple(
                tuple((s + k) % nodes for k in range(1, spec.buddies + 1)) for s in range(nodes)
            )
        name = f"replication.{spec.tier}" if tiers.count(spec.tier) == 1 else f"replication.{index}"
        out.append(ReplicationPart(index, name, spec.tier, receivers, spec))
    return tuple(out)


def cluster_network(model: Any) -> ClusterNetwork:
    cluster = model.cluster
    return ClusterNetwork(
        switched=cluster.network == "switched",
        multicast=cluster.multicast,
        bandwidth_bps=cluster.bandwidth_bps,
        latency_s=cluster.latency_s,
    )
