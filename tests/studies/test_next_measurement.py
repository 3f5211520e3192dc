"""What to measure next (`capacity --what-next`, `--candidate`): the preposterior update of the
capacity range, exact on synthetic pairs and inside its own interval on Gaussian ones; the
candidates, parsed and proposed; the pairing by draw; and the command end to end on M/M/1,
where the measured mean response time at a known rate pins the demand, and so the capacity,
while the throughput of an open workload (its arrival rate) tells nothing."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from rich.console import Console

from sim.cli import main
from sim.studies.calibration.saved import from_document
from sim.studies.capacity.candidates import CandidateError, default_candidates, parse_candidate
from sim.studies.capacity.next_measurement import Measured, render, what_next
from sim.studies.capacity.preposterior import expected_update
from sim.studies.capacity.search import CapacityResult, search_base
from sim.studies.capacity.uncertain import CapacityRange, capacity_range, draw_runs

ROOT = Path(__file__).resolve().parents[2]
ANSWERS = np.array([90.0, 84.0, 92.0, 88.0, 86.0, 91.0, 85.0, 89.0])  # eight draws' capacities


# --------------------------------------------------------------------------- the update
def test_a_figure_linear_in_the_answer_leaves_only_its_noise():
    """y = 2c + 5 measured with sd s: Var(c | y) = Var(c) - Cov(c, y)² / (Var(y) + s²) exactly,
    which is Var(c) s² / (4 Var(c) + s²): the noise's own width, read on the answer's scale."""
    y = 2.0 * ANSWERS + 5.0
    noise = 1.5
    update = expected_update(ANSWERS, y, noise)
    var_c, var_y = np.var(ANSWERS, ddof=1), np.var(y, ddof=1)
    cov = np.cov(ANSWERS, y, ddof=1)[0, 1]
    after = math.sqrt(var_c - cov**2 / (var_y + noise**2))
    assert update.tells
    assert update.correlation == pytest.approx(1.0)
    assert math.sqrt(var_c) * update.ratio == pytest.approx(after, rel=1e-9)
    assert after == pytest.approx(math.sqrt(var_c * noise**2 / (4 * var_c + noise**2)), rel=1e-9)
    # with a tenth of that noise the range collapses toward the noise over the slope, s / 2
    sharp = expected_update(ANSWERS, y, 0.15)
    assert math.sqrt(var_c) * sharp.ratio == pytest.approx(0.15 / 2, rel=0.01)
    # a figure falling as the answer rises buys as much
    falling = expected_update(ANSWERS, -y, noise)
    assert falling.ratio == pytest.approx(update.ratio, rel=1e-9)


def test_an_unrelated_figure_leaves_the_range_as_it_is():
    """A figure orthogonal to the answers over the draws (r = 0 exactly): no narrowing is
    claimed, and the width stays today's."""
    centred = ANSWERS - ANSWERS.mean()
    other = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    other = other - other.mean()
    y = 50.0 + other - centred * (other @ centred) / (centred @ centred)
    update = expected_update(ANSWERS, y, 0.1)
    assert abs(update.correlation) < 1e-12
    assert not update.tells
    assert update.ratio == 1.0 and update.ratio_high == 1.0
    assert update.ratio_low < 1.0  # what the draws cannot rule out, shown beside it
    assert "cannot tell" in update.why_not


def test_few_draws_do_not_claim_what_many_would():
    """r = 0.5 over 8 draws cannot be told from zero (Fisher's 90 % interval holds 0): no claim.
    The same r over 64 draws can, and the estimate is shrunk below r²."""
    rng = np.random.default_rng(3)

    def pairs(n: int, r: float):
        c = rng.standard_normal(n)
        e = rng.standard_normal(n)
        c, e = c - c.mean(), e - e.mean()
        e = e - c * (e @ c) / (c @ c)  # orthogonal, then mixed to an exact sample r
        c, e = c / np.linalg.norm(c), e / np.linalg.norm(e)
        return c, r * c + math.sqrt(1 - r * r) * e

    few = expected_update(*pairs(8, 0.5), 0.0)
    assert few.correlation == pytest.approx(0.5)
    assert few.correlation_low < 0 < few.correlation_high
    assert not few.tells and few.ratio == 1.0
    many = expected_update(*pairs(64, 0.5), 0.0)
    assert many.tells
    assert 0 < many.explained < 0.25
    assert many.ratio_low <= many.ratio <= many.ratio_high < 1.0
    assert expected_update(ANSWERS[:3], ANSWERS[:3], 0.0).why_not.startswith("3 draws")
    assert expected_update(np.full(8, 5.0), ANSWERS, 0.0).verdict == "same answer"
    assert expected_update(ANSWERS, np.full(8, 0.2), 0.0).verdict == "figure constant"


def test_the_estimate_holds_the_gaussian_truth_within_its_interval():
    """200 draws of a bivariate Gaussian with rho = 0.8 and a measurement error of half y's sd:
    the true ratio sqrt(1 - rho² Var(y) / (Var(y) + s²)) = sqrt(1 - 0.64 / 1.25) lies in the
    estimate's 90 % interval (a fixed seed)."""
    rng = np.random.default_rng(11)
    c = rng.standard_normal(200)
    y = 0.8 * c + 0.6 * rng.standard_normal(200)
    update = expected_update(10 * c + 100, 3 * y, 1.5)
    truth = math.sqrt(1 - 0.64 * 1.0 / 1.25)
    assert update.tells
    assert update.ratio_low <= truth <= update.ratio_high
    assert update.ratio == pytest.approx(truth, abs=0.08)


# --------------------------------------------------------------------------- the candidates
DATABASE_MODEL = ROOT / "models" / "planner-apache-tomcat-database.toml"


def calibration(rows=(), model_error: float = 0.0, sd_unit: float = 0.05) -> dict:
    return {
        "experiment": "tiny",
        "parameters": [
            {
                "parameter": "backends.0.demand.mean",
                "value": 0.1,
                "low": 0.05,
                "high": 0.2,
                "scale": "log",
                "when": {},
            }
        ],
        "uncertainty": {
            "model_error": {"sd": model_error, "estimated": model_error > 0},
            "posterior": {"scale": "unit", "mean": [1.5], "cov": [[sd_unit**2]]},
        },
        "rows": list(rows),
    }


def fitted_row(users: int, metric: str, sd: float | None) -> dict:
    return {
        "figure": f"users{users}",
        "fitted": True,
        "metric": metric,
        "overrides": [f"clients.users={users}", "backends.0.demand.mean=0.1"],
        "sd_measurement": sd,
    }


def test_a_candidate_is_checked_on_the_model_before_anything_runs():
    base = search_base(DATABASE_MODEL, (), None, None)
    found = parse_candidate("clients.users=80,backends.0.count=2:p95", base)
    assert found.settings == ("clients.users=80", "backends.0.count=2")
    assert found.figures == ("response.p95",)
    assert parse_candidate("clients.users=80", base).figures == (
        "throughput",
        "response.mean",
        "response.p95",
    )
    assert parse_candidate(
        'backends.0.demand={dist = "exponential", mean = 0.02},clients.users=9:database.lock.wait',
        base,
    ).settings == ('backends.0.demand={dist = "exponential", mean = 0.02}', "clients.users=9")
    for text, message in [
        ("clients.users:p95", "'clients.users' is not PATH=VALUE"),
        (":p95", "no setting"),
        ("clients.users=80:database.lock.wiat", "did you mean database.lock.wait"),
        ("clients.nobody=3", "--candidate 'clients.nobody=3'"),
    ]:
        with pytest.raises(CandidateError, match=re.escape(message)):
            parse_candidate(text, base)


def test_the_default_candidates_follow_the_question_and_the_fitted_runs():
    """Nodes needed for 200 users, fitted at 10 and 40 users on one node: 200 users over the
    answer's 2 nodes is 100 per node, measured on the one node the fit had and on two; and the
    lock's wait at the heaviest fitted level, 40."""
    base = search_base(DATABASE_MODEL, ("clients.users=200",), None, None)
    saved = from_document(
        calibration([fitted_row(10, "throughput", 0.02), fitted_row(40, "response.p95", 0.05)]),
        "cal.json",
    )
    found, notes = default_candidates(base, "backends.0.count", 2.0, saved, ["response.p95"])
    assert notes == []
    assert [c.settings for c in found] == [
        ("clients.users=100", "backends.0.count=1"),
        ("clients.users=100", "backends.0.count=2"),
        ("clients.users=40", "backends.0.count=1"),
    ]
    assert found[0].figures == ("throughput", "response.mean", "response.p95")
    assert found[2].figures == ("database.lock.wait",)
    assert "heaviest fitted level" in found[2].why
    # asked for users at the fitted node count: the answer itself is the level
    base = search_base(DATABASE_MODEL, (), None, None)
    found, _ = default_candidates(base, "clients.users", 40.0, saved, ["response.p95"])
    assert found[0].settings == ("clients.users=40", "backends.0.count=1")
    assert "fitted at" in found[0].why


def test_a_saved_rows_measurement_error_is_checked():
    bad = calibration([fitted_row(10, "throughput", -0.1)])
    with pytest.raises(ValueError, match=r"rows\[0\]\.sd_measurement = -0\.1"):
        from_document(bad, "cal.json")


# --------------------------------------------------------------------------- pairing by draw
MM1 = """
[clients]
kind = "open"
rate_per_s = 5.0

[[backends]]
name = "server"
threads = 1
cores = 1
demand = { dist = "exponential", mean = 0.3 }

[run]
duration_s = 2000
warmup = 100
replications = 3
seed = 11
"""


def test_each_candidate_run_is_paired_with_the_answer_of_its_own_draw(tmp_path):
    """The candidate's run at draw m has draw m's parameters and seed (`draw_runs`, which the
    range's searches use too): with answers 1/D - 2 and a figure D the pairs are monotone, so
    r is -1 up to the curve's bend; any shuffle would break it."""
    (tmp_path / "m.toml").write_text(MM1)
    saved = from_document(calibration(sd_unit=0.1), "cal.json")
    seen: list[tuple[tuple[str, ...], int]] = []

    def search_at(drawn, seed, slos):
        seen.append((drawn, seed))
        demand = float(drawn[-1].split("=")[1])
        best = type("E", (), {"value": 1 / demand - 2})()
        return CapacityResult("clients.rate_per_s", "largest", slos, [], best, best, None, "")

    nominal = CapacityResult("clients.rate_per_s", "largest", [], [], None, None, None, "")
    spread = capacity_range(search_at, saved, 12, 7, nominal, False)
    assert seen == list(zip(*draw_runs(saved, 12, 7)))

    class Executor:
        def map(self, run, drawn, seeds, settings, figures):
            for d, s in zip(drawn, seeds):
                assert (d, s) in seen
                yield Measured({"response.mean": (float(d[-1].split("=")[1]), 0.001)})

    question = type("Q", (), {"base": search_base(tmp_path / "m.toml", (), None, 7)})()
    candidate = parse_candidate("clients.rate_per_s=4:response.mean", question.base)
    found = what_next(question, spread, saved, [candidate], Executor())
    (row,) = found.measurements
    assert row.update.correlation < -0.95
    assert row.update.tells
    assert row.width(row.update.ratio) < 0.3 * found.width_today
    assert isinstance(spread, CapacityRange)


# --------------------------------------------------------------------------- end to end
def test_capacity_what_next_on_mm1_ranks_the_response_time_over_the_throughput(tmp_path):
    """Largest rate with mean < 0.5 s, D fitted at 0.1 s (about +-7 %): the answer is 1/D - 2.
    Measuring the mean response at 5 per s (D / (1 - 5D)) pins D and so the answer: the range
    narrows to well under half.  The throughput at 5 per s is the arrival rate whatever D is:
    the draws cannot tell it from noise, and its width stays today's."""
    (tmp_path / "m.toml").write_text(MM1)
    (tmp_path / "cal.json").write_text(json.dumps(calibration()))
    out = CliRunner().invoke(
        main,
        [
            "capacity",
            str(tmp_path / "m.toml"),
            "--slo",
            "response.mean<0.5",
            "--vary",
            "clients.rate_per_s",
            "--min",
            "1",
            "--max",
            "20",
            "--knee",
            "0",
            "--serial",
            "--calibration",
            str(tmp_path / "cal.json"),
            "--draws",
            "8",
            "--candidate",
            "clients.rate_per_s=5:response.mean",
            "--candidate",
            "clients.rate_per_s=5:throughput",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    document = json.loads(out.output[out.output.index("{") :])
    found = document["what_next"]
    today = found["width_today"]
    assert today > 0
    best, last = found["measurements"]
    assert (best["figure"], last["figure"]) == ("response.mean", "throughput")
    assert best["narrows"] and best["correlation"] < -0.9
    assert best["width_after"] < 0.5 * today
    assert best["width_after_interval"][0] <= best["width_after"] <= best["width_after_interval"][1]
    assert best["measurement_error_from"] == "one run of the model's window"
    assert not last["narrows"]
    assert last["width_after"] == today
    assert any("8 draws" in note for note in found["notes"])
    assert found["advice"].startswith("measure response.mean at clients.rate_per_s=5: ")


def test_bad_what_next_input_is_refused_before_any_run(tmp_path):
    (tmp_path / "m.toml").write_text(MM1)
    (tmp_path / "cal.json").write_text(json.dumps(calibration()))
    question = [
        "capacity",
        str(tmp_path / "m.toml"),
        "--slo",
        "mean<0.5",
        "--vary",
        "clients.rate_per_s",
        "--serial",
    ]
    out = CliRunner().invoke(main, [*question, "--what-next"])
    assert out.exit_code == 2
    assert "--what-next weighs measurements by the calibration's draws" in out.output
    out = CliRunner().invoke(
        main,
        [*question, "--calibration", str(tmp_path / "cal.json"), "--candidate", "rate=4:mean"],
    )
    assert out.exit_code == 2
    assert "--candidate 'rate=4:mean'" in out.output
    assert "evaluation 1" not in out.output  # refused before the search ran


def test_the_table_names_each_measurement_and_its_verdict():
    from sim.studies.capacity.candidates import Candidate
    from sim.studies.capacity.next_measurement import NextMeasurement, NextMeasurements

    y = 2.0 * ANSWERS
    rows = [
        NextMeasurement(
            Candidate(("clients.users=80",), ("response.p95",), "another level"),
            "response.p95",
            float(np.mean(y)),
            0.0,
            1.0,
            "one run of the model's window",
            expected_update(ANSWERS, y, 1.0),
            float(np.std(ANSWERS, ddof=1)),
            8.0,
        )
    ]
    found = NextMeasurements("clients.users", ["response.p95 < 0.3"], 0.9, 8, 84, 92, rows)
    console = Console(record=True, width=160)
    render(found, console)
    text = console.export_text()
    assert "what to measure next" in text and "today 84–92, 8" in text
    narrower = f"{1 - rows[0].update.ratio:.0%} narrower"
    assert "clients.users=80" in text and narrower in text and narrower != "0% narrower"
    assert "measure response.p95 at clients.users=80: the 90% range's width would go from 8" in text


@pytest.mark.parametrize(
    "arguments, parameter, message",
    [
        ({"what_next": 1}, "what_next", "True or False"),
        ({"what_next": True}, "what_next", "give calibration="),
        ({"candidates": "clients.rate_per_s=4"}, "candidates", "not a string"),
        ({"candidates": ["clients.rate_per_s=4"]}, "candidates", "give calibration="),
        ({"candidates": ["rate=4:mean"], "calibration": True}, "candidates", "'rate=4:mean'"),
    ],
)
def test_the_face_refuses_what_it_cannot_weigh(tmp_path, arguments, parameter, message):
    import sim

    (tmp_path / "m.toml").write_text(MM1)
    (tmp_path / "cal.json").write_text(json.dumps(calibration()))
    if arguments.get("calibration") is True:
        arguments = {**arguments, "calibration": tmp_path / "cal.json"}
    with pytest.raises(sim.ArgumentError) as caught:
        sim.capacity(tmp_path / "m.toml", "mean<0.5", "clients.rate_per_s", **arguments)
    assert caught.value.parameter == parameter
    assert message in str(caught.value)
