"""A steady-state run checks that it is one; observing it does not change it; its intervals
stay physical; the capacity search refuses what it cannot answer before simulating."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.stats.histogram import LogBins
from sim.stats.quantiles import sectioning_interval, window_quantiles
from sim.stats.steady_state import common_truncation, truncation_at_limit
from tests.conftest import simulate

ROOT = Path(__file__).resolve().parents[2]


def test_a_million_users_without_think_time_for_20_s_is_not_a_steady_state():
    """10^6 users, no think time, one server of 2.5 ms: the steady-state response time is
    N S = 2 500 s, but in 20 s every response seen is still part of the start-up (about 15 s).
    MSER finds no end to the transient and the run says so."""
    data = {
        "clients": {"kind": "closed", "users": 1_000_000, "think": 0.0},
        "backends": [
            {
                "name": "server",
                "threads": 1,
                "cores": 1,
                "demand": {"dist": "exponential", "mean": 0.0025},
            }
        ],
        "run": {"duration_s": 20.0, "warmup": "mser"},
    }
    result = simulate(data, replications=1, seed=1)
    assert result.summary["response.mean"].mean < 100  # the start-up, nowhere near 2 500 s
    assert any(w.startswith("not in steady state") for w in result.warnings), result.warnings


def _demo_json(tmp_path: Path, *extra: str) -> dict:
    args = ["run", str(ROOT / "models" / "demo.toml"), "--set", "run.duration_s=60"]
    result = CliRunner().invoke(main, [*args, "-r", "3", "--json", *extra])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    document["run"].pop("wall_s")
    return document


def test_timeseries_output_does_not_change_the_results(tmp_path):
    """The same seed with and without --timeseries: the same document, to the last digit
    (the sampling once moved MSER's cut from 4.698 s to 4.641 s and p50 by 0.3 %).  Both on
    the reference engine, which alone samples time series."""
    plain = _demo_json(tmp_path, "--engine", "reference")
    observed = _demo_json(
        tmp_path, "--engine", "reference", "--timeseries", str(tmp_path / "series.csv")
    )
    assert (tmp_path / "series.csv").stat().st_size > 0
    assert observed == plain
    assert "warnings" in plain  # two replications of the short demo: it must say so


def test_sectioning_interval_is_physical_and_resolved():
    # two replications far apart: the t interval would reach below zero; times cannot
    wide = sectioning_interval(0.035, [0.001, 0.07], 0.95)
    assert wide.low == 0.0 and wide.high > 0.07 and wide.half_width > 0.035
    # both replications in the pooled quantile's bin: not +-0, the bins' resolution
    same = sectioning_interval(2.0, [2.0, 2.0, 2.0], 0.95, resolution=0.01)
    assert same.half_width == 0.01 and (same.low, same.high) == (1.99, 2.01)
    assert math.isnan(sectioning_interval(1.0, [1.0], 0.95).half_width)


def test_window_quantiles_match_the_histogram_quantiles():
    bins = LogBins(relative_error=0.01)
    rng = np.random.default_rng(0)
    rows = [np.bincount(bins.index(rng.exponential(s, 500)), minlength=bins.n_bins) for s in (1, 3)]
    qs = [0.5, 0.95, 0.99]
    got = window_quantiles(np.vstack(rows), bins.representative, qs)
    for row, values in zip(rows, got):
        assert list(values) == bins.quantiles(row, qs)


def _quantiles_row_by_row(histograms: np.ndarray, representative: np.ndarray, qs) -> np.ndarray:
    """Nearest rank, spelt out: per row and quantile, the first bin whose cumulative count
    reaches ceil(q n) (at least 1); NaN for a row without observations."""
    out = np.full((len(histograms), len(qs)), math.nan)
    for i, row in enumerate(histograms):
        cumulative = np.cumsum(row)
        if cumulative[-1] <= 0:
            continue
        for k, q in enumerate(qs):
            rank = max(1, math.ceil(q * cumulative[-1]))
            out[i, k] = representative[int(np.flatnonzero(cumulative >= rank)[0])]
    return out


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_window_quantiles_of_many_windows_at_once_are_each_windows_own(dtype):
    """The candidate windows of a replication (up to 128 rows of the run's ~2 800 bins) are
    read over the band of bins some row observed; each row's quantiles are exactly what the
    whole row alone gives, empty windows, windows of one observation and the open-ended first
    and last bins included, on integer and on float counts."""
    from sim.observe.trace import BINS

    rng = np.random.default_rng(7)
    qs = [0.5, 0.9, 0.95, 0.99]
    rows = []
    for size in (0, 1, 2, 37, 1_000, 50_000, 0, 3):
        samples = rng.lognormal(-3.0, 1.5, size)
        rows.append(np.bincount(BINS.index(samples), minlength=BINS.n_bins))
    rows.append(np.zeros(BINS.n_bins, dtype=np.int64))
    rows[-1][[0, BINS.n_bins - 1]] = (5, 5)  # the open-ended first and last bins
    histograms = np.vstack(rows).astype(dtype)
    got = window_quantiles(histograms, BINS.representative, qs)
    expected = _quantiles_row_by_row(histograms, BINS.representative, qs)
    np.testing.assert_array_equal(got, expected)
    assert np.isnan(got[0]).all() and not np.isnan(got[1]).any()


def test_common_truncation_ignores_one_replications_excursion():
    """Ten stationary replications, each with one busy period at its own time (the first at the
    start): MSER on the first replication alone deletes its busy period as if it were the
    transient; on the replications' average, where busy periods are spread evenly, it does not."""
    rng = np.random.default_rng(1)
    cells = 128
    counts = [np.full(cells, 100.0) for _ in range(10)]
    means = [1 + 0.05 * rng.standard_normal(cells) for _ in range(10)]
    for k, series in enumerate(means):
        series[12 * k : 12 * k + 20] += 1.5  # a busy period of replication k
    from sim.stats.mser import mser_truncation

    assert mser_truncation(means[0], weights=counts[0]) >= 15
    sums = [m * c for m, c in zip(means, counts)]
    assert common_truncation(counts, sums, cells // 2 + 1) < 10


def test_truncation_at_its_limit_is_flagged():
    assert truncation_at_limit(64, 65) and truncation_at_limit(58, 65)
    assert not truncation_at_limit(10, 65) and not truncation_at_limit(1, 2)


MM1 = """
[clients]
kind = "open"
rate_per_s = 5.0
[[backends]]
name = "server"
threads = 1
cores = 1
demand = { dist = "exponential", mean = 0.1 }
[run]
duration_s = 100
replications = 3
"""


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--slo", "p97<1"], "no metric 'p97'; the percentiles are p50, p90, p95, p99"),
        (["--slo", "latency<1"], "no metric 'latency'"),
        (["--slo", "p95<1", "--min", "500", "--max", "100"], "--min 500 must be below --max 100"),
    ],
)
def test_capacity_refuses_an_unknown_metric_and_an_empty_range(tmp_path, args, needle):
    path = tmp_path / "mm1.toml"
    path.write_text(MM1, encoding="utf-8")
    result = CliRunner().invoke(
        main, ["capacity", str(path), "--vary", "clients.rate_per_s", "--serial", *args]
    )
    assert result.exit_code == 2, result.output
    assert needle in result.output
