"""The bottleneck at a capacity answer: the innermost saturated resource, and whether it is
shared by every node.  The resources, their nesting, names and sharing are the stack parts'
declarations (`sim.model.features.Hold`), read from the model's probe layout."""

from __future__ import annotations

import tomllib

import pytest

from sim.model.load import parse_model
from sim.studies.capacity.bottleneck import bottleneck
from sim.studies.metrics import holds

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


def _held(**tables):
    """The holds of the cluster above, with `tables` in place of its own."""
    raw = tomllib.loads(_CLUSTER)
    raw.update(tables)
    return holds(parse_model(raw))


def test_threads_waiting_for_the_lock_are_not_the_bottleneck():
    # every thread busy because each waits for the hot row's lock: the lock bounds the stack
    found = bottleneck(
        {
            "tomcat1.threads.utilization": 1.0,
            "tomcat1.jdbc_pool.utilization": 0.99,
            "database.lock.utilization": 0.97,
            "database.cpu.utilization": 0.2,
            "tomcat1.cpu.utilization": 0.05,
        },
        _held(),
    )
    assert found is not None
    assert found.resource == "database.lock" and found.saturated and found.shared
    sentence = found.sentence("backends.0.count", 2)
    assert sentence.startswith("bottleneck at backends.0.count = 2: the database's shared lock")
    assert "97% busy" in sentence and "not throughput" in sentence


def test_a_node_s_own_threads_are_its_bottleneck_when_nothing_inside_is_saturated():
    found = bottleneck(
        {
            "tomcat1.threads.utilization": 0.98,
            "database.lock.utilization": 0.55,
            "tomcat1.cpu.utilization": 0.3,
        },
        _held(),
    )
    assert found is not None and found.resource == "tomcat1.threads" and not found.shared
    assert "not throughput" not in found.sentence("backends.0.count", 1)


def test_nothing_saturated_names_the_busiest_and_says_so():
    found = bottleneck({"tomcat1.cpu.utilization": 0.4, "database.cpu.utilization": 0.6}, _held())
    assert found is not None and not found.saturated and found.resource == "database.cpu"
    assert found.sentence().startswith("no resource is saturated")


def test_unknown_names_and_missing_values_are_left_out():
    held = _held()
    assert bottleneck({"response.p95": 0.3, "x.utilization": float("nan")}, held) is None
    assert bottleneck({"tomcat1.threads.utilization": float("nan")}, held) is None
    # a batch's figure is not a resource
    assert bottleneck({"batch.1.database.lock.utilization": 1.0}, held) is None


_FRONT = {
    "proxy": {"workers": 8, "cores": 1, "demand": {"dist": "exponential", "mean": 0.001}},
    "clients": {
        "kind": "closed",
        "users": 20,
        "think": {"dist": "exponential", "mean": 0.5},
        "host": {"cores": 1, "demand": {"dist": "exponential", "mean": 0.0001}},
    },
}


def test_the_parts_declare_the_nesting_of_holds():
    """Outermost first: the load generator's CPU, the front's workers and CPU, a node's
    threads, what its thread holds (its CPU, its JDBC pool), the database's connections, the
    lock a call waits for holding one, and the database's own work inside it."""
    database = {
        "cores": 2,
        "connections": 6,
        "disks": 1,
        "demand": {"dist": "exponential", "mean": 0.001},
        "disk_demand": {"dist": "exponential", "mean": 0.001},
        "lock": {"hold": {"dist": "deterministic", "value": 0.004}},
    }
    held = _held(**_FRONT, database=database)
    depth = {h.name: h.depth for h in held}
    assert depth == {
        "clients.cpu": 0,
        "proxy.workers": 1,
        "proxy.cpu": 1,
        "tomcat1.threads": 2,
        "tomcat1.cpu": 3,
        "tomcat1.jdbc_pool": 3,
        "database.connections": 4,
        "database.lock": 5,
        "database.cpu": 6,
        "database.disks": 6,
    }
    shared = {h.name for h in held if h.shared}
    assert shared == set(depth) - {"tomcat1.threads", "tomcat1.cpu", "tomcat1.jdbc_pool"}
    titles = {h.name: h.title for h in held if h.title}
    assert titles["database.lock"] == "the database's shared lock"
    assert titles["proxy.workers"] == "the front's workers"


def test_without_a_lock_the_database_s_work_is_still_innermost():
    database = {"cores": 2, "connections": 6, "demand": {"dist": "exponential", "mean": 0.001}}
    held = {h.name: h.depth for h in _held(database=database)}
    assert "database.lock" not in held
    assert held["tomcat1.cpu"] < held["database.connections"] < held["database.cpu"]


@pytest.mark.parametrize(
    "model",
    ["models/planner-apache-tomcat-database.toml", "models/demo.toml", "models/keepalive.toml"],
)
def test_every_hold_is_a_measured_resource(model):
    """A hold names a probe that reports a busy share (`<name>.utilization`), and the figure
    it declares a load test can measure of it (`capacity --what-next`) is one a run reports."""
    from pathlib import Path

    from sim.model.load import load_model
    from sim.studies.capacity.search import utilization_metrics
    from sim.studies.metrics import metric_names

    loaded = load_model(Path(__file__).resolve().parents[2] / model)
    names = metric_names(loaded)
    measured = {n.removesuffix(".utilization") for n in utilization_metrics(names)}
    held = holds(loaded)
    assert held and {h.name for h in held} <= measured
    assert {h.measured for h in held if h.measured} <= names


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
