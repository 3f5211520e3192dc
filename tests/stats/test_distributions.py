"""Distributions: analytic mean and variance, sampling against them, and the model-file specs."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError
from scipy import stats

from sim.random.distributions import (
    Deterministic,
    DistributionSpec,
    Empirical,
    Exponential,
    Gamma,
    HyperExponential,
    Lognormal,
    Uniform,
    as_distribution,
)

CASES = [
    Exponential(0.5),
    Uniform(1.0, 3.0),
    Gamma(0.04, 0.8),
    Gamma(2.0, 3.0),
    Lognormal(0.1, 1.5),
    HyperExponential(1.0, 4.0),
    Empirical((0.1, 0.2, 0.2, 0.9)),
]


@pytest.mark.parametrize("dist", CASES, ids=lambda d: d.describe())
def test_sample_mean_and_variance_match_the_analytic_values(dist):
    """The sample mean lies in its 99.9 % interval around the analytic mean, and the sample
    variance of batch means agrees with var / batch (chi-square interval)."""
    rng = np.random.default_rng(11)
    n = 200_000
    x = dist.sample(rng, n)
    z = (x.mean() - dist.mean) / np.sqrt(dist.variance / n)
    assert abs(z) < stats.norm.ppf(0.9995)
    batches = x.reshape(400, 500).mean(axis=1)
    ratio = batches.var(ddof=1) / (dist.variance / 500)
    low, high = stats.chi2.ppf([0.0005, 0.9995], 399) / 399
    assert low < ratio < high


@pytest.mark.parametrize("dist", [Gamma(0.04, 0.8), Lognormal(0.1, 1.5)])
def test_mean_and_cv_parametrisation(dist):
    assert dist.scv == pytest.approx({0.04: 0.64, 0.1: 2.25}[dist.mean])


def test_exponential_and_deterministic_moments():
    assert (Exponential(0.5).variance, Exponential(0.5).scv) == pytest.approx((0.25, 1.0))
    d = Deterministic(0.3)
    assert (d.mean, d.variance) == (0.3, 0.0)
    assert d.sampler(np.random.default_rng(0))() == 0.3


def test_scaled_keeps_the_shape():
    for dist in CASES:
        half = dist.scaled(0.5)
        assert half.mean == pytest.approx(dist.mean / 2)
        assert half.scv == pytest.approx(dist.scv)


def test_sampler_draws_the_same_stream_as_sample():
    a = Exponential(2.0).sampler(np.random.default_rng(5), block=7)
    b = Exponential(2.0).sample(np.random.default_rng(5), 20)
    assert [a() for _ in range(20)] == pytest.approx(list(b))


SPEC = TypeAdapter(DistributionSpec)


def test_specs_build_distributions(tmp_path):
    assert as_distribution(SPEC.validate_python(0.25)) == Deterministic(0.25)
    assert as_distribution(SPEC.validate_python({"dist": "gamma", "mean": 1, "cv": 0.5})).mean == 1
    csv = tmp_path / "times.csv"
    csv.write_text("url,elapsed\n/a,0.1\n/b,0.3\n", encoding="utf-8")
    spec = SPEC.validate_python({"dist": "empirical", "csv": str(csv), "column": "elapsed"})
    assert as_distribution(spec).mean == pytest.approx(0.2)


@pytest.mark.parametrize(
    "bad, words",
    [
        ({"dist": "exponential", "mean": -1}, "greater than or equal to 0"),
        ({"dist": "uniform", "low": 3, "high": 1}, "low <= high"),
        ({"dist": "weibull", "mean": 1}, "weibull"),
        ({"dist": "gamma", "mean": 1}, "cv"),
        ({"dist": "empirical"}, "exactly one of"),
        ({"dist": "empirical", "csv": "/nonexistent.csv", "column": "x"}, "not found"),
    ],
)
def test_bad_specs_are_rejected_with_a_reason(bad, words):
    with pytest.raises(ValidationError) as info:
        SPEC.validate_python(bad)
    assert words in str(info.value)


def test_empirical_csv_names_the_bad_row(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("elapsed\n0.1\nabc\n", encoding="utf-8")
    with pytest.raises(ValueError, match="row 3"):
        Empirical.from_csv(csv, "elapsed")
