"""The work estimate made before a run: requests from the offered rate or the closed
population's throughput bound, times the simulated time; periodic events; the refusal."""

from __future__ import annotations

import math

import pytest

from sim.model.workload import check, estimate, number, warning
from tests.conftest import model_from

CLOSED = {
    "clients": {"kind": "closed", "users": 20, "think": 1.0},
    "backends": [{"name": "app", "threads": 50, "cores": 2, "demand": 0.02}],
    "run": {"duration_s": 20, "replications": 2},
}


def test_closed_population_bound_times_duration():
    work = estimate(model_from(CLOSED))
    assert work.requests == pytest.approx(2 * 20 * 20 / 1.02)  # N / (Z + D) x T x R
    assert check(work, 1e8) is None and warning(work) is None


def test_the_bottleneck_bounds_a_large_population():
    work = estimate(model_from(CLOSED, duration_s=100), replications=1)
    assert work.requests == pytest.approx(100 * 20 / 1.02)
    many = dict(CLOSED, clients={"kind": "closed", "users": 100_000, "think": 1.0})
    assert estimate(model_from(many), replications=1).requests == pytest.approx(2 / 0.02 * 20)


def test_open_rate_and_periodic_samples():
    data = dict(CLOSED, clients={"kind": "open", "rate_per_s": 50.0})
    work = estimate(model_from(data), replications=1)
    assert work.requests == pytest.approx(50 * 20)
    sampled = estimate(
        model_from(data, timeseries_interval_s=0.001), replications=1, timeseries=True
    )
    assert sampled.events == pytest.approx(50 * 20 + 20 / 0.001)
    assert "run.timeseries_interval_s" in sampled.basis


def test_a_run_of_hours_is_refused_with_the_parameter_to_lower():
    work = estimate(model_from(CLOSED, duration_s=1e9), replications=1)
    refusal = check(work, 1e8)
    assert refusal is not None and "lower run.duration_s" in refusal and "1e9" in refusal
    assert check(work, None) is None and "hours" in (warning(work) or "")


def test_zero_time_requests_never_end_unless_counted():
    data = dict(CLOSED, clients={"kind": "closed", "users": 3, "think": 0.0})
    data["backends"] = [{"name": "app", "threads": 5, "cores": 1, "demand": 0.0}]
    assert math.isinf(estimate(model_from(data)).events)
    counted = model_from(data, requests=1000)
    assert estimate(counted).requests == 2 * 1000
    both = model_from(data, requests=1000, duration_s=10)
    assert estimate(both).requests == 2 * 1000


def test_finite_workloads_count_their_own_requests():
    data = dict(CLOSED, clients={"kind": "ab", "concurrency": 5, "requests": 1000, "repeat": 3})
    assert estimate(model_from(data), replications=1).requests == 3000


@pytest.mark.parametrize(
    "value, text",
    [(1e9, "1e9"), (1.96e10, "1.96e10"), (2e-9, "2e-9"), (200.0, "200"), (0.5, "0.5")],
)
def test_numbers_in_messages(value, text):
    assert number(value) == text
