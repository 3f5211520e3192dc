"""`t_intervals` computes the Student-t intervals of many metrics at once: each is
`t_interval`'s, float for float, whatever the sizes, magnitudes and infinities."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.stats.confidence import Interval, t_interval, t_intervals

values = st.one_of(
    st.floats(min_value=-1e300, max_value=1e300), st.sampled_from([math.inf, -math.inf])
)
samples = st.dictionaries(
    st.text(min_size=1, max_size=6),
    st.lists(values, min_size=1, max_size=40),
    max_size=12,
)


def _same(a: Interval, b: Interval) -> bool:
    def equal(x: float, y: float) -> bool:
        return x == y or (math.isnan(x) and math.isnan(y))

    return (
        all(
            equal(x, y)
            for x, y in zip(
                (a.mean, a.half_width, a.low, a.high), (b.mean, b.half_width, b.low, b.high)
            )
        )
        and a.n == b.n
        and a.level == b.level
    )


@settings(max_examples=300, deadline=None)
@given(samples, st.sampled_from([0.9, 0.95, 0.99]))
def test_each_interval_is_t_intervals_own(named, level):
    with np.errstate(all="ignore"):
        together = t_intervals(named, level)
        assert list(together) == list(named)  # the order of the names kept
        for name, sample in named.items():
            assert _same(together[name], t_interval(sample, level)), (name, sample)


def test_samples_of_every_size_up_to_pairwise_summation():
    """Sums of eight values and more are pairwise in NumPy: rows of a matrix sum as 1-D arrays."""
    rng = np.random.default_rng(3)
    named = {
        f"m{n}.{k}": (rng.standard_normal(n) * 10.0 ** rng.integers(-9, 9) + k).tolist()
        for n in (1, 2, 3, 7, 8, 9, 16, 100, 129, 1000)
        for k in range(5)
    }
    together = t_intervals(named, 0.95)
    for name, sample in named.items():
        assert _same(together[name], t_interval(sample, 0.95)), name


def test_an_empty_sample_is_refused_as_t_interval_refuses_it():
    with pytest.raises(ValueError, match="at least one value"):
        t_intervals({"throughput": []})
