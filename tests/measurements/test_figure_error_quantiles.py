"""A percentile's error from its count alone (`figure_errors.from_count`) takes the beta
distribution's quantiles from scipy.special, without importing scipy.stats: the same floats
as `scipy.stats.beta.ppf`, which calls the same function."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from sim.measurements.figure_errors import ORDER_STATISTICS, Z90, from_count


@pytest.mark.parametrize("column", ["response.p50", "response.p90", "response.p95", "response.p99"])
def test_the_order_statistics_error_is_scipy_stats_bit_for_bit(column):
    p = float(column.removeprefix("response.p")) / 100
    rng = np.random.default_rng(7)
    for count in [1.0, 2.0, 37.0, 1069.0, 98_765.0, *rng.uniform(1, 2e5, 200)]:
        rank = (count - 1) * p + 1
        low, high = stats.beta.ppf([0.05, 0.95], rank, count + 1 - rank)
        expected = (
            (math.log1p(-float(low)) - math.log1p(-float(high))) / -math.log1p(-p) / (2 * Z90)
        )
        assert from_count(column, count) == (expected, ORDER_STATISTICS)


def test_it_imports_no_scipy_stats():
    code = (
        "import sys; from sim.measurements.figure_errors import from_count; "
        "from_count('response.p95', 1000.0); print('scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
