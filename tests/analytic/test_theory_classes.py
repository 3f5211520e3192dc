"""Request classes against multi-class queueing theory, inside the simulation's own interval.

* Open, two classes through one processor-sharing core (M/M/1-PS, per-class demands): a job's
  mean response is proportional to its demand, R_c = D_c / (1 - rho), rho = sum_c lambda_c D_c.
* Closed, two chains with fixed populations (`mix_by = "user"`) through a node and a
  database: exact multi-class MVA (Reiser & Lavenberg 1980), itself checked against the
  normalising constant in `tests/model/test_classes.py`.
* Closed, one chain whose requests draw their class (`mix_by = "request"`): the
  class-switching network has the single-class MVA of the mix-weighted demands, and a class's
  response is its demand times each station's residence per unit of demand.
"""

from __future__ import annotations

import numpy as np

from sim.analytic.model_solver import solve_model
from sim.analytic.multiclass_mva import MultiClassNetwork, exact_multiclass_mva
from tests.conftest import model_from, simulate


def exponential(mean: float) -> dict:
    return {"dist": "exponential", "mean": mean}


def inside(interval, exact: float) -> None:
    assert interval.low <= exact <= interval.high, (
        f"{exact} not in [{interval.low}, {interval.high}]"
    )


def test_two_class_mm1_processor_sharing():
    """lambda = 40/s, 75 % small (D = 5 ms) and 25 % big (D = 30 ms): rho = 0.45,
    R_small = 9.09 ms, R_big = 54.5 ms, and the class throughputs split the arrivals."""
    model = {
        "clients": {"kind": "open", "rate_per_s": 40.0, "mix": {"small": 0.75, "big": 0.25}},
        "backends": [{"name": "server", "demand": exponential(0.005), "threads": None}],
        "classes": [{"name": "small"}, {"name": "big", "backend": {"demand": exponential(0.03)}}],
        "run": {"duration_s": 1000.0, "warmup": 50.0},
    }
    result = simulate(model, replications=5, seed=17)
    rho = 40.0 * (0.75 * 0.005 + 0.25 * 0.03)
    inside(result.summary["class.small.response.mean"], 0.005 / (1 - rho))
    inside(result.summary["class.big.response.mean"], 0.03 / (1 - rho))
    inside(result.summary["class.small.throughput"], 30.0)
    inside(result.summary["class.big.throughput"], 10.0)
    inside(result.summary["server1.cpu.utilization"], rho)
    # `tiersim solve` gives the same per-class answer
    answer = {c.name: c for c in solve_model(model_from(model)).classes}
    assert np.isclose(answer["big"].response_mean_s, 0.03 / (1 - rho))


CLOSED = {
    "clients": {"kind": "closed", "users": 8, "think": exponential(0.1)},
    "backends": [{"name": "app", "demand": exponential(0.01), "threads": None, "db_calls": 1}],
    "database": {"demand": exponential(0.02)},
    "classes": [
        {"name": "a"},
        {
            "name": "b",
            "backend": {"demand": exponential(0.04)},
            "database": {"demand": exponential(0.005)},
        },
    ],
    "run": {"duration_s": 400.0, "warmup": 20.0},
}


def test_two_chain_closed_network_against_exact_multiclass_mva():
    """5 users of class a and 3 of class b, Z = 0.1 s; demands (node, database):
    a (10, 20) ms, b (40, 5) ms."""
    data = {**CLOSED, "clients": {**CLOSED["clients"], "mix": {"a": 0.625, "b": 0.375}}}
    data["clients"]["mix_by"] = "user"
    result = simulate(data, replications=5, seed=23)
    exact = exact_multiclass_mva(
        MultiClassNetwork(
            ("app1.cpu", "database.cpu"),
            np.array([[0.01, 0.04], [0.02, 0.005]]),
            (1, 1),
            (0.1, 0.1),
        ),
        (5, 3),
    )
    for c, name in enumerate(("a", "b")):
        inside(result.summary[f"class.{name}.throughput"], exact.throughput[c])
        inside(result.summary[f"class.{name}.response.mean"], exact.response[c])
    inside(result.summary["database.cpu.utilization"], exact.utilization[1])
    answer = solve_model(model_from(data))
    assert answer.exact and "exact multi-class MVA" in answer.network
    assert np.isclose(answer.classes[1].throughput_per_s, exact.throughput[1])


def test_class_switching_chain_against_mix_weighted_mva():
    """The same stations with every request drawing its class (62.5 % a): one chain of 8."""
    data = {**CLOSED, "clients": {**CLOSED["clients"], "mix": {"a": 0.625, "b": 0.375}}}
    result = simulate(data, replications=5, seed=29)
    answer = solve_model(model_from(data))
    inside(result.summary["throughput"], answer.throughput_per_s)
    for c in answer.classes:
        inside(result.summary[f"class.{c.name}.response.mean"], c.response_mean_s)
