"""Invariants over random valid models (hypothesis draws the model and the seed)."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.run.replication import run_replication
from sim.run.replications import run
from sim.stats.confidence import paired_t_interval, t_interval
from tests.conftest import model_from

DIST = st.one_of(
    st.builds(lambda m: {"dist": "exponential", "mean": m}, st.floats(0.001, 0.05)),
    st.builds(lambda m: {"dist": "deterministic", "value": m}, st.floats(0.001, 0.05)),
    st.builds(
        lambda m, cv: {"dist": "gamma", "mean": m, "cv": cv},
        st.floats(0.001, 0.05),
        st.floats(0.2, 2.0),
    ),
    st.builds(
        lambda m, cv: {"dist": "lognormal", "mean": m, "cv": cv},
        st.floats(0.001, 0.05),
        st.floats(0.2, 2.0),
    ),
)
POOL = st.one_of(st.none(), st.integers(1, 16))
QUEUE = st.one_of(st.none(), st.integers(0, 20))


@st.composite
def stacks(draw):
    """A random stack: optional proxy, 1-2 backend groups, optional database, some client kind."""
    data = {}
    has_db = draw(st.booleans())
    data["backends"] = [
        {
            "name": f"g{i}",
            "count": draw(st.integers(1, 3)),
            "threads": draw(POOL),
            "accept_queue": draw(QUEUE),
            "cores": draw(st.integers(1, 4)),
            "demand": draw(DIST),
            "db_calls": draw(st.integers(0, 2)) if has_db else 0,
            "jdbc_pool": draw(st.one_of(st.none(), st.integers(1, 4))),
        }
        for i in range(draw(st.integers(1, 2)))
    ]
    if has_db:
        data["database"] = {
            "cores": draw(st.integers(1, 4)),
            "demand": draw(DIST),
            "connections": draw(st.one_of(st.none(), st.integers(1, 8))),
            "disk_demand": draw(st.sampled_from([0.0, {"dist": "exponential", "mean": 0.002}])),
            "disks": draw(st.integers(1, 3)),
        }
    if sum(b["count"] for b in data["backends"]) >= 2 and draw(st.booleans()):
        data["cluster"] = {
            "replication": [
                {
                    "tier": tier,
                    "mode": draw(st.sampled_from(["sync", "async"])),
                    "scope": "all",
                    "trigger": draw(st.sampled_from(["set", "set_and_get"])),
                    "set_fraction": draw(st.floats(0.0, 1.0)),
                    "session_bytes": draw(st.integers(100, 20_000)),
                    "message_cpu_s": draw(st.floats(0.0, 0.005)),
                    "max_credits_bytes": draw(st.integers(20_000, 500_000)),
                }
                for tier in draw(st.sampled_from([["web"], ["ejb"], ["web", "ejb"]]))
            ],
            "network": draw(st.sampled_from(["switched", "shared"])),
            "multicast": draw(st.booleans()),
        }
    for backend in data["backends"]:
        if draw(st.booleans()):  # a small heap that fills: young and full collections pause the CPU
            backend["jvm"] = {
                "heap_mb": draw(st.floats(8.0, 64.0)),
                "baseline_mb": 2.0,
                "creates_sessions": draw(st.booleans()),
                "session_bytes": draw(st.integers(0, 200_000)),
                "allocation_kb": draw(st.floats(0.0, 500.0)),
                "jit_cold_factor": draw(st.floats(1.0, 3.0)),
                "jit_warmup_requests": 50.0,
            }
    if draw(st.booleans()):
        data["proxy"] = {
            "workers": draw(POOL),
            "listen_backlog": draw(QUEUE),
            "cores": draw(st.integers(1, 4)),
            "demand": draw(st.sampled_from([0.0, {"dist": "exponential", "mean": 0.001}])),
        }
    kind = draw(st.sampled_from(["closed", "open-bounded", "ab", "sessions-bounded"]))
    if kind in ("closed", "ab") and "proxy" in data:
        # blocking connectors (a thread pinned per proxy connection) behind the proxy
        data["proxy"]["backend_pool"] = {
            "timeout_s": draw(st.floats(0.1, 5.0)),
            "ttl_s": draw(st.one_of(st.none(), st.floats(0.1, 5.0))),
        }
        for backend in data["backends"]:
            if backend["threads"] is not None and draw(st.booleans()):
                backend["connector"] = "blocking"
                backend["connection_idle_timeout_s"] = draw(
                    st.one_of(st.none(), st.floats(0.1, 5.0))
                )
            elif draw(st.booleans()):  # Tomcat NIO maxConnections: a slot pinned per connection
                backend["max_connections"] = draw(st.integers(1, 8))
                backend["connection_idle_timeout_s"] = draw(
                    st.one_of(st.none(), st.floats(0.1, 5.0))
                )
    timeout = draw(st.one_of(st.none(), st.floats(0.05, 2.0)))
    retry = {"max_retries": draw(st.integers(0, 2)), "backoff_s": draw(st.floats(0.0, 0.5))}
    common = {"timeout_s": timeout, "retry": retry}
    if kind == "closed":
        data["clients"] = {
            "kind": "closed",
            "users": draw(st.integers(1, 40)),
            "think": {"dist": "exponential", "mean": draw(st.floats(0.01, 1.0))},
            **common,
        }
    elif kind == "ab":
        c = draw(st.integers(1, 20))
        data["clients"] = {
            "kind": "ab",
            "concurrency": c,
            "requests": draw(st.integers(c, 400)),
            "keep_alive": draw(st.booleans()),
            **common,
        }
    else:
        # Open workloads are made stable whatever the load by bounding the proxy's queue.
        data["proxy"] = {
            "workers": draw(st.integers(1, 32)),
            "listen_backlog": draw(st.integers(0, 20)),
        }
        if kind == "open-bounded":
            data["clients"] = {"kind": "open", "rate_per_s": draw(st.floats(1.0, 500.0)), **common}
        else:
            data["clients"] = {
                "kind": "sessions",
                "session_rate_per_s": draw(st.floats(0.5, 50.0)),
                "requests_per_session": draw(st.floats(1.0, 6.0)),
                **common,
            }
    return data


def whole_run(data, seed):
    return model_from(data, duration_s=20.0, warmup="none", seed=seed, max_duration_s=1e5)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=stacks(), seed=st.integers(0, 2**32))
def test_conservation_utilisation_and_determinism(data, seed):
    model = whole_run(data, seed)
    result = run_replication(model, 0)
    m = result.metrics
    # Every attempt ends exactly one way, or is still awaited.
    assert (
        m["count.arrived"]
        == m["count.completed"] + m["count.timed_out"] + m["count.errors"] + m["count.in_flight"]
    )
    assert m["count.failed"] <= m["count.timed_out"] + m["count.errors"]
    for name, value in m.items():
        if name.endswith((".utilization", ".gc_fraction")) and not math.isnan(value):
            assert -1e-9 <= value <= 1 + 1e-9, (name, value)
    if data["clients"]["kind"] == "closed" and data["clients"].get("timeout_s") is None:
        assert m["count.in_flight"] <= data["clients"]["users"]
    # Same seed, same model: identical numbers.
    again = run_replication(model, 0)
    assert again.metrics == result.metrics or all(
        (a == b) or (math.isnan(a) and math.isnan(b))
        for a, b in zip(again.metrics.values(), result.metrics.values())
    )


def closed_stack(users, threads, think=0.5):
    return {
        "clients": {
            "kind": "closed",
            "users": users,
            "think": {"dist": "exponential", "mean": think},
        },
        "proxy": {"workers": None, "cores": 2, "demand": {"dist": "exponential", "mean": 0.002}},
        "backends": [
            {
                "name": "app",
                "count": 2,
                "threads": threads,
                "cores": 2,
                "demand": {"dist": "gamma", "mean": 0.04, "cv": 1.3},
                "db_calls": 2,
            }
        ],
        "database": {"cores": 2, "demand": {"dist": "exponential", "mean": 0.005}},
    }


EXAMPLES = 8
# Family-wise 99 %: each of the EXAMPLES intervals at 1 - 0.01 / EXAMPLES (Bonferroni), so a
# correct model fails the test for a given set of examples with probability <= 1 %.
FAMILY_LEVEL = 1 - 0.01 / EXAMPLES


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(users=st.integers(2, 80), threads=st.integers(1, 12), seed=st.integers(0, 2**32))
def test_response_time_law_and_throughput_bounds(users, threads, seed):
    """Closed, no timeouts: N = X (R + Z) (Little's law on the whole loop) inside the interval,
    and X below the asymptotic bounds min(N / (D + Z), c / D_k) (Denning & Buzen 1978).
    Z is the configured mean think time; the think times actually drawn in a replication
    differ from it, which is part of the replications' spread and so of the interval."""
    think = 0.5
    model = model_from(
        closed_stack(users, threads, think),
        duration_s=150.0,
        warmup=15.0,
        seed=seed,
        confidence=FAMILY_LEVEL,
    )
    result = run(model, replications=8)
    population = [
        rep.metrics["throughput"] * (rep.metrics["response.mean"] + think)
        for rep in result.replications
    ]
    interval = t_interval(population, FAMILY_LEVEL)
    # End effects (requests in flight at the window edges) bias X by at most users / window.
    slack = users / 150.0 * (result.summary["response.mean"].mean + think)
    assert interval.low - slack <= users <= interval.high + slack
    demand = 0.002 + 0.04 + 2 * 0.005
    bound = min(users / (demand + think), 2 * 2 / 0.04, 2 / (2 * 0.005), 2 * threads / 0.04)
    assert result.summary["throughput"].low <= bound


def test_more_threads_never_less_throughput_common_random_numbers():
    """Thread-starved nodes: 2 -> 6 threads raises throughput (paired CI on CRN runs excludes 0)."""
    few = run(
        model_from(closed_stack(60, 2), duration_s=200.0, warmup=20.0, seed=5), replications=8
    )
    many = run(
        model_from(closed_stack(60, 6), duration_s=200.0, warmup=20.0, seed=5), replications=8
    )
    diff = paired_t_interval(
        [r.metrics["throughput"] for r in many.replications],
        [r.metrics["throughput"] for r in few.replications],
        0.95,
    )
    assert diff.low > 0


def test_more_users_never_less_throughput_nor_lower_response():
    small = run(
        model_from(closed_stack(10, 8), duration_s=200.0, warmup=20.0, seed=6), replications=8
    )
    large = run(
        model_from(closed_stack(60, 8), duration_s=200.0, warmup=20.0, seed=6), replications=8
    )
    assert large.summary["throughput"].low > small.summary["throughput"].high
    assert large.summary["response.mean"].low > small.summary["response.mean"].high


def test_common_random_numbers_adding_a_node_keeps_the_client_stream():
    """Stream keys are names: the first replication's think times do not depend on the backends."""
    from sim.random.streams import Streams

    a = Streams(7, 0).generator("clients.think").random(5)
    b = Streams(7, 0).generator("clients.think").random(5)
    c = Streams(7, 1).generator("clients.think").random(5)
    d = Streams(7, 0).generator("app2.demand").random(5)
    assert (a == b).all() and not (a == c).any() and not (a == d).any()


def test_keep_alive_on_prefork_never_helps_and_event_removes_the_cost():
    """Persistent connections, think (0.5 s) shorter than KeepAliveTimeout, 40 users and 20
    workers: prefork binds a worker to each idle connection, so users wait for workers; the
    event MPM frees them (paired CIs on common random numbers)."""

    def stack(mpm):
        return {
            "clients": {
                "kind": "closed",
                "users": 40,
                "keep_alive": True,
                "think": {"dist": "exponential", "mean": 0.5},
            },
            "proxy": {
                "workers": 20,
                "mpm": mpm,
                **({} if mpm == "prefork" else {"threads_per_child": 20}),  # one child
                "demand": {"dist": "exponential", "mean": 0.001},
            },
            "backends": [
                {
                    "name": "app",
                    "threads": 50,
                    "cores": 4,
                    "demand": {"dist": "exponential", "mean": 0.02},
                }
            ],
        }

    runs = {
        mpm: run(model_from(stack(mpm), duration_s=100.0, warmup=10.0, seed=9), replications=6)
        for mpm in ("prefork", "event")
    }
    response = {
        mpm: [r.metrics["response.mean"] for r in result.replications]
        for mpm, result in runs.items()
    }
    assert paired_t_interval(response["prefork"], response["event"], 0.95).low > 0
    busy = {mpm: result.summary["proxy.workers.utilization"].mean for mpm, result in runs.items()}
    assert busy["prefork"] > 0.9 > busy["event"]
