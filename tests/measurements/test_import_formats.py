"""Importers against files the real tools wrote (tests/fixtures/measurements, see its README).

Each expected figure is counted from the raw file by other means (the csv module, a regex,
the tool's own summary) rather than by the importer under test.
"""

from __future__ import annotations

import csv
import itertools
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from sim.measurements.classes import ClassMap
from sim.measurements.importer import ImportOptions, import_files

pytest.importorskip("pandas")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "measurements"
JTL = FIXTURES / "jmeter" / "run.jtl"
LOG_FORMAT_US = '%h %l %u %t "%r" %>s %b %D'
LOG_FORMAT_MS = '%h %l %u %t "%r" %>s %b %{ms}T'


def by_class(rows, run=None):
    """Rows summed over windows, per class: counts add up (successes and failures)."""
    totals: Counter = Counter()
    errors: Counter = Counter()
    for row in rows:
        if run is None or row["run"] == run:
            failed = row.get("count.errors", 0) + row.get("count.timed_out", 0)
            totals[row["class"]] += row["count.completed"] + failed
            errors[row["class"]] += failed
    return totals, errors


def jtl_records():
    with JTL.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_jtl_csv_counts_errors_and_percentiles_match_the_raw_file():
    records = jtl_records()
    rows = import_files("jtl", [str(JTL)], ImportOptions())
    totals, errors = by_class(rows)
    assert totals == Counter({**Counter(r["label"] for r in records), "total": len(records)})
    assert errors["profile"] == sum(r["success"] == "false" for r in records) == 50
    total = next(r for r in rows if r["class"] == "total")
    assert total["count.error.4xx"] == 50
    assert total["count.timed_out"] == 0
    # a failed sample is never a response: the statistics are the successes'
    succeeded = [r for r in records if r["success"] == "true"]
    assert total["count.completed"] == len(succeeded) == 449
    elapsed = np.array([float(r["elapsed"]) for r in succeeded]) / 1000.0
    assert total["response.p95"] == pytest.approx(np.percentile(elapsed, 95))
    assert total["response.mean"] == pytest.approx(elapsed.mean())
    start = min(float(r["timeStamp"]) for r in records) / 1000.0
    end = max(float(r["timeStamp"]) + float(r["elapsed"]) for r in records) / 1000.0
    assert total["window_end_s"] == pytest.approx(end - start)
    assert total["throughput"] == pytest.approx(len(succeeded) / (end - start))
    assert 2 <= total["users"] <= 6  # allThreads: 2 static threads plus 1..4 search threads


def test_windows_tile_the_run_and_conserve_samples():
    rows = import_files("jtl", [str(JTL)], ImportOptions(window_s=3.0))
    windows = sorted({(r["window_start_s"], r["window_end_s"]) for r in rows})
    assert windows[0][0] == 0.0
    assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))
    assert all(high - low <= 3.0 + 1e-9 for low, high in windows)
    total_rows = [r for r in rows if r["class"] == "total"]
    assert sum(r["count.completed"] for r in total_rows) == 449  # the successes
    assert sum(r["count.completed"] + r["count.errors"] for r in total_rows) == 499
    # every class appears in every window, with zeros where it had no sample
    assert Counter(r["class"] for r in rows) == {
        c: len(windows) for c in ("download", "home", "profile", "search", "total")
    }


def test_jtl_xml_and_url_patterns():
    path = FIXTURES / "jmeter" / "run.xml"
    text = path.read_text()
    classes = ClassMap.parse("url", ["cgi-bin=dynamic", r"\.(html|bin)$=static"])
    rows = import_files("jtl", [str(path)], ImportOptions(classes=classes))
    totals, errors = by_class(rows)
    assert totals["total"] == len(re.findall(r"<httpSample ", text)) == 99
    assert totals["dynamic"] == len(re.findall(r'lb="search"', text))
    assert totals["other"] == len(re.findall(r'lb="profile"', text))  # /missing matches neither
    assert errors["other"] == len(re.findall(r's="false"', text))


def test_access_logs_agree_with_jmeter_on_the_same_run():
    """Apache logged the requests of the JMeter run: the same counts per URL."""
    jmeter = Counter(r["URL"].removeprefix("http://127.0.0.1:8089") for r in jtl_records())
    for name, log_format in (("access_us.log", LOG_FORMAT_US), ("access_ms.log", LOG_FORMAT_MS)):
        rows = import_files(
            "access-log", [str(FIXTURES / "apache" / name)], ImportOptions(log_format=log_format)
        )
        totals, errors = by_class(rows)
        del totals["total"]
        assert totals == jmeter
        assert errors["/missing"] == 50
    # the successes' times: a failed request (status 4xx/5xx) is never a response
    microseconds = [
        int(line.rsplit(" ", 1)[1])
        for line in (FIXTURES / "apache" / "access_us.log").read_text().splitlines()
        if line.split('" ', 1)[1].split(" ", 1)[0] < "400"
    ]
    assert len(microseconds) == 449
    rows = import_files(
        "access-log",
        [str(FIXTURES / "apache" / "access_us.log")],
        ImportOptions(log_format=LOG_FORMAT_US),
    )
    total = next(r for r in rows if r["class"] == "total")
    assert total["response.mean"] == pytest.approx(np.mean(microseconds) / 1e6)


def test_ab_report_keeps_abs_own_figures():
    rows = import_files("ab", [str(FIXTURES / "ab" / "ab_search.txt")], ImportOptions())
    row = next(r for r in rows if r["class"] == "/cgi-bin/search.sh")
    assert row["users"] == 3 and row["count.completed"] == 150 and row["count.errors"] == 0
    assert row["throughput"] == 200.47 and row["window_end_s"] == 0.748
    assert (row["response.mean"], row["response.p50"], row["response.p95"]) == (0.015, 0.015, 0.024)
    assert math.isnan(row["arrival_rate_per_s"])
    missing = import_files("ab", [str(FIXTURES / "ab" / "ab_missing.txt")], ImportOptions())
    assert missing[0]["count.errors"] == missing[0]["count.error.non2xx"] == 50


def test_ab_gnuplot_files_joined_into_one_run_by_time():
    files = [str(FIXTURES / "ab" / "ab_home.tsv"), str(FIXTURES / "ab" / "ab_search.tsv")]
    rows = import_files("ab-gnuplot", files, ImportOptions(run="mix"))
    totals, _ = by_class(rows)
    assert totals == Counter({"ab_home": 400, "ab_search": 150, "total": 550})
    assert {r["run"] for r in rows} == {"mix"}
    assert all("count.errors" not in r for r in rows)  # ab -g does not say: left empty


def test_locust_history_windows_add_up_to_the_stats_file():
    stats = {
        r["Name"]: r for r in csv.DictReader((FIXTURES / "locust" / "locust_stats.csv").open())
    }
    rows = import_files(
        "locust",
        [str(FIXTURES / "locust" / "locust_stats_history.csv")],
        ImportOptions(window_s=5.0),
    )
    totals, errors = by_class(rows)
    for name in ("home", "profile", "search"):
        assert totals[name] == int(stats[name]["Request Count"])
        assert errors[name] == int(stats[name]["Failure Count"])
    assert all(math.isnan(r["response.p95"]) for r in rows)  # Locust's are another window's
    whole = import_files("locust", [str(FIXTURES / "locust" / "locust_stats.csv")], ImportOptions())
    search = next(r for r in whole if r["class"] == "search")
    assert search["response.p95"] == float(stats["search"]["95%"]) / 1000.0
    assert search["response.mean"] == pytest.approx(
        float(stats["search"]["Average Response Time"]) / 1000.0
    )


def test_sar_utilisation_is_aligned_to_the_windows():
    sadf = FIXTURES / "sar" / "jmeter_run.sadf.csv"
    rows = import_files("jtl", [str(JTL)], ImportOptions(window_s=5.0, utilisation=[str(sadf)]))
    idle = [float(line.split(";")[-1]) for line in sadf.read_text().splitlines()[1:]]
    values = [r["vm.cpu.utilization"] for r in rows if r["class"] == "total"]
    assert all(0.0 <= v <= 1.0 for v in values)
    low, high = 1 - max(idle) / 100, 1 - min(idle) / 100
    assert all(low - 1e-12 <= v <= high + 1e-12 for v in values)
    per_window = {}
    for row in rows:  # the same value on every class row of a window
        per_window.setdefault(row["window_start_s"], set()).add(row["vm.cpu.utilization"])
    assert all(len(v) == 1 for v in per_window.values())


def test_plain_utilisation_csv_is_time_weighted(tmp_path):
    log = tmp_path / "two.jtl"
    log.write_text(
        "timeStamp,elapsed,label,success\n1000000,1000,a,true\n1009000,1000,a,true\n"
    )  # a run from t = 1000 s to 1010 s
    cpu = tmp_path / "cpu.csv"
    cpu.write_text(
        "time,host,cpu\n995,db,0.9\n1004,db,0.2\n1010,db,0.5\n"
        "1970-01-01T00:16:40+00:00,app,0.0\n1970-01-01T00:16:50+00:00,app,0.4\n"
    )
    rows = import_files("jtl", [str(log)], ImportOptions(window_s=5.0, utilisation=[str(cpu)]))
    first, second = (r for r in rows if r["class"] == "total")
    # [1000, 1005): 4 s of the interval (995, 1004] at 0.2, then 1 s of (1004, 1010] at 0.5
    assert first["db.cpu.utilization"] == pytest.approx((4 * 0.2 + 1 * 0.5) / 5)
    assert second["db.cpu.utilization"] == pytest.approx(0.5)
    assert first["app.cpu.utilization"] == second["app.cpu.utilization"] == pytest.approx(0.4)
