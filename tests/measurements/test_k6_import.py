"""`tiersim import k6` and `k6-summary` against the files k6 v1.1.0 wrote of one run
(tests/fixtures/measurements/k6, see its README): the samples' figures agree with k6's own
end-of-test summary of the same run."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.errors import MeasurementError
from sim.measurements.importer import ImportOptions, ImportUsageError, import_files
from sim.measurements.windows import Cut

pytest.importorskip("pandas")

K6 = Path(__file__).resolve().parents[1] / "fixtures" / "measurements" / "k6"
NDJSON, CSV = K6 / "run.ndjson.gz", K6 / "run.csv.gz"
SUMMARY, EXPORT = K6 / "summary.json", K6 / "summary-export.json"
AGREEMENT = 0.005  # the bar: within 0.5 % of the tool's own summary


def total(rows):
    return next(r for r in rows if r["class"] == "total")


def duration_points():
    """The http_req_duration points, read with json alone."""
    with gzip.open(NDJSON, "rt") as handle:
        records = [json.loads(line) for line in handle]
    return [
        r["data"]
        for r in records
        if r.get("type") == "Point" and r["metric"] == "http_req_duration"
    ]


def summary_figures():
    """k6's own summary of the run (handleSummary): successes, run time, successful times."""
    metrics = json.loads(SUMMARY.read_text())["metrics"]
    seconds = json.loads(SUMMARY.read_text())["state"]["testRunDurationMs"] / 1000.0
    successes = metrics["http_req_failed"]["values"]["fails"]
    times = metrics["http_req_duration{expected_response:true}"]["values"]
    return successes, seconds, times


@pytest.mark.parametrize("path", [NDJSON, CSV], ids=["ndjson", "csv"])
def test_samples_agree_with_k6s_end_of_test_summary(path):
    row = total(import_files("k6", [str(path)], ImportOptions()))
    successes, seconds, times = summary_figures()
    assert row["count.completed"] == successes == 1294
    assert row["count.errors"] == 59 and row["count.error.5xx"] == 59
    # k6's trend percentiles interpolate between order statistics as numpy's default does
    assert row["response.mean"] == pytest.approx(times["avg"] / 1000.0, rel=1e-6)
    assert row["response.p95"] == pytest.approx(times["p(95)"] / 1000.0, rel=1e-6)
    assert row["response.p90"] == pytest.approx(times["p(90)"] / 1000.0, rel=1e-6)
    assert row["response.p50"] == pytest.approx(times["med"] / 1000.0, rel=1e-6)
    # the table's span runs from the first request's start to the last completion, k6's
    # from the test's start to its end: the throughputs differ by that margin only
    assert row["throughput"] == pytest.approx(successes / seconds, rel=AGREEMENT)


@pytest.mark.parametrize("path", [SUMMARY, EXPORT], ids=["handleSummary", "summary-export"])
def test_summary_files_give_the_successes_figures(path):
    rows = import_files("k6-summary", [str(path)], ImportOptions())
    row = total(rows)
    successes, seconds, times = summary_figures()
    assert len(rows) == 1
    assert row["count.completed"] == successes and row["count.errors"] == 59
    assert row["window_end_s"] == pytest.approx(seconds, rel=1e-9)
    assert row["throughput"] == pytest.approx(successes / seconds)
    assert row["response.p95"] == pytest.approx(times["p(95)"] / 1000.0)
    assert math.isnan(row["response.p99"])  # k6's default summaryTrendStats has no p(99)


def test_ndjson_and_csv_of_one_run_give_one_table():
    from_json = import_files("k6", [str(NDJSON)], ImportOptions(window_s=10.0))
    from_csv = import_files("k6", [str(CSV)], ImportOptions(window_s=10.0))
    assert [r["class"] for r in from_json] == [r["class"] for r in from_csv]
    for a, b in zip(from_json, from_csv):
        assert a["count.completed"] == b["count.completed"]
        # the CSV's unix_milli timestamps are the NDJSON's nanoseconds cut to milliseconds
        assert a["response.mean"] == pytest.approx(b["response.mean"], rel=1e-6, nan_ok=True)


def test_a_sample_starts_its_duration_before_k6s_timestamp_and_cuts_count_completions():
    points = duration_points()
    from datetime import datetime

    ends = np.array([datetime.fromisoformat(p["time"][:26] + "+00:00").timestamp() for p in points])
    starts = ends - np.array([p["value"] for p in points]) / 1000.0
    zero = starts.min()
    ok = np.array([p["tags"]["expected_response"] == "true" for p in points])
    inside = ok & (ends - zero >= 10.0) & (ends - zero <= 30.0)
    row = total(
        import_files("k6", [str(NDJSON)], ImportOptions(cut=Cut(warmup_s=10.0, until_s=30.0)))
    )
    assert row["count.completed"] == inside.sum()
    assert row["window_start_s"] == 10.0 and row["window_end_s"] == 30.0
    assert row["throughput"] == pytest.approx(inside.sum() / 20.0)


def test_classes_are_k6s_name_tags():
    rows = import_files("k6", [str(NDJSON)], ImportOptions())
    names = {p["tags"]["name"] for p in duration_points()}
    assert (
        {r["class"] for r in rows} == names | {"total"} == {"catalog", "search", "order", "total"}
    )
    order = next(r for r in rows if r["class"] == "order")
    assert order["count.errors"] == 59  # the service fails only /order


def test_a_summary_given_as_samples_is_named(tmp_path):
    with pytest.raises(MeasurementError, match="import it as k6-summary"):
        import_files("k6", [str(SUMMARY)], ImportOptions())
    with pytest.raises(ImportUsageError, match="one aggregate"):
        import_files("k6-summary", [str(SUMMARY)], ImportOptions(window_s=5.0))


def test_a_truncated_ndjson_line_is_named_with_its_number(tmp_path):
    with gzip.open(NDJSON, "rt") as handle:
        lines = handle.read().splitlines()[:40]
    lines[-1] = lines[-1][:25]
    broken = tmp_path / "cut.ndjson"
    broken.write_text("\n".join(lines) + "\n")
    with pytest.raises(MeasurementError, match=r"cut.ndjson:40: not a JSON line"):
        import_files("k6", [str(broken)], ImportOptions())


def test_cli_imports_k6_and_reports_errors_on_one_line(tmp_path):
    out = tmp_path / "k6.csv"
    result = CliRunner().invoke(main, ["import", "k6", str(NDJSON), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "classes catalog, order, search" in result.output
    result = CliRunner().invoke(main, ["import", "k6", str(SUMMARY), "-o", str(out)])
    assert result.exit_code == 3
    assert len(result.output.strip().splitlines()) == 1 and "summary.json:1:" in result.output


def test_estimate_reads_a_k6_table_whose_runs_name_no_users(tmp_path):
    out = tmp_path / "k6.csv"
    assert CliRunner().invoke(main, ["import", "k6", str(NDJSON), "-o", str(out)]).exit_code == 0
    result = CliRunner().invoke(main, ["estimate", str(out), "--json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)["runs"][0]
    assert run["users"] is None and run["think_s"] is None and run["completed"] == 1294


def test_a_time_without_its_zone_is_refused_not_read_as_local_time(tmp_path):
    with gzip.open(NDJSON, "rt") as handle:
        lines = handle.read().splitlines()
    first = next(
        i for i, line in enumerate(lines) if '"Point"' in line and "http_req_duration" in line
    )
    lines[first] = lines[first].replace('Z"', '"', 1)
    edited = tmp_path / "local.ndjson"
    edited.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        MeasurementError, match=rf"local.ndjson:{first + 1}: time = .*with its zone"
    ):
        import_files("k6", [str(edited)], ImportOptions())
