"""`tiersim import gatling` on a 229-s Gatling 3.8.3 run agrees with the run's own HTML report
(js/stats.json) within 0.5 % on throughput, mean and p95 (tests/fixtures/measurements/gatling/
checkout-3.8.3, a published run: see the README beside it).

Each side's definition (Gatling 3.8.3's gatling-charts: `LogFileReader.firstPass`,
`ResultsHolder`, `GeneralStatsBuffer`), compared like with like:

- throughput. Gatling's `meanNumberOfRequestsPerSecond.ok` is the OK count over
  `ceil((injectEnd - injectStart) / 1000)` whole seconds, where `injectStart` is the earliest
  REQUEST start or USER START and `injectEnd` the latest REQUEST end or USER record of the
  log. tiersim's `throughput` is the completions over (last completion - time zero), and its
  time zero for a Gatling log is that same `injectStart` (not the RUN record, the simulation's
  start, which here precedes the first injected event by 6.7 s); the import is run without
  `--start`, as a user would type it.
- mean. Gatling's `meanResponseTime.ok` is the mean of the OK requests' end - start (ms),
  rounded to the millisecond (Scala's `math.round`, half up); tiersim's `response.mean` is
  the same mean unrounded.
- p95. Gatling's `percentiles3.ok` (its default 95th) is `math.round` of a t-digest's
  quantile(0.95) (`AVLTreeDigest`, compression 100); tiersim's `response.p95` is the exact
  95th of the same samples, linearly interpolated between order statistics.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.importer import ImportOptions, import_files

pytest.importorskip("pandas")

RUN = (
    Path(__file__).resolve().parents[1] / "fixtures" / "measurements" / "gatling" / "checkout-3.8.3"
)
LOG, STATS, GLOBAL = (
    RUN / "simulation.log.gz",
    RUN / "js" / "stats.json",
    RUN / "js" / "global_stats.json",
)
BAR = 0.005  # issue 43's bar: within 0.5 % of the tool's own summary


def records() -> list[list[str]]:
    with gzip.open(LOG, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n").split("\t") for line in handle]


def inject_start_ms() -> int:
    """Gatling's `injectStart`: the earliest REQUEST start or USER START (3.8's text layout:
    REQUEST, groups, name, start, end, status, message; USER, scenario, START|END, time)."""
    starts = [int(f[3]) for f in records() if f[0] == "REQUEST"]
    starts += [int(f[3]) for f in records() if f[0] == "USER" and f[2] == "START"]
    return min(starts)


def imported_total(tmp_path, *options: str) -> dict[str, float]:
    out = tmp_path / "gatling.csv"
    result = CliRunner().invoke(main, ["import", "gatling", str(LOG), *options, "-o", str(out)])
    assert result.exit_code == 0, result.output
    with out.open() as handle:
        row = next(r for r in csv.DictReader(handle) if r["class"] == "total")
    return {
        key: float(value) for key, value in row.items() if key not in ("run", "class") and value
    }


def report_ok(name: str) -> float:
    return json.loads(STATS.read_text())["stats"][name]["ok"]


def test_without_start_the_import_agrees_with_the_reports_rate_mean_and_p95_within_half_a_percent(
    tmp_path,
):
    row = imported_total(tmp_path)
    assert row["count.completed"] == report_ok("numberOfRequests") == 4182
    # Gatling's KO counts both; tiersim keeps its timeouts (60 s, TLS handshake) apart
    ko = json.loads(STATS.read_text())["stats"]["numberOfRequests"]["ko"]
    assert row["count.errors"] + row["count.timed_out"] == ko == 2147
    assert row["throughput"] == pytest.approx(report_ok("meanNumberOfRequestsPerSecond"), rel=BAR)
    assert row["response.mean"] * 1000 == pytest.approx(report_ok("meanResponseTime"), rel=BAR)
    assert row["response.p95"] * 1000 == pytest.approx(report_ok("percentiles3"), rel=BAR)


def test_the_reports_figures_follow_from_the_import_by_gatlings_own_definitions(tmp_path):
    row = imported_total(tmp_path)
    # the rate: OK count over the injection's whole seconds (ceil), exactly as stats.json has it
    seconds = math.ceil(row["window_end_s"])
    assert seconds == 229
    assert row["count.completed"] / seconds == pytest.approx(
        report_ok("meanNumberOfRequestsPerSecond"), rel=1e-12
    )
    # the mean: rounded half up to the millisecond
    assert math.floor(row["response.mean"] * 1000 + 0.5) == report_ok("meanResponseTime")
    # the page's global figures (global_stats.json) are stats.json's
    assert json.loads(GLOBAL.read_text()) == json.loads(STATS.read_text())["stats"]


def test_time_zero_is_gatlings_first_injected_event_and_an_explicit_start_wins(tmp_path):
    """Without --start the window opens at Gatling's injectStart (here the first REQUEST
    start, 31 ms before the first USER START); --start at the RUN record, 6.716 s earlier,
    still wins: the same count and response times over a longer window, the rate 2.8 % low."""
    run_ms = next(int(f[3]) for f in records() if f[0] == "RUN")
    last_end_ms = max(int(f[4]) for f in records() if f[0] == "REQUEST")
    first_request_ms = min(int(f[3]) for f in records() if f[0] == "REQUEST")
    assert inject_start_ms() == first_request_ms
    default = imported_total(tmp_path)
    assert default == imported_total(tmp_path, "--start", f"{inject_start_ms() / 1000:.3f}")
    assert default["window_end_s"] == pytest.approx((last_end_ms - inject_start_ms()) / 1000)
    at_run = imported_total(tmp_path, "--start", f"{run_ms / 1000:.3f}")
    assert inject_start_ms() - run_ms == 6716
    assert at_run["count.completed"] == default["count.completed"]
    assert at_run["response.mean"] == default["response.mean"]
    assert at_run["window_end_s"] - default["window_end_s"] == pytest.approx(6.716, abs=1e-6)
    assert at_run["throughput"] == pytest.approx(at_run["count.completed"] / at_run["window_end_s"])
    low = at_run["throughput"] / report_ok("meanNumberOfRequestsPerSecond") - 1
    assert low == pytest.approx(-0.0282, abs=5e-5)


def test_each_requests_count_and_mean_match_the_reports_row():
    rows = {r["class"]: r for r in import_files("gatling", [str(LOG)], ImportOptions())}
    contents = json.loads(STATS.read_text())["contents"].values()
    with_ok = 0
    for entry in contents:
        stats, row = entry["stats"], rows[entry["name"]]
        assert row["count.completed"] == stats["numberOfRequests"]["ok"], entry["name"]
        ko = row["count.errors"] + row["count.timed_out"]
        assert ko == stats["numberOfRequests"]["ko"], entry["name"]
        if stats["numberOfRequests"]["ok"]:
            # Gatling rounds half up; a mean exactly between two milliseconds rounds up
            mean_ms = row["response.mean"] * 1000
            assert abs(mean_ms - stats["meanResponseTime"]["ok"]) <= 0.5 + 1e-9, entry["name"]
            with_ok += 1
    assert (len(rows) - 1, with_ok) == (64, 43)  # 21 requests failed every time


def test_the_reports_stats_json_imported_as_gatling_stats_agrees_with_the_log(tmp_path):
    log = imported_total(tmp_path)
    report = next(
        r
        for r in import_files("gatling-stats", [str(STATS)], ImportOptions())
        if r["class"] == "total"
    )
    assert report["window_end_s"] == 229.0
    for column in ("throughput", "response.mean", "response.p95"):
        assert log[column] == pytest.approx(report[column], rel=BAR), column
