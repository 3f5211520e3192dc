"""A JDBC pool that opens its connections as they are first needed (`backends.N.jdbc_connect`,
`jdbc_initial_size`: DBCP's `initialSize` and its `create` on a borrow that finds no idle
connection), at hand-computed times on the reference engine; the compiled engine does not
implement it and says so."""

from __future__ import annotations

import pytest

from sim.run.replications import run_replication
from tests.conftest import model_from

CONNECT_S, DATABASE_S, NODE_S = 0.05, 0.01, 0.001


def _node(interarrival: float, **pool) -> dict:
    """Deterministic arrivals (the first one interarrival after 0) on one node of 1 ms of CPU
    with one database call of 10 ms, through a JDBC pool of 2."""
    return {
        "clients": {"kind": "open", "interarrival": interarrival},
        "backends": [
            {
                "name": "web",
                "threads": 10,
                "cores": 4,
                "demand": NODE_S,
                "db_calls": 1,
                "jdbc_pool": 2,
                **pool,
            }
        ],
        "database": {"cores": 4, "demand": DATABASE_S},
        "run": {"duration_s": 10.5, "warmup": "none", "engine": "reference"},
    }


def _metrics(data: dict) -> dict:
    return run_replication(model_from(data), 0).metrics


def test_the_first_borrower_opens_the_connection_the_others_reuse_it():
    """One request a second (10 in the run), never two at once: only the first finds no open
    connection and waits 50 ms for one; the mean is 11 ms + 50 / 10 ms."""
    metrics = _metrics(_node(1.0, jdbc_connect=CONNECT_S))
    assert metrics["count.completed"] == 10
    assert metrics["response.mean"] == pytest.approx(NODE_S + DATABASE_S + CONNECT_S / 10)


def test_connections_open_at_the_start_cost_nothing():
    """initialSize 1: the one connection the requests need one at a time is open already."""
    metrics = _metrics(_node(1.0, jdbc_connect=CONNECT_S, jdbc_initial_size=1))
    assert metrics["response.mean"] == pytest.approx(NODE_S + DATABASE_S)


def test_a_second_connection_is_opened_only_while_the_first_is_busy():
    """Arrivals every 30 ms: the first (at 0.03) opens a connection and holds it until 0.091
    (1 ms CPU, 50 ms opening, 10 ms call); the second (0.06) finds it busy and opens a second,
    held until 0.121; from the third (0.09, its CPU done at 0.091) on, one of the two is idle.
    So two of the run's requests wait for an opening: the mean is 11 ms + 2 x 50 ms / their
    count (349: the 350th arrives on the horizon)."""
    metrics = _metrics(_node(0.03, jdbc_connect=CONNECT_S))
    completed = metrics["count.completed"]
    assert completed == 349
    assert metrics["response.mean"] == pytest.approx(
        NODE_S + DATABASE_S + 2 * CONNECT_S / completed
    )


def test_the_compiled_engine_does_not_run_it_and_auto_says_so():
    from sim.engines import EngineUnavailable, choose
    from sim.model.plan import compile_plan

    data = _node(1.0, jdbc_connect=CONNECT_S)
    data["run"].pop("engine")
    chosen = choose(compile_plan(model_from(data)))
    assert chosen.engine == "reference" and "appserver.jdbc_pool.opening" in chosen.note
    with pytest.raises(EngineUnavailable):
        choose(compile_plan(model_from(data, engine="compiled")))


@pytest.mark.parametrize(
    ("pool", "needle"),
    [
        ({"jdbc_pool": None, "jdbc_connect": 0.05}, "give jdbc_pool"),
        (
            {"jdbc_initial_size": 3, "jdbc_connect": 0.05},
            "jdbc_initial_size = 3 is above jdbc_pool = 2",
        ),
        ({"jdbc_initial_size": 1}, "give jdbc_connect"),
    ],
)
def test_a_pool_setting_without_its_pool_is_refused(pool, needle):
    from sim.model.load import ModelError

    data = _node(1.0)
    data["backends"][0].update(pool)
    if data["backends"][0]["jdbc_pool"] is None:
        del data["backends"][0]["jdbc_pool"]
    with pytest.raises(ModelError) as refused:
        model_from(data)
    assert needle in str(refused.value)


def test_a_node_the_autoscaler_removes_takes_its_connections_with_it():
    """Two pods, one request every 0.4 s alternating between them, and an HPA that wants one
    (the scale-down of tests/tiers/test_elastic_group_rules.py, without its window): web2 is
    removed at 15 and gone once its last request is answered.  It had opened one connection;
    gone, its pool is back to initialSize (0), so a start would open them again."""
    from tests.tiers.test_elastic_group import deterministic, run_assembled

    autoscale = {
        "metric": "pods",
        "target": 10,
        "min_replicas": 1,
        "max_replicas": 2,
        "scale_down": {
            "stabilization_window_s": 0,
            "policies": [{"type": "percent", "value": 100, "period_s": 15}],
        },
    }
    data = deterministic(2, 0.4, 0.001, autoscale)
    data["backends"][0].update(db_calls=1, jdbc_pool=2, jdbc_connect=CONNECT_S)
    data["database"] = {"cores": 4, "demand": DATABASE_S}
    _, group, _ = run_assembled(model_from(data), until=14.0)
    web2 = group.lives[1]
    assert web2.jdbc is not None and web2.jdbc.opened == 1
    group.kernel.run(until=20.0)
    assert web2.log[-1][1] == "absent" and web2.jdbc.opened == 0
    assert group.lives[0].jdbc.opened == 1  # the node that stays keeps its connection
