"""Capacity search against queueing theory: the boundary it finds is where M/M/1 puts it,
within what the intervals and the bisection tolerance allow -- and no looser."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.studies.capacity import search as cap
from sim.studies.capacity.knee import knee
from sim.studies.capacity.slo import SloError, parse_slo
from sim.studies.sweep.execute import SerialExecutor

MU = 10.0  # service rate [1/s]: exponential CPU demand of 0.1 s on one core

# M/M/1 FIFO: one thread on one core, an unbounded accept queue; the response time is
# exponential with rate mu - lambda, so p_q = -ln(1 - q) / (mu - lambda).
MM1 = f"""
[clients]
kind = "open"
rate_per_s = 2.0
[[backends]]
name = "server"
threads = 1
cores = 1
demand = {{ dist = "exponential", mean = {1 / MU} }}
[run]
duration_s = 1500
warmup = 20.0
replications = 10
confidence = 0.99
seed = 12
"""


def mm1_p95(rate: float) -> float:
    return math.log(20) / (MU - rate)


def search(tmp_path, text: str, slo: str, vary: str, **options):
    path = tmp_path / "m.toml"
    path.write_text(text, encoding="utf-8")
    base = cap.search_base(path, (), None, None)
    real, integer, start = cap.resolve_path(base, vary)
    direction = cap.default_direction(real)
    with SerialExecutor() as executor:
        return cap.search(
            base,
            real,
            [parse_slo(slo)],
            direction=direction,
            integer=integer,
            start=start,
            executor=executor,
            **options,
        )


def test_largest_arrival_rate_meeting_a_p95_slo_is_the_mm1_answer(tmp_path):
    target = 0.6
    result = search(tmp_path, MM1, f"p95<{target}", "clients.rate_per_s", tolerance=0.01)
    exact = MU - math.log(20) / target  # 5.007 requests/s
    # the analytic first guess (Jackson; the percentile from the exponential response time) is exact here
    assert result.guess == pytest.approx(exact, rel=1e-3)
    lo, hi = result.best, result.neighbour
    assert lo.met and not hi.met and lo.value < hi.value
    assert hi.value - lo.value <= 0.01 * lo.value  # the bisection tolerance
    # lo meets on its 99 % upper bound, so the true boundary is at or beyond it ...
    assert lo.value <= exact
    assert mm1_p95(lo.value) <= lo.metrics["response.p95"][2]
    # ... and hi fails on its upper bound, so the truth at hi is at least its lower bound.
    assert mm1_p95(hi.value) >= hi.metrics["response.p95"][1]
    # So deciding on the upper bound costs at most one interval width at hi (plus the tolerance):
    # truth(hi) >= T - 2 half-widths, i.e. hi >= the rate whose exact p95 is T - 2 half-widths.
    low, high = hi.metrics["response.p95"][1:]
    assert lo.value >= MU - math.log(20) / (target - (high - low)) - (hi.value - lo.value)


def test_without_the_analytic_guess_the_search_doubles_from_the_model_value(tmp_path):
    target = 0.2  # mean response 1 / (mu - lambda) < 0.2 s  =>  lambda < 5
    result = search(
        tmp_path, MM1, f"mean<{target}", "clients.rate_per_s", tolerance=0.02, use_analytic=False
    )
    assert result.guess is None
    assert 4.0 in {e.value for e in result.evaluations}  # 2 meets, doubled to 4 meets, 8 does not
    lo, hi = result.best, result.neighbour
    assert hi.value - lo.value <= 0.02 * lo.value
    assert lo.value <= 5.0 and 1 / (MU - hi.value) >= hi.metrics["response.mean"][1]


def test_smallest_cluster_meeting_a_mean_slo(tmp_path):
    # Poisson 30/s split at random over k M/M/1 nodes: each sees 30/k, mean response 1/(10 - 30/k);
    # below 0.5 s needs k > 3.75: four nodes (0.4 s); three are exactly saturated (unstable).
    text = (
        MM1.replace("rate_per_s = 2.0", "rate_per_s = 30.0")
        .replace('name = "server"', 'name = "server"\ncount = 8')
        .replace("[run]", '[balancer]\npolicy = "random"\n[run]')
    )
    text = text.replace("duration_s = 1500", "duration_s = 300")
    result = search(tmp_path, text, "mean<0.5", "backends.count")
    assert result.path == "backends.0.count" and result.direction == "smallest"
    assert result.best.value == 4 and result.neighbour.value == 3
    assert result.neighbour.note == "unstable"
    assert result.best.metrics["response.mean"][1] <= 0.4 <= result.best.metrics["response.mean"][2]


def test_knee_is_the_corner_of_a_hockey_stick():
    xs = [0, 1, 2, 3, 4, 5, 6, 7, 8]
    ys = [1.0, 1.0, 1.1, 1.2, 1.3, 3.0, 5.0, 7.0, 9.0]
    assert xs[knee(xs, ys)] == 4
    assert knee([1, 2], [1, 2]) is None


def test_slo_parsing_and_decision_on_the_interval():
    slo = parse_slo("p95<1.0")
    assert (slo.metric, slo.op, slo.target) == ("response.p95", "<", 1.0)
    assert slo.met(0.5, 0.99) and not slo.met(
        0.5, 1.01
    )  # the upper bound decides, not the estimate
    assert not slo.met(math.nan, math.nan)
    assert parse_slo("throughput>100").met(101, 120) and not parse_slo("throughput>100").met(
        99, 120
    )
    with pytest.raises(SloError, match="expected METRIC<VALUE"):
        parse_slo("p95 under 1")


def test_capacity_command_reports_boundary_and_refuses_bad_input(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(
        MM1.replace("duration_s = 1500", "duration_s = 300").replace(
            "replications = 10", "replications = 4"
        ),
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        main,
        [
            "capacity",
            str(path),
            "--slo",
            "mean<0.5",
            "--vary",
            "clients.rate_per_s",
            "--serial",
            "--knee",
            "4",
            "--tolerance",
            "0.05",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "largest clients.rate_per_s meeting response.mean < 0.5:" in result.stdout
    assert "knee of response.mean" in result.stdout and "upper bound" in result.stdout
    for args, code, needle in (
        (["--slo", "p95 1", "--vary", "clients.rate_per_s"], 2, "expected METRIC<VALUE"),
        (["--slo", "p95<1", "--vary", "clients.ratez"], 3, "no parameter clients.ratez"),
        (["--slo", "p95<1", "--vary", "meta.name"], 3, "must be a number"),
        (
            ["--slo", "p95<0.001", "--vary", "clients.rate_per_s", "--min", "1", "--no-analytic"],
            4,
            "no value",
        ),
    ):
        result = CliRunner().invoke(main, ["capacity", str(path), "--serial", "--knee", "0", *args])
        assert result.exit_code == code, (args, result.output)
        assert needle in result.output, (needle, result.output)


def test_capacity_from_a_sweep_file_uses_its_base_model_set_replications_and_seed(tmp_path):
    (tmp_path / "mm1.toml").write_text(MM1, encoding="utf-8")
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        '[sweep]\nbase = "mm1.toml"\nset = ["run.duration_s=300"]\nreplications = 4\nseed = 77\n'
        '[factors]\n"clients.rate_per_s" = [1.0, 2.0]\n',
        encoding="utf-8",
    )
    base = cap.search_base(sweep, ("backends.0.cores=2",), None, None)
    assert (base.replications, base.seed) == (4, 77)
    assert base.overrides == ("run.duration_s=300", "backends.0.cores=2")
    assert base.model().run.duration_s == 300 and base.model().backends[0].cores == 2
