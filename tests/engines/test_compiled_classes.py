"""Request classes and session scripts, exactly: tiny deterministic scenarios whose event
times are worked out by hand, on the reference engine and on the compiled one (`auto` picks
it: the tests fail if it fell back), and the tables the compiled engine lays out for them."""

from __future__ import annotations

import pytest

from sim.model.parts.request_classes import request_classes
from sim.model.plan import compile_plan
from sim.run.replication import run_replication
from tests.conftest import model_from, on_both_engines

_on_both_engines = on_both_engines()

DET = "deterministic"


def fixed(value: float) -> dict:
    return {"dist": DET, "value": value}


def three_classes(requests_per_user: int) -> dict:
    """Three users, one class each (mix_by = "user"), on tiers with spare cores (nobody
    waits): a static file the proxy serves itself (1 ms), a page (the proxy's 2 ms around the
    node's 50 ms around a database call of 10 ms) and a search (the node's own 300 ms around
    two database calls of its own 20 ms)."""
    third = 1 / 3
    return {
        "clients": {
            "kind": "closed",
            "users": 3,
            "think": fixed(0.5),
            "requests_per_user": requests_per_user,
            "mix": {"static": third, "page": third, "search": third},
            "mix_by": "user",
        },
        "proxy": {"workers": None, "cores": 4, "demand": fixed(0.002)},
        "backends": [{"name": "app", "cores": 4, "demand": fixed(0.05), "db_calls": 1}],
        "database": {"cores": 4, "demand": fixed(0.01)},
        "classes": [
            {"name": "static", "served_by": "proxy", "proxy": {"demand": fixed(0.001)}},
            {"name": "page"},
            {
                "name": "search",
                "backend": {"demand": fixed(0.3), "db_calls": 2},
                "database": {"demand": fixed(0.02)},
            },
        ],
        "run": {"warmup": "none"},
    }


def test_each_class_asks_the_tiers_for_its_own_work():
    model = model_from(three_classes(2))
    result = run_replication(model, 0)
    if model.run.engine == "auto":
        assert result.engine == "compiled"
    metrics = result.metrics
    responses = {"static": 0.001, "page": 0.002 + 0.05 + 0.01, "search": 0.002 + 0.3 + 2 * 0.02}
    for name, response in responses.items():
        assert metrics[f"class.{name}.count.arrived"] == 2
        assert metrics[f"class.{name}.count.completed"] == 2
        assert metrics[f"class.{name}.response.mean"] == pytest.approx(response, rel=1e-12)
        # the percentiles of the class's own log-binned histogram (0.5 % bins)
        assert metrics[f"class.{name}.response.p95"] == pytest.approx(response, rel=0.005)
    # the search user is the last: two searches, each followed by a think (a user is done
    # when it would send again: `ClosedPopulation._issue`)
    makespan = 2 * responses["search"] + 2 * 0.5
    assert metrics["makespan"] == pytest.approx(makespan, rel=1e-12)
    assert metrics["class.search.throughput"] == pytest.approx(2 / makespan, rel=1e-12)
    assert metrics["count.completed"] == 6
    # the static file never reaches the node; a page calls the database once, a search twice
    assert metrics["app1.throughput"] * makespan == pytest.approx(4, rel=1e-12)
    assert metrics["database.throughput"] * makespan == pytest.approx(6, rel=1e-12)
    database = (2 * 0.01 + 4 * 0.02) / 6
    assert metrics["database.service"] == pytest.approx(database, rel=1e-12)


def stepped(requests_per_user: int) -> dict:
    """One user walking a script of three steps, each a class with its own demand; steps a
    and b think 0.1 s and 0.2 s, c the population's 0.4 s."""
    return {
        "clients": {
            "kind": "closed",
            "users": 1,
            "think": fixed(0.4),
            "requests_per_user": requests_per_user,
            "script": {
                "steps": [
                    {"name": "a", "think": fixed(0.1)},
                    {"name": "b", "think": fixed(0.2)},
                    {"name": "c"},
                ]
            },
        },
        "backends": [{"name": "app", "cores": 1, "demand": fixed(0.01)}],
        "classes": [
            {"name": "a"},
            {"name": "b", "backend": {"demand": fixed(0.02)}},
            {"name": "c", "backend": {"demand": fixed(0.03)}},
        ],
        "run": {"warmup": "none"},
    }


# each request is followed by its step's think time (the user is done when it would send
# again), so the makespan adds up every step's demand and think in the script's order
@pytest.mark.parametrize(
    "requests, makespan, counts",
    [
        (1, 0.01 + 0.1, (1, 0, 0)),  # a, its think
        (2, 0.01 + 0.1 + 0.02 + 0.2, (1, 1, 0)),  # ..., b, its think
        (3, 0.01 + 0.1 + 0.02 + 0.2 + 0.03 + 0.4, (1, 1, 1)),  # ..., c, clients.think
        # the path is used up: a new session starts at a
        (4, 0.01 + 0.1 + 0.02 + 0.2 + 0.03 + 0.4 + 0.01 + 0.1, (2, 1, 1)),
    ],
)
def test_a_script_walks_its_steps_in_order_with_their_think_times(requests, makespan, counts):
    model = model_from(stepped(requests))
    result = run_replication(model, 0)
    if model.run.engine == "auto":
        assert result.engine == "compiled"
    metrics = result.metrics
    assert metrics["makespan"] == pytest.approx(makespan, rel=1e-12)
    for name, count, demand in zip("abc", counts, (0.01, 0.02, 0.03)):
        assert metrics[f"class.{name}.count.completed"] == count
        if count:
            assert metrics[f"class.{name}.response.mean"] == pytest.approx(demand, rel=1e-12)


def test_a_retry_keeps_its_class_and_counts_in_it():
    """A page times out (0.3 s < its 0.5 s) and is retried once, as a page; the user then
    moves on to the next step: each class counts its own arrivals, retries and failures."""
    data = stepped(2)
    data["clients"].update(timeout_s=0.3, retry={"max_retries": 1, "backoff_s": 0.05})
    data["classes"][0]["backend"] = {"demand": fixed(0.5)}
    data["backends"][0]["cores"] = 4
    result = run_replication(model_from(data), 0)
    metrics = result.metrics
    assert metrics["class.a.count.arrived"] == 2
    assert metrics["class.a.count.retried"] == 1
    assert metrics["class.a.count.timed_out"] == 2
    assert metrics["class.a.count.failed"] == 1
    assert metrics["class.a.count.completed"] == 0
    # the server finished both abandoned attempts, at 0.5 and 0.35 + 0.5, before the end
    assert metrics["class.a.count.late"] == 2
    assert metrics["class.b.count.completed"] == 1
    assert metrics["class.b.count.arrived"] == 1
    # a gives up at 0.3 + 0.05 + 0.3 = 0.65, thinks 0.1; b ends at 0.77 and thinks 0.2
    assert metrics["makespan"] == pytest.approx(0.65 + 0.1 + 0.02 + 0.2, rel=1e-12)


def test_the_plan_lays_out_a_fixed_path_or_leaves_a_chain_to_the_driver():
    data = stepped(3)
    model = model_from(data, engine="reference")
    classes = request_classes(model)
    assert not classes.chain and classes.path == (0, 1, 2)
    data["clients"]["script"]["transitions"] = {"a": {"c": 1.0}}  # one successor: still fixed
    model = model_from(data, engine="reference")
    classes = request_classes(model)
    assert not classes.chain and classes.path == (0, 2)
    data["clients"]["script"]["transitions"] = {"a": {"b": 0.5, "end": 0.5}}
    model = model_from(data, engine="reference")
    assert request_classes(model).chain and request_classes(model).path == ()
    assert "clients.script" in compile_plan(model).features
