"""The database's shared lock (`[database.lock]`): exact event times on tiny scenarios, the
queueing theory of a serialised section shared by every node, and its refusals."""

from __future__ import annotations

import math

import pytest

from sim.analytic.model_solver import solve_model
from sim.model.load import ModelError
from sim.model.stability import overloads
from sim.run.replication import run_replication
from tests.analytic.test_theory import inside
from tests.conftest import model_from, simulate


def _ab(lock: dict | None, db: dict | None = None, users: int = 3) -> dict:
    """`users` requests at once (ab -c users -n users), each one database call of 0.1 s of
    database CPU on a host with a core each: only the lock makes them wait."""
    database = {"cores": users, "demand": {"dist": "deterministic", "value": 0.1}, **(db or {})}
    if lock is not None:
        database["lock"] = lock
    return {
        "clients": {"kind": "ab", "concurrency": users, "requests": users},
        "backends": [
            {"name": "tomcat", "threads": users, "cores": users, "demand": 0.0, "db_calls": 1}
        ],
        "database": database,
    }


@pytest.mark.parametrize(
    "lock, db, responses",
    [
        # no lock: the three calls run side by side
        (None, None, [0.1, 0.1, 0.1]),
        # one permit: the second waits for the first call to end, the third for the second
        ({}, None, [0.1, 0.2, 0.3]),
        # two permits: the third waits for the first
        ({"permits": 2}, None, [0.1, 0.1, 0.2]),
        # held 0.05 s before the call's CPU (0.1) and its disk flush (0.02): 0.17 s per holder
        (
            {"hold": {"dist": "deterministic", "value": 0.05}},
            {"disk_demand": {"dist": "deterministic", "value": 0.02}, "disks": 3},
            [0.17, 0.34, 0.51],
        ),
    ],
)
def test_the_lock_serialises_the_calls_that_take_it(lock, db, responses):
    metrics = run_replication(model_from(_ab(lock, db), warmup="none"), 0).metrics
    assert metrics["count.completed"] == 3
    assert metrics["makespan"] == pytest.approx(max(responses))
    assert metrics["response.mean"] == pytest.approx(sum(responses) / 3)


def test_the_lock_reports_its_waits_and_its_busy_time():
    metrics = run_replication(model_from(_ab({}), warmup="none"), 0).metrics
    # waits of 0, 0.1 and 0.2 s; held 0.3 s of the 0.3-s run
    assert metrics["database.lock.wait"] == pytest.approx(0.1)
    assert metrics["database.lock.utilization"] == pytest.approx(1.0)


def _two_nodes_sharing_one_lock(rate: float, share: float) -> dict:
    """Poisson arrivals split at random over two nodes with threads and cores to spare; each
    request makes one database call of exponential 0.1-s CPU on a host with cores to spare,
    and `share` of them take the one lock both nodes share."""
    node = {"threads": 200, "cores": 64, "demand": 0.0, "db_calls": 1}
    return {
        "clients": {"kind": "open", "rate_per_s": rate},
        "balancer": {"policy": "random"},
        "backends": [{"name": "a", **node}, {"name": "b", **node}],
        "database": {
            "cores": 256,
            "demand": {"dist": "exponential", "mean": 0.1},
            "lock": {"share": share},
        },
        "run": {"duration_s": 3000.0, "warmup": 100.0},
    }


def test_a_lock_both_nodes_share_is_one_mm1_queue():
    """Every call takes the lock: lambda = 8, mu = 10 through one FCFS section whatever the
    node: R = 1/(mu - lambda) = 0.5 s, R_95 = ln(20)/2, the lock busy 80 %."""
    result = simulate(_two_nodes_sharing_one_lock(8.0, 1.0), replications=10, seed=21)
    inside(result.summary["response.mean"], 0.5)
    inside(result.summary["response.p95"], math.log(20.0) / 2.0)
    inside(result.summary["database.lock.utilization"], 0.8)


def test_a_share_of_the_calls_takes_the_lock():
    """Half of 16 calls/s take the lock (Poisson thinning: 8/s into an M/M/1 of mu = 10, 0.5 s);
    the other half only compute (0.1 s): R = 0.5 x 0.5 + 0.5 x 0.1 = 0.3 s."""
    result = simulate(_two_nodes_sharing_one_lock(16.0, 0.5), replications=10, seed=22)
    inside(result.summary["response.mean"], 0.3)
    inside(result.summary["database.lock.utilization"], 0.8)


def test_a_lock_no_call_takes_is_refused():
    data = _ab({})
    data["backends"][0]["db_calls"] = 0
    with pytest.raises(ModelError, match=r"database\.lock.*db_calls"):
        model_from(data, warmup="none")


def test_an_open_load_beyond_the_lock_is_unstable_whatever_the_nodes():
    data = _two_nodes_sharing_one_lock(12.0, 1.0)
    found = overloads(model_from(data))
    assert [o.path for o in found] == ["database.lock"]
    assert found[0].utilization == pytest.approx(1.2)


def test_solve_counts_the_lock_and_says_it_is_an_approximation():
    answer = solve_model(model_from(_two_nodes_sharing_one_lock(8.0, 1.0)))
    assert not answer.exact
    assert any("database.lock" in caveat for caveat in answer.caveats)
    lock = next(s for s in answer.stations if s.name == "database.lock")
    assert lock.utilization == pytest.approx(0.8)


def _cluster(nodes: int, users: int) -> dict:
    """Closed users (think 0.5 s) over `nodes` nodes of 4 threads, each request waiting 30 ms
    on its thread and then running one transaction that holds the one hot-row lock for 5 ms:
    the lock alone bounds the cluster at 200 requests/s."""
    return {
        "clients": {
            "kind": "closed",
            "users": users,
            "think": {"dist": "exponential", "mean": 0.5},
        },
        "balancer": {"policy": "round_robin"},
        "backends": [
            {
                "name": "tomcat",
                "count": nodes,
                "threads": 4,
                "cores": 2,
                "demand": {"dist": "exponential", "mean": 0.001},
                "io_wait": {"dist": "deterministic", "value": 0.03},
                "db_calls": 1,
                "jdbc_pool": 3,
            }
        ],
        "database": {
            "cores": 2,
            "demand": {"dist": "exponential", "mean": 0.001},
            "lock": {"hold": {"dist": "deterministic", "value": 0.004}},
        },
        "run": {"duration_s": 80.0, "warmup": 10.0},
    }


def test_a_second_node_buys_little_once_the_lock_is_the_bottleneck():
    """One node's 4 threads bound it near 4 / 0.035 s = 114/s; the lock, whatever the nodes, at
    1 / 5 ms = 200/s.  With 200 users (offered about 400/s) one node serves about 114/s, two
    nodes up to the lock's 200/s, and a third node adds nothing: the lock is saturated."""
    summary = {
        nodes: simulate(_cluster(nodes, 200), replications=4, seed=31).summary
        for nodes in (1, 2, 3)
    }
    throughput = {nodes: s["throughput"] for nodes, s in summary.items()}
    for nodes in (1, 2, 3):
        # never beyond the lock's bound (a saturated lock's throughput barely varies)
        assert throughput[nodes].mean <= 200.0 * 1.01
    assert throughput[1].high < 120.0
    assert throughput[2].low > 1.4 * throughput[1].high  # the second node still helps
    assert summary[3]["database.lock.utilization"].low > 0.95
    assert throughput[3].high < 1.05 * throughput[2].low  # the third buys under 5 %
