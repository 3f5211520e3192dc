"""The compiled plan: the builder, the stability check and `solve` read the stack once, the same
way; `solve` calls its answer exact only for a product-form plan."""

from __future__ import annotations

import math

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.analytic.model_solver import solve_model
from sim.cli import main
from sim.model.plan import compile_plan
from sim.run.replications import run
from tests.conftest import THEORY_LEVEL, model_from

EXP = {"dist": "exponential", "mean": 0.02}


def replicated_cluster(nodes: int) -> dict:
    return {
        "clients": {"kind": "closed", "users": 40, "think": {"dist": "exponential", "mean": 1.0}},
        "backends": [
            {
                "name": "node",
                "count": nodes,
                "demand": EXP,
                "jvm": {"heap_mb": 512, "baseline_mb": 50, "allocation_kb": 100},
            }
        ],
        "balancer": {"policy": "random"},
        "cluster": {"replication": [{"tier": "web", "mode": "sync", "message_cpu_s": 0.05}]},
    }


def test_solve_names_the_jvm_and_synchronous_replication_and_the_simulation_disagrees():
    """Regression: on 2 nodes with a JVM and synchronous web replication `solve` said exact,
    with R = 0.063 s against the simulation's 0.3 s."""
    model = model_from(replicated_cluster(2), duration_s=100.0, seed=3)
    answer = solve_model(model)
    assert not answer.exact
    assert any(c.startswith("backends.0.jvm") for c in answer.caveats)
    assert any(c.startswith("cluster.replication.0") for c in answer.caveats)
    simulated = run(model, replications=3).summary["response.mean"]
    # the reason it must not say exact: the product-form answer is far outside the interval
    assert answer.response_mean_s < simulated.low


def test_eight_nodes_of_total_synchronous_replication_are_named():
    answer = solve_model(model_from(replicated_cluster(8), duration_s=10.0))
    assert any("sync web-tier replication" in c for c in answer.caveats)


def test_solve_and_the_builder_see_only_the_balancer_members():
    """Regression: the solver split the load over groups the balancer leaves out."""
    data = {
        "clients": {"kind": "open", "rate_per_s": 5.0},
        "backends": [
            {"name": "web", "count": 2, "demand": EXP},
            {"name": "spare", "count": 3, "demand": EXP},
        ],
        "balancer": {"policy": "random", "members": ["web"]},
    }
    model = model_from(data, duration_s=10.0)
    plan = compile_plan(model)
    assert [n.name for n in plan.nodes] == ["web1", "web2"]
    answer = solve_model(model, plan)
    cpus = {s.name: s.demand_s for s in answer.stations}
    assert set(cpus) == {"web1.cpu", "web2.cpu"}
    assert math.isclose(cpus["web1.cpu"], 0.01)


def test_a_one_thread_mm1_is_exact():
    """A thread pool held at one station only, with as many slots as cores and exponential
    demand, is the station's own FCFS queue: M/M/1, exactly."""
    data = {
        "clients": {"kind": "open", "rate_per_s": 8.0},
        "backends": [{"demand": {"dist": "exponential", "mean": 0.1}, "threads": 1}],
    }
    answer = solve_model(model_from(data, duration_s=10.0))
    assert answer.exact, answer.caveats
    assert math.isclose(answer.response_mean_s, 0.5)


def test_solve_refuses_an_unstable_model_like_run(tmp_path):
    path = tmp_path / "unstable.toml"
    path.write_text(
        "[clients]\nkind = 'open'\nrate_per_s = 20.0\n[[backends]]\ndemand = 0.1\n"
        "[run]\nduration_s = 10\n"
    )
    result = CliRunner().invoke(main, ["solve", str(path)])
    assert result.exit_code == 4, result.output
    assert "backends.0.cores" in result.output


# ---------------------------------------------------------------------------------------------
# Wherever `solve` claims exactness, the simulation's interval contains its answer; wherever a
# stack has a component outside product form, `solve` names it.
BREAKERS = {
    "jvm": lambda d: d["backends"][0].update(
        jvm={"heap_mb": 64, "baseline_mb": 8, "allocation_kb": 200}
    ),
    "timeout": lambda d: d["clients"].update(timeout_s=0.5),
    "retry": lambda d: d["clients"].update(retry={"max_retries": 1}),
    # two threads under ten users: the pool fills, and a thread is held across the I/O wait
    "small_pool": lambda d: (
        d["backends"][0].update(threads=2, io_wait=0.05),
        d["clients"].update(users=10),
    ),
}


@st.composite
def product_form_stacks(draw):
    """Closed stacks of processor-sharing hosts, delays and an exponential database, with at
    most one component that breaks product form."""
    has_db = draw(st.booleans())
    backends = [
        {
            "name": f"g{i}",
            "count": draw(st.integers(1, 2)),
            "cores": draw(st.integers(1, 2)),
            # processor sharing is insensitive: a gamma demand (cv 2) changes nothing
            "demand": draw(
                st.sampled_from(
                    [
                        {"dist": "exponential", "mean": 0.02},
                        {"dist": "gamma", "mean": 0.01, "cv": 2.0},
                        {"dist": "exponential", "mean": 0.005},
                    ]
                )
            ),
            "io_wait": draw(st.sampled_from([0.0, {"dist": "exponential", "mean": 0.01}])),
            "db_calls": draw(st.integers(0, 2)) if has_db else 0,
        }
        for i in range(draw(st.integers(1, 2)))
    ]
    data: dict = {
        "clients": {
            "kind": "closed",
            "users": draw(st.integers(1, 30)),
            "think": {"dist": "exponential", "mean": draw(st.floats(0.05, 0.5))},
        },
        "backends": backends,
        "balancer": {"policy": "random"},
    }
    if has_db:
        data["database"] = {"demand": {"dist": "exponential", "mean": draw(st.floats(0.001, 0.01))}}
    if draw(st.booleans()):
        data["proxy"] = {"demand": {"dist": "exponential", "mean": draw(st.floats(0.001, 0.005))}}
    breaker = draw(st.sampled_from([None, None, *BREAKERS]))
    if breaker is not None:
        BREAKERS[breaker](data)
    return data, breaker


@settings(max_examples=12, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(drawn=product_form_stacks(), seed=st.integers(0, 2**16))
def test_solve_is_exact_only_where_the_simulation_agrees(drawn, seed):
    data, breaker = drawn
    model = model_from(data, duration_s=150.0, seed=seed, confidence=THEORY_LEVEL)
    answer = solve_model(model)
    if breaker is not None:
        assert not answer.exact, f"{breaker} not named: {answer.caveats}"
        return
    assert answer.exact, answer.caveats
    summary = run(model, replications=8).summary
    # Bonferroni over the two metrics of an example
    for name, value in (
        ("throughput", answer.throughput_per_s),
        ("response.mean", answer.response_mean_s),
    ):
        interval = summary[name]
        assert interval.low <= value <= interval.high, (name, value, interval, data)
