"""An autoscaled group on the reference engine: the control loop, a node's life, slow start.

The exact scenarios use deterministic arrivals and demands, so every time below is worked by
hand in the test's docstring (the HPA's arithmetic as in `tests/tiers/test_autoscale.py`)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from sim.engines.reference.assemble import assemble
from sim.kernel.calendar import Kernel
from sim.model.plan import compile_plan
from sim.observe.recorder import Recorder
from sim.observe.trace import BINS
from sim.random.streams import Streams
from sim.run.replications import run
from sim.stats.confidence import paired_t_interval
from sim.tiers.balancer.slow_start import SlowStart
from sim.tiers.cluster.elastic_group import ElasticGroup
from sim.tiers.cluster.node_life import NodeTiming
from tests.conftest import model_from


def run_assembled(model, until: float, spy: int | None = None):
    """Build one replication, run it to `until`; with `spy`, the times at which the
    balancer hands member `spy` a request."""
    assembly, _ = assemble(
        compile_plan(model),
        Streams(model.run.seed, 0),
        lambda kernel, made: Recorder(kernel, made.probes(), BINS, recording=True),
    )
    handed: list[float] = []
    if spy is not None:
        dispatcher = assembly.dispatcher
        assert dispatcher is not None
        dispatcher.nodes[spy] = _Spy(dispatcher.nodes[spy], assembly.kernel, handed)
    assembly.clients.start()
    assembly.kernel.run(until=until)
    (group,) = [p for p in assembly.extra_probes if isinstance(p, ElasticGroup)]
    return assembly, group, handed


class _Spy:
    """A balancer member that notes when it is handed a request."""

    def __init__(self, node, kernel: Kernel, handed: list[float]) -> None:
        self.node, self.kernel, self.handed, self.name = node, kernel, handed, node.name

    def serve(self, request, reply) -> None:
        self.handed.append(self.kernel.now)
        self.node.serve(request, reply)


def deterministic(count: int, interarrival: float, demand: float, autoscale: dict) -> dict:
    return {
        "clients": {"kind": "open", "interarrival": interarrival},
        "backends": [
            {
                "name": "web",
                "count": count,
                "cores": 1,
                "threads": 10,
                "demand": demand,
                "autoscale": autoscale,
            }
        ],
        "run": {"duration_s": 60.0, "warmup": 0.0},
    }


PODS = {"metric": "pods", "target": 1.5, "max_replicas": 2}


# ------------------------------------------------------------------------------ exact times
def test_a_scale_up_decided_joined_and_served_at_hand_computed_times():
    """Arrivals every 0.3 s (the first at 0.3), 10 ms each, on web1; HPA on requests per second
    per pod, target 1.5.  t = 0: the first sync has no scrape yet (FailedGetMetric).  t = 15:
    the scrape at 15 (taken before the sync at the same instant) counts the requests web1
    completed in [0, 15]: arrivals 1..49 (the 50th, at 15.0, ends at 15.01): 49 / 15 = 3.267
    req/s, 3267 milli over a 1500 target: ratio 2.178, ceil(2.178 x 1) = 3, bounded by
    max_replicas = 2 (TooManyReplicas).  web2 is asked for at 15, its container starts after
    5 s of provisioning (20), the JVM takes 25 s (45); probes at 20, 30, 40, 50 (period 10 s,
    no initial delay): ready at 50, a member at once.  The rotation's pointer already points
    at web2 (it passed over the absent member), so the first arrival after 50, the 167th at
    50.1, is web2's."""
    model = model_from(
        deterministic(
            1, 0.3, 0.01, {**PODS, "provisioning_s": 5, "jvm_start_s": 25, "readiness_period_s": 10}
        )
    )
    _, group, handed = run_assembled(model, until=60.0, spy=1)
    first, second = group.history[:2]
    assert (first.at_s, first.decision.reason) == (0.0, "FailedGetMetric")
    assert second.at_s == 15.0
    assert second.pods[0].value == pytest.approx(49 / 15)
    assert (second.decision.desired, second.decision.reason) == (2, "TooManyReplicas")
    web2 = group.lives[1]
    assert web2.log == [(15.0, "provisioning"), (20.0, "starting"), (50.0, "ready")]
    assert handed[0] == pytest.approx(50.1, abs=1e-9)
    assert len(handed) == 17  # arrivals 167, 169, ..., 199 (at 59.7): every other one
    areas = dict(zip(group.fields, group.counters(60.0)))
    assert areas["replicas_area"] == pytest.approx(1 * 15 + 2 * 45)
    assert areas["ready_area"] == pytest.approx(1 * 50 + 2 * 10)
    assert areas["node_seconds"] == pytest.approx(60 + 45)  # web2 costs from its decision
    assert (areas["scale_ups"], areas["nodes_added"]) == (1, 1)


SCALE_DOWN = {
    **PODS,
    "min_replicas": 1,
    "target": 10,
    "scale_down": {
        "stabilization_window_s": 0,
        "policies": [{"type": "percent", "value": 100, "period_s": 15}],
    },
}


@pytest.mark.parametrize(
    ("drain_s", "gone_at", "failed"),
    [
        (30.0, 15.1, 0),  # the request in it ends at 15.1: the node goes then
        (0.05, 15.05, 1),  # the grace period ends first: killed, the request fails
    ],
)
def test_a_scale_down_drains_the_node_before_it_goes(drain_s, gone_at, failed):
    """Arrivals every 0.4 s alternate between web1 (odd) and web2 (even), 0.7 s each, so no
    node ever queues.  The scrape at 15 counts web1's 18 (arrivals 1..35) and web2's 17
    (2..34; the 36th, at 14.4, ends at 15.1): 1200 and 1133 milli, mean 1166 against 10000:
    ratio 0.117, ceil(0.117 x 2) = 1 (no stabilisation window).  web2 (the last built of two
    equally old) leaves the members at 15 with one request in it; it is gone when that ends
    (15.1), or killed when the grace period ends first."""
    model = model_from(deterministic(2, 0.4, 0.7, {**SCALE_DOWN, "drain_s": drain_s}))
    assembly, group, handed = run_assembled(model, until=29.0, spy=1)
    sync = group.history[1]
    assert [p.value for p in sync.pods] == pytest.approx([18 / 15, 17 / 15])
    assert (sync.at_s, sync.decision.desired) == (15.0, 1)
    web2 = group.lives[1]
    assert web2.log == [(15.0, "draining"), (pytest.approx(gone_at), "absent")]
    assert handed[-1] == pytest.approx(14.4)  # nothing sent to it once it left
    areas = dict(zip(group.fields, group.counters(29.0)))
    assert areas["node_seconds"] == pytest.approx(29 + gone_at)
    assert areas["replicas_area"] == pytest.approx(2 * 15 + 1 * 14)
    assert assembly.clients.recorder.errors == failed


@pytest.mark.parametrize(
    ("jvm_start_s", "delay_s", "after_s"),
    [
        (25.0, 0.0, 30.0),  # probes at 0, 10, 20, 30: the first after the start passes
        (20.0, 0.0, 20.0),  # a probe at the very end of the start passes
        (10.0, 30.0, 30.0),  # started before the first probe: that probe passes
        (0.0, 0.0, 0.0),
    ],
)
def test_the_readiness_probe_that_passes(jvm_start_s, delay_s, after_s):
    timing = NodeTiming(jvm_start_s=jvm_start_s, readiness_delay_s=delay_s, readiness_period_s=10)
    assert timing.ready_after_container_s() == after_s


def test_slow_start_ramps_the_weight_linearly_from_one_per_cent():
    """HAProxy `slowstart 10s`, weights recomputed every 2 s: 1 %, 20 %, 40 % ... 100 %."""
    kernel = Kernel()
    weights = [1.0, 3.0]
    ramp = SlowStart(kernel, weights, 10.0)
    seen = []
    for t in (0.0, 1.0, 2.0, 4.0, 9.0, 10.0, 12.0):
        kernel.after(t + 1e-6, lambda at: seen.append((at, weights[1])), t)
    kernel.after(0.0, lambda _: ramp.begin(1))
    kernel.run(until=20.0)
    assert [at for at, _ in seen] == [0.0, 1.0, 2.0, 4.0, 9.0, 10.0, 12.0]
    assert [w for _, w in seen] == pytest.approx([0.03, 0.03, 0.6, 1.2, 2.4, 3.0, 3.0])
    assert weights[0] == 1.0
    ramp.begin(0)
    ramp.cancel(0)  # leaving: the configured weight is back for the next join
    assert weights[0] == 1.0 and not ramp.timers


# ------------------------------------------------------------------- the spike, stochastic
def spike(warm_pool: bool, slow_start_s: float = 0.0) -> dict:
    """20 req/s for two minutes (the first nodes' JVMs warm up), then 160 req/s: two 2-core
    nodes at 80 % of their CPU, above the HPA's 60 % target, so it adds nodes; a new node's
    JVM starts five times slower and warms up over its first 200 requests (e-folding), unless
    it comes from a warm pool."""
    return {
        "clients": {
            "kind": "open",
            "schedule": [
                {"rate_per_s": 20, "duration_s": 120},
                {"rate_per_s": 160, "duration_s": 120},
            ],
        },
        "balancer": {"policy": "byrequests"},
        "backends": [
            {
                "name": "web",
                "count": 2,
                "cores": 2,
                "threads": 100,
                "demand": {"dist": "exponential", "mean": 0.02},
                "jvm": {
                    "heap_mb": 512,
                    "baseline_mb": 64,
                    "allocation_kb": 0,
                    "jit_cold_factor": 5.0,
                    "jit_warm_factor": 1.0,
                    "jit_warmup_requests": 200,
                },
                "autoscale": {
                    "min_replicas": 2,
                    "max_replicas": 8,
                    "metric": "cpu_utilization",
                    "target": 60,
                    "cpu_request_cores": 2,
                    "provisioning_s": 10,
                    "jvm_start_s": 20,
                    "readiness_period_s": 5,
                    "warm_pool": warm_pool,
                    "slow_start_s": slow_start_s,
                },
            }
        ],
        "run": {"duration_s": 120.0, "warmup": 120.0, "seed": 42},
    }


def test_the_engine_decides_as_the_policy_does_on_the_metric_it_recorded():
    """Each sync's input (time, replica count, pods as scraped) fed to a fresh HPA of the same
    spec gives the same decisions; the group then has what it decided, and the autoscaler
    counts exactly the replicas asked for."""
    model = model_from(spike(warm_pool=False))
    _, group, _ = run_assembled(model, until=240.0)
    history = group.history
    assert len(history) == 17  # syncs at 0, 15, ..., 240
    assert any(s.decision.desired > s.replicas for s in history)  # it did scale
    fresh = model.backends[0].autoscale.autoscaler()
    for sync in history:
        assert fresh.decide(sync.at_s, sync.replicas, list(sync.pods)) == sync.decision
        assert len(sync.pods) == sync.replicas
    for before, after in pairwise(history):
        assert after.replicas == before.decision.desired


def test_the_cold_start_storm_and_what_slow_start_does_to_it():
    """The same spike and autoscaler, common random numbers: a new node whose JVM starts cold
    takes its full share at once, answers slowly, keeps its CPU saturated, and the HPA adds
    more nodes: a higher 95th percentile and more scale-ups than with nodes from a warm pool.
    The balancer's slow start (60 s) removes most of the excess: the cold node takes load as
    it warms."""
    p95, scale_ups = {}, {}
    for name, data in {
        "warm_pool": spike(warm_pool=True),
        "cold": spike(warm_pool=False),
        "slow_start": spike(warm_pool=False, slow_start_s=60.0),
    }.items():
        result = run(model_from(data), replications=5)
        p95[name] = [r.metrics["response.p95"] for r in result.replications]
        scale_ups[name] = sum(r.metrics["web.autoscale.scale_ups"] for r in result.replications)
    excess = [c - w for c, w in zip(p95["cold"], p95["warm_pool"])]
    assert paired_t_interval(p95["cold"], p95["warm_pool"], 0.95).low > 0
    assert scale_ups["cold"] > scale_ups["warm_pool"]
    # slow start leaves less than half the excess
    left = [2 * (s - w) for s, w in zip(p95["slow_start"], p95["warm_pool"])]
    assert paired_t_interval(excess, left, 0.95).low > 0


def test_the_compiled_engine_refuses_it_and_auto_runs_it_on_the_reference():
    from sim.engines import EngineUnavailable, choose
    from sim.model.plan import compile_plan

    data = deterministic(1, 0.3, 0.01, PODS)
    assert "backends.autoscale" in choose(compile_plan(model_from(data))).note
    assert choose(compile_plan(model_from(data))).engine == "reference"
    with pytest.raises(EngineUnavailable) as refused:
        choose(compile_plan(model_from(data, engine="compiled")))
    assert "\n" not in str(refused.value) and "backends.autoscale" in str(refused.value)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"max_replicas": 1}, "max_replicas = 1"),
        ({"slow_start_s": 30}, "balancer.policy = 'round_robin'"),
    ],
)
def test_what_does_not_run_yet_is_refused_in_one_line(change, needle):
    from sim.model.load import ModelError

    with pytest.raises(ModelError) as refused:
        model_from(deterministic(1, 0.3, 0.01, {**PODS, **change}))
    message = str(refused.value)
    assert "\n" not in message and needle in message and "backends.0" in message


def test_the_replicas_figure_puts_the_load_beside_the_nodes():
    from sim.present.plots import replicas_figure

    columns = {
        "time": [1.0, 2.0, 4.0],
        "count.arrived": [10.0, 30.0, 50.0],
        "web.autoscale.replicas_now": [2.0, 3.0, 3.0],
        "web.autoscale.ready_now": [2.0, 2.0, 3.0],
    }
    figure = replicas_figure(columns, "web")
    replicas, ready, load = figure.data
    assert list(replicas.y) == [2.0, 3.0, 3.0] and list(ready.y) == [2.0, 2.0, 3.0]
    assert list(load.y) == [10.0, 30.0, 25.0]  # arrived / the interval's length
    assert load.yaxis == "y2"
    with pytest.raises(ValueError, match="autoscaled groups in it: web"):
        replicas_figure(columns, "app")
