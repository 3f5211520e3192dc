"""The database's shared lock (`[database.lock]`) on both engines: exact event times on tiny
scenarios, the same replication bit for bit from the reference engine (`sim.tiers.database.
lock`) and the compiled one (`kernel/lock.py`), the queueing theory of a serialised section
shared by every node (also near saturation), the two engines agreeing on the planner's
template on independent seeds, and the lock's refusals."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scipy import stats

from sim.analytic.model_solver import solve_model
from sim.model.load import ModelError, load_model
from sim.model.stability import overloads
from sim.random.distributions import Uniform
from sim.random.streams import Streams
from sim.run.replication import run_replication
from sim.run.replications import run
from sim.tiers.database.lock import ORDER_STREAM
from tests.analytic.test_theory import inside
from tests.conftest import differing, model_from, simulate

TEMPLATE = Path(__file__).resolve().parents[2] / "models" / "planner-apache-tomcat-database.toml"


def _ab(
    lock: dict | None, db: dict | None = None, users: int = 3, node: dict | None = None
) -> dict:
    """`users` requests at once (ab -c users -n users), each one database call of 0.1 s of
    database CPU on a host with a core each: only the lock makes them wait.  `node` changes
    the Tomcat group (no CPU of its own by default)."""
    database = {"cores": users, "demand": {"dist": "deterministic", "value": 0.1}, **(db or {})}
    if lock is not None:
        database["lock"] = lock
    tomcat = {"name": "tomcat", "threads": users, "cores": users, "demand": 0.0, "db_calls": 1}
    return {
        "clients": {"kind": "ab", "concurrency": users, "requests": users},
        "backends": [{**tomcat, **(node or {})}],
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
        # a share of 1e-9: with this seed none of the three draws is below it, none waits
        ({"share": 1e-9}, None, [0.1, 0.1, 0.1]),
    ],
)
def test_the_lock_serialises_the_calls_that_take_it(lock, db, responses, engine):
    model = model_from(_ab(lock, db), warmup="none", engine=engine)
    metrics = run_replication(model, 0).metrics
    assert metrics["count.completed"] == 3
    assert metrics["makespan"] == pytest.approx(max(responses))
    assert metrics["response.mean"] == pytest.approx(sum(responses) / 3)


def test_the_lock_is_released_before_the_caller_resumes(engine):
    """0.2 s of Tomcat CPU around the call (0.1 before, 0.1 after): all three call at 0.1;
    the first holds the lock 0.1-0.2 and computes again 0.2-0.3 while the second holds it
    0.2-0.3 (its release does not wait for its caller), the third 0.3-0.4: responses 0.3,
    0.4 and 0.5 s."""
    node = {"demand": {"dist": "deterministic", "value": 0.2}}
    model = model_from(_ab({}, node=node), warmup="none", engine=engine)
    metrics = run_replication(model, 0).metrics
    assert metrics["makespan"] == pytest.approx(0.5)
    assert metrics["response.mean"] == pytest.approx(0.4)
    assert metrics["database.lock.wait"] == pytest.approx(0.1)  # waits 0, 0.1, 0.2


@pytest.mark.parametrize(
    "lock, responses, second_node_s",
    [(None, [0.1, 0.1, 0.1], 0.1), ({}, [0.1, 0.2, 0.3], 0.2)],
)
def test_two_nodes_wait_for_one_lock(lock, responses, second_node_s, engine):
    """Three calls at once from two Tomcat nodes (round robin, the default: the first and
    third request to tomcat1, the second to tomcat2): without a lock none waits; with it the
    second node's one request waits 0.1 s for the first node's."""
    data = _ab(lock, node={"count": 2})
    metrics = run_replication(model_from(data, warmup="none", engine=engine), 0).metrics
    assert metrics["tomcat2.residence"] == pytest.approx(second_node_s)
    assert metrics["makespan"] == pytest.approx(max(responses))
    assert metrics["response.mean"] == pytest.approx(sum(responses) / 3)


def test_a_lock_served_in_random_order_hands_each_release_to_the_drawn_waiter(engine):
    """Four requests at once over two nodes (round robin: the 1st and 3rd to tomcat1, the 2nd
    and 4th to tomcat2), each holding the lock 0.1 s.  The first takes it; 2, 3, 4 wait.  At
    0.1 s the release goes to waiter int(3 u1) of the three (in arrival order), at 0.2 s to
    int(2 u2) of the two left, with u1, u2 the lock's order stream's first draws; the last
    holds it 0.3-0.4 s.  Each node's residence is the mean of its two requests' responses."""
    data = _ab({"order": "random"}, users=4, node={"count": 2})
    metrics = run_replication(model_from(data, warmup="none", engine=engine), 0, 7).metrics
    draw = Uniform(0.0, 1.0).sampler(Streams(7, 0).generator(ORDER_STREAM))
    waiting = [2, 3, 4]
    response = {1: 0.1}
    for ends in (0.2, 0.3):
        response[waiting.pop(int(draw() * len(waiting)))] = ends
    response[waiting.pop()] = 0.4
    assert metrics["tomcat1.residence"] == pytest.approx((response[1] + response[3]) / 2)
    assert metrics["tomcat2.residence"] == pytest.approx((response[2] + response[4]) / 2)
    assert metrics["response.mean"] == pytest.approx(0.25)  # the order moves no mean
    assert metrics["database.lock.wait"] == pytest.approx(0.15)


def test_the_lock_reports_its_waits_and_its_busy_time(engine):
    metrics = run_replication(model_from(_ab({}), warmup="none", engine=engine), 0).metrics
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


def test_a_lock_both_nodes_share_is_one_mm1_queue(engine):
    """Every call takes the lock: lambda = 8, mu = 10 through one FCFS section whatever the
    node: R = 1/(mu - lambda) = 0.5 s, R_95 = ln(20)/2, the lock busy 80 %."""
    data = _two_nodes_sharing_one_lock(8.0, 1.0)
    result = simulate(data, replications=10, seed=21, engine=engine)
    inside(result.summary["response.mean"], 0.5)
    inside(result.summary["response.p95"], math.log(20.0) / 2.0)
    inside(result.summary["database.lock.utilization"], 0.8)


def test_a_share_of_the_calls_takes_the_lock(engine):
    """Half of 16 calls/s take the lock (Poisson thinning: 8/s into an M/M/1 of mu = 10, 0.5 s);
    the other half only compute (0.1 s): R = 0.5 x 0.5 + 0.5 x 0.1 = 0.3 s."""
    data = _two_nodes_sharing_one_lock(16.0, 0.5)
    result = simulate(data, replications=10, seed=22, engine=engine)
    inside(result.summary["response.mean"], 0.3)
    inside(result.summary["database.lock.utilization"], 0.8)


def test_random_order_keeps_the_mm1_mean_and_lengthens_its_tail(engine):
    """Served in random order the lock is still an M/M/1 in its number of holders and waiters
    (the order does not change when it is busy): R = 0.5 s, busy 80 %, the same wait per
    acquisition W = rho/(mu - lambda) = 0.4 s.  Its response time's tail is longer than
    FIFO's exponential one: the p95 above ln(20)/2 = 1.50 s (the tail's exact moment is
    checked on the pool itself, tests/kernel/test_random_order_pool.py)."""
    data = _two_nodes_sharing_one_lock(8.0, 1.0)
    data["database"]["lock"]["order"] = "random"
    result = simulate(data, replications=10, seed=24, engine=engine)
    inside(result.summary["response.mean"], 0.5)
    inside(result.summary["database.lock.utilization"], 0.8)
    inside(result.summary["database.lock.wait"], 0.4)
    assert result.summary["response.p95"].low > 1.05 * math.log(20.0) / 2.0


def test_a_lock_near_saturation_is_still_one_mm1_queue():
    """lambda = 9.5, mu = 10 (95 % busy): R = 1/(mu - lambda) = 2 s, R_95 = ln(20)/0.5 s,
    waiting W = rho/(mu - lambda) = 1.9 s per acquisition.  Long runs (its relaxation time is
    some 160 s) on the compiled engine, which computes the reference's trajectory (below)."""
    data = _two_nodes_sharing_one_lock(9.5, 1.0)
    data["run"] = {"duration_s": 20000.0, "warmup": 1000.0}
    result = simulate(data, replications=10, seed=23, engine="compiled")
    inside(result.summary["response.mean"], 2.0)
    inside(result.summary["response.p95"], math.log(20.0) / 0.5)
    inside(result.summary["database.lock.wait"], 1.9)
    inside(result.summary["database.lock.utilization"], 0.95)


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


def _lock_models() -> dict[str, tuple[str | dict, list[str]]]:
    """Models with a lock, each mechanism of it on: (the planner's template or a model's data,
    its --set changes)."""
    open_two_nodes = _two_nodes_sharing_one_lock(9.0, 0.4)
    open_two_nodes["database"].update(
        lock={"share": 0.4, "permits": 2, "hold": {"dist": "exponential", "mean": 0.05}},
        disk_demand={"dist": "exponential", "mean": 0.02},
        disks=2,
    )
    open_two_nodes["run"] = {"duration_s": 300.0, "warmup": 30.0}
    cluster = _cluster(2, 200)
    cluster["run"] = {"duration_s": 30.0, "warmup": "mser"}
    return {
        "the planner's template": ("template", ["run.duration_s=60"]),
        "the template at 3 nodes, the lock saturated, its waiters in random order": (
            "template",
            ["run.duration_s=30", "backends.0.count=3", "clients.users=150"],
        ),
        "open, share, two permits, a random hold, disks": (open_two_nodes, []),
        "closed, JDBC pools, I/O waits, a fixed hold": (cluster, []),
        "the template at 3 nodes, each waiter lengthening the holder's section": (
            "template",
            [
                "run.duration_s=30",
                "backends.0.count=3",
                "clients.users=150",
                "database.lock.wake_per_waiter_s=0.0003",
            ],
        ),
        "the template at 3 nodes, its waiters served in arrival order": (
            "template",
            [
                "run.duration_s=30",
                "backends.0.count=3",
                "clients.users=150",
                "database.lock.order=fifo",
            ],
        ),
    }


LOCK_MODELS = _lock_models()


def _lock_model(name: str, engine: str):
    source, changes = LOCK_MODELS[name]
    if source == "template":
        return load_model(TEMPLATE, [*changes, f"run.engine={engine}"])
    assert isinstance(source, dict)
    return model_from(source, engine=engine)


@pytest.mark.parametrize("name", list(LOCK_MODELS))
def test_the_engines_compute_the_same_replication_with_a_lock(name):
    """Both engines draw the same streams (who takes the lock, its hold) and follow the same
    calendar: every metric of a replication, bit for bit."""
    reference = run_replication(_lock_model(name, "reference"), 1, 7)
    compiled = run_replication(_lock_model(name, "compiled"), 1, 7)
    assert reference.engine == "reference" and compiled.engine == "compiled"
    assert list(compiled.metrics) == list(reference.metrics)
    assert not differing(reference.metrics, compiled.metrics)
    assert compiled.units == reference.units and compiled.warmup_s == reference.warmup_s
    assert reference.metrics["database.lock.wait"] > 0  # the lock acted


def test_both_engines_agree_on_the_planner_template_on_independent_seeds():
    """Two nodes of the template under 40 users (the lock busy), each engine on its own seeds:
    Welch's t on the replications' throughput, mean, p95 and the lock's busy share finds no
    difference (family-wise 1 %)."""
    metrics = ("throughput", "response.mean", "response.p95", "database.lock.utilization")
    samples = {}
    for engine, seed in (("reference", 41), ("compiled", 42)):
        model = load_model(
            TEMPLATE,
            [
                "backends.0.count=2",
                "clients.users=40",
                "run.duration_s=100",
                f"run.engine={engine}",
            ],
        )
        samples[engine] = run(model, replications=8, seed=seed).replications
    for metric in metrics:
        a = [r.metrics[metric] for r in samples["reference"]]
        b = [r.metrics[metric] for r in samples["compiled"]]
        p = stats.ttest_ind(a, b, equal_var=False).pvalue
        assert p > 0.01 / len(metrics), f"{metric}: reference {a}, compiled {b}, p = {p:.2g}"


@pytest.mark.parametrize("order", ["fifo", "random"])
def test_each_waiter_left_at_a_grant_lengthens_the_holders_section(order, engine):
    """Four requests at once, each 0.1 s of database work under the lock, and 0.01 s of the
    holder's section per waiter still queued when it is granted (a hot row's COMMIT wakes
    them all): the first is granted with nobody queued (0.1 s), the next with two left
    (0.12 s), then one (0.11 s), then none (0.1 s) -- whoever the order picks, the sections
    end at 0.1, 0.22, 0.33 and 0.43 s."""
    lock = {"wake_per_waiter_s": 0.01, "order": order}
    metrics = run_replication(
        model_from(_ab(lock, users=4), warmup="none", engine=engine), 0
    ).metrics
    assert metrics["count.completed"] == 4
    assert metrics["makespan"] == pytest.approx(0.43)
    assert metrics["response.mean"] == pytest.approx((0.1 + 0.22 + 0.33 + 0.43) / 4)
    assert metrics["database.lock.utilization"] == pytest.approx(1.0)


@pytest.mark.parametrize("concurrency, requests", [(3, 30), (5, 50), (8, 200)])
def test_a_saturated_lock_turns_over_slower_with_each_waiter(concurrency, requests, engine):
    """ab -c N -n M on the lock alone (D = 10 ms of database work, nothing else): the first
    grant finds nobody queued, every later one N - 2 waiters (the releaser's next request
    arrives after the grant) until the last N - 2 grants find N - 3, ..., 0.  So the makespan
    is exactly M D + w ((M - N + 1)(N - 2) + (N - 3)(N - 2) / 2) with w the time per waiter:
    the lock's throughput at saturation is 1 / (D + (N - 2) w), not 1 / D."""
    n, m, d, w = concurrency, requests, 0.01, 0.002
    data = _ab({"wake_per_waiter_s": w}, {"demand": {"dist": "deterministic", "value": d}}, n)
    data["clients"]["requests"] = m
    metrics = run_replication(model_from(data, warmup="none", engine=engine), 0).metrics
    assert metrics["count.completed"] == m
    expected = m * d + w * ((m - n + 1) * (n - 2) + (n - 3) * (n - 2) / 2)
    assert metrics["makespan"] == pytest.approx(expected, rel=1e-9)
