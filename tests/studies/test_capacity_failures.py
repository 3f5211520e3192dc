"""An SLO is not met by the requests that failed: the capacity search counts refusals against
the error budget, on a loss system whose failed share queueing theory gives exactly.

One thread, no accept queue and clients that give up when their SYN meets a full queue: an
M/M/1/1 loss system (Erlang B with one server).  A request is refused with probability
rho / (1 + rho), rho = lambda / mu, at every load; the requests that are answered take one
exponential service, p95 = ln 20 / mu = 0.30 s, whatever the load.  Judged on the answered
requests alone, "p95 < 1 s" holds at any arrival rate, and a search would double for ever.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.present.failures import failed_share, replication_failed_share
from sim.studies.capacity import search as cap
from sim.studies.capacity.slo import parse_slo
from sim.studies.sweep.execute import SerialExecutor

MU = 10.0  # service rate [1/s]

LOSS = f"""
[clients]
kind = "open"
rate_per_s = 2.0
tcp = {{ syn_retries = 0 }}
[[backends]]
name = "server"
threads = 1
accept_queue = 0
cores = 1
demand = {{ dist = "exponential", mean = {1 / MU} }}
[run]
duration_s = 400
warmup = 20.0
replications = 5
confidence = 0.99
seed = 3
"""


def refused(rate: float) -> float:
    """Erlang B with one server: the share of Poisson arrivals that find it busy."""
    rho = rate / MU
    return rho / (1 + rho)


def largest_rate(budget: float) -> float:
    """The arrival rate whose refused share is exactly `budget`."""
    return MU * budget / (1 - budget)


def search(tmp_path, slo: str, error_budget: float | None = None, **options):
    path = tmp_path / "loss.toml"
    path.write_text(LOSS, encoding="utf-8")
    base = cap.search_base(path, (), None, None, error_budget)
    real, integer, start = cap.resolve_path(base, "clients.rate_per_s")
    with SerialExecutor() as executor:
        return cap.search(
            base,
            real,
            [parse_slo(slo)],
            direction="largest",
            integer=integer,
            start=start,
            executor=executor,
            use_analytic=False,
            **options,
        )


def test_a_load_whose_requests_are_refused_does_not_meet_the_slo(tmp_path):
    result = search(tmp_path, "p95<1")  # the default budget: 1 % of the requests
    assert result.error_budget == 0.01
    # every load the search tried answered its requests in well under 1 s ...
    for evaluation in result.evaluations:
        assert evaluation.metrics["response.p95"][2] < 1.0
    # ... yet the search stopped at once instead of doubling: 2/s refuses 1/6 of the requests
    assert max(e.value for e in result.evaluations) == 2.0
    first = next(e for e in result.evaluations if e.value == 2.0)
    assert not first.met and first.over_budget
    assert first.failed_share[1] <= refused(2.0) <= first.failed_share[2]
    # The answer meets the budget on its interval: the true refused share there is within it
    # (the interval's upper bound covers the truth, at 99 %).
    assert result.best is not None and result.best.met
    assert result.best.failed_share[2] <= 0.01
    assert result.best.value <= largest_rate(0.01)
    assert refused(result.best.value) <= 0.01
    assert result.neighbour is not None and result.neighbour.over_budget


def test_the_boundary_is_where_erlang_b_puts_the_budget(tmp_path):
    budget = 0.2  # refused share rho / (1 + rho) = 0.2 at lambda = 2.5/s
    result = search(tmp_path, "p95<1", error_budget=budget, tolerance=0.02)
    exact = largest_rate(budget)
    lo, hi = result.best, result.neighbour
    assert lo.met and not hi.met and lo.value < hi.value
    assert hi.value - lo.value <= 0.02 * lo.value + 1e-12  # the bisection's tolerance
    assert hi.over_budget  # the latency held there too: the refusals decided
    # lo meets on its share's 99 % upper bound, so the truth there is within the budget ...
    assert refused(lo.value) <= lo.failed_share[2] and lo.value <= exact
    # ... and at hi the truth is at least the share's lower bound: the answer is at most two
    # interval widths of the share (plus the tolerance) below the exact boundary
    assert refused(hi.value) >= hi.failed_share[1]
    width = hi.failed_share[2] - hi.failed_share[1]
    assert lo.value >= largest_rate(budget - 2 * width) - (hi.value - lo.value)


def test_the_failed_share_is_of_the_requests_not_of_the_attempts():
    # a request answered on its retry is a success; one given up on after its last retry is
    # counted once, however many attempts it made
    metrics = {"count.completed": 90.0, "count.failed": 10.0, "count.errors": 25.0}
    assert replication_failed_share(metrics) == 0.1
    assert math.isnan(replication_failed_share({"count.completed": 0.0, "count.failed": 0.0}))
    share = failed_share([metrics, {"count.completed": 80.0, "count.failed": 20.0}], 0.95)
    assert (
        share is not None
        and share.mean == pytest.approx(0.15)
        and share.low >= 0.0
        and share.high <= 1.0
    )
    assert failed_share([{"count.completed": 0.0, "count.failed": 0.0}], 0.95) is None


def test_capacity_command_says_how_many_failed_at_each_load(tmp_path):
    path = tmp_path / "loss.toml"
    path.write_text(LOSS.replace("duration_s = 400", "duration_s = 200"), encoding="utf-8")
    result = CliRunner().invoke(
        main,
        [
            "capacity",
            str(path),
            "--slo",
            "p95<1",
            "--vary",
            "clients.rate_per_s",
            "--error-budget",
            "0.2",
            "--knee",
            "0",
            "--no-analytic",
            "--serial",
        ],
        terminal_width=200,
    )
    assert result.exit_code == 0, result.output
    assert (
        "failed [interval]" in result.output and "with ≤ 20 % of requests failed" in result.output
    )
    assert "no: over 20 %" in result.output  # a load whose latency held but refusals did not
    assert "of requests failed" in result.output  # beside the boundary's latency
    # how each value was measured, beside its latencies
    assert "each value: 5 replications of a window of 200 s after 20 s of warm-up" in result.output
    bad = CliRunner().invoke(
        main,
        [
            "capacity",
            str(path),
            "--slo",
            "p95<1",
            "--vary",
            "clients.rate_per_s",
            "--error-budget",
            "1.5",
        ],
    )
    assert bad.exit_code != 0 and "--error-budget" in bad.output


def test_a_sweep_file_carries_the_error_budget(tmp_path):
    (tmp_path / "loss.toml").write_text(LOSS, encoding="utf-8")
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        '[sweep]\nbase = "loss.toml"\nerror_budget = 0.05\n[factors]\n"clients.rate_per_s" = [1.0]\n',
        encoding="utf-8",
    )
    assert cap.search_base(sweep, (), None, None).error_budget == 0.05
    assert cap.search_base(sweep, (), None, None, 0.3).error_budget == 0.3  # the option wins
    sweep.write_text(sweep.read_text().replace("0.05", "1.0"), encoding="utf-8")
    from sim.studies.sweep.spec import SweepError, load_sweep

    try:
        load_sweep(sweep)
    except SweepError as exc:
        assert "error_budget" in str(exc)
    else:
        raise AssertionError("an error budget of 1 (every request may fail) was accepted")


TEMPLATE = Path(__file__).resolve().parents[2] / "models" / "planner-apache-tomcat.toml"


def _failed_share_of_template(*overrides: str) -> float:
    from sim.files import read_toml
    from sim.run.simulate import simulate

    outcome = simulate(
        read_toml(TEMPLATE, "model file"),
        seed=5,
        replications=2,
        # 60 users on 2 threads and acceptCount 10: far more requests than threads and
        # acceptCount at once, as in a load test past saturation
        overrides=(
            "clients.users=60",
            "backends.0.threads=2",
            "backends.0.accept_queue=10",
            "run.duration_s=20",
            *overrides,
        ),
        source=str(TEMPLATE),
        base_dir=TEMPLATE.parent,
    )
    assert outcome.ok, outcome.message
    share = failed_share([rep.metrics for rep in outcome.result.replications], 0.95)
    assert share is not None
    return share.mean


def test_the_planner_template_queues_what_a_real_nio_connector_queues():
    # Tomcat NIO (maxConnections 8192 since Tomcat 9; 10000 in 8.5) keeps every connection the
    # front opens and queues its requests for a thread: acceptCount is the backlog beyond
    # maxConnections only.  Unbounded connections would make acceptCount bound the requests
    # waiting for a thread, and refuse a tenth of these.
    assert _failed_share_of_template() == 0.0
    assert _failed_share_of_template('backends.0.max_connections="none"') > 0.05


def test_the_old_template_s_refusing_tomcat_never_meets_the_slo():
    # the stack in small: the template as it was (maxConnections unset, so acceptCount
    # bounds the requests waiting for a thread), 2 threads and an accept queue of 1.  The
    # refusals are fast 503s from Apache, so the answered requests keep p95 far below 1 s at
    # every load -- and the search used to double on past 64 users, where a third are refused.
    base = cap.search_base(
        TEMPLATE,
        (
            "backends.0.threads=2",
            'backends.0.max_connections="none"',
            "backends.0.accept_queue=1",
            "run.duration_s=20",
        ),
        2,
        7,
    )
    with SerialExecutor() as executor:
        result = cap.search(
            base,
            "clients.users",
            [parse_slo("p95<1")],
            direction="largest",
            integer=True,
            start=64,
            executor=executor,
            use_analytic=False,
        )
    assert max(e.value for e in result.evaluations) == 64  # no doubling past a refusing load
    refusing = [e for e in result.evaluations if e.failed_share[0] > 0.3]
    assert refusing  # a third refused at 64 users ...
    for evaluation in result.evaluations:
        assert evaluation.metrics["response.p95"][2] < 1.0  # ... every load answered fast ...
    for evaluation in refusing:
        assert not evaluation.met and evaluation.over_budget  # ... and these do not meet it
    assert result.best is not None and result.best.failed_share[2] <= 0.01
