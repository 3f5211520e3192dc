"""What a calibration carries into its predictions beyond the fitted values: the experiment's
settings, the `[[choose]]` candidates the figures left open (by weight), and the model error
in the capacity range; and one interval method for `calibrate` and `run --calibration`."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from sim.studies.calibration.parameters import FreeParameter
from sim.studies.calibration.saved import Alternative, Calibrated, saved_model_error_dof
from sim.studies.capacity.search import CapacityResult, Evaluation
from sim.studies.capacity.slo import parse_slo
from sim.studies.capacity.uncertain import capacity_range, moved
from sim.studies.choose import candidate_weights, mix_rows
from sim.studies.rows import Row

POOL = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "planning-pool"


def calibrated(model_error_sd: float = 0.0, alternatives=()) -> Calibrated:
    demand = FreeParameter("backends.0.demand.mean", 0.01, 0.1, 0.05, False, {})
    return Calibrated(
        source="test",
        experiment="test",
        parameters=(demand,),
        values=(0.05,),
        mean=np.array([1.5]),
        cov=np.array([[0.01]]),
        model_error_sd=model_error_sd,
        model_error_estimated=True,
        left_out=(),
        chosen=("backends.0.threads=8",),
        settings=("clients.think.mean=0.5",),
        alternatives=tuple(alternatives),
        weight=1.0 - sum(a.weight for a in alternatives),
    )


def test_weights_are_the_likelihood_and_a_negligible_candidate_draws_nothing():
    weights = candidate_weights([10.0, 12.0, 40.0, math.inf])
    ratio = math.exp(-1.0)  # exp(-(12 - 10) / 2)
    assert weights[0] == pytest.approx(1 / (1 + ratio))
    assert weights[1] == pytest.approx(ratio / (1 + ratio))
    assert weights[2] == 0.0 and weights[3] == 0.0  # exp(-15) < 1 %; no fit at all


def test_points_share_the_draws_by_weight_each_from_its_own_fit():
    """Without alternatives the points are the chosen fit's draws exactly; with one, the draws
    are split by weight, each structure's overrides carry its settings after the experiment's,
    and the model-error quantiles are stratified over all draws."""
    alone = calibrated()
    units, values = alone.draws(8, seed=5)
    points = alone.points(8, seed=5)
    assert np.allclose([p.units for p in points], units)
    assert points[0].overrides[:2] == ["clients.think.mean=0.5", "backends.0.threads=8"]
    assert points[0].overrides[2] == f"backends.0.demand.mean={float(values[0, 0])!r}"

    other = Alternative(("backends.0.threads=16",), 0.25, np.array([1.2]), np.array([[0.01]]))
    mixed = calibrated(alternatives=[other]).points(8, seed=5)
    assert [p.structure for p in mixed].count(("backends.0.threads=16",)) == 2
    assert [p.structure for p in mixed].count(("backends.0.threads=8",)) == 6
    sixteen = [p for p in mixed if p.structure == ("backends.0.threads=16",)]
    assert all("backends.0.threads=16" in p.overrides for p in sixteen)
    assert np.mean([p.units[0] for p in sixteen]) < 1.4  # from its own fit's mean, 1.2
    z = sorted(p.model_error_z for p in mixed)
    assert np.allclose(z, stats.norm.ppf((np.arange(8) + 0.5) / 8))


def result(value: float | None, slos) -> CapacityResult:
    best = None if value is None else Evaluation(value, {}, True)
    return CapacityResult("clients.users", "largest", slos, [], best, None, None, "")


def test_the_capacity_range_holds_the_model_error_through_the_slo_target():
    """A search whose answer is proportional to the SLO's target: each draw's target is the
    SLO's over 1 + e, e its drawn model error, so the range spans about +-1.645 sd of e."""
    slos = [parse_slo("p95<0.3")]
    asked: list[float] = []

    def search_at(overrides, seed, slos):
        asked.append(slos[0].target)
        return result(round(slos[0].target * 1000), slos)

    flat = capacity_range(search_at, calibrated(0.0), 32, 1, result(300, slos), integer=True)
    assert flat.low == flat.high == 300 and set(asked) == {0.3}
    asked.clear()
    spread = capacity_range(search_at, calibrated(0.1), 32, 1, result(300, slos), integer=True)
    assert sorted(asked) == pytest.approx(sorted(0.3 / (1 + e) for e in spread.model_errors))
    assert 300 / 1.2 < spread.low < 300 / 1.1 and 300 / 0.9 < spread.high < 300 / 0.8
    assert "model error (10.0%)" in spread.sentence()


def test_draws_with_no_value_meeting_the_slo_leave_the_range_half_open():
    """A "smallest" search (nodes for a load) where 1 of 8 draws finds no node count within
    the search: the range keeps the end the other draws bound and says the other is beyond
    the search; with every draw failing there is no range at all."""
    slos = [parse_slo("p95<0.3")]

    def smallest(value):
        found = result(value, slos)
        return replace(found, path="backends.0.count", direction="smallest")

    answers = iter([2, 2, 3, None, 2, 2, 2, 3])

    def search_at(overrides, seed, slos):
        return smallest(next(answers))

    spread = capacity_range(search_at, calibrated(), 8, 1, smallest(2), integer=True)
    assert spread.low == 2 and spread.high is None and spread.half_open
    said = spread.sentence()
    assert "2 or more" in said and "in 1 of 8 draws no backends.0.count" in said
    nothing = capacity_range(
        lambda o, s, slos: smallest(None), calibrated(), 8, 1, smallest(None), integer=True
    )
    assert nothing.low is None and nothing.high is None and not nothing.half_open
    assert "none of 8 parameter draws" in nothing.sentence()


def test_a_moved_slo_is_the_target_over_one_plus_the_error():
    assert moved(parse_slo("p95<1.0"), 0.25).target == pytest.approx(0.8)
    assert moved(parse_slo("throughput>100"), -0.5).target == pytest.approx(200)


def row(simulated: float, low: float, high: float, published: float | None = None) -> Row:
    return Row(
        experiment="e",
        figure="users110 response.p95",
        published=published,
        simulated=simulated,
        ci_low=simulated,
        ci_high=simulated,
        rel_error=None,
        fitted=False,
        pi_low=low,
        pi_high=high,
    )


class Fit:
    def __init__(self, rows):
        self.rows = rows


def test_mixed_intervals_hold_each_open_candidate_by_its_weight():
    same = Fit([row(1.0, 0.9, 1.1)])
    mix_rows(same, [(0.5, same), (0.5, Fit([row(1.0, 0.9, 1.1)]))])
    assert (same.rows[0].pi_low, same.rows[0].pi_high) == pytest.approx((0.9, 1.1), abs=1e-6)

    best = Fit([row(1.0, 0.9, 1.1, published=1.8)])
    far = Fit([row(2.0, 1.8, 2.2)])
    mix_rows(best, [(0.6, best), (0.4, far)])
    low, high = best.rows[0].pi_low, best.rows[0].pi_high
    # the mixture's 5 % point: 0.6 Phi((x - 1) / s1) = 0.05; its 95 %: 0.6 + 0.4 Phi(...) = 0.95
    s1, s2 = 0.1 / stats.norm.ppf(0.95), 0.2 / stats.norm.ppf(0.95)
    assert low == pytest.approx(1 + s1 * stats.norm.ppf(0.05 / 0.6), abs=1e-6)
    assert high == pytest.approx(2 + s2 * stats.norm.ppf(0.35 / 0.4), abs=1e-6)
    assert best.rows[0].simulated == 1.0 and best.rows[0].covered  # the truth, 1.8, inside


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_calibrate_and_run_with_the_calibration_give_the_same_interval(tmp_path):
    """The planner's path on the pool test, fitted on 10 and 40 users: the saved calibration
    holds the experiment's settings, so `run --calibration` at the level nobody measured (110
    users) needs only the users, and prints the same value and the same interval."""
    from click.testing import CliRunner

    from sim.cli import main

    runner = CliRunner()
    table, folder, saved = tmp_path / "m.csv", tmp_path / "plan", tmp_path / "cal.json"
    levels = [str(POOL / f"users{n}.jtl") for n in (10, 40, 90)]
    cut = ["--warmup", "2", "--until", "30", "--utilisation", str(POOL / "sar.sadf.csv")]
    assert runner.invoke(main, ["import", "jtl", *levels, "-o", str(table), *cut]).exit_code == 0
    think = '{dist="uniform", low=0.4, high=0.6}'
    plan = ["plan", str(table), "--fit", "users10", "--fit", "users40", "-o", str(folder)]
    shape = ["--shape", levels[0], "--threads", "8", "--cores", "2", "--think", think]
    out = runner.invoke(main, [*plan, *shape, "--predict", "110", "--duration", "30"])
    assert out.exit_code == 0, out.output
    out = runner.invoke(main, ["calibrate", str(folder), "--no-cache", "--save", str(saved)])
    assert out.exit_code == 0, out.output
    from sim.studies.calibration.saved import load_calibration

    cal = load_calibration(saved)
    assert f"clients.think={think}" in cal.settings and "backends.0.threads=8" in cal.settings
    import json

    document = json.loads(saved.read_text())
    (withheld,) = [r for r in document["rows"] if r["figure"] == "users110 response.p95"]
    model = str(Path(__file__).resolve().parents[2] / "models" / "planner-apache-tomcat.toml")
    args = ["run", model, "--set", "clients.users=110", "--set", "run.duration_s=30"]
    out = runner.invoke(main, [*args, "--calibration", str(saved), "--json"])
    assert out.exit_code == 0, out.output
    found = json.loads(out.stdout)
    p95 = found["prediction"]["metrics"]["response.p95"]
    assert p95["value"] == pytest.approx(withheld["simulated"], rel=1e-12)
    assert (p95["pi_low"], p95["pi_high"]) == pytest.approx(
        (withheld["pi_low"], withheld["pi_high"]), rel=1e-12
    )
    # the interval is wider than the noise: the parameters and the model error are in it
    assert p95["pi_high"] - p95["pi_low"] > 4 * (withheld["ci_high"] - withheld["ci_low"])
    held = replace(cal, alternatives=())
    assert held.describe().count("with the experiment's settings") == 1


@pytest.mark.parametrize("dof", [None, 3.0])
def test_model_error_quantiles_are_student_t_on_the_fit_s_degrees_of_freedom(dof):
    """A model error estimated from 3 degrees of freedom is drawn from Student-t (its 20
    stratified quantiles are t_3's at (k + 0.5) / 20, in some order); a declared or zero one
    from the normal, as the cross-validation's intervals are."""
    points = replace(calibrated(0.1), model_error_dof=dof).points(20, seed=3)
    expected = (
        stats.norm.ppf((np.arange(20) + 0.5) / 20)
        if dof is None
        else stats.t.ppf((np.arange(20) + 0.5) / 20, dof)
    )
    assert np.allclose(sorted(p.model_error_z for p in points), expected)


@pytest.mark.parametrize(
    "model, dof",
    [
        ({"sd": 0.1, "estimated": True, "declared": False, "degrees_of_freedom": 4.5}, 4.5),
        ({"sd": 0.1, "estimated": False, "declared": True, "degrees_of_freedom": 0.2}, None),
        ({"sd": 0.0, "estimated": True, "declared": False, "degrees_of_freedom": 6.0}, 6.0),
        ({"sd": 0.1, "estimated": True}, None),  # no degrees of freedom saved: normal
    ],
)
def test_a_saved_fit_s_model_error_keeps_its_degrees_of_freedom(model, dof):
    assert saved_model_error_dof(model) == dof
