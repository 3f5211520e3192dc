"""The compiled engine's tables of the nodes' JVMs (`sim.tiers.appserver.jvm`): per JVM its
sizes and costs as the reference's `Jvm` derives them from `backends.N.jvm`, its start-up
heap state, the JVMs that hold replicas of its sessions (`connect`'s hook
`jvm.replica_holders`), and its probe view, which borrows `Jvm.metrics`; all read from the
stack's parts (`sim.model.parts.jvm`, `sim.model.parts.replication`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.engines.compiled import kernel as k
from sim.model.parts.jvm import JvmPart
from sim.model.plan import Plan as ModelPlan
from sim.tiers.appserver.jvm import Jvm

SESSIONS_AT_START = 1024  # per JVM; the driver doubles the table when the loop asks


class JvmView:
    """A JVM's probe over the compiled counters: `Jvm`'s fields and metrics."""

    fields: tuple[str, ...] = Jvm.fields
    metrics = Jvm.metrics

    def __init__(self, name: str) -> None:
        self.name = name


@dataclass
class JvmTables:
    """Per JVM (in node order): kernel JV_* and JVF_* rows and the replica holders (JH)."""

    jv: np.ndarray = field(default_factory=lambda: np.zeros((1, k.N_JV), dtype=np.int64))
    jvf: np.ndarray = field(default_factory=lambda: np.zeros((1, k.N_JVF)))
    holders: np.ndarray = field(default_factory=lambda: np.zeros((1, 1), dtype=np.int64))
    views: list[JvmView] = field(default_factory=list)
    station_jvm: list[int] = field(default_factory=list)  # per node: its JVM row, or -1
    cookies: bool = False  # the clients keep cookies (`jvm.cookies`): sessions have keys

    @property
    def count(self) -> int:
        return len(self.views)


def jvm_tables(model_plan: ModelPlan, node_cpus: list[int]) -> JvmTables:
    """The JVMs of the plan's nodes (`sim.model.parts.jvm`); `node_cpus` are the nodes' CPU
    rows."""
    stack = model_plan.stack
    assert stack is not None
    cookies = stack.keeps_sessions  # connect's hook `jvm.cookies`
    rows: list[tuple[int, JvmPart]] = []  # (node index, its JVM)
    station_jvm = []
    for index, node in enumerate(stack.nodes):
        station_jvm.append(len(rows) if node.jvm is not None else -1)
        if node.jvm is not None:
            rows.append((index, node.jvm))
    if not rows:
        return JvmTables(station_jvm=station_jvm, cookies=cookies)
    jv = np.zeros((len(rows), k.N_JV), dtype=np.int64)
    jvf = np.zeros((len(rows), k.N_JVF), dtype=np.float64)
    holders = np.zeros((len(rows), max(len(stack.nodes), 1)), dtype=np.int64)
    for v, (index, part) in enumerate(rows):
        spec = part.settings
        row, values = jv[v], jvf[v]
        row[k.JV_CPU] = node_cpus[index]
        row[k.JV_NODE] = index
        row[k.JV_CREATES] = int(spec.creates_sessions)
        row[k.JV_OVERHEAD_LIMIT] = int(spec.gc_overhead_limit)
        row[k.JV_WARMS] = int(spec.jit_warmup_requests > 0)
        row[k.JV_RESUME] = -1
        row[k.JV_FROZEN_HEAD] = -1
        row[k.JV_FROZEN_TAIL] = -1
        values[k.JVF_HEAP] = part.heap_bytes
        values[k.JVF_YOUNG] = part.young_bytes
        values[k.JVF_EDEN] = part.eden_bytes
        values[k.JVF_OLD_CAPACITY] = part.old_capacity_bytes
        values[k.JVF_BASELINE] = part.baseline_bytes
        values[k.JVF_SESSION_BYTES] = float(spec.session_bytes)
        values[k.JVF_ALLOCATION] = spec.allocation_kb * 1024.0
        values[k.JVF_SESSION_TIMEOUT] = spec.session_timeout_s
        values[k.JVF_EXPIRY_CHECK] = spec.expiry_check_s
        values[k.JVF_YOUNG_PAUSE] = spec.young_pause_s
        values[k.JVF_YOUNG_PER_MB] = spec.young_s_per_mb
        values[k.JVF_FULL_PAUSE] = spec.full_pause_s
        values[k.JVF_FULL_PER_MB] = spec.full_s_per_mb
        values[k.JVF_TIME_LIMIT] = spec.gc_time_limit
        values[k.JVF_FREE_LIMIT] = spec.gc_heap_free_limit
        values[k.JVF_NON_HEAP_MB] = spec.non_heap_mb
        values[k.JVF_COLD] = spec.jit_cold_factor
        values[k.JVF_WARM] = spec.jit_warm_factor
        values[k.JVF_WARMUP] = spec.jit_warmup_requests
        values[k.JVF_OLD_USED] = part.baseline_bytes  # the container and application, tenured
        values[k.JVF_HIGH_WATER] = part.baseline_bytes
        values[k.JVF_FACTOR] = (
            spec.jit_cold_factor if spec.jit_warmup_requests > 0 else spec.jit_warm_factor
        )
    # jvm.replica_holders: each web-tier replication's receivers that have a JVM (the last
    # web tier's, as the reference's hook assigns them tier by tier)
    for replication in stack.replications:
        if replication.tier != "web":
            continue
        for v, (sender, _part) in enumerate(rows):
            receivers = replication.receivers[sender]
            held = [station_jvm[r] for r in receivers if station_jvm[r] >= 0]
            jv[v, k.JV_HOLDERS] = len(held)
            holders[v, : len(held)] = held
    views = [JvmView(part.name) for _, part in rows]
    return JvmTables(
        jv=jv,
        jvf=jvf,
        holders=holders,
        views=views,
        station_jvm=station_jvm,
        cookies=cookies,
    )
