"""The JVM model (`backends.N.jvm`, `sim.tiers.appserver.jvm`): exact event times on tiny deterministic
nodes.  Common numbers: 1-s requests on one core; a 10-MiB heap with a 1.25-MiB young
generation (eden 1 MiB, SurvivorRatio 8) and an 8.75-MiB old generation."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from sim.model.load import ModelError
from sim.run.replication import run_replication
from tests.conftest import model_from

D = {"dist": "deterministic", "value": 1.0}
MIB = 1024 * 1024


def jvm(**overrides) -> dict:
    spec = {
        "heap_mb": 10,
        "young_mb": 1.25,
        "baseline_mb": 1,
        "allocation_kb": 0,
        "young_pause_s": 0.5,
        "young_s_per_mb": 0.0,
        "full_pause_s": 1.0,
        "full_s_per_mb": 0.1,
    }
    return {**spec, **overrides}


def node(requests: int, spec: dict, clients: dict | None = None) -> dict:
    return {
        "clients": clients or {"kind": "ab", "concurrency": 1, "requests": requests},
        "backends": [{"name": "app", "cores": 1, "threads": 4, "demand": D, "jvm": spec}],
    }


def run(data: dict):
    metrics = run_replication(model_from(data, warmup="none"), 0).metrics
    return metrics["makespan"], metrics


def test_eden_filled_by_allocation_pauses_the_node_for_a_young_collection():
    # 512 KiB per request: the second request fills eden at t = 2; its response and the third
    # request's CPU wait for the 0.5-s pause: 2.5, then 3.5.
    span, metrics = run(node(3, jvm(allocation_kb=512)))
    assert span == pytest.approx(3.5)
    assert metrics["app1.jvm.young_gcs"] == 1 and metrics["app1.jvm.full_gcs"] == 0
    assert metrics["app1.jvm.gc_fraction"] == pytest.approx(0.5 / 3.5)


def test_a_promotion_that_does_not_fit_brings_a_full_collection_then_out_of_memory():
    """Baseline 8.5 MiB, 0.5-MiB sessions (ab keeps no cookies: one per request).  At t = 2 the
    young collection would promote 1 MiB into 0.25 MiB of free old generation: a full
    collection of 9.5 MiB live follows, 1 + 0.1 x 9.5 s; the 0.75 MiB the old generation cannot
    hold stays in the young generation, leaving 0.25 MiB of eden.  The third request (4.45 to
    5.45) overflows it: live 10 MiB > old + eden -> OutOfMemoryError, the request fails."""
    spec = jvm(allocation_kb=512, baseline_mb=8.5, creates_sessions=True, session_bytes=MIB // 2)
    span, metrics = run(node(3, spec))
    assert span == pytest.approx(2 + 0.5 + 1.0 + 0.95 + 1.0)
    assert metrics["count.completed"] == 2 and metrics["count.errors"] == 1
    assert metrics["app1.jvm.full_gcs"] == 2
    assert metrics["app1.jvm.out_of_memory"] == 1
    assert metrics["app1.jvm.old_used_mb"] == pytest.approx(8.75)


def test_sessions_expire_at_the_sweep_after_their_timeout():
    """Sessions made at t = 1 .. 5 expire 2.5 s later; the sweep runs every 0.75 s: the one at
    3.75 removes the first, the one at 4.5 the second (due exactly then); three remain."""
    spec = jvm(
        creates_sessions=True, session_bytes=1024, session_timeout_s=2.5, expiry_check_s=0.75
    )
    _, metrics = run(node(5, spec))
    assert metrics["app1.jvm.sessions"] == 3
    assert metrics["app1.jvm.live_mb"] == pytest.approx(1 + 3 / 1024)


def test_a_client_that_keeps_its_cookie_keeps_one_session():
    spec = jvm(creates_sessions=True, session_bytes=1024)
    closed = {"kind": "closed", "users": 1, "requests_per_user": 5}
    _, metrics = run(node(5, spec, clients=closed))
    assert metrics["app1.jvm.sessions"] == 1


def test_jit_warm_up_scales_each_request_by_the_requests_served_before_it():
    # cold 3, warm 1, e-folding after 1 request: demands 3, 1 + 2/e, 1 + 2/e^2
    span, _ = run(node(3, jvm(jit_cold_factor=3.0, jit_warmup_requests=1.0)))
    assert span == pytest.approx(3 + (1 + 2 / math.e) + (1 + 2 / math.e**2), abs=1e-12)


def test_resident_memory_is_non_heap_plus_the_heap_pages_touched():
    spec = jvm(allocation_kb=512, non_heap_mb=30.0)
    _, metrics = run(node(3, spec))
    # the young generation was touched whole at the first collection; old: the baseline
    assert metrics["app1.jvm.resident_mb"] == pytest.approx(30 + 1.25 + 1)


def replicated_pair(b_heap: dict) -> dict:
    """Node a (one request, sync replication to b: the numbers of tests/tiers/test_replication.py,
    a 1250-byte message crosses a 10 kbit/s link in 1 s, 0.5 s of CPU per message, 0.1-s acks)."""
    a_jvm = jvm(creates_sessions=True, heap_mb=64, young_mb=8)
    groups = [
        {"name": "a", "threads": 4, "cores": 1, "demand": D, "jvm": a_jvm},
        {"name": "b", "threads": 4, "cores": 1, "demand": D, "jvm": b_heap},
    ]
    spec = {
        "mode": "sync",
        "session_bytes": 1250,
        "message_cpu_s": 0.5,
        "serialize_s_per_kb": 0.0,
        "apply_s_per_kb": 0.0,
        "ack_bytes": 125,
        "trigger": "set_and_get",
    }
    return {
        "clients": {"kind": "ab", "concurrency": 1, "requests": 1},
        "balancer": {"policy": "round_robin"},
        "backends": groups,
        "cluster": {"replication": [spec], "bandwidth_bps": 1e4, "latency_s": 0.0},
    }


def test_a_full_collection_on_node_b_delays_a_synchronous_replication_from_node_a():
    """a's request ends at 1; serialize 1-1.5, a's link 1.5-2.5, b's link 2.5-3.5, apply on b
    3.5-4, ack 4-4.1 out, 4.1-4.2 in.  If b holds the 1-MiB replica in a 1-MiB eden, the
    allocation at t = 1 brings a young collection (0.5 s) whose promotion does not fit (8.7 MiB
    baseline in an 8.75-MiB old generation) and a 3.5-s full collection: b's CPU is paused over
    [1, 5), so the apply runs 5-5.5 and a's response waits until 5.7."""
    quiet = jvm(creates_sessions=True, session_bytes=1024)
    assert run(replicated_pair(quiet))[0] == pytest.approx(4.2)
    collecting = jvm(
        creates_sessions=True,
        session_bytes=MIB,
        baseline_mb=8.7,
        full_pause_s=3.5,
        full_s_per_mb=0.0,
    )
    span, metrics = run(replicated_pair(collecting))
    assert span == pytest.approx(5.7)
    assert metrics["b1.jvm.full_gcs"] == 1 and metrics["b1.jvm.sessions"] == 1
    assert metrics["a1.jvm.full_gcs"] == 0


@pytest.mark.parametrize(
    "spec, words",
    [
        (jvm(baseline_mb=9), ["baseline_mb", "old generation"]),
        (jvm(young_mb=12), ["young_mb", "heap_mb"]),
        (jvm(jit_cold_factor=2.0), ["jit_warmup_requests"]),
    ],
)
def test_a_heap_that_cannot_work_is_refused_with_the_field_named(spec, words):
    with pytest.raises((ModelError, ValidationError, ValueError)) as error:
        model_from(node(1, spec))
    assert all(word in str(error.value) for word in words)


@pytest.mark.parametrize("scope, held", [("all", 3), ("buddy", 2)])
def test_each_node_holds_its_sessions_and_the_replicas_it_receives(scope, held):
    """Three nodes, one session each (ab: one request per node, round robin).  Total
    replication: every node also holds the two others' sessions; one buddy: one of them."""
    spec = jvm(creates_sessions=True, session_bytes=1024)
    replication = {"mode": "async", "scope": scope, "buddies": 1}
    data = {
        "clients": {"kind": "ab", "concurrency": 1, "requests": 3},
        "backends": [
            {"name": "app", "count": 3, "cores": 1, "threads": 4, "demand": D, "jvm": spec}
        ],
        "cluster": {"replication": [replication]},
    }
    _, metrics = run(data)
    for node in ("app1", "app2", "app3"):
        assert metrics[f"{node}.jvm.sessions"] == held
        assert metrics[f"{node}.jvm.live_mb"] == pytest.approx(1 + held / 1024)
