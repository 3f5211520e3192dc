"""The share of requests that failed, `share.failed`, beside every latency of the package's
face: the run's summary and frame, a prediction's frame, a calibration's rows, the operational
laws and a capacity search's evaluations -- one name, and the figures checked against a
computation of their own from each replication's counts, on a model whose accept queue
refuses about a third of its requests (Tomcat `acceptCount` = 0, one thread, six users)."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sim
from tests.api.conftest import experiment

# Six users on one thread with no accept queue: a request that finds the thread busy is
# refused at once (no SYN retry), so a large share fails while every answered one is fast.
REFUSING = """
[clients]
kind = "closed"
users = 6
think = { dist = "exponential", mean = 0.2 }
tcp = { syn_retries = 0 }

[[backends]]
name = "app"
threads = 1
accept_queue = 0
cores = 1
demand = { dist = "exponential", mean = 0.05 }

[run]
duration_s = 120
warmup = 5.0
replications = 4
seed = 3
"""


def shares_of(replications: pd.DataFrame) -> pd.Series:
    """failed / (completed + failed) of each replication, from `replications_frame()`."""
    ended = replications["count.completed"] + replications["count.failed"]
    return replications["count.failed"] / ended


def t_interval(values: pd.Series, level: float) -> tuple[float, float, float]:
    """Mean and Student-t interval over the replications, within [0, 1]: scipy, not the
    package's own statistics."""
    mean = float(values.mean())
    half = (
        stats.t.ppf((1 + level) / 2, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    )
    return mean, max(0.0, mean - half), min(1.0, mean + half)


@pytest.fixture(scope="module")
def refusing(tmp_path_factory):
    path = tmp_path_factory.mktemp("refusing") / "refusing.toml"
    path.write_text(REFUSING, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(refusing):
    return sim.simulate(refusing)


def test_the_summary_and_the_frame_give_the_failed_share_of_the_replications(run):
    mean, low, high = t_interval(shares_of(run.replications_frame()), run.confidence)
    assert 0.1 < mean < 0.9  # requests do fail: the figure is no zero by construction
    share = run.summary["share.failed"]
    assert (share.mean, share.low, share.high) == pytest.approx((mean, low, high), rel=1e-9)
    assert share.n == 4
    row = run.to_frame().loc["share.failed"]
    assert (row["mean"], row["ci_low"], row["ci_high"]) == pytest.approx((mean, low, high))
    assert row["unit"] == "fraction" and run.units["share.failed"] == "fraction"
    # the latencies beside it are of the answered requests only
    assert run.to_frame().loc["response.mean", "mean"] < 0.1


def test_a_run_without_failures_says_zero_not_nothing(mm1_file):
    run = sim.simulate(mm1_file, replications=2)
    row = run.to_frame().loc["share.failed"]
    assert (row["mean"], row["ci_low"], row["ci_high"]) == (0.0, 0.0, 0.0)
    assert (run.replications_frame()["count.failed"] == 0).all()


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    folder = experiment(tmp_path_factory.mktemp("experiment"))
    return folder, sim.calibrate(folder, replications=2, draws=0, max_evaluations=8)


def test_a_prediction_gives_the_share_at_the_fit_and_its_least_and_most_over_the_draws(
    fitted, refusing
):
    """The value is the run at the fit's share (as `tiersim run` gives it); pi_low / pi_high
    the least and the most over the parameter draws, each draw simulated again here with its
    own overrides and seed."""
    from sim.api.studies import as_calibration
    from sim.studies.calibration.linearise import SEED_OFFSET

    _, result = fitted
    model = sim.load_model(refusing)
    prediction = sim.predict(model, result, replications=3, seed=11, draws=3)
    frame = prediction.to_frame()
    row = frame.loc["share.failed"]
    simulation = prediction.simulation
    at_fit, _, _ = t_interval(shares_of(simulation.replications_frame()), 0.95)
    assert 0.1 < at_fit < 0.9
    assert row["value"] == pytest.approx(at_fit)
    assert row["interval_of"] == "draws" and row["unit"] == "fraction"
    assert math.isnan(row["sd_parameters"])
    points = as_calibration(result).points(3, simulation.seed)
    over_draws = []
    for m, point in enumerate(points):
        seed = simulation.seed + SEED_OFFSET * (m + 1)
        drawn = sim.load_model(refusing, [*point.overrides, f"run.seed={seed}"])
        counts = sim.simulate(drawn, replications=2).replications_frame().mean()
        over_draws.append(
            counts["count.failed"] / (counts["count.completed"] + counts["count.failed"])
        )
    assert (row["pi_low"], row["pi_high"]) == pytest.approx((min(over_draws), max(over_draws)))
    assert 0 < row["pi_low"] <= row["pi_high"] < 1
    # the latencies keep their prediction intervals beside it
    assert frame.loc["response.mean", "interval_of"] == "mean"


def test_the_rows_of_an_experiment_name_the_share_as_a_run_does(tmp_path, refusing):
    (tmp_path / "model.toml").write_text(REFUSING, encoding="utf-8")
    (tmp_path / "published.csv").write_text("row,response_s,throughput\nrefusing,0.05,8\n")
    (tmp_path / "experiment.toml").write_text(
        textwrap.dedent("""
        [experiment]
        name = "refusing"
        published = "published.csv"
        value_column = "response_s"
        metric = "response.mean"

        [[figures]]
        column = "response_s"
        metric = "response.mean"

        [[figures]]
        column = "throughput"
        metric = "throughput"

        [models]
        column = "row"
        refusing = "model.toml"
        """)
    )
    rows = sim.reproduce(tmp_path, replications=3).set_index("metric")
    assert "share.failed" in rows.columns and "failed_share" not in rows.columns
    run = sim.simulate(tmp_path / "model.toml", replications=3)
    mean, _, _ = t_interval(shares_of(run.replications_frame()), 0.95)
    assert 0.1 < mean < 0.9
    assert rows.loc["response.mean", "share.failed"] == pytest.approx(mean)
    assert math.isnan(rows.loc["throughput", "share.failed"])  # beside a latency only


def test_the_calibration_rows_frame_has_the_same_name(fitted):
    _, result = fitted
    columns = result.rows_frame().columns
    assert "share.failed" in columns and "failed_share" not in columns
    # the --json document keeps its documented key
    assert all("failed_share" in row for row in result.as_dict()["rows"])


def test_the_operational_laws_name_the_measured_share_as_a_run_does(measured):
    table, _ = measured
    table = table.copy()
    failing = (table["run"] == "users2") & (table["class"] == "total")
    table.loc[failing, "count.errors"] = 7.0
    laws = sim.operational_laws(table).set_index("run")
    assert "share.failed" in laws.columns and "failed_share" not in laws.columns
    completed = table.loc[failing, "count.completed"].sum()
    assert laws.loc["users2", "share.failed"] == pytest.approx(7.0 / (completed + 7.0))
    assert laws.loc["users1", "share.failed"] == 0.0


def test_capacity_gives_each_value_s_failed_share_and_marks_the_answer(refusing):
    """The users one thread serves with a mean response under 0.2 s and at most 40 % refused:
    each value's share is the run's at that value (the search's own seed and replications)."""
    answer = sim.capacity(
        refusing,
        "mean<0.2",
        "clients.users",
        replications=3,
        knee_points=0,
        maximum=12,
        error_budget=0.4,
        use_analytic=False,
    )
    frame = answer.to_frame()
    assert frame.attrs["error_budget"] == 0.4
    assert {"share.failed", "share.failed.ci_low", "share.failed.ci_high"} <= set(frame.columns)
    (best,) = frame[frame["answer"]].itertuples()
    assert best[1] == answer.best
    failing = frame[frame["share.failed"] > 0.05]
    assert len(failing), frame  # requests fail at the values tried, not only zeros
    for _, row in failing.head(2).iterrows():
        users = int(row["clients.users"])
        again = sim.simulate(refusing, [f"clients.users={users}"], replications=3, seed=3)
        mean, low, high = t_interval(shares_of(again.replications_frame()), 0.95)
        assert (row["share.failed"], row["share.failed.ci_low"], row["share.failed.ci_high"]) == (
            pytest.approx((mean, low, high))
        ), users
    met = frame[frame["met"]]
    assert (met["share.failed.ci_high"] <= 0.4).all(), frame
    # a value whose latency meets the SLO but whose requests fail past the budget is no answer
    assert (frame[~frame["met"]]["note"] == "over the error budget").any(), frame


def test_a_capacity_range_names_the_error_budget_its_searches_applied(fitted):
    folder, result = fitted
    answer = sim.capacity(
        folder / "model.toml",
        "mean<0.5",
        "clients.rate_per_s",
        replications=2,
        knee_points=0,
        maximum=9.5,
        error_budget=0.05,
        calibration=result,
        draws=2,
    )
    assert answer.range is not None
    said = answer.range.sentence()
    assert "meeting response.mean < 0.5 with at most 5 % failed" in said, said
    assert np.isfinite(answer.to_frame()["share.failed"]).all()
