"""The import as a planner has it: success-only statistics, the test's start as time zero, the
warm-up and cool-down cuts, gzip files, progress, and one line for each bad input.

The small JTL below is worked by hand (times in seconds after its first sample's start):

    sample  start  elapsed  end   outcome
    A       0.0    0.1      0.1   ok
    B       0.2    0.3      0.5   ok
    C       0.5    1.5      2.0   timeout (java.net.SocketTimeoutException)
    D       1.0    0.2      1.2   HTTP 500
    E       1.1    0.4      1.5   ok
    F       2.0    0.6      2.6   ok
    G       3.0    1.0      4.0   ok
"""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.errors import MeasurementError
from sim.measurements.importer import ImportOptions, ImportUsageError, import_files, parse_start
from sim.measurements.windows import Cut

pytest.importorskip("pandas")

T0_MS = 1_700_000_000_000
HEADER = "timeStamp,elapsed,label,responseCode,responseMessage,success,allThreads\n"
TIMEOUT = "Non HTTP response code: java.net.SocketTimeoutException,Read timed out"
SAMPLES = [  # start ms after T0, elapsed ms, code and message, success
    (0, 100, "200,OK", "true"),
    (200, 300, "200,OK", "true"),
    (500, 1500, TIMEOUT, "false"),
    (1000, 200, "500,Internal Server Error", "false"),
    (1100, 400, "200,OK", "true"),
    (2000, 600, "200,OK", "true"),
    (3000, 1000, "200,OK", "true"),
]
JTL = HEADER + "".join(f"{T0_MS + s},{e},work,{c},{ok},2\n" for s, e, c, ok in SAMPLES)


def total_rows(rows):
    return [r for r in rows if r["class"] == "total"]


def one(tmp_path, text=JTL, **options):
    path = tmp_path / "run.jtl"
    path.write_text(text)
    rows = total_rows(import_files("jtl", [str(path)], ImportOptions(**options)))
    return rows[0] if len(rows) == 1 else rows


def test_a_failed_sample_is_never_a_response(tmp_path):
    row = one(tmp_path)
    assert (row["window_start_s"], row["window_end_s"]) == (0.0, 4.0)
    assert row["count.completed"] == 5  # A B E F G
    assert row["count.timed_out"] == 1 and row["count.errors"] == 1
    assert row["count.error.timeout"] == 1 and row["count.error.5xx"] == 1
    assert row["throughput"] == pytest.approx(5 / 4.0)
    assert row["response.mean"] == pytest.approx((0.1 + 0.3 + 0.4 + 0.6 + 1.0) / 5)
    assert row["response.p50"] == pytest.approx(0.4)
    # h = 4 * 0.9 = 3.6 between 0.6 and 1.0
    assert row["response.p90"] == pytest.approx(0.6 + 0.6 * 0.4)
    assert row["arrival_rate_per_s"] == pytest.approx(7 / 4.0)


def test_start_sets_time_zero(tmp_path):
    row = one(tmp_path, cut=Cut(start_s=(T0_MS - 1000) / 1000))
    assert (row["window_start_s"], row["window_end_s"]) == (0.0, pytest.approx(5.0))
    assert row["throughput"] == pytest.approx(5 / 5.0)


def test_warmup_and_until_cut_by_completion(tmp_path):
    row = one(tmp_path, cut=Cut(warmup_s=0.3, until_s=2.6))
    assert (row["window_start_s"], row["window_end_s"]) == (0.3, 2.6)
    # completions in [0.3, 2.6]: B, D (500), E, C (timeout), F
    assert row["count.completed"] == 3
    assert row["count.errors"] == 1 and row["count.timed_out"] == 1
    assert row["throughput"] == pytest.approx(3 / 2.3)
    assert row["response.mean"] == pytest.approx((0.3 + 0.4 + 0.6) / 3)
    # starts in [0.3, 2.6]: C D E F
    assert row["arrival_rate_per_s"] == pytest.approx(4 / 2.3)


def test_windows_tile_the_observed_span(tmp_path):
    rows = one(tmp_path, window_s=1.0, cut=Cut(warmup_s=0.3, until_s=2.6))
    spans = [(r["window_start_s"], r["window_end_s"]) for r in rows]
    assert spans == [(0.3, 1.3), (1.3, 2.3), (2.3, 2.6)]
    assert [r["count.completed"] for r in rows] == [1, 1, 1]  # B, E, F
    assert [r["count.errors"] for r in rows] == [1, 0, 0]  # D
    assert [r["count.timed_out"] for r in rows] == [0, 1, 0]  # C
    assert rows[2]["throughput"] == pytest.approx(1 / 0.3)


def test_an_overload_run_reads_the_successes(tmp_path):
    """The issue's case: a quarter of the requests time out. Successes: 134/s taking 7.3 s;
    timeouts: 45/s abandoned after 20 s. All samples together would read about 179 req/s
    and 10.5 s; the table must read 134 req/s and 7.3 s."""
    lines = [HEADER]
    for i in range(134 * 80):
        lines.append(f"{T0_MS + round(i * 1000 / 134)},7300,work,200,OK,true,400\n")
    for i in range(45 * 80):
        lines.append(f"{T0_MS + round(i * 1000 / 45)},20000,work,{TIMEOUT},false,400\n")
    row = one(tmp_path, "".join(lines), cut=Cut(warmup_s=30.0, until_s=70.0))
    assert row["throughput"] == pytest.approx(134, rel=0.01)
    assert row["response.mean"] == pytest.approx(7.3)
    assert row["count.timed_out"] / 40.0 == pytest.approx(45, rel=0.02)
    assert row["count.errors"] == 0


def test_gzip_reads_as_the_plain_file(tmp_path):
    plain = tmp_path / "run.jtl"
    plain.write_text(JTL)
    packed = tmp_path / "packed.jtl.gz"
    packed.write_bytes(gzip.compress(JTL.encode()))
    a = import_files("jtl", [str(plain)], ImportOptions())
    b = import_files("jtl", [str(packed)], ImportOptions())
    import pandas as pd

    from sim.measurements.table import frame

    pd.testing.assert_frame_equal(frame(a).drop(columns="run"), frame(b).drop(columns="run"))
    assert b[0]["run"] == "packed"  # the run of packed.jtl.gz is named as packed.jtl's


def test_a_gzip_runs_name_is_the_plain_files_and_fits(tmp_path):
    """`--fit users2` names the run of users2.jtl.gz (it was `users2.jtl`, which no --fit found)."""
    (tmp_path / "users2.jtl.gz").write_bytes(gzip.compress(JTL.encode()))
    (tmp_path / "users9.jtl").write_text(JTL)
    (tmp_path / "other.JTL.GZ").write_bytes(gzip.compress(JTL.encode()))
    files = [str(tmp_path / n) for n in ("users2.jtl.gz", "users9.jtl", "other.JTL.GZ")]
    runs = [r["run"] for r in total_rows(import_files("jtl", files, ImportOptions()))]
    assert runs == ["users2", "users9", "other"]
    # two files of one stem keep their names apart, as plain files do
    (tmp_path / "users9.jtl.gz").write_bytes(gzip.compress(JTL.encode()))
    files = [str(tmp_path / n) for n in ("users9.jtl", "users9.jtl.gz")]
    runs = [r["run"] for r in total_rows(import_files("jtl", files, ImportOptions()))]
    assert runs == ["users9.jtl", "users9.jtl.gz"]


def test_progress_is_reported_while_a_big_file_is_read(tmp_path):
    lines = [HEADER] + [f"{T0_MS + i},10,work,200,OK,true,1\n" for i in range(45_000)]
    path = tmp_path / "big.jtl"
    path.write_text("".join(lines))
    calls = []
    import_files(
        "jtl", [str(path)], ImportOptions(progress=lambda *call: calls.append(call), window_s=5)
    )
    reading = [c for c in calls if c[0] == "reading big.jtl"]
    assert [c[1] for c in reading] == [2, 20_002, 40_002]  # every 20 000 samples, by line
    assert all(c[2] == 45_001 for c in reading)  # the header and 45 000 samples
    statistics = [c for c in calls if c[0] == "statistics of big"]
    assert statistics[-1][1:] == (statistics[-1][2], 10)  # 45 s in 5 s windows, all done


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1700000000", 1_700_000_000.0),
        ("1700000000500", 1_700_000_000.5),  # JMeter's milliseconds
        ("2023-11-14T22:13:20Z", 1_700_000_000.0),
        ("2023-11-14 23:13:20+01:00", 1_700_000_000.0),
    ],
)
def test_start_formats(text, expected):
    assert parse_start(text) == pytest.approx(expected)


# ------------------------------------------------------------------------------ bad input
def _one_line(exc, *words):
    message = str(exc)
    assert "\n" not in message
    for word in words:
        assert word in message, message


def test_no_success_names_the_file_and_the_field(tmp_path):
    failing = HEADER + "".join(
        f"{T0_MS + s},{e},work,{c},false,2\n" for s, e, c, _ in SAMPLES if c != "200,OK"
    )
    path = tmp_path / "down.jtl"
    path.write_text(failing)
    with pytest.raises(MeasurementError) as caught:
        import_files("jtl", [str(path)], ImportOptions())
    _one_line(caught.value, f"{path}: success: no sample succeeded", "1 5xx, 1 timeout")


def test_a_cut_that_leaves_no_sample(tmp_path):
    path = tmp_path / "run.jtl"
    path.write_text(JTL)
    with pytest.raises(MeasurementError) as caught:
        import_files("jtl", [str(path)], ImportOptions(cut=Cut(warmup_s=10.0)))
    _one_line(caught.value, f"{path}: --warmup 10 s leave no sample", "from 0.1 s to 4 s")
    with pytest.raises(MeasurementError) as caught:
        import_files("jtl", [str(path)], ImportOptions(cut=Cut(until_s=0.05)))
    _one_line(caught.value, "--until 0.05 s leave no sample")


def test_start_after_the_first_sample(tmp_path):
    path = tmp_path / "run.jtl"
    path.write_text(JTL)
    with pytest.raises(MeasurementError) as caught:
        import_files("jtl", [str(path)], ImportOptions(cut=Cut(start_s=T0_MS / 1000 + 2)))
    _one_line(caught.value, f"{path}: --start", "is 2 s after the first sample's start")


@pytest.mark.parametrize(
    ("format", "files", "options", "words"),
    [
        ("jtl", 1, {"cut": Cut(warmup_s=5.0, until_s=3.0)}, "--until 3 s is not after the warm"),
        ("jtl", 1, {"cut": Cut(until_s=0.0)}, "--until 0 s is not after the test's start"),
        ("jtl", 1, {"cut": Cut(warmup_s=-1.0)}, "--warmup -1: expected seconds >= 0"),
        ("jtl", 2, {"cut": Cut(start_s=1.7e9)}, "--start is one test's start"),
        ("ab", 1, {"cut": Cut(warmup_s=5.0)}, "a ab file is an aggregate"),
    ],
)
def test_cut_usage_errors(tmp_path, format, files, options, words):
    path = tmp_path / "run.jtl"
    path.write_text(JTL)
    with pytest.raises(ImportUsageError) as caught:
        import_files(format, [str(path)] * files, ImportOptions(**options))
    _one_line(caught.value, words)


def test_cli_cut_gzip_and_one_line_errors(tmp_path):
    packed = tmp_path / "run.jtl.gz"
    packed.write_bytes(gzip.compress(JTL.encode()))
    out = tmp_path / "t.csv"
    runner = CliRunner()
    args = ["import", "jtl", str(packed), "-o", str(out), "--warmup", "0.3", "--until", "2.6"]
    result = runner.invoke(main, [*args, "--start", str(T0_MS)])
    assert result.exit_code == 0, result.output
    import pandas as pd

    table = pd.read_csv(out)
    total = table[table["class"] == "total"].iloc[0]
    assert total["throughput"] == pytest.approx(3 / 2.3)
    assert math.isnan(total["response.p99.std_error"])  # 3 samples: far fewer than p99 needs
    for extra, code, words in [
        (["--until", "0.2"], 2, "--until 0.2 s is not after the warm-up's end"),
        (["--start", "2023-11-14 22:13:20"], 2, "has no zone"),
        (["--start", "yesterday"], 2, "expected an ISO 8601 time with its zone"),
    ]:
        result = runner.invoke(main, [*args, *extra])
        assert result.exit_code == code, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], result.stderr


def test_ab_report_with_failures_keeps_no_mixed_response_time():
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "measurements" / "ab"
    row = total_rows(import_files("ab", [str(fixture / "ab_missing.txt")], ImportOptions()))[0]
    assert row["count.errors"] > 0
    assert all(math.isnan(row[c]) for c in ("response.mean", "response.p50", "response.p95"))
    assert np.isfinite(row["throughput"])
