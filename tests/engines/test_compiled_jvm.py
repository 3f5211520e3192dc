"""The JVM (`sim.tiers.appserver.jvm`) and `ab` run again (`clients.repeat`) on the compiled
engine: the same replication as the reference's, bit for bit, over models that exercise each
part (collections as pauses in both CPU regimes, sessions and their replicas, the expiry
sweep, OutOfMemoryError of both kinds, JIT warm-up, every run's window); and event times
computed by hand on deterministic models: a collection delays the requests in flight by
exactly its pause, the runs of a repeated ab follow one another, the heap runs out at the
request the sizes say, the warm-up multiplies each demand by its factor."""

from __future__ import annotations

import math

import pytest

from sim.engines.compiled import kernel as k
from sim.engines.compiled.engine import simulate as compiled_run
from sim.engines.compiled.jvm_plan import SESSIONS_AT_START
from sim.model.plan import compile_plan
from sim.run.replication import run_replication
from tests.conftest import differing, model_from

EXP = "exponential"


def jvm(**settings) -> dict:
    """A small heap, so that collections come often."""
    return {
        "heap_mb": 16,
        "baseline_mb": 4,
        "allocation_kb": 100,
        "young_pause_s": 0.002,
        "full_pause_s": 0.01,
        "full_s_per_mb": 0.005,
        **settings,
    }


MODELS = {
    # three nodes, each holding the others' replicas (sync, total): a node's collection
    # pauses the replication work it applies; sessions expire while the run goes on
    "three nodes, total replication, open clients, database, io wait, sweeps": {
        "clients": {"kind": "open", "rate_per_s": 150.0, "timeout_s": 1.0},
        "balancer": {"policy": "round_robin"},
        "backends": [
            {
                "name": "app",
                "count": 3,
                "threads": 8,
                "cores": 2,
                "demand": {"dist": EXP, "mean": 0.008},
                "io_wait": 0.002,
                "db_calls": 1,
                "jdbc_pool": 4,
                "jvm": jvm(
                    creates_sessions=True,
                    session_bytes=5_000,
                    session_timeout_s=3.0,
                    expiry_check_s=1.0,
                    jit_cold_factor=2.0,
                    jit_warmup_requests=200,
                ),
            }
        ],
        "database": {"connections": 4, "cores": 2, "demand": {"dist": EXP, "mean": 0.002}},
        "cluster": {"replication": [{"scope": "all", "message_cpu_s": 0.001}]},
        "run": {"duration_s": 30.0, "warmup": "mser"},
    },
    # buddy replication through a front with keep-alive, ab run three times: the heap fills
    # run after run (a full collection each young one at the end)
    "buddy replication behind a front, ab run again": {
        "clients": {"kind": "ab", "concurrency": 12, "requests": 700, "repeat": 3},
        "proxy": {"workers": 20, "cores": 2, "demand": {"dist": EXP, "mean": 0.001}},
        "backends": [
            {
                "name": "app",
                "count": 3,
                "cores": 1,
                "demand": {"dist": EXP, "mean": 0.01},
                "jvm": jvm(
                    heap_mb=20,
                    creates_sessions=True,
                    session_bytes=11_000,
                    young_s_per_mb=0.02,
                    jit_cold_factor=3.0,
                    jit_warmup_requests=300,
                ),
            }
        ],
        "cluster": {
            "network": "shared",
            "replication": [{"scope": "buddy", "buddies": 1, "message_cpu_s": 0.0005}],
        },
        "run": {"max_duration_s": 1000.0},
    },
    # the live set close to the heap: back-to-back full collections until -XX:+UseGCOverhead
    # Limit throws (before the heap itself is full)
    "GC overhead limit exceeded": {
        "clients": {"kind": "ab", "concurrency": 4, "requests": 3100},
        "backends": [
            {
                "name": "app",
                "cores": 2,
                "demand": {"dist": EXP, "mean": 0.002},
                "jvm": jvm(
                    heap_mb=32,
                    young_mb=8,
                    survivor_ratio=64,
                    baseline_mb=20,
                    creates_sessions=True,
                    session_bytes=4000,
                    allocation_kb=50,
                    young_pause_s=0.001,
                    full_s_per_mb=0.01,
                    gc_time_limit=0.5,
                ),
            }
        ],
        "run": {"max_duration_s": 1000.0},
    },
    # closed users keep their cookie: each touches its session on the node it is sent to,
    # and the replicas on the others; a think time beyond the timeout lets some expire
    "closed users with cookies, total replication, sticky sessions off": {
        "clients": {
            "kind": "closed",
            "users": 40,
            "think": {"dist": EXP, "mean": 1.0},
            "requests_per_user": 60,
        },
        "balancer": {"policy": "random"},
        "backends": [
            {
                "name": "app",
                "count": 3,
                "threads": 6,
                "cores": 1,
                "demand": {"dist": EXP, "mean": 0.02},
                "jvm": jvm(
                    heap_mb=8,
                    baseline_mb=3,
                    allocation_kb=200,
                    creates_sessions=True,
                    session_bytes=40_000,
                    session_timeout_s=2.0,
                    expiry_check_s=0.5,
                ),
            }
        ],
        "cluster": {"replication": [{"scope": "all"}]},
        "run": {"max_duration_s": 1000.0},
    },
    # session clients keep their cookie while they last: more of them at once than the
    # engine's first session rows, more places than its first session table (both grow),
    # sessions expiring long after their client left, sticky sessions, buddy replication
    "session clients, sticky sessions, buddy replication, tables that grow": {
        "clients": {
            "kind": "sessions",
            "session_rate_per_s": 40.0,
            "requests_per_session": 5,
            "think": {"dist": EXP, "mean": 1.0},
        },
        "balancer": {"policy": "byrequests", "sticky_session": True},
        "backends": [
            {
                "name": "app",
                "count": 3,
                "threads": 20,
                "cores": 2,
                "demand": {"dist": EXP, "mean": 0.01},
                "jvm": jvm(
                    heap_mb=12,
                    allocation_kb=150,
                    creates_sessions=True,
                    session_bytes=8_000,
                    session_timeout_s=6.0,
                    expiry_check_s=0.7,
                ),
            }
        ],
        "cluster": {"replication": [{"scope": "buddy", "buddies": 1}]},
        "run": {"duration_s": 60.0, "warmup": "none"},
    },
    # closed users with a JVM that keeps no sessions: the collections' pauses and the JIT
    "closed clients, no sessions, a fixed warm-up": {
        "clients": {"kind": "closed", "users": 30, "think": {"dist": EXP, "mean": 0.2}},
        "backends": [
            {
                "name": "app",
                "count": 2,
                "threads": 10,
                "cores": 2,
                "demand": {"dist": "gamma", "mean": 0.01, "cv": 1.5},
                "jvm": jvm(jit_cold_factor=1.5, jit_warm_factor=1.2, jit_warmup_requests=500),
            }
        ],
        "balancer": {"policy": "random"},
        "run": {"requests": 4000, "warmup": 5.0},
    },
}


def same(reference, compiled) -> None:
    assert reference.engine == "reference" and compiled.engine == "compiled"
    assert list(compiled.metrics) == list(reference.metrics)
    assert not differing(reference.metrics, compiled.metrics)
    assert compiled.units == reference.units
    assert compiled.warmup_s == reference.warmup_s
    assert compiled.notes[1:] == reference.notes[1:]


def both(data: dict, seed: int = 3):
    return tuple(
        run_replication(model_from(data, engine=engine), 0, seed)
        for engine in ("reference", "compiled")
    )


@pytest.mark.parametrize("name", list(MODELS))
def test_the_engines_compute_the_same_replication(name):
    reference, compiled = both(MODELS[name])
    same(reference, compiled)
    assert reference.metrics["app1.jvm.young_gcs"] > 0


def test_the_models_exercise_what_they_say():
    """Full collections, both kinds of OutOfMemoryError, replicas held, runs as windows."""
    replicas = both(
        MODELS["three nodes, total replication, open clients, database, io wait, sweeps"]
    )
    metrics = replicas[0].metrics
    # every node holds its own sessions and the others' replicas, and the sweep expires them
    assert metrics["app1.jvm.sessions"] > 2 * metrics["app1.jvm.young_gcs"]
    buddy = both(MODELS["buddy replication behind a front, ab run again"])[0].metrics
    assert buddy["app1.jvm.full_gcs"] > 0
    assert [buddy[f"batch.{k}.count.completed"] for k in (1, 2, 3)] == [700.0] * 3
    overhead = both(MODELS["GC overhead limit exceeded"])[0].metrics
    heap, young = 32.0, 8.0
    eden = young * 64 / 66
    assert overhead["app1.jvm.out_of_memory"] == 1.0
    # not the heap: the live set fits (young_resident < eden), the overhead limit threw
    assert overhead["app1.jvm.live_mb"] < heap - young + eden
    assert overhead["count.errors"] > 0
    # the session rows, the keys and the places grew as the loop asked (12 000 requests)
    grown = MODELS["session clients, sticky sessions, buddy replication, tables that grow"]
    _plan, tables = compiled_run(compile_plan(model_from(grown, engine="compiled")), 0, 3)
    assert tables["UI"].shape[0] > 64 and tables["JM"].shape[1] > 64 * 3
    assert tables["JV"][:, k.JV_YOUNG_GCS].min() > 0
    # each request takes a place in its node's JVM and its buddy's: more than the first table
    assert tables["I"][k.I_COMPLETED] > SESSIONS_AT_START


def test_timeseries_samples_are_the_same_on_both_engines():
    data = MODELS["three nodes, total replication, open clients, database, io wait, sweeps"]
    data = {**data, "run": {**data["run"], "timeseries_interval_s": 0.9}}
    samples: dict[str, list] = {"reference": [], "compiled": []}
    for engine, rows in samples.items():

        def sink(replication, now, metrics, rows=rows):
            rows.append((now, metrics))

        run_replication(model_from(data, engine=engine), 0, 3, timeseries=sink)
    assert len(samples["compiled"]) == len(samples["reference"]) > 10
    for (t1, m1), (t2, m2) in zip(samples["reference"], samples["compiled"]):
        assert t1 == t2 and list(m1) == list(m2)
        assert not differing(m1, m2)


# ------------------------------------------------------------------ event times by hand
DEMAND = 0.01


def deterministic_node(jvm_settings: dict, cores: int = 4) -> dict:
    return {
        "name": "app",
        "cores": cores,
        "demand": {"dist": "deterministic", "value": DEMAND},
        "jvm": jvm_settings,
    }


def test_a_collection_delays_the_requests_in_flight_by_exactly_its_pause():
    """Arrivals every 4 ms, 10 ms of work each on 4 cores (never shared): eden fills at every
    10th request (7 x 700 KiB < 6.4 MiB < 10 x 700 KiB) and the young collection (no live
    data: no sessions) pauses the node for 1 ms.  The request that triggered it waits for the
    pause; the two in flight (arrived 6 and 2 ms before) finish exactly 1 ms late; the next
    arrival comes after the pause.  So each collection adds 3 ms to the summed response
    times, the last one (nobody behind it) 1 ms."""
    pause = 0.001
    data = {
        "clients": {
            "kind": "open",
            "interarrival": {"dist": "deterministic", "value": 0.004},
            "total_requests": 100,
        },
        "backends": [
            deterministic_node(jvm(heap_mb=64, young_mb=8, allocation_kb=700, young_pause_s=pause))
        ],
        "run": {"max_duration_s": 100.0},
    }
    reference, compiled = both(data)
    same(reference, compiled)
    metrics = compiled.metrics
    assert metrics["app1.jvm.young_gcs"] == 10 and metrics["app1.jvm.full_gcs"] == 0
    assert metrics["response.mean"] == pytest.approx((100 * DEMAND + 28 * pause) / 100, rel=1e-9)
    # the last request: arrived at 0.4 s, computed 10 ms, held 1 ms by its own collection
    assert metrics["makespan"] == pytest.approx(0.4 + DEMAND + pause, rel=1e-9)
    assert metrics["app1.jvm.gc_fraction"] == pytest.approx(10 * pause / (0.4 + DEMAND + pause))


def test_the_runs_of_ab_follow_one_another_and_the_jit_warms_across_them():
    """ab -c 1 -n 3, run twice, on one core with JIT warm-up: the k-th request served (from
    0) computes DEMAND x (warm + (cold - warm) exp(-k / W)); the second run starts at the
    first's last response, its requests as warm as the JVM left them."""
    cold, warm, requests = 3.0, 1.0, 20.0
    data = {
        "clients": {"kind": "ab", "concurrency": 1, "requests": 3, "repeat": 2},
        "backends": [
            deterministic_node(
                jvm(
                    allocation_kb=0,
                    jit_cold_factor=cold,
                    jit_warm_factor=warm,
                    jit_warmup_requests=requests,
                ),
                cores=1,
            )
        ],
        "run": {"max_duration_s": 100.0},
    }
    reference, compiled = both(data)
    same(reference, compiled)
    work = [DEMAND * (warm + (cold - warm) * math.exp(-k / requests)) for k in range(6)]
    metrics = compiled.metrics
    assert metrics["makespan"] == pytest.approx(sum(work), rel=1e-12)
    for run, served in ((1, work[:3]), (2, work[3:])):
        assert metrics[f"batch.{run}.count.completed"] == 3
        assert metrics[f"batch.{run}.response.mean"] == pytest.approx(sum(served) / 3, rel=1e-12)
        assert metrics[f"batch.{run}.throughput"] == pytest.approx(3 / sum(served), rel=1e-9)
    assert "batch.3.throughput" not in metrics


def test_the_runs_of_ab_start_again_with_every_loop():
    """ab -c 2 -n 5, three runs, 10 ms per request on two cores: a run takes three rounds (the
    fifth request alone), and the next starts both loops at its end."""
    data = {
        "clients": {"kind": "ab", "concurrency": 2, "requests": 5, "repeat": 3},
        "backends": [deterministic_node(jvm(allocation_kb=0), cores=2)],
        "run": {"max_duration_s": 100.0},
    }
    reference, compiled = both(data)
    same(reference, compiled)
    metrics = compiled.metrics
    assert metrics["makespan"] == pytest.approx(9 * DEMAND, rel=1e-12)
    for run in (1, 2, 3):
        assert metrics[f"batch.{run}.count.completed"] == 5
        assert metrics[f"batch.{run}.throughput"] == pytest.approx(5 / (3 * DEMAND), rel=1e-9)


def test_out_of_memory_fails_every_request_from_the_one_that_filled_the_heap():
    """A 16-MiB heap (2-MiB young, eden 1.6 MiB, old 14 MiB) with 8 MiB of baseline and
    500 kB per session: eden fills at the 17th request (17 x 100 KiB), whose 17 sessions do
    not fit in the old generation; the full collection leaves 2.1 MB of live data in the
    young generation, more than eden: "Java heap space".  That request and every later one
    fail."""
    data = {
        "clients": {"kind": "ab", "concurrency": 1, "requests": 50},
        "backends": [
            deterministic_node(
                jvm(heap_mb=16, baseline_mb=8, creates_sessions=True, session_bytes=500_000),
                cores=1,
            )
        ],
        "run": {"max_duration_s": 100.0},
    }
    reference, compiled = both(data)
    same(reference, compiled)
    metrics = compiled.metrics
    assert metrics["count.completed"] == 16 and metrics["count.errors"] == 34
    assert metrics["app1.jvm.out_of_memory"] == 1.0
    assert (metrics["app1.jvm.young_gcs"], metrics["app1.jvm.full_gcs"]) == (1, 1)
    assert metrics["app1.jvm.sessions"] == 17  # the failing requests make no session


def test_closed_users_touch_their_own_session():
    """Five closed users with cookies, one node, a timeout longer than the run: five sessions
    at the end whatever the number of requests, each allocated once (live = baseline + 5
    sessions), promoted at the first young collection after it was made."""
    data = {
        "clients": {
            "kind": "closed",
            "users": 5,
            "think": {"dist": "deterministic", "value": 0.05},
            "requests_per_user": 40,
        },
        "backends": [
            deterministic_node(
                jvm(heap_mb=16, baseline_mb=4, creates_sessions=True, session_bytes=100_000)
            )
        ],
        "run": {"max_duration_s": 100.0},
    }
    reference, compiled = both(data)
    same(reference, compiled)
    metrics = compiled.metrics
    assert metrics["count.completed"] == 200
    assert metrics["app1.jvm.sessions"] == 5
    assert metrics["app1.jvm.live_mb"] == 4 + 5 * 100_000 / 2**20
    assert metrics["app1.jvm.old_used_mb"] == metrics["app1.jvm.live_mb"]


def test_a_session_clients_session_lives_on_after_it():
    """Twenty client sessions of three requests each, one node, a timeout longer than the run:
    twenty HTTP sessions at the end, each made at its first request and touched by the two
    others, and kept after the client session ended (the compiled engine reuses its rows)."""
    data = {
        "clients": {
            "kind": "sessions",
            "session_rate_per_s": 50.0,
            "requests_per_session": 3,
            "fixed_length": True,
            "think": {"dist": "deterministic", "value": 0.05},
            "total_sessions": 20,
        },
        "backends": [
            deterministic_node(jvm(creates_sessions=True, session_bytes=10_000, allocation_kb=0))
        ],
        "run": {"max_duration_s": 100.0},
    }
    reference, compiled = both(data)
    same(reference, compiled)
    metrics = compiled.metrics
    assert metrics["count.completed"] == 60
    assert metrics["app1.jvm.sessions"] == 20
    assert metrics["app1.jvm.live_mb"] == 4 + 20 * 10_000 / 2**20
