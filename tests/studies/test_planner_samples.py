"""`tiersim plan` and a fitted run with few samples: refused where a fitted statistic cannot be
estimated from them (the mean below 4, the p95 below 20), fitted with a warning where its error
is assumed rather than measured (below 40 for the mean, 400 for the p95), never silently."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.sampling import min_samples
from sim.measurements.table import write
from sim.studies.planner_samples import FEWEST_FOR_MEAN, Z_95, fewest_for_percentile

pytest.importorskip("pandas")

POOL = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "planning-pool"


def table(path: Path, counts: dict[int, int]) -> Path:
    """One window per level of `counts` samples (users: count), 60 s long, think 0.5 s."""
    rows = []
    for users, count in counts.items():
        rows.append(
            {
                "run": f"users{users}",
                "window_start_s": 0.0,
                "window_end_s": 60.0,
                "class": "total",
                "users": float(users),
                "throughput": count / 60.0,
                "response.mean": 0.06,
                "response.p95": 0.08,
                "response.p95.std_error": 0.001 if count >= min_samples(95) else math.nan,
                "count.completed": float(count),
            }
        )
    write(rows, path)
    return path


def plan(tmp_path: Path, counts: dict[int, int], *extra: str):
    measured = table(tmp_path / "measured.csv", counts)
    fit = [a for users in counts for a in ("--fit", f"users{users}")]
    out = tmp_path / "exp"
    args = ["plan", str(measured), *fit, "-o", str(out), "--threads", "8", *extra]
    return CliRunner().invoke(main, args), out


def test_the_thresholds_are_the_statistics_own():
    # the mean's 95 % interval at the fit's assumed error (cv 1: 1/sqrt(n)) reaches zero below 4
    assert Z_95 / math.sqrt(FEWEST_FOR_MEAN - 1) >= 1 > Z_95 / math.sqrt(FEWEST_FOR_MEAN)
    # the p95: at 19 samples not one is expected above it, and it lies by the largest sample
    fewest = fewest_for_percentile(95)
    assert (fewest - 1) * 0.05 < 1 <= fewest * 0.05
    ordered = np.arange(1.0, fewest)  # 19 samples
    assert np.quantile(ordered, 0.95) > ordered[-2]
    assert fewest_for_percentile(50) == 2 and fewest_for_percentile(99) == 100


def test_a_level_of_three_samples_is_refused_naming_the_run(tmp_path):
    result, out = plan(tmp_path, {10: 3, 40: 2400})
    assert result.exit_code == 3, result.output
    message = result.output.strip()
    assert "\n" not in message and "Traceback" not in message
    assert "--fit users10: 3 successful samples" in message and "needs at least 4" in message
    assert "longer run" in message and "about 800 s" in message  # 40 samples at 0.05/s
    assert not out.exists()  # refused before anything is written


def test_a_small_level_is_fitted_with_its_warning(tmp_path):
    result, out = plan(tmp_path, {10: 30, 40: 2400})
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert "--fit users10: 30 successful samples" in warning and "assumed error" in warning
    assert "users40" not in warning  # 2400 samples measure their own error
    assert f"# {warning}" in (out / "experiment.toml").read_text()


def test_the_p95_fitted_from_a_shape_needs_twenty_samples(tmp_path):
    shape = ["--shape", str(POOL / "users10.jtl")]
    result, out = plan(tmp_path, {10: 2100, 40: 12}, *shape)
    assert result.exit_code == 3, result.output
    assert "--fit users40: 12 successful samples" in result.output
    assert "p95 needs at least 20" in result.output
    # 25 samples: the p95 is fitted, with an assumed error and a warning that says so
    result, out = plan(tmp_path, {10: 2100, 40: 25}, *shape)
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert "users40: 25 successful samples" in warning and "the mean and p95" in warning
    assert "p95 needs 400" in warning
    assert 'figure = "response.p95"' in (out / "experiment.toml").read_text()


def test_a_fitted_run_whose_requests_failed_is_named_with_its_share(tmp_path):
    """A run of which a fifth failed was fitted without a word: its throughput and response
    times are of the answered requests, and the response-time law's think time reads high by
    f·N/X; plan now names the run, its failed requests and that bias."""
    import pandas as pd

    measured = table(tmp_path / "measured.csv", {10: 2400, 40: 2400})
    frame = pd.read_csv(measured)
    frame.loc[frame["run"] == "users40", "count.errors"] = 600.0  # 600 of 3,000 sent: 20 %
    frame.to_csv(measured, index=False)
    out = tmp_path / "exp"
    args = ["plan", str(measured), "--fit", "users10", "--fit", "users40", "-o", str(out)]
    result = CliRunner().invoke(main, [*args, "--threads", "8"])
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.output.splitlines() if "requests failed" in line]
    assert warning.startswith("warning: --fit users40: 600 of 3,000 requests failed (20 %)")
    # f·N/X = 0.2 x 40 users / (2400 / 60 s) = 0.2 s
    assert "reads high by about 200 ms (f·N/X)" in warning
    assert "users10" not in warning
    assert f"# {warning}" in (out / "experiment.toml").read_text()
