"""The bottleneck at a capacity answer: the innermost saturated resource, and whether it is
shared by every node."""

from __future__ import annotations

from sim.studies.capacity.bottleneck import bottleneck


def test_threads_waiting_for_the_lock_are_not_the_bottleneck():
    # every thread busy because each waits for the hot row's lock: the lock bounds the stack
    found = bottleneck(
        {
            "tomcat1.threads.utilization": 1.0,
            "tomcat1.jdbc_pool.utilization": 0.99,
            "database.lock.utilization": 0.97,
            "database.cpu.utilization": 0.2,
            "tomcat1.cpu.utilization": 0.05,
        }
    )
    assert found is not None
    assert found.resource == "database.lock" and found.saturated and found.shared
    sentence = found.sentence("backends.0.count", 2)
    assert "97% busy" in sentence and "not throughput" in sentence


def test_a_node_s_own_threads_are_its_bottleneck_when_nothing_inside_is_saturated():
    found = bottleneck(
        {
            "tomcat1.threads.utilization": 0.98,
            "database.lock.utilization": 0.55,
            "tomcat1.cpu.utilization": 0.3,
        }
    )
    assert found is not None and found.resource == "tomcat1.threads" and not found.shared
    assert "not throughput" not in found.sentence("backends.0.count", 1)


def test_nothing_saturated_names_the_busiest_and_says_so():
    found = bottleneck({"tomcat1.cpu.utilization": 0.4, "database.cpu.utilization": 0.6})
    assert found is not None and not found.saturated and found.resource == "database.cpu"
    assert found.sentence().startswith("no resource is saturated")


def test_unknown_names_and_missing_values_are_left_out():
    assert bottleneck({"response.p95": 0.3, "x.utilization": float("nan")}) is None


_CLUSTER = """
[clients]
kind = "closed"
users = 200
think = {dist = "exponential", mean = 0.5}

[balancer]
policy = "round_robin"

[[backends]]
name = "tomcat"
threads = 4
cores = 2
demand = {dist = "exponential", mean = 0.001}
io_wait = {dist = "deterministic", value = 0.03}
db_calls = 1
jdbc_pool = 3

[database]
cores = 2
demand = {dist = "exponential", mean = 0.001}
lock = {hold = {dist = "deterministic", value = 0.004}}

[run]
duration_s = 15.0
warmup = 3.0
"""


def test_capacity_over_nodes_names_the_shared_lock_that_bounds_every_count(tmp_path):
    """The planner's question "how many nodes": four-thread nodes sharing one hot-row lock of
    5 ms, 200 users offering about 400/s against the lock's 200/s: no node count meets
    p95 < 0.3 s, and the answer says why (the lock is saturated at the most nodes tried)."""
    from click.testing import CliRunner

    from sim.cli import main

    model = tmp_path / "cluster.toml"
    model.write_text(_CLUSTER, encoding="utf-8")
    result = CliRunner().invoke(
        main,
        [
            "capacity",
            str(model),
            "--slo",
            "p95<0.3",
            "--vary",
            "backends.0.count",
            "--direction",
            "smallest",
            "--max",
            "3",
            "-r",
            "2",
            "--serial",
        ],
    )
    text = " ".join(result.output.split())
    assert "no value of backends.0.count in [1, 3] meets the SLO" in text, result.output
    assert "bottleneck at backends.0.count = 3: the database's shared lock" in text
    assert "not throughput" in text
