"""Output-analysis helpers against the worked examples of Law (2015) / the KSL book, and the
histogram's relative-error guarantee."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.stats.confidence import paired_t_interval, replications_needed, t_interval, t_quantile
from sim.stats.histogram import LogBins
from sim.stats.mser import batch_means, mser5, mser_truncation


def _pilot(mean=0.52, sd=0.05, n=10):
    """n values with exactly the given sample mean and standard deviation."""
    z = np.random.default_rng(0).standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    return mean + sd * z


def test_student_t_interval_worked_example():
    ci = t_interval(_pilot())
    assert ci.half_width == pytest.approx(0.0357678, rel=1e-5)
    assert (ci.low, ci.high) == pytest.approx((0.484232, 0.555768), rel=1e-5)
    assert ci.contains(0.52) and not ci.contains(0.56)


def test_replications_needed_student_t_iteration():
    assert replications_needed(_pilot(), 0.01) == 99


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999, 0.123456789])
def test_t_quantile_is_scipy_stats_bit_for_bit(level):
    """The quantile skips scipy.stats' import (`t_quantile`): the same float to the last bit,
    for every number of replications up to 2 000 and far beyond."""
    from scipy import stats

    probability = (1 + level) / 2
    for degrees in [*range(1, 2001), 10**4, 10**6, 10**9]:
        expected = float(stats.t.ppf(probability, degrees))
        assert t_quantile(probability, degrees) == expected, (level, degrees)
    # outside the direct formula's domain: scipy.stats' own answer (its edges and NaN)
    assert t_quantile(1.0, 3) == math.inf and math.isnan(t_quantile(0.975, 0))


def test_single_replication_has_no_interval():
    assert math.isnan(t_interval([3.0]).half_width)


def test_paired_interval_is_on_the_differences():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    ci = paired_t_interval(a + 0.5, a)
    assert ci.mean == pytest.approx(0.5) and ci.half_width == 0.0
    with pytest.raises(ValueError):
        paired_t_interval([1.0], [1.0, 2.0])


def test_t_interval_covers_the_mean_at_its_level():
    """Coverage of 95 % intervals over 2000 normal samples of size 5: the count of misses is
    Binomial(2000, 0.05); 3 standard deviations around 100 is [71, 129]."""
    rng = np.random.default_rng(7)
    misses = sum(not t_interval(rng.normal(1.0, 2.0, 5)).contains(1.0) for _ in range(2000))
    assert 71 <= misses <= 129


def test_mser_finds_an_initial_transient():
    rng = np.random.default_rng(3)
    transient = np.linspace(50, 10, 200) + rng.normal(0, 1, 200)
    steady = 10 + rng.normal(0, 1, 1800)
    deleted = mser5(np.concatenate([transient, steady]))
    assert 150 <= deleted <= 400


def test_mser_keeps_a_stationary_series():
    rng = np.random.default_rng(4)
    assert mser5(rng.normal(0, 1, 5000)) < 500


def test_mser_weights_and_batches():
    assert list(batch_means(np.arange(12.0), 5)) == [2.0, 7.0]
    # a heavy first batch dominates unless weighted by its (tiny) count
    z = [100.0] + [1.0, 1.1, 0.9, 1.0] * 10
    assert mser_truncation(z) == 1
    assert mser_truncation([1.0, 1.0, 1.0]) == 0


@given(st.lists(st.floats(1e-5, 1e4), min_size=1, max_size=300), st.floats(0.01, 0.99))
def test_histogram_quantiles_within_relative_error(values, q):
    bins = LogBins(relative_error=0.01)
    counts = np.bincount(bins.index(np.array(values)), minlength=bins.n_bins)
    exact = sorted(values)[max(1, math.ceil(q * len(values))) - 1]  # nearest rank
    assert bins.quantile(counts, q) == pytest.approx(exact, rel=0.0100001)


def test_histogram_out_of_range_values_go_to_the_edge_bins():
    bins = LogBins(min_value=1e-3, max_value=10.0)
    assert list(bins.index(np.array([0.0, 1e-4, 20.0]))) == [0, 0, bins.n_bins - 1]
