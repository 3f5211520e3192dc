"""Load-balancing theory inside the simulation's own 99 % interval (values: theory.md §2).

N FCFS exponential servers (one thread, one core each), Poisson arrivals, no proxy: the
dispatcher is the only thing between the clients and the servers.
"""

from __future__ import annotations

import pytest

from sim.analytic.gim1 import erlang_k_m1_response
from sim.model.stability import overloads
from tests.conftest import model_from, simulate


def inside(interval, exact):
    assert interval.low <= exact <= interval.high, (
        f"{exact} not in [{interval.low}, {interval.high}]"
    )


def farm(total_rate, policy, services, duration_s=4000.0, **balancer):
    """One server per entry of `services` (mean service time [s]), in that order."""
    backends = [
        {"name": f"s{k}", "threads": 1, "cores": 1, "demand": {"dist": "exponential", "mean": mean}}
        for k, mean in enumerate(services)
    ]
    return {
        "clients": {"kind": "open", "rate_per_s": total_rate},
        "balancer": {"policy": policy, **balancer},
        "backends": backends,
        "run": {"duration_s": duration_s, "warmup": 100.0},
    }


def test_random_routing_is_independent_mm1_queues(engine):
    """Bernoulli splitting of a Poisson stream gives Poisson streams: E[T] = 1/(1 - 0.7)."""
    result = simulate(farm(1.4, "random", [1.0, 1.0]), replications=10, seed=31, engine=engine)
    inside(result.summary["response.mean"], 1 / (1 - 0.7))


def test_round_robin_is_erlang2_m1(engine):
    """Every second Poisson arrival: Erlang-2 interarrivals, E2/M/1, E[T] = 2.60062 at 0.7."""
    result = simulate(farm(1.4, "round_robin", [1.0, 1.0]), replications=10, seed=31, engine=engine)
    exact = erlang_k_m1_response(2, 0.7, 1.0)
    assert exact == pytest.approx(2.60062, abs=1e-5)
    inside(result.summary["response.mean"], exact)


def test_join_shortest_queue_two_servers():
    """JSQ, N = 2, lambda = 0.7 per server: 2.10820 (CTMC solution, theory.md §2)."""
    result = simulate(farm(1.4, "least_outstanding", [1.0, 1.0]), replications=10, seed=31)
    inside(result.summary["response.mean"], 2.10820)


HETEROGENEOUS = [
    ("random", 0.5 * (1 / (1 - 0.75)) + 0.5 * (1 / (2 - 0.75))),  # 2.4: two M/M/1 at 0.75 each
    (
        "round_robin",
        0.5 * erlang_k_m1_response(2, 0.75, 1.0) + 0.5 * erlang_k_m1_response(2, 0.75, 2.0),
    ),  # 1.88192
    ("sqf", 0.920811),  # JSQ, ties to the fast server (listed first), CTMC
]


@pytest.mark.parametrize(
    "policy, exact, engine",
    [
        pytest.param(policy, exact, engine, id=f"{policy}-{engine}")
        for policy, exact in HETEROGENEOUS
        for engine in ("reference", "compiled")
    ],
)
def test_heterogeneous_pair(policy, exact, engine):
    """mu = (2, 1), lambda = 1.5 (theory.md §2, heterogeneous table)."""
    result = simulate(farm(1.5, policy, [0.5, 1.0]), replications=10, seed=32, engine=engine)
    inside(result.summary["response.mean"], exact)


def test_heterogeneous_round_robin_is_unstable_from_n_min_mu():
    """Round robin and random give each of N servers 1/N of the load: with mu = (2, 1) they are
    unstable from lambda = N min mu = 2, though the pair serves 3; a load-aware policy is
    stable up to 3.  The model check refuses what cannot settle."""
    for policy in ("round_robin", "random", "lighttpd_round_robin", "jboss_round_robin"):
        assert not overloads(model_from(farm(1.99, policy, [0.5, 1.0])))
        refused = overloads(model_from(farm(2.0, policy, [0.5, 1.0])))
        assert {o.path for o in refused} == {
            "backends.1.cores",
            "backends.1.threads",
        }  # the slow one only
    for policy in ("sqf", "least_outstanding", "power_of_d", "bybusyness"):
        assert not overloads(model_from(farm(2.9, policy, [0.5, 1.0])))
        assert [o.path for o in overloads(model_from(farm(3.0, policy, [0.5, 1.0])))] == [
            "backends"
        ]
    weighted = farm(2.9, "byrequests", [0.5, 1.0])
    weighted["backends"][0]["weight"] = 2.0
    assert not overloads(model_from(weighted))  # loadfactor 2:1 matches the speeds


@pytest.mark.slow  # thousands of trials, 9-19 s: `make slow-test` runs it
def test_power_of_two_approaches_the_supermarket_limit():
    """SQ(2) at lambda = 0.9: the mean-field limit sum_i lambda^(2^i - 2) = 2.61406
    (Mitzenmacher 2001) is approached from above as N grows."""
    limit = sum(0.9 ** (2**i - 2) for i in range(1, 40))
    assert limit == pytest.approx(2.61406, abs=1e-5)
    small = simulate(
        farm(0.9 * 5, "power_of_d", [1.0] * 5, duration_s=3000), replications=10, seed=33
    )
    large = simulate(
        farm(0.9 * 40, "power_of_d", [1.0] * 40, duration_s=1500), replications=10, seed=33
    )
    small, large = small.summary["response.mean"], large.summary["response.mean"]
    assert limit < large.low and large.high < small.low
    assert large.high < 1.05 * limit  # within 5 % at N = 40 (distinct draws)


def test_stale_load_reports_make_shortest_queue_herd():
    """Shortest queue on loads reported every Δ s (Mitzenmacher, "How useful is old
    information?", IEEE TPDS 11(1), 2000): 4 servers at 0.8.  Live counts beat random by far;
    Δ = 2 s (two mean service times) loses most of the gain; Δ = 8 s is worse than not looking
    at all, because every request of an interval joins the server that looked shortest."""
    means = {}
    for label, balancer in [
        ("live", {}),
        ("2s", {"report_interval_s": 2.0}),
        ("8s", {"report_interval_s": 8.0}),
    ]:
        result = simulate(
            farm(3.2, "sqf", [1.0] * 4, duration_s=3000, **balancer), replications=10, seed=34
        )
        means[label] = result.summary["response.mean"]
    blind = simulate(farm(3.2, "random", [1.0] * 4, duration_s=3000), replications=10, seed=34)
    blind = blind.summary["response.mean"]
    inside(blind, 1 / (1 - 0.8))
    assert (
        means["live"].high < means["2s"].low
        and means["2s"].high < blind.low
        and blind.high < means["8s"].low
    )
