"""A prediction compared with a measured level (`run --calibration --measured`,
`sim.predict(..., measured=row)`): its intervals hold the measurement's own noise.

A model that is exactly right predicts the stack's long-run figures; a load test of 60 s reads
a finite window with a finite count of requests. Here the "stack" is known exactly -- Poisson
arrivals at 20/s, independent exponential responses of mean 50 ms -- and each replication is
one such measured level: its rows made as the import makes them (`sim.measurements.sampling`).
The calibrated prediction is right up to its parameters (a draw moves a figure by a fraction
of a per cent), so the interval of the *mean figure* is narrow and misses most measurements,
while the interval of *a measurement of it* holds it 90 % of the time: 300 replications, so
84-96 % is about ±3.5 binomial sd.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements import sampling
from sim.measurements.figure_errors import FROM_SAMPLES, ORDER_STATISTICS, POISSON, figure_error
from sim.run.simulate import Status
from sim.stats.confidence import Interval
from sim.studies.calibration.propagate import MEAN, MEASUREMENT, propagate
from sim.studies.calibration.saved import from_document
from sim.studies.measured_level import MeasuredLevelError, level_from_table, measured_level
from tests.conftest import one_server_file

RATE_PER_S, MEAN_S = 20.0, 0.050
TRUTH = {
    "throughput": RATE_PER_S,
    "response.mean": MEAN_S,
    "response.p95": MEAN_S * math.log(20.0),  # the exponential's 95 % point
    "server.utilization": 0.5,  # a figure no load test measures here
}
REPLICATIONS = 300


# A fit of one demand at 0.1 s, sd 0.05 on its unit (log) scale (about 7 % of it), no model
# error: what `tiersim calibrate --save` writes.
DOCUMENT = {
    "experiment": "known",
    "parameters": [
        {
            "parameter": "backends.0.demand.mean",
            "value": 0.1,
            "low": 0.05,
            "high": 0.2,
            "scale": "log",
            "when": {},
            "kind": "calibrate",
        }
    ],
    "uncertainty": {
        "model_error": {"sd": 0.0, "estimated": False},
        "posterior": {"scale": "unit", "mean": [1.5], "cov": [[0.05**2]]},
    },
}


def calibration():
    return from_document(DOCUMENT, "test")


@dataclass
class _Result:
    summary: dict[str, Interval]


@dataclass
class _Outcome:
    status: Status
    result: _Result


def right_model(overrides: list[str], seed: int) -> _Outcome:
    """The stack's own figures at the drawn demand d: each moves as (d / 0.1)^0.05, a fraction
    of a per cent over the fit's draws (the parameters' part of a light level's interval)."""
    (drawn,) = [o for o in overrides if o.startswith("backends.0.demand.mean=")]
    factor = (float(drawn.split("=")[1]) / 0.1) ** 0.05
    return _Outcome(
        Status.OK,
        _Result(
            {
                k: Interval(v * factor, 0.0, v * factor, v * factor, 2, 0.95)
                for k, v in TRUTH.items()
            }
        ),
    )


def measured_row(rng: np.random.Generator, window_s: float) -> dict[str, Any]:
    """One measured level of the known stack, as `tiersim import` writes its row."""
    completed = np.sort(rng.uniform(0.0, window_s, rng.poisson(RATE_PER_S * window_s)))
    elapsed = rng.exponential(MEAN_S, len(completed))
    row = {
        "run": "level",
        "window_start_s": 0.0,
        "window_end_s": window_s,
        "count.completed": float(len(completed)),
        "throughput": len(completed) / window_s,
        "throughput.std_error": sampling.throughput_error(completed, 0.0, window_s),
        "response.mean": float(elapsed.mean()),
        "response.mean.std_error": sampling.mean_error(elapsed),
        "response.p95": float(np.percentile(elapsed, 95)),
        "response.p95.std_error": sampling.percentile_error(elapsed, 95, 0.0),
    }
    return row


def coverage(window_s: float, seed: int) -> tuple[dict[str, float], dict[str, float], dict]:
    """Shares of measured levels inside the interval of a measurement, and inside the interval
    of the mean figure; and one level's figure errors' methods."""
    rng = np.random.default_rng(seed)
    fit = calibration()
    plain = propagate(right_model, dict(TRUTH), fit, 16, 2, seed).predictions
    inside = dict.fromkeys(("throughput", "response.mean", "response.p95"), 0)
    inside_mean = dict(inside)
    methods: dict = {}
    for _ in range(REPLICATIONS):
        row = measured_row(rng, window_s)
        level = measured_level(row, "run level")
        methods = {k: e.method for k, e in level.errors.items()}
        found = propagate(right_model, dict(TRUTH), fit, 16, 2, seed, measured=level)
        for metric in inside:
            p, q = found.predictions[metric], plain[metric]
            inside[metric] += p.pi_low <= row[metric] <= p.pi_high
            inside_mean[metric] += q.pi_low <= row[metric] <= q.pi_high
    return (
        {k: v / REPLICATIONS for k, v in inside.items()},
        {k: v / REPLICATIONS for k, v in inside_mean.items()},
        methods,
    )


@pytest.mark.parametrize(("window_s", "seed"), [(60.0, 21), (10.0, 22)])
def test_the_interval_of_a_measurement_holds_it_and_the_mean_figures_does_not(window_s, seed):
    """60 s (about 1,200 requests: every figure's error from its samples) and 10 s (about 200:
    too few for a p95's batch-means error, so binomial order statistics give it)."""
    measured, mean_only, methods = coverage(window_s, seed)
    for metric, share in measured.items():
        assert 0.84 <= share <= 0.96, (window_s, metric, measured)
        assert mean_only[metric] < 0.5, (window_s, metric, mean_only)
    expected_p95 = FROM_SAMPLES if window_s == 60.0 else ORDER_STATISTICS
    assert methods == {
        "throughput": FROM_SAMPLES,
        "response.mean": FROM_SAMPLES,
        "response.p95": expected_p95,
    }


def test_each_prediction_says_what_its_interval_is_of():
    rng = np.random.default_rng(23)
    level = measured_level(measured_row(rng, 60.0), "run level")
    found = propagate(right_model, dict(TRUTH), calibration(), 8, 2, 5, measured=level)
    kinds = {m: p.interval_of for m, p in found.predictions.items()}
    assert kinds == {
        "throughput": MEASUREMENT,
        "response.mean": MEASUREMENT,
        "response.p95": MEASUREMENT,
        "server.utilization": MEAN,  # the row holds no such figure: not widened
    }
    assert found.predictions["server.utilization"].sd_measurement == 0.0
    assert found.predictions["throughput"].sd_measurement > 0.0
    assert found.interval_of.startswith(
        "a measurement of them for throughput, response.mean, response.p95 (a measurement of "
        "60 s with"
    )
    assert found.interval_of.endswith("of the stack's mean figures for the rest")
    unmeasured = propagate(right_model, dict(TRUTH), calibration(), 8, 2, 5)
    assert {p.interval_of for p in unmeasured.predictions.values()} == {MEAN}
    assert unmeasured.interval_of.startswith("the stack's mean figures")


def test_a_percentile_without_its_samples_error_takes_the_order_statistics_interval():
    """Of n exponential samples, the p95's standard error from its count alone (binomial order
    statistics, exponential tail): ±1.645 of it around the true p95 holds the sample p95 of 400
    replications 84-96 % of the time at n = 60, where only three samples lie above it."""
    rng = np.random.default_rng(24)
    truth = TRUTH["response.p95"]
    hits = 0
    for _ in range(400):
        x = rng.exponential(MEAN_S, 60)
        row = {"count.completed": 60, "response.p95": float(np.percentile(x, 95))}
        found = figure_error(row, "response.p95")
        assert found is not None and found.method == ORDER_STATISTICS
        hits += abs(row["response.p95"] - truth) <= 1.645 * found.relative_sd * truth
    assert 0.84 <= hits / 400 <= 0.96, hits
    # a figure the import measured no error for, from its count: 1/sqrt(n)
    throughput = figure_error({"count.completed": 400, "throughput": 7.0}, "throughput")
    assert throughput is not None and throughput.method == POISSON
    assert throughput.relative_sd == pytest.approx(0.05)
    assert figure_error({"count.completed": 400}, "throughput") is None


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"window_start_s": 0, "window_end_s": 60}, "count.completed = None; expected"),
        (
            {"count.completed": 10, "window_start_s": 60, "window_end_s": 60},
            "window_end_s = 60; expected the level's window",
        ),
    ],
)
def test_a_row_that_is_not_a_measured_level_is_one_line_naming_the_field(row, message):
    with pytest.raises(MeasuredLevelError, match=message) as caught:
        measured_level(row, "run x")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("run x: ")


def write_table(tmp_path, windows: int = 1) -> str:
    rng = np.random.default_rng(25)
    rows = []
    for run in ("users10", "users40"):
        for k in range(windows):
            row = measured_row(rng, 60.0 / windows)
            row["run"], row["class"] = run, "total"
            row["window_start_s"] += 60.0 / windows * k
            row["window_end_s"] += 60.0 / windows * k
            rows.append(row)
    path = tmp_path / "measured.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def test_a_table_level_is_one_window_named_by_its_run(tmp_path):
    path = write_table(tmp_path)
    level = level_from_table(path, "users40")
    assert level.name == "run users40 of measured.csv" and level.window_s == 60.0
    with pytest.raises(MeasuredLevelError, match=r"2 runs .*--measured-run users10"):
        level_from_table(path, None)
    with pytest.raises(MeasuredLevelError, match="no run 'users5' of class 'total'"):
        level_from_table(path, "users5")
    windowed = write_table(tmp_path, windows=3)
    with pytest.raises(MeasuredLevelError, match=r"has 3 windows; .*without --window"):
        level_from_table(windowed, "users10")


MODEL = one_server_file(duration_s=2000, warmup_s=100, replications=3)


def test_run_with_a_measured_level_widens_its_figures_and_says_so(tmp_path):
    """`tiersim run --calibration --measured`: the same run, its measured figures' intervals
    wider by the level's noise (the run and the draws are the same seeds), the rest unchanged;
    the words say which interval is which, and --measured alone is refused."""
    (tmp_path / "model.toml").write_text(MODEL)
    (tmp_path / "cal.json").write_text(json.dumps(DOCUMENT))
    table = write_table(tmp_path)
    base = ["run", str(tmp_path / "model.toml"), "--calibration", str(tmp_path / "cal.json")]
    base += ["--draws", "4"]
    plain = CliRunner().invoke(main, [*base, "--json"])
    with_level = CliRunner().invoke(
        main, [*base, "--measured", table, "--measured-run", "users10", "--json"]
    )
    assert plain.exit_code == 0 and with_level.exit_code == 0, with_level.output
    before = json.loads(plain.output[plain.output.index("{") :])["prediction"]
    after = json.loads(with_level.output[with_level.output.index("{") :])["prediction"]
    assert before["interval_of"].startswith("the stack's mean figures")
    assert after["measured"]["name"] == "run users10 of measured.csv"
    for metric in ("throughput", "response.mean", "response.p95"):
        was, now = before["metrics"][metric], after["metrics"][metric]
        assert now["interval_of"] == MEASUREMENT and was["interval_of"] == MEAN
        assert now["value"] == was["value"] and now["sd_measurement"] > 0
        assert now["pi_high"] - now["pi_low"] > was["pi_high"] - was["pi_low"]
    utilisation = after["metrics"]["server1.cpu.utilization"]
    assert utilisation["interval_of"] == MEAN
    assert utilisation["pi_low"] == before["metrics"]["server1.cpu.utilization"]["pi_low"]
    # the latencies' intervals come with the share of requests that failed in the draws
    assert before["failed_share_over_draws"] == after["failed_share_over_draws"] == [0.0, 0.0]
    words = CliRunner().invoke(main, [*base, "--measured", table, "--measured-run", "users10"])
    said = " ".join(words.output.split())
    assert "the 90 % intervals are of a measurement of them for throughput" in said
    assert "requests failed (share) over the draws: 0 % (the response figures" in said
    unmeasured = CliRunner().invoke(main, base)
    assert "the 90 % intervals are of the stack's mean figures" in " ".join(
        unmeasured.output.split()
    )
    refused = CliRunner().invoke(main, ["run", str(tmp_path / "model.toml"), "--measured", table])
    assert refused.exit_code == 2 and "give --calibration FILE" in refused.output
    missing = CliRunner().invoke(main, [*base, "--measured", table, "--measured-run", "users5"])
    assert missing.exit_code == 3 and "no run 'users5'" in missing.output


def test_predict_names_a_row_that_is_not_a_measured_level(tmp_path):
    """`sim.predict(measured=...)` checks the row before anything runs: one line naming the
    argument, the run and the field."""
    import sim
    from sim.api.arguments import ArgumentError

    (tmp_path / "model.toml").write_text(MODEL)
    row = pd.Series({"run": "users10", "window_start_s": 2.0, "window_end_s": 58.0}, name=10)
    with pytest.raises(ArgumentError, match=r"measured: run users10: count\.completed = None"):
        sim.predict(tmp_path / "model.toml", calibration(), measured=row)
    with pytest.raises(ArgumentError, match="expected one row of a measurement table"):
        sim.predict(tmp_path / "model.toml", calibration(), measured=[1, 2])
