"""Simulation against closed-form queueing theory, inside the simulation's own interval.

Worked values are the exact numbers of the analytic module (which is itself tested against
published worked examples); each test states the queue it builds and the formula.  Every test
runs on both engines (the `engine` fixture): each is held to the theory.
"""

from __future__ import annotations

import math

import pytest

from sim import analytic
from tests.conftest import simulate


def single_station(
    threads, cores, cpu, clients, accept_queue=None, duration_s=4000.0, warmup=200.0
):
    backend = {"name": "server", "threads": threads, "cores": cores, "demand": cpu}
    if accept_queue is not None:
        backend["accept_queue"] = accept_queue
    return {
        "clients": clients,
        "backends": [backend],
        "run": {"duration_s": duration_s, "warmup": warmup},
    }


def poisson(rate):
    return {"kind": "open", "rate_per_s": rate}


def lost_if_blocked(clients):
    """Blocked customers cleared (the loss systems of Erlang B and M/M/c/K): a client whose
    SYN meets a full listen queue gives up at once instead of retransmitting."""
    return {**clients, "tcp": {"syn_retries": 0}}


def inside(interval, exact):
    assert interval.low <= exact <= interval.high, (
        f"{exact} not in [{interval.low}, {interval.high}]"
    )


def test_mm1_mean_and_p95_response(engine):
    """M/M/1, lambda = 8, mu = 10: R = 1/(mu - lambda) = 0.5 s, R_95 = -ln(0.05)/2."""
    result = simulate(
        single_station(
            1, 1, {"dist": "exponential", "mean": 0.1}, poisson(8.0), duration_s=3000, warmup=100
        ),
        replications=10,
        seed=11,
        engine=engine,
    )
    metrics = analytic.mm1(8.0, 10.0)
    inside(result.summary["response.mean"], metrics.mean_response)
    inside(result.summary["response.p95"], -math.log(0.05) / 2.0)
    inside(result.summary["server1.cpu.utilization"], 0.8)


def test_mmc_erlang_c(engine):
    """M/M/4, lambda = 3, mu = 1: Erlang C = 0.509434, Wq = 0.509434, R = 1.50943, Lq = 1.52830."""
    result = simulate(
        single_station(4, 4, {"dist": "exponential", "mean": 1.0}, poisson(3.0)),
        replications=10,
        seed=12,
        engine=engine,
    )
    exact = analytic.mmc(3.0, 1.0, 4)
    inside(result.summary["response.mean"], exact.mean_response)
    inside(result.summary["server1.threads.wait"], exact.mean_wait)
    inside(result.summary["server1.threads.queue"], exact.mean_in_queue)
    inside(result.summary["server1.threads.busy"], 3.0)


@pytest.mark.parametrize(
    "service",
    [
        {"dist": "exponential", "mean": 1.0},
        {"dist": "deterministic", "value": 1.0},
        {"dist": "lognormal", "mean": 1.0, "cv": 1.5},
    ],
)
def test_erlang_b_blocking_is_insensitive(service, engine):
    """M/G/4/4 with a = 3: blocking = Erlang B(4, 3) = 0.206107 for any service distribution."""
    result = simulate(
        single_station(4, 4, service, lost_if_blocked(poisson(3.0)), accept_queue=0),
        replications=10,
        seed=13,
        engine=engine,
    )
    blocked = [
        rep.metrics["count.errors"] / rep.metrics["count.arrived"] for rep in result.replications
    ]
    from sim.stats.confidence import t_interval

    inside(t_interval(blocked, 0.99), analytic.erlang_b(4, 3.0))


def test_mmck_blocking_and_throughput(engine):
    """M/M/4/8, lambda = 6, mu = 1: P_block = 0.353597, X = 3.87842, R = 1.65508."""
    result = simulate(
        single_station(
            4,
            4,
            {"dist": "exponential", "mean": 1.0},
            lost_if_blocked(poisson(6.0)),
            accept_queue=4,
        ),
        replications=10,
        seed=14,
        engine=engine,
    )
    exact = analytic.mmck(6.0, 1.0, 4, 8)
    inside(result.summary["throughput"], exact.throughput)
    inside(result.summary["response.mean"], exact.mean_response)


@pytest.mark.parametrize(
    "service, scv",
    [
        ({"dist": "deterministic", "value": 1.0}, 0.0),
        ({"dist": "gamma", "mean": 1.0, "cv": 2.0}, 4.0),
    ],
)
def test_mg1_pollaczek_khinchine(service, scv, engine):
    """M/G/1 FCFS, lambda = 0.8, E[S] = 1: R = 3 (deterministic), 11 (c_s^2 = 4)."""
    result = simulate(
        single_station(1, 1, service, poisson(0.8), duration_s=30000, warmup=2000),
        replications=12,
        seed=15,
        engine=engine,
    )
    inside(result.summary["response.mean"], analytic.mg1(0.8, 1.0, scv).mean_response)


def test_mg1_processor_sharing_is_insensitive(engine):
    """M/G/1-PS (unbounded threads on one core), lognormal cv 2: R = E[S]/(1 - rho) = 0.25/0.3."""
    result = simulate(
        single_station(
            None,
            1,
            {"dist": "lognormal", "mean": 0.25, "cv": 2.0},
            poisson(2.8),
            duration_s=6000,
            warmup=300,
        ),
        replications=10,
        seed=16,
        engine=engine,
    )
    inside(result.summary["response.mean"], 0.25 / (1 - 0.7))


def test_finite_source_machine_repairman(engine):
    """M/M/2//20, Z = 5, S = 0.5: X = 3.30958/s, R = 1.04306 s."""
    clients = {"kind": "closed", "users": 20, "think": {"dist": "exponential", "mean": 5.0}}
    result = simulate(
        single_station(2, 2, {"dist": "exponential", "mean": 0.5}, clients),
        replications=10,
        seed=17,
        engine=engine,
    )
    exact = analytic.finite_source(20, 5.0, 0.5, 2)
    inside(result.summary["throughput"], exact.throughput)
    inside(result.summary["response.mean"], exact.mean_response)


def test_exact_mva_closed_three_station_chain(engine):
    """Proxy (PS, D = 0.2) -> app (PS, D = 0.3) -> DB (PS, D = 0.1), Z = 1, N = 10:
    exact MVA X = 3.19371, R = 2.13116 (Reiser & Lavenberg 1980)."""
    data = {
        "clients": {"kind": "closed", "users": 10, "think": {"dist": "exponential", "mean": 1.0}},
        "proxy": {"workers": None, "cores": 1, "demand": {"dist": "exponential", "mean": 0.2}},
        "backends": [
            {
                "name": "app",
                "threads": None,
                "cores": 1,
                "demand": {"dist": "exponential", "mean": 0.3},
                "db_calls": 1,
            }
        ],
        "database": {"cores": 1, "demand": {"dist": "exponential", "mean": 0.1}},
        "run": {"duration_s": 3000, "warmup": 100},
    }
    result = simulate(data, replications=10, seed=18, engine=engine)
    inside(result.summary["throughput"], 3.19371)
    inside(result.summary["response.mean"], 2.13116)
    inside(result.summary["app1.cpu.utilization"], 3.19371 * 0.3)


def test_partly_open_sessions_see_the_open_response_time(engine):
    """Sessions (Poisson 0.5/s, geometric mean 4 requests, think 2 s) on an exp server, S = 0.3:
    the server sees 2 requests/s and R = S/(1 - 0.6) = 0.75 s for every p and Z (product form)."""
    clients = {
        "kind": "sessions",
        "session_rate_per_s": 0.5,
        "requests_per_session": 4,
        "think": {"dist": "exponential", "mean": 2.0},
    }
    result = simulate(
        single_station(
            1, 1, {"dist": "exponential", "mean": 0.3}, clients, duration_s=8000, warmup=400
        ),
        replications=10,
        seed=19,
        engine=engine,
    )
    inside(result.summary["response.mean"], 0.3 / (1 - 0.6))


def test_client_timeout_fraction_without_cancellation(engine):
    """M/M/1, lambda = 8, mu = 10, client timeout 1 s: the server still serves abandoned
    requests, so the queue is plain M/M/1 and P(time out) = P(R > 1) = e^-2 = 0.135335."""
    clients = {**poisson(8.0), "timeout_s": 1.0}
    result = simulate(
        single_station(
            1, 1, {"dist": "exponential", "mean": 0.1}, clients, duration_s=3000, warmup=100
        ),
        replications=10,
        seed=20,
        engine=engine,
    )
    fractions = [
        rep.metrics["count.timed_out"] / rep.metrics["count.arrived"] for rep in result.replications
    ]
    from sim.stats.confidence import t_interval

    inside(t_interval(fractions, 0.99), math.exp(-2.0))
    inside(result.summary["server1.cpu.utilization"], 0.8)


def test_solve_agrees_with_simulation_on_a_product_form_cluster(engine):
    """Two app nodes (2 cores each, gamma CPU demand, an io_wait delay, 2 DB calls) behind a
    random balancer and a 4-core database, 40 users: `tiersim solve`'s exact multi-server MVA
    (BCMP: processor sharing is insensitive to the demand distribution, io_wait is a delay
    station, random routing is probabilistic) lies inside the simulation's interval."""
    from sim.analytic.model_solver import solve_model
    from tests.conftest import model_from

    data = {
        "clients": {"kind": "closed", "users": 40, "think": {"dist": "exponential", "mean": 1.0}},
        "proxy": {"workers": None, "cores": 2, "demand": {"dist": "exponential", "mean": 0.002}},
        "balancer": {"policy": "random"},
        "backends": [
            {
                "name": "app",
                "count": 2,
                "threads": None,
                "cores": 2,
                "demand": {"dist": "gamma", "mean": 0.08, "cv": 2.0},
                "io_wait": {"dist": "exponential", "mean": 0.05},
                "db_calls": 2,
            }
        ],
        "database": {"cores": 4, "demand": {"dist": "lognormal", "mean": 0.03, "cv": 0.5}},
        "run": {"duration_s": 600, "warmup": 50},
    }
    answer = solve_model(model_from(data))
    assert answer.exact and not answer.caveats
    result = simulate(data, replications=10, seed=21, engine=engine)
    inside(result.summary["throughput"], answer.throughput_per_s)
    inside(result.summary["response.mean"], answer.response_mean_s)
    utilization = {s.name: s.utilization for s in answer.stations}
    inside(result.summary["database.cpu.utilization"], utilization["database.cpu"])


def test_database_disk_is_a_fcfs_station_in_the_product_form_network(engine):
    """A node (1 core), a database CPU (1 core) and two database disks (FCFS, exponential
    service: BCMP type 1 with a load-dependent rate), 30 users, think 1 s: exact MVA of
    `tiersim solve` lies inside the simulation's interval, for throughput, response time and
    the disks' utilisation (busy spindles / 2)."""
    from sim.analytic.model_solver import solve_model
    from tests.conftest import model_from

    data = {
        "clients": {"kind": "closed", "users": 30, "think": {"dist": "exponential", "mean": 1.0}},
        "backends": [
            {
                "name": "app",
                "threads": None,
                "cores": 1,
                "db_calls": 1,
                "demand": {"dist": "exponential", "mean": 0.02},
            }
        ],
        "database": {
            "cores": 1,
            "demand": {"dist": "exponential", "mean": 0.01},
            "disk_demand": {"dist": "exponential", "mean": 0.05},
            "disks": 2,
        },
        "run": {"duration_s": 600, "warmup": 50},
    }
    answer = solve_model(model_from(data))
    assert answer.exact
    result = simulate(data, replications=10, seed=22, engine=engine)
    inside(result.summary["throughput"], answer.throughput_per_s)
    inside(result.summary["response.mean"], answer.response_mean_s)
    utilization = {s.name: s.utilization for s in answer.stations}
    inside(result.summary["database.disks.utilization"], utilization["database.disks"])


# Heavy load. A replication of a queue at rho = 0.9-0.95 holds few independent observations
# (its output's correlation time is long), so each run below is sized by the rule the run
# itself checks (sim.stats.steady_state): at least about 20 independent responses beyond p99
# over all replications (R n_eff (1 - q) >= 10 with a margin of two for the noise of n_eff's
# own estimate), n_eff taken from the M/M/1 study in experiments/heavy_load (M/M/1: 22.7 per
# 1 000 s at rho = 0.9, 5.9 at 0.95) and, for M/M/4, from a pilot run's own estimate (12 per
# 1 000 s at 0.9, 1.6 at 0.95). The run must say nothing is wrong, and every figure must cover
# the theory. These are the suite's most expensive tests (a tail at rho = 0.95 needs millions
# of responses); a shorter run is refused by its own warnings, as the last test shows.
HEAVY = [
    # servers, service rate, rho, run length [s], seed
    pytest.param(1, 10.0, 0.9, 10_000.0, 41, id="M/M/1 rho=0.9"),
    pytest.param(1, 10.0, 0.95, 40_000.0, 42, id="M/M/1 rho=0.95"),
    pytest.param(4, 1.0, 0.9, 16_000.0, 43, id="M/M/4 rho=0.9"),
    pytest.param(4, 1.0, 0.95, 125_000.0, 44, id="M/M/4 rho=0.95"),
]


@pytest.mark.parametrize("servers, mu, rho, duration_s, seed", HEAVY)
def test_heavy_load_mean_and_tail_percentiles(servers, mu, rho, duration_s, seed, engine):
    """FCFS M/M/c near saturation, warm-up by MSER on the replications' average: the mean
    (Erlang C), p95 and p99 of the sojourn time (P(R > t) = (1 - C) e^{-mu t} + C P(Wq + S > t))
    each inside the simulation's 99 % interval, with no steady-state warning."""
    rate = rho * servers * mu
    result = simulate(
        single_station(
            servers,
            servers,
            {"dist": "exponential", "mean": 1 / mu},
            poisson(rate),
            duration_s=duration_s,
            warmup="mser",
        ),
        replications=10,
        seed=seed,
        engine=engine,
    )
    assert result.warnings == []
    inside(result.summary["response.mean"], analytic.mmc(rate, mu, servers).mean_response)
    for p in (95, 99):
        exact = analytic.mmc_response_quantile(rate, mu, servers, p / 100)
        inside(result.summary[f"response.p{p}"], exact)


@pytest.mark.parametrize("users, seed", [(8, 45), (10, 46)])
def test_exact_mva_near_saturation(users, seed, engine):
    """The closed three-station chain of test_exact_mva_closed_three_station_chain with the
    bottleneck (app, D = 0.3) at 91 % (N = 8) and 96 % (N = 10) utilisation, warm-up by MSER:
    exact MVA's throughput and response time inside the interval, with no warning."""
    from sim.analytic import ClosedNetwork, Station, exact_mva

    data = {
        "clients": {
            "kind": "closed",
            "users": users,
            "think": {"dist": "exponential", "mean": 1.0},
        },
        "proxy": {"workers": None, "cores": 1, "demand": {"dist": "exponential", "mean": 0.2}},
        "backends": [
            {
                "name": "app",
                "threads": None,
                "cores": 1,
                "demand": {"dist": "exponential", "mean": 0.3},
                "db_calls": 1,
            }
        ],
        "database": {"cores": 1, "demand": {"dist": "exponential", "mean": 0.1}},
        "run": {"duration_s": 3000, "warmup": "mser"},
    }
    network = ClosedNetwork(
        (Station("proxy", 0.2), Station("app", 0.3), Station("database", 0.1)), think=1.0
    )
    exact = exact_mva(network, users)
    result = simulate(data, replications=10, seed=seed, engine=engine)
    assert result.warnings == []
    inside(result.summary["throughput"], float(exact.throughput[-1]))
    inside(result.summary["response.mean"], float(exact.response[-1]))


def test_a_heavy_load_run_too_short_says_so(engine):
    """M/M/1 at rho = 0.95 for 500 s (three relaxation times): its intervals miss the truth
    (the mean's, p95's and p99's), and the run says it is too short instead of staying quiet."""
    result = simulate(
        single_station(
            1, 1, {"dist": "exponential", "mean": 0.1}, poisson(9.5), duration_s=500, warmup="mser"
        ),
        replications=10,
        seed=47,
        engine=engine,
    )
    assert any(w.startswith("run too short") for w in result.warnings), result.warnings
