"""The load generator's own CPU (`clients.host`): a station every request passes through, as
ab's one single-threaded process is.  Checked against exact MVA (the generator's core is one
more queue of the closed network), against the event times of a tiny deterministic run, and
for an open load that overloads the generator."""

from __future__ import annotations

import pytest

from sim.analytic import ClosedNetwork, Station, exact_mva
from sim.model.load import parse_model
from sim.model.stability import overloads
from tests.analytic.test_theory import inside
from tests.conftest import simulate


def closed(users: int, host: dict, **run) -> dict:
    return {
        "clients": {"kind": "closed", "users": users, "think": 0.0, "host": host},
        "backends": [
            {
                "name": "app",
                "threads": None,
                "cores": 1,
                "demand": {"dist": "exponential", "mean": 0.003},
            }
        ],
        "run": {"duration_s": 200, "warmup": "mser", **run},
    }


@pytest.mark.parametrize("users", [2, 12])
def test_a_single_core_generator_is_a_queue_of_the_closed_network(users):
    """ab-like loop (no think time): the generator's core (2.5 ms per request) and the
    server's (3 ms) form a two-queue closed network; exact MVA's throughput and response time
    lie in the simulation's intervals, at 12 users with both queues above 80 % busy too."""
    host = {"cores": 1, "demand": {"dist": "exponential", "mean": 0.0025}}
    result = simulate(closed(users, host), replications=8, seed=5)
    exact = exact_mva(ClosedNetwork((Station("generator", 0.0025), Station("app", 0.003))), users)
    inside(result.summary["throughput"], float(exact.throughput[-1]))
    inside(result.summary["response.mean"], float(exact.response[-1]))
    inside(result.summary["clients.cpu.utilization"], float(exact.utilization[-1][0]))


def test_the_generators_work_comes_before_the_request_and_counts_in_its_response_time():
    """One user, deterministic: 1 ms on the generator, 1 ms of connection set-up per new
    connection on it, 2 ms on the server: a request every 4 ms, response time 4 ms."""
    data = closed(
        1,
        {
            "cores": 1,
            "demand": {"dist": "deterministic", "value": 0.001},
            "connection_demand": {"dist": "deterministic", "value": 0.001},
        },
        warmup=0,
    )
    data["backends"][0]["demand"] = {"dist": "deterministic", "value": 0.002}
    data["run"] = {"duration_s": 1.0, "warmup": 0}
    result = simulate(data, replications=2, seed=1)
    assert result.summary["response.mean"].mean == pytest.approx(0.004)
    assert result.summary["throughput"].mean == pytest.approx(250, rel=0.01)
    assert result.summary["clients.cpu.utilization"].mean == pytest.approx(0.5, rel=0.01)


def test_an_open_load_beyond_the_generators_core_is_refused_as_unstable():
    model = parse_model(
        {
            "clients": {
                "kind": "open",
                "rate_per_s": 600,
                "host": {"cores": 1, "demand": {"dist": "exponential", "mean": 0.002}},
            },
            "backends": [{"name": "app", "cores": 8, "demand": 0.001}],
            "run": {"duration_s": 10},
        },
        "<test>",
    )
    (problem,) = overloads(model)
    assert problem.path == "clients.host.cores" and problem.utilization == pytest.approx(1.2)


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_a_request_sent_as_keep_alive_times_out_goes_on_a_new_connection(engine):
    """One user, two requests, 1 s of thinking, 0.2 s of the generator's CPU before each send,
    0.5 s on the server, a prefork front with KeepAliveTimeout 1.1 s.  Request 1 is answered at
    0.7; the user picks its kept connection at 1.7, but the front closes it at 1.8, before the
    send at 1.9: the request goes on a new connection (two opened, not one), answered at 2.4,
    and the front closes that one at 3.5 -- the run's last close, on both engines."""
    from sim.run.replication import run_replication
    from tests.conftest import model_from

    data = {
        "clients": {
            "kind": "closed",
            "users": 1,
            "requests_per_user": 2,
            "think": {"dist": "deterministic", "value": 1.0},
            "keep_alive": True,
            "host": {"cores": 1, "demand": {"dist": "deterministic", "value": 0.2}},
        },
        "proxy": {"workers": 2, "mpm": "prefork", "keep_alive_timeout_s": 1.1, "linger_s": 0.0},
        "backends": [
            {
                "name": "app",
                "threads": 1,
                "cores": 1,
                "demand": {"dist": "deterministic", "value": 0.5},
            }
        ],
    }
    m = run_replication(model_from(data, warmup="none", engine=engine), 0).metrics
    assert m["count.completed"] == 2
    assert m["proxy.connections.opened"] == 2
    assert m["response.mean"] == pytest.approx(0.7)  # 0.2 on the generator, 0.5 served
    assert m["makespan"] == pytest.approx(2.4 + 1.0)  # the user's last think ends the run
    assert m["elapsed.server_close"] == pytest.approx(3.5)
