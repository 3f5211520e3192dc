"""The load generator's CPU (`clients.host`) and the load-aware policies `sqf` and
`least_outstanding`, exactly: tiny deterministic scenarios whose event times are worked out by
hand, run on the reference engine and on the compiled one (each module case runs on both;
the compiled case would be skipped, naming the feature, if the engine lacked it -- the last
test makes sure it does not)."""

from __future__ import annotations

import pytest

from sim.engines.compiled.support import missing as compiled_lacks
from sim.model.load import load_model
from sim.model.plan import compile_plan
from sim.run.replication import run_replication
from tests.conftest import model_from, on_both_engines

_on_both_engines = on_both_engines()

DET = "deterministic"


def fixed(value: float) -> dict:
    return {"dist": DET, "value": value}


def ab_on_one_core(keep_alive: bool, requests: int = 2, connect: float = 0.0) -> dict:
    """ab -c 2 on a one-core client (10 ms of its CPU per request, 5 ms more per new
    connection), in front of a node with spare cores (20 ms per request, nobody waits)."""
    clients: dict = {
        "kind": "ab",
        "concurrency": 2,
        "requests": requests,
        "keep_alive": keep_alive,
        "host": {"cores": 1, "demand": fixed(0.01), "connection_demand": fixed(0.005)},
    }
    if connect:
        clients["connect"] = fixed(connect)
    return {
        "clients": clients,
        "backends": [{"name": "app", "cores": 4, "threads": 8, "demand": fixed(0.02)}],
        "run": {"warmup": "none"},
    }


def test_ab_s_one_core_is_shared_by_its_two_loops():
    """Both loops' first requests start on the client's one core at 0 and share it: 15 ms
    each (a new connection) take 30 ms together; each connects (1 ms) and is served (20 ms)."""
    result = run_replication(model_from(ab_on_one_core(False, connect=0.001)), 0)
    metrics = result.metrics
    response = 2 * 0.015 + 0.001 + 0.02
    assert metrics["count.completed"] == 2
    assert metrics["response.mean"] == pytest.approx(response, rel=1e-12)
    assert metrics["makespan"] == pytest.approx(response, rel=1e-12)
    # the client's core was busy for the 30 ms of work, with two jobs on it throughout
    assert metrics["clients.cpu.utilization"] * response == pytest.approx(0.03, rel=1e-12)
    assert metrics["app1.throughput"] * response == pytest.approx(2, rel=1e-12)


@pytest.mark.parametrize(
    "keep_alive, responses",
    [
        # every request opens a connection: 30 ms of shared work, 20 ms served, twice
        (False, [0.05, 0.05, 0.05, 0.05]),
        # the second request of each loop reuses its connection: 10 ms each, shared (both
        # loops send again at 50 ms), then served
        (True, [0.05, 0.05, 0.04, 0.04]),
    ],
)
def test_the_connection_demand_is_paid_on_new_connections_only(keep_alive, responses):
    result = run_replication(model_from(ab_on_one_core(keep_alive, requests=4)), 0)
    metrics = result.metrics
    assert metrics["count.completed"] == 4
    assert metrics["response.mean"] == pytest.approx(sum(responses) / 4, rel=1e-12)
    assert metrics["makespan"] == pytest.approx(0.05 + responses[-1], rel=1e-12)


def two_members(policy: str, concurrency: int, requests: int) -> dict:
    """ab straight to two single-core members: `fast1` (10 ms per request) first, `slow1`
    (100 ms) second."""
    return {
        "clients": {"kind": "ab", "concurrency": concurrency, "requests": requests},
        "balancer": {"policy": policy},
        "backends": [
            {"name": "fast", "cores": 1, "demand": fixed(0.01)},
            {"name": "slow", "cores": 1, "demand": fixed(0.1)},
        ],
        "run": {"warmup": "none"},
    }


def test_sqf_sends_to_the_member_with_fewer_requests_in_flight():
    """Two loops: at 0 the first request ties (to the first member, fast), the second goes to
    slow; each later request finds slow busy and fast free, so fast takes it."""
    metrics = run_replication(model_from(two_members("sqf", 2, 4)), 0).metrics
    assert metrics["balancer.dispatched.fast1"] == 3
    assert metrics["balancer.dispatched.slow1"] == 1
    assert metrics["response.mean"] == pytest.approx((3 * 0.01 + 0.1) / 4, rel=1e-12)
    assert metrics["makespan"] == pytest.approx(0.1, rel=1e-12)


@pytest.mark.parametrize(
    "policy, fast, slow, makespan",
    [
        ("sqf", 4, 0, 4 * 0.01),  # every pick a tie: the first member
        ("least_outstanding", 2, 2, 2 * 0.01 + 2 * 0.1),  # ties from a rotating start
    ],
)
def test_ties_go_to_the_first_member_or_rotate(policy, fast, slow, makespan):
    """One loop: every request finds both members idle."""
    metrics = run_replication(model_from(two_members(policy, 1, 4)), 0).metrics
    assert metrics["balancer.dispatched.fast1"] == fast
    assert metrics["balancer.dispatched.slow1"] == slow
    assert metrics["makespan"] == pytest.approx(makespan, rel=1e-12)


def test_seed003_s_rows_are_in_the_compiled_engine():
    """lighttpd.toml (ab -k on a one-core client, sqf) and the overrides of its published
    rows: nothing left for the reference engine."""
    rows = [
        [],
        ["balancer.policy=lighttpd_round_robin"],
        ["clients.keep_alive=false"],
        ["balancer.policy=lighttpd_round_robin", "clients.keep_alive=false"],
        ['balancer.members=["fast"]'],
        ['balancer.members=["slow"]'],
    ]
    for overrides in rows:
        model = load_model("experiments/seed003/lighttpd.toml", overrides)
        assert compiled_lacks(compile_plan(model)) == [], overrides
