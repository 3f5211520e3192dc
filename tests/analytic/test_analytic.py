"""The analytic module against the worked examples of the reference tables (Octave `queueing`,
Bolch et al. 1998, Lazowska et al. 1984).  These are deterministic: exact to 6 significant digits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.analytic import (
    ClosedNetwork,
    Station,
    asymptotic_bounds,
    balanced_job_bounds,
    erlang_b,
    erlang_c,
    exact_mva,
    finite_source,
    md1,
    mg1,
    mg1_ps_response,
    mm1,
    mm1_response_quantile,
    mmc,
    mmc_wait_exceeds,
    mmck,
    schweitzer_mva,
)

rel = dict(rel=5e-6)


def test_mm1():
    m = mm1(8, 10)
    assert (m.utilization, m.mean_in_system, m.mean_in_queue) == pytest.approx((0.8, 4, 3.2), **rel)
    assert (m.mean_response, m.mean_wait) == pytest.approx((0.5, 0.4), **rel)
    assert mm1_response_quantile(8, 10, 0.95) == pytest.approx(1.49787, **rel)


def test_erlang_c_and_mmc():
    assert erlang_c(4, 3) == pytest.approx(0.509434, **rel)
    assert erlang_c(2, 1.5) == pytest.approx(0.642857, **rel)
    assert erlang_c(3, 2) == pytest.approx(0.444444, **rel)
    m = mmc(3, 1, 4)
    assert (m.mean_wait, m.mean_response, m.mean_in_queue, m.mean_in_system) == pytest.approx(
        (0.509434, 1.50943, 1.52830, 4.52830), **rel
    )
    assert mmc_wait_exceeds(3, 1, 4, 1.0) == pytest.approx(0.187410, **rel)


@pytest.mark.parametrize(
    "c, a, expected",
    [(4, 3, 0.206107), (10, 7, 0.0787409), (5, 3, 0.110054), (4, 2, 0.0952381), (6, 2, 0.0120846)],
)
def test_erlang_b(c, a, expected):
    assert erlang_b(c, a) == pytest.approx(expected, **rel)


@pytest.mark.parametrize(
    "lam, mu, c, k, p0, block, x, u, big_l, lq, r, wq",
    [
        (3, 1, 4, 8, 0.0429251, 0.0458385, 2.86248, 0.715621, 3.50083, 0.638343, 1.22300, 0.223003),
        (6, 1, 4, 8, 0.00129345, 0.353597, 3.87842, 0.969604, 6.41908, 2.54066, 1.65508, 0.655078),
        (0.8, 1, 1, 5, 0.271056, 0.0888195, 0.728944, 0.728944, 1.86833, 1.13939, 2.56307, 1.56307),
    ],
)
def test_mmck(lam, mu, c, k, p0, block, x, u, big_l, lq, r, wq):
    m = mmck(lam, mu, c, k)
    assert (m.blocking_probability, m.throughput, m.utilization) == pytest.approx(
        (block, x, u), **rel
    )
    assert (m.mean_in_system, m.mean_in_queue, m.mean_response, m.mean_wait) == pytest.approx(
        (big_l, lq, r, wq), **rel
    )


def test_mmcc_is_erlang_b():
    assert mmck(3, 1, 4, 4).blocking_probability == pytest.approx(erlang_b(4, 3), **rel)


@pytest.mark.parametrize(
    "scv, wq, r, lq, big_l", [(0, 2, 3, 1.6, 2.4), (1, 4, 5, 3.2, 4), (4, 10, 11, 8, 8.8)]
)
def test_pollaczek_khinchine(scv, wq, r, lq, big_l):
    m = mg1(0.8, 1.0, scv)
    assert (m.mean_wait, m.mean_response, m.mean_in_queue, m.mean_in_system) == pytest.approx(
        (wq, r, lq, big_l), **rel
    )


def test_md1_and_ps():
    assert md1(0.8, 1.0).mean_response == pytest.approx(3.0, **rel)
    assert mg1_ps_response(0.8, 1.0) == pytest.approx(5.0, **rel)


def test_finite_source():
    m = finite_source(20, 5.0, 0.5, 2)
    assert m.probabilities[0] == pytest.approx(0.0863024, **rel)
    assert (m.mean_in_system, m.mean_in_queue) == pytest.approx((3.45209, 1.79730), **rel)
    assert (m.throughput, m.mean_response, m.utilization) == pytest.approx(
        (3.30958, 1.04306, 0.827395), **rel
    )


@pytest.mark.parametrize(
    "c, big_l, lq, u",
    [
        (1, 2.67433, 1.74406, 0.930269),
        (2, 1.66091, 0.325272, 0.667818),
        (3, 1.45699, 0.0397867, 0.472401),
    ],
)
def test_finite_source_machine_repair_published(c, big_l, lq, u):
    m = finite_source(5, 10.0, 4.0, c)
    assert (m.mean_in_system, m.mean_in_queue, m.utilization) == pytest.approx(
        (big_l, lq, u), **rel
    )


CHAIN = ClosedNetwork((Station("web", 0.2), Station("app", 0.3), Station("db", 0.1)), think=1.0)
# N, X exact, R exact, Q1, Q2, Q3, X Schweitzer, R Schweitzer, ABA X up, ABA X low, ABA R low, BJB up, BJB low
TABLE = [
    (1, 0.625, 0.6, 0.125, 0.1875, 0.0625, 0.625, 0.6, 0.625, 0.625, 0.6, 0.625, 0.625),
    (
        2,
        1.18519,
        0.6875,
        0.266667,
        0.422222,
        0.125926,
        1.17829,
        0.697380,
        1.25,
        0.909091,
        0.6,
        1.19403,
        1.13402,
    ),
    (
        5,
        2.42092,
        1.06533,
        0.771783,
        1.50520,
        0.302099,
        2.34704,
        1.13034,
        3.125,
        1.25,
        0.6,
        2.63158,
        2,
    ),
    (
        9,
        3.12452,
        1.88044,
        1.42755,
        4.00428,
        0.443654,
        2.97926,
        2.02088,
        3.33333,
        1.40625,
        1.7,
        3.33333,
        2.48276,
    ),
    (
        10,
        3.19371,
        2.13116,
        1.55058,
        4.79466,
        0.461061,
        3.04940,
        2.27933,
        3.33333,
        1.42857,
        2,
        3.33333,
        2.55474,
    ),
]


@pytest.mark.parametrize("row", TABLE, ids=[f"N={r[0]}" for r in TABLE])
def test_mva_three_station_chain(row):
    n, x, r, q1, q2, q3, xs, rs, x_up, x_low, r_low, bjb_up, bjb_low = row
    exact = exact_mva(CHAIN, 10)
    assert exact.throughput[n - 1] == pytest.approx(x, **rel)
    assert exact.response[n - 1] == pytest.approx(r, **rel)
    assert exact.queue_length[n - 1] == pytest.approx([q1, q2, q3], **rel)
    # response-time law and population conservation
    assert exact.queue_length[n - 1].sum() + x * CHAIN.think == pytest.approx(n, **rel)
    x_s, r_s, _ = schweitzer_mva(CHAIN, n)
    assert (x_s, r_s) == pytest.approx((xs, rs), **rel)
    b = asymptotic_bounds(CHAIN, n)
    assert (b.throughput_upper, b.throughput_lower, b.response_lower) == pytest.approx(
        (x_up, x_low, r_low), **rel
    )
    assert b.saturation_population == pytest.approx(5.33333, **rel)
    assert balanced_job_bounds(CHAIN, n) == pytest.approx((bjb_up, bjb_low), **rel)
    assert b.throughput_lower <= exact.throughput[n - 1] <= b.throughput_upper


def test_mva_with_visits_octave_example():
    s, v = np.array([0.125, 0.3, 0.2]), np.array([16, 10, 5])
    network = ClosedNetwork(tuple(Station(f"s{i}", d) for i, d in enumerate(s * v)), think=4.0)
    result = exact_mva(network, 20)
    assert result.throughput[-1] == pytest.approx(0.333247, **rel)
    assert result.response[-1] == pytest.approx(56.0156, **rel)
    assert result.residence[-1] / v == pytest.approx([0.373339, 4.85426, 0.299922], **rel)
    assert result.queue_length[-1] == pytest.approx([1.99062, 16.1767, 0.499740], **rel)


def test_multiserver_mva_matches_finite_source():
    """A closed network of one c-server station and a think delay is the machine-repairman model."""
    network = ClosedNetwork((Station("cpu", 0.5, servers=2),), think=5.0)
    result = exact_mva(network, 20)
    m = finite_source(20, 5.0, 0.5, 2)
    assert result.throughput[-1] == pytest.approx(m.throughput, rel=1e-9)
    assert result.response[-1] == pytest.approx(m.mean_response, rel=1e-9)


def test_delay_station_adds_its_demand():
    with_delay = ClosedNetwork((Station("cpu", 0.5), Station("io", 2.0, kind="delay")), think=3.0)
    as_think = ClosedNetwork((Station("cpu", 0.5),), think=5.0)
    assert exact_mva(with_delay, 8).throughput[-1] == pytest.approx(
        exact_mva(as_think, 8).throughput[-1], rel=1e-12
    )


@pytest.mark.parametrize(
    "call", [lambda: erlang_c(4, 4.0), lambda: mm1(10, 10), lambda: mmc(-1, 1, 2)]
)
def test_unstable_or_invalid_inputs_are_errors(call):
    with pytest.raises(ValueError):
        call()
    assert math.isfinite(erlang_b(4, 30.0))  # loss systems are always stable
