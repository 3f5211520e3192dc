"""`tiersim import gatling` and `gatling-stats` against a Gatling 3.9.5 run's simulation.log
and its HTML report's js/stats.json (tests/fixtures/measurements/gatling, see its README).

Gatling's report rounds its figures: response times to a whole millisecond, the run's
length up to whole seconds (its requests per second are count / the seconds from its first
injected event to its last record, rounded up). The import keeps the log's exact figures, so
the agreement is checked against Gatling's own rounding: the report's figure is the log's
figure rounded as Gatling rounds it. (test_gatling_report_agreement.py checks a longer run
within 0.5 %.)
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.classes import ClassMap
from sim.measurements.errors import MeasurementError
from sim.measurements.formats.gatling import error_kind
from sim.measurements.importer import ImportOptions, import_files
from sim.measurements.windows import Cut

pytest.importorskip("pandas")

GATLING = Path(__file__).resolve().parents[1] / "fixtures" / "measurements" / "gatling"
LOG, STATS = GATLING / "simulation.log", GATLING / "js" / "stats.json"


def report():
    return json.loads(STATS.read_text())


def log_requests():
    """(name, start ms, end ms, status) of each REQUEST line, split by hand."""
    lines = [line.rstrip("\n").split("\t") for line in LOG.open()]
    return [(f[2], int(f[3]), int(f[4]), f[5]) for f in lines if f[0] == "REQUEST"]


def injection_ms() -> tuple[int, int]:
    """Gatling's (injectStart, injectEnd): the first REQUEST start or USER START and the last
    REQUEST end or USER record, split by hand."""
    fields = [line.rstrip("\n").split("\t") for line in LOG.open()]
    starts = [int(f[3]) for f in fields if f[0] == "REQUEST"]
    starts += [int(f[3]) for f in fields if f[0] == "USER" and f[2] == "START"]
    ends = [int(f[4]) for f in fields if f[0] == "REQUEST"]
    ends += [int(f[3]) for f in fields if f[0] == "USER"]
    return min(starts), max(ends)


def injection_whole_seconds() -> int:
    start_ms, end_ms = injection_ms()
    return math.ceil((end_ms - start_ms) / 1000)


def test_the_log_gives_the_reports_figures_as_gatling_rounds_them():
    rows = import_files("gatling", [str(LOG)], ImportOptions())
    stats = report()
    for row in rows:
        entry = (
            stats["stats"]
            if row["class"] == "total"
            else next(c["stats"] for c in stats["contents"].values() if c["name"] == row["class"])
        )
        assert row["count.completed"] == entry["numberOfRequests"]["ok"]
        assert round(row["response.mean"] * 1000) == entry["meanResponseTime"]["ok"]
        # Gatling's 95th is a t-digest's, rounded: within a millisecond of the exact one
        assert abs(row["response.p95"] * 1000 - entry["percentiles3"]["ok"]) <= 1.0
        # its rate is count / ceil of the injection's seconds (gatling-charts' ResultsHolder):
        # from the first REQUEST start or USER START to the last REQUEST end or USER record
        rate = entry["meanNumberOfRequestsPerSecond"]["ok"]
        assert row["count.completed"] / injection_whole_seconds() == pytest.approx(rate)


def test_time_zero_is_gatlings_first_injected_event_and_the_response_time_is_end_minus_start():
    """Here the first USER START, 18 ms before the first request and 750 ms after the RUN
    record: time zero is neither the simulation's start nor the first sample's."""
    requests = log_requests()
    rows = import_files("gatling", [str(LOG)], ImportOptions())
    row = next(r for r in rows if r["class"] == "total")
    zero_ms, _ = injection_ms()
    assert zero_ms == 1767826090867  # the first USER START
    assert zero_ms < min(s for _, s, _, _ in requests)
    assert row["window_end_s"] == pytest.approx(
        (max(e for _, _, e, _ in requests) - zero_ms) / 1000
    )
    elapsed = np.array([e - s for _, s, e, _ in requests]) / 1000.0
    assert row["response.mean"] == pytest.approx(elapsed.mean())
    assert row["response.p95"] == pytest.approx(np.percentile(elapsed, 95))
    # --warmup counts from there too, as Gatling's own time axis does (its buckets start there)
    cut = import_files("gatling", [str(LOG)], ImportOptions(cut=Cut(warmup_s=5.0)))
    done = np.array([(e - zero_ms) / 1000 for _, _, e, _ in requests])
    assert next(r for r in cut if r["class"] == "total")["count.completed"] == (done >= 5.0).sum()


def test_a_groups_start_counts_as_gatlings_first_pass_counts_it(tmp_path):
    """A GROUP record's start is an injected event for Gatling (`updateInjectStart`); a group
    entered before any other record here (3.8's layout: path, start, end, cumulated, status)
    moves time zero to its start."""
    zero_ms, _ = injection_ms()
    group = f"GROUP\tcheckout\t{zero_ms - 40}\t{zero_ms + 900}\t39\tOK"
    lines = LOG.read_text().splitlines()
    grouped = tmp_path / "simulation.log"
    grouped.write_text("\n".join([*lines, group]) + "\n")
    plain, with_group = (
        next(
            r
            for r in import_files("gatling", [str(path)], ImportOptions())
            if r["class"] == "total"
        )
        for path in (LOG, grouped)
    )
    assert with_group["window_end_s"] - plain["window_end_s"] == pytest.approx(0.040, abs=1e-6)
    assert with_group["count.completed"] == plain["count.completed"]


@pytest.mark.parametrize(
    "record, expected",
    [
        ("USER\tAdvanced API Load Test\tSTART", "a USER line without START|END <time ms>"),
        ("USER\tAdvanced API Load Test\tBEGIN\t1767826090867", "a USER line without"),
        ("GROUP\tcheckout\t1767826090867\t39\tOK", "a GROUP line without <start ms> <end ms>"),
    ],
)
def test_a_user_or_group_line_without_its_times_is_named(tmp_path, record, expected):
    lines = LOG.read_text().splitlines()
    lines[5] = record
    broken = tmp_path / "simulation.log"
    broken.write_text("\n".join(lines) + "\n")
    with pytest.raises(MeasurementError, match=rf"simulation.log:6: {expected}"):
        import_files("gatling", [str(broken)], ImportOptions())


def test_the_reports_stats_json_is_read_as_its_successes_figures():
    rows = import_files("gatling-stats", [str(STATS)], ImportOptions())
    row = next(r for r in rows if r["class"] == "total")
    assert row["count.completed"] == 60 and row["count.errors"] == 0
    assert row["throughput"] == 5.0 and row["window_end_s"] == 12.0
    assert row["response.mean"] == 0.022 and row["response.p95"] == 0.034
    assert math.isnan(row["response.p90"])  # Gatling's 2nd percentile is the 75th
    joined = import_files(
        "gatling-stats",
        [str(STATS)],
        ImportOptions(classes=ClassMap.parse("label", ["^0[12]_=read"])),
    )
    read = next(r for r in joined if r["class"] == "read")
    assert read["count.completed"] == 40 and read["response.mean"] == pytest.approx(0.023)
    assert math.isnan(read["response.p95"])  # percentiles of two requests cannot be combined


def test_a_binary_log_is_read_by_its_first_bytes_and_utf16_text_is_not_taken_for_one(tmp_path):
    """Gatling 3.13+'s binary log starts with the RUN header 0 and the int32 length of the
    version (test_gatling_binary.py reads it); the text log as UTF-16BE without a byte-order
    mark starts with 0 too, then a letter, and is named as UTF-16 text."""
    binary = GATLING / "binary" / "simulation.log"
    assert binary.read_bytes()[:4] == b"\x00\x00\x00\x00"
    row = next(
        r for r in import_files("gatling", [str(binary)], ImportOptions()) if r["class"] == "total"
    )
    assert row["count.completed"] == 4
    wide = tmp_path / "simulation.log"
    wide.write_bytes(LOG.read_text().encode("utf-16-be"))
    with pytest.raises(MeasurementError, match=r"simulation.log:1: UTF-16BE text"):
        import_files("gatling", [str(wide)], ImportOptions())


@pytest.mark.parametrize(
    "message, kind",
    [
        ("status.find.in(200,201,202,203,204,205,206,207,208,209,304), found 503", "5xx"),
        ("status.find.is(200), but actually found 404", "4xx"),
        (
            "i.n.h.s.TimeoutException: Request timeout to localhost/127.0.0.1:8080 after 60000 ms",
            "timeout",
        ),
        ("j.n.ConnectException: Connection refused: localhost/127.0.0.1:8080", "connect"),
        ("jsonPath($.id).find.exists, found nothing", "other"),
    ],
)
def test_a_kos_message_gives_its_kind(message, kind):
    assert error_kind(message) == kind


def test_a_line_that_is_not_a_record_is_named(tmp_path):
    lines = LOG.read_text().splitlines()
    lines[10] = "REQUEST\t\tbroken\t1767826091361"
    broken = tmp_path / "simulation.log"
    broken.write_text("\n".join(lines) + "\n")
    with pytest.raises(MeasurementError, match=r"simulation.log:11: a REQUEST line without"):
        import_files("gatling", [str(broken)], ImportOptions())


def test_cli_imports_the_log_and_names_a_report_given_as_a_log(tmp_path):
    out = tmp_path / "g.csv"
    result = CliRunner().invoke(main, ["import", "gatling", str(LOG), "-o", str(out)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["import", "gatling", str(STATS), "-o", str(out)])
    assert result.exit_code == 3 and "gatling-stats" in result.output
    assert len(result.output.strip().splitlines()) == 1
    result = CliRunner().invoke(main, ["import", "gatling-stats", str(LOG), "-o", str(out)])
    assert result.exit_code == 3 and "import it as gatling" in result.output


def before_36(fields: list[str]) -> list[str]:
    """A USER record as Gatling 2.x to 3.3 write it: user id, event, session start, time."""
    return [fields[0], fields[1], "7", fields[2], fields[3], fields[3]]


def test_every_text_layout_of_a_request_line_is_read(tmp_path):
    """The fixture's lines rewritten in the layouts of other Gatling versions (the writers'
    field orders: 3.0-3.3 with the user id, 2.x with scenario and user id; their USER records
    with the user id and the session's start before the time) and with a request named like a
    number: the same figures, from the same time zero."""
    lines = LOG.read_text().splitlines()
    layouts = {
        "3.0": (lambda f: [f[0], "7", *f[1:]], before_36),
        "2.2": (lambda f: [f[0], "Advanced API Load Test", "7", *f[1:]], before_36),
        "named 404": (lambda f: [f[0], f[1], "404", *f[3:]], None),
    }
    expected = next(
        r for r in import_files("gatling", [str(LOG)], ImportOptions()) if r["class"] == "total"
    )
    for name, (request, user) in layouts.items():
        rewrite = {"REQUEST": request, "USER": user or (lambda f: f)}
        rewritten = [
            "\t".join(rewrite[line.split("\t")[0]](line.split("\t")))
            if line.startswith(("REQUEST", "USER"))
            else line
            for line in lines
        ]
        path = tmp_path / f"{name}.log"
        path.write_text("\n".join(rewritten) + "\n")
        row = next(
            r
            for r in import_files("gatling", [str(path)], ImportOptions())
            if r["class"] == "total"
        )
        assert row["count.completed"] == expected["count.completed"], name
        assert row["response.mean"] == pytest.approx(expected["response.mean"]), name
        assert row["window_end_s"] == pytest.approx(expected["window_end_s"]), name


def test_a_reports_stats_js_names_what_to_import_instead(tmp_path):
    """Gatling 3.13.5 and later write the report's figures only as JavaScript (js/stats.js,
    then the HTML page): the message points to stats.json where there is one and to the log."""
    script = tmp_path / "stats.js"
    script.write_text('var stats = {\n    type: "GROUP",\nname: "All Requests",\n}\n')
    with pytest.raises(MeasurementError, match=r"stats.js:1: not JSON") as caught:
        import_files("gatling-stats", [str(script)], ImportOptions())
    assert "Gatling 3.13.4 or earlier, or the run's simulation.log as gatling" in str(caught.value)
