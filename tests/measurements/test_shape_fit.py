"""The demand's shape (sim.measurements.shape) against samples from known distributions, and
on the real light level of notebooks/data/planning/."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from pydantic import TypeAdapter
from scipy import signal, stats

from sim.measurements.errors import MeasurementError
from sim.measurements.shape import MIN_SAMPLES, fit_shape, samples_of_file
from sim.random.distributions import DistributionSpec, as_distribution

PLANNING = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "planning"
Z95 = 1.96


def whole_ms(x: np.ndarray) -> np.ndarray:
    """As JMeter records them."""
    return np.round(x * 1000) / 1000


def gamma_samples(rng, n, mean, cv):
    return rng.gamma(1 / cv**2, mean * cv**2, n)


def build(spec: dict):
    return as_distribution(TypeAdapter(DistributionSpec).validate_python(spec))


def test_a_gamma_is_recovered_within_its_own_interval():
    """Over 40 data sets of 1500 gamma samples (mean 50 ms, cv 0.5, whole ms), the fit's 95 %
    intervals hold the true mean and cv in about 95 % of them (at least 34 of 40: a binomial
    lower tail of 1 %)."""
    rng = np.random.default_rng(5)
    held = {"mean_s": 0, "cv": 0}
    for _ in range(40):
        x = whole_ms(gamma_samples(rng, 1500, 0.050, 0.5))
        fit = fit_shape(x, families=("gamma",), shifts=(False,))
        best = fit.best
        for name, truth, value in (("mean_s", 0.050, best.mean_s), ("cv", 0.5, best.cv)):
            held[name] += abs(value - truth) <= Z95 * best.std_errors[name]
    assert held["mean_s"] >= 34 and held["cv"] >= 34, held


def test_a_lognormal_is_told_from_a_gamma_and_its_spec_builds():
    rng = np.random.default_rng(6)
    sigma2 = math.log1p(0.8**2)
    x = whole_ms(rng.lognormal(math.log(0.040) - sigma2 / 2, math.sqrt(sigma2), 3000))
    fit = fit_shape(x)
    assert fit.best.family == "lognormal", [c.name for c in fit.candidates]
    assert fit.fits
    best = fit.best
    assert abs(best.offset_s + best.mean_s - 0.040) <= Z95 * 0.040 * 0.8 / math.sqrt(3000) * 1.5
    built = build(best.spec())
    assert built.mean == pytest.approx(best.mean_s, rel=1e-5)
    assert math.sqrt(built.scv) == pytest.approx(best.cv, rel=1e-5)
    assert build(best.offset_spec()).mean == pytest.approx(best.offset_s, rel=1e-5, abs=1e-9)
    # the gamma fits clearly worse
    gamma = next(c for c in fit.candidates if c.family == "gamma" and not c.shifted)
    assert gamma.delta_aic > 10


def test_a_fixed_part_is_separated_from_the_varying_part():
    """R = 10 ms + lognormal(mean 5 ms, cv 1.5), as a proxy adds a constant to a service."""
    rng = np.random.default_rng(7)
    sigma2 = math.log1p(1.5**2)
    x = whole_ms(0.010 + rng.lognormal(math.log(0.005) - sigma2 / 2, math.sqrt(sigma2), 4000))
    fit = fit_shape(x)
    best = fit.best
    assert best.name == "shifted lognormal", [c.name for c in fit.candidates]
    # the offset is known to the file's resolution: whole milliseconds
    assert 0.009 <= best.offset_s <= 0.0105
    for name, truth in (("mean_s", 0.005), ("cv", 1.5)):
        value, error = getattr(best, name), best.std_errors[name]
        # the offset is fitted within a millisecond: allow that on the mean
        slack = 0.001 if name == "mean_s" else 0.0
        assert abs(value - truth) <= Z95 * error + slack, (name, value, error)


def test_correlated_samples_widen_the_errors():
    """The same gamma margins, i.i.d. and through an AR(1) copula (lag-one correlation 0.9):
    the correlation inflates the variance and so the parameters' errors."""
    rng = np.random.default_rng(8)
    n = 4000
    noise = rng.standard_normal(n)
    tail, _ = signal.lfilter([math.sqrt(1 - 0.81)], [1, -0.9], noise[1:], zi=[0.9 * noise[0]])
    uniform = stats.norm.cdf(np.concatenate([[noise[0]], tail]))
    correlated = whole_ms(stats.gamma(4.0, scale=0.050 / 4).ppf(uniform))
    independent = whole_ms(gamma_samples(rng, n, 0.050, 0.5))
    one = fit_shape(independent, families=("gamma",), shifts=(False,))
    other = fit_shape(correlated, families=("gamma",), shifts=(False,))
    assert one.inflation < 2 < 5 < other.inflation
    assert other.best.std_errors["mean_s"] > 2 * one.best.std_errors["mean_s"]
    assert abs(other.best.mean_s - 0.050) <= Z95 * other.best.std_errors["mean_s"]


def test_too_few_or_constant_samples():
    with pytest.raises(ValueError, match=f"the shape needs at least {MIN_SAMPLES}"):
        fit_shape(np.full(MIN_SAMPLES - 1, 0.01))
    with pytest.raises(ValueError, match="a deterministic time"):
        fit_shape(np.full(100, 0.012))


def test_a_shape_file_with_too_few_successes(tmp_path):
    path = tmp_path / "light.jtl"
    lines = ["timeStamp,elapsed,label,success"]
    lines += [
        f"{1700000000000 + 100 * i},12,work,{'true' if i < 30 else 'false'}" for i in range(60)
    ]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MeasurementError) as caught:
        samples_of_file(str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: success: 30 successful samples") and "\n" not in message


def test_the_real_light_level():
    """notebooks/data/planning/users1.jtl (JMeter -> Apache -> Tomcat, 1 thread, 152 samples):
    a constant 11 ms (the least sample) and a heavy-tailed rest."""
    fit = fit_shape(samples_of_file(str(PLANNING / "users1.jtl")), "users1.jtl")
    assert fit.samples == 152 and fit.resolution_s == 1e-3
    assert fit.best.name == "shifted lognormal"
    assert fit.best.offset_s == pytest.approx(0.011)
    assert fit.fits
    # every unshifted family is far behind: the fixed part is real
    assert min(c.delta_aic for c in fit.candidates if not c.shifted) > 100
