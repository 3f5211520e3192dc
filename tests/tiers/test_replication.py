"""Session replication between backend nodes: exact event times on tiny deterministic clusters.

Common numbers: 1-s requests on 1-core nodes; a 1250-byte session crosses a 10 kbit/s link in
exactly 1 s; 0.5 s of CPU per message on the sender and on each receiver; 125-byte acks
(0.1 s); no latency.  `makespan` is when the last response left.
"""

from __future__ import annotations

import pytest

from sim.run.replication import run_replication
from tests.conftest import model_from, on_both_engines

_on_both_engines = on_both_engines()


D = {"dist": "deterministic", "value": 1.0}


def cluster(
    replication: dict,
    *,
    nodes: int = 3,
    requests: int = 1,
    concurrency: int = 1,
    network="switched",
    multicast=True,
    policy="round_robin",
    groups: list[dict] | None = None,
) -> dict:
    spec = {
        "session_bytes": 1250,
        "message_cpu_s": 0.5,
        "serialize_s_per_kb": 0.0,
        "apply_s_per_kb": 0.0,
        "ack_bytes": 125,
        "trigger": "set_and_get",
        **replication,
    }
    backends = groups or [{"name": "node", "count": nodes, "threads": 4, "cores": 1, "demand": D}]
    return {
        "clients": {"kind": "ab", "concurrency": concurrency, "requests": requests},
        "balancer": {"policy": policy},
        "backends": backends,
        "cluster": {
            "replication": [spec],
            "network": network,
            "multicast": multicast,
            "bandwidth_bps": 1e4,
            "latency_s": 0.0,
        },
    }


def makespan(data: dict) -> tuple[float, dict]:
    result = run_replication(model_from(data, warmup="none"), 0)
    return result.metrics["makespan"], result.metrics


@pytest.mark.parametrize(
    "replication, network, multicast, expected",
    [
        # request 0-1, serialize 1-1.5, one multicast frame on node1's link 1.5-2.5, both receivers'
        # links 2.5-3.5, apply 3.5-4, acks on their links 4-4.1, then node1's incoming link takes
        # them one after the other: 4.1-4.2, 4.2-4.3 -> the response waits for the slowest ack
        ({"mode": "sync"}, "switched", True, 4.3),
        # unicast: node1's link sends a copy to node2 (1.5-2.5) then node3 (2.5-3.5); node3's
        # apply 4.5-5, ack 5-5.1 out, 5.1-5.2 in
        ({"mode": "sync"}, "switched", False, 5.2),
        # one shared segment: the frame 1.5-2.5 is the delivery; apply 2.5-3; acks 3-3.1, 3.1-3.2
        ({"mode": "sync"}, "shared", True, 3.2),
        # buddy replication, one buddy (node2): 1.5-2.5 out, 2.5-3.5 in, apply, ack 4-4.1, 4.1-4.2
        ({"mode": "sync", "scope": "buddy", "buddies": 1}, "switched", True, 4.2),
        # asynchronous: the response leaves once the message is serialized and handed over
        ({"mode": "async"}, "switched", True, 1.5),
    ],
)
def test_replication_holds_the_request_as_its_mode_says(replication, network, multicast, expected):
    span, metrics = makespan(cluster(replication, network=network, multicast=multicast))
    assert span == pytest.approx(expected)
    assert metrics["replication.web.replicated"] == 1
    assert metrics["replication.web.wait"] == pytest.approx(expected - 1.0)


def test_async_sender_blocks_when_flow_control_credits_are_used_up():
    """JGroups FC: credits for one message.  Both requests go to node1 (static policy).  The
    second is serialized at 3.0 with the first still unacknowledged (node1 out 1.5-2.5, node2 in
    2.5-3.5, apply 3.5-4, ack 4-4.1 out, 4.1-4.2 in): it waits, holding its thread, until 4.2."""
    data = cluster(
        {"mode": "async", "max_credits_bytes": 1250}, nodes=2, requests=2, policy="static"
    )
    span, metrics = makespan(data)
    assert span == pytest.approx(4.2)
    assert metrics["replication.web.credit_waits"] == 1
    roomy = cluster(
        {"mode": "async", "max_credits_bytes": 2500}, nodes=2, requests=2, policy="static"
    )
    assert makespan(roomy)[0] == pytest.approx(3.0)  # no wait: 1.5 + 1 s of work + 0.5 serialize


def test_a_busy_receiver_delays_the_synchronous_sender():
    """node `a` (1-s request) replicates to node `b`, whose own 5-s request occupies its one
    core: the 0.5-s apply arriving at 3.5 shares the core (rate 1/2) and ends at 4.5, not 4.0;
    a's response waits for it: ack 4.5-4.6 out, 4.6-4.7 in."""
    groups = [
        {"name": "a", "threads": 4, "cores": 1, "demand": D},
        {"name": "b", "threads": 4, "cores": 1, "demand": {"dist": "deterministic", "value": 5.0}},
    ]
    data = cluster(
        {"mode": "sync", "trigger": "set", "set_fraction": 1.0},
        groups=groups,
        requests=2,
        concurrency=2,
    )
    _span, metrics = makespan(data)
    assert metrics["replication.web.replicated"] == 2
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["a1.residence"] == pytest.approx(4.7)


@pytest.mark.parametrize(
    "trigger, set_fraction, npg, expected_fraction",
    [
        ("set_and_get", 0.2, 0.5, 1.0),
        ("set", 0.2, 0.5, 0.2),
        ("set_and_non_primitive_get", 0.2, 0.5, 0.6),
    ],
)
def test_the_trigger_decides_which_requests_replicate(
    trigger, set_fraction, npg, expected_fraction
):
    """400 requests: the replicated count is binomial(400, p); 4 standard deviations."""
    data = cluster(
        {
            "mode": "async",
            "trigger": trigger,
            "set_fraction": set_fraction,
            "non_primitive_get_fraction": npg,
        },
        requests=400,
        nodes=2,
    )
    data["backends"][0]["demand"] = {"dist": "deterministic", "value": 0.01}
    data["cluster"]["bandwidth_bps"] = 1e9
    _span, metrics = makespan(data)
    p = expected_fraction
    assert (
        abs(metrics["replication.web.replicated"] - 400 * p)
        <= 4 * (400 * p * (1 - p)) ** 0.5 + 1e-9
    )


def test_attribute_granularity_sends_only_the_changed_bytes():
    data = cluster({"mode": "sync", "granularity": "attribute", "changed_bytes": 125}, nodes=2)
    span, metrics = makespan(data)
    # 0.1-s frames: out 1.5-1.6, in 1.6-1.7, apply 1.7-2.2, ack 2.2-2.3, 2.3-2.4
    assert span == pytest.approx(2.4)
    assert metrics["replication.web.bytes"] == 125


def test_ejb_tier_replicates_after_each_invocation_and_tiers_add_up():
    """Two stateful-bean invocations per request, each a synchronous replication to the one
    other node (serialize 0.5 + out 1 + in 1 + apply 0.5 + ack out 0.1 + ack in 0.1 = 3.2 s),
    then the web session (3.2 s): 1 + 3 x 3.2."""
    data = cluster({"mode": "sync", "tier": "ejb", "invocations": 2}, nodes=2)
    web = {**data["cluster"]["replication"][0], "tier": "web", "invocations": 1}
    data["cluster"]["replication"].append(web)
    span, metrics = makespan(data)
    assert span == pytest.approx(1 + 3 * 3.2)
    assert metrics["replication.ejb.replicated"] == 2 and metrics["replication.web.replicated"] == 1


def test_a_disabled_replication_replicates_nothing_and_keeps_its_settings():
    """enabled = false on the ejb entry: only the web session replicates (1 + 3.2 s), and a
    one-node model may carry disabled entries."""
    data = cluster({"mode": "sync", "tier": "ejb", "invocations": 2, "enabled": False}, nodes=2)
    data["cluster"]["replication"].append(
        {**data["cluster"]["replication"][0], "tier": "web", "invocations": 1, "enabled": True}
    )
    span, metrics = makespan(data)
    assert span == pytest.approx(1 + 3.2)
    assert (
        "replication.ejb.replicated" not in metrics and metrics["replication.web.replicated"] == 1
    )
    single = cluster({"enabled": False}, nodes=1)
    assert makespan(single)[0] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "cluster_spec, needle",
    [
        ({"replication": [{"scope": "buddy", "buddies": 3}]}, "at most nodes - 1 = 2"),
        ({"replication": [{"mode": "eventual"}]}, "cluster.replication.0.mode"),
    ],
)
def test_bad_replication_settings_name_the_field(cluster_spec, needle):
    from sim.model.load import ModelError

    data = {
        "clients": {"kind": "closed", "users": 2},
        "backends": [{"count": 3, "demand": 0.1}],
        "cluster": cluster_spec,
        "run": {"duration_s": 10},
    }
    with pytest.raises(ModelError, match=needle.replace(".", r"\.")):
        model_from(data)


def test_one_node_cannot_replicate():
    from sim.model.load import ModelError

    data = {
        "clients": {"kind": "closed", "users": 2},
        "backends": [{"count": 1, "demand": 0.1}],
        "cluster": {"replication": [{}]},
        "run": {"duration_s": 10},
    }
    with pytest.raises(ModelError, match="at least 2 backend nodes"):
        model_from(data)


@pytest.mark.parametrize("scope, nodes", [("all", 2), ("all", 5), ("buddy", 5)])
def test_each_node_pays_for_its_replicas_utilization_law(scope, nodes):
    """Utilization law per node, U = X_node * D: a node's CPU does its own requests (10 ms +
    serializing) and applies every message it receives -- N - 1 senders' updates with total
    replication, one sender's with a single buddy.  Deterministic demands: the law holds up to
    the requests in progress at the window's edges."""
    replication = {
        "mode": "async",
        "scope": scope,
        "buddies": 1,
        "session_bytes": 2048,
        "trigger": "set_and_get",
        "message_cpu_s": 1e-3,
        "serialize_s_per_kb": 5e-4,
        "apply_s_per_kb": 1e-3,
    }
    data = {
        "clients": {
            "kind": "closed",
            "users": 10 * nodes,
            "think": {"dist": "exponential", "mean": 0.5},
        },
        "balancer": {"policy": "round_robin"},
        "backends": [
            {
                "name": "node",
                "count": nodes,
                "cores": 1,
                "threads": 50,
                "demand": {"dist": "deterministic", "value": 0.01},
            }
        ],
        "cluster": {"replication": [replication]},
    }
    result = run_replication(model_from(data, duration_s=200, warmup=20.0), 0)
    per_node = result.metrics["throughput"] / nodes
    receives = nodes - 1 if scope == "all" else 1
    demand = 0.01 + (1e-3 + 2 * 5e-4) + receives * (1e-3 + 2 * 1e-3)
    measured = sum(result.metrics[f"node{i + 1}.cpu.utilization"] for i in range(nodes)) / nodes
    assert measured == pytest.approx(per_node * demand, rel=5e-3)
