"""The readers of load-test and database files on input no tool writes: JSON nested past the
decoder's depth, a quote left open that makes the rest of a CSV file one field, a date past the
31st, a response time of eons, a NaN or negative lock time.  Each is refused in one line naming
the file and the line, within the memory and time of `bounded` (before, each was an internal
error or a silently wrong figure)."""

from __future__ import annotations

import json

import pytest

from tests.hostile.bounded import read_bounded, refused

DEEP = "[" * 100_000 + "]" * 100_000  # far past the JSON decoder's recursion limit


def k6_point(second: int) -> str:
    tags = {"name": "home", "status": "200", "expected_response": "true"}
    data = {"time": f"2026-01-01T00:00:{second:02}Z", "value": 5, "tags": tags}
    return json.dumps({"type": "Point", "metric": "http_req_duration", "data": data})


@pytest.mark.parametrize(
    ("kind", "text", "line"),
    [
        (
            "k6",
            k6_point(0) + '\n{"type":"Point","metric":"http_req_duration","data":' + DEEP + "}\n",
            2,
        ),
        ("k6-summary", '{"metrics": ' + DEEP + "}", 1),
        ("otel", '{"resourceSpans": ' + DEEP + "}", 1),
        ("otel", '{"resourceSpans": []}\n{"resourceSpans": ' + DEEP + "}\n", 2),
        ("gatling-stats", '{"stats": ' + DEEP + "}", 1),
    ],
)
def test_json_nested_past_the_decoders_depth(tmp_path, kind, text, line):
    path = tmp_path / "run.json"
    path.write_text(text)
    refused(kind, path, "MeasurementError", f"{path}:{line}: ", "JSON nested a thousand levels")


SAMPLE = "1700000000000,5,home,true,OK\n"


@pytest.mark.parametrize(
    ("kind", "text", "line"),
    [
        # a responseMessage whose quote is never closed: the rest of the file is one field
        (
            "jtl",
            "timeStamp,elapsed,label,success,responseMessage\n"
            + SAMPLE * 3
            + '1700000000000,5,home,true,"Internal\n'
            + SAMPLE * 10_000,
            5,
        ),
        (
            "k6",
            "metric_name,timestamp,metric_value,expected_response,name,status\n"
            + 'http_req_duration,1700000000,5,true,"home'
            + "x" * 140_000
            + ",200\n",
            2,
        ),
        ("locust", 'Type,Name,Request Count\nGET,"/home' + "x" * 140_000 + ",5\n", 2),
    ],
)
def test_a_quote_left_open_in_a_csv_file(tmp_path, kind, text, line):
    path = tmp_path / "run.csv"
    path.write_text(text)
    refused(kind, path, "MeasurementError", f"{path}:{line}: ", "a quote left open?")


def test_a_postgres_log_whose_first_line_is_no_csv_record(tmp_path):
    path = tmp_path / "postgresql.log"
    path.write_text('2026-01-01 00:00:00.000 UTC,"postgres' + "x" * 140_000 + "\n")
    refused("pg-log", path, "MeasurementError", f"{path}:1: ", "expected a PostgreSQL log")


LOG_FORMAT = '%h %l %u %t "%r" %>s %b %D'


def access_log(tmp_path, line: str):
    path = tmp_path / "access.log"
    good = '10.0.0.1 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 2326 5000\n'
    path.write_text(good + line)
    return path


def test_an_access_log_date_past_the_month(tmp_path):
    path = access_log(
        tmp_path, '10.0.0.1 - - [99/Foo/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 2326 5000\n'
    )
    refused("access-log", path, "MeasurementError", f"{path}:2: ", "[99/Foo/2026:13:55:36")


def test_an_access_log_response_time_of_eons(tmp_path):
    """%D of 10^23 microseconds is 3 billion years: read as it was, the run's window ran to
    the year 3e9 and its throughput was 5e-17/s."""
    path = access_log(
        tmp_path,
        '10.0.0.1 - - [10/Oct/2026:13:55:37 +0000] "GET / HTTP/1.1" 200 2326 '
        "100000000000000000000000\n",
    )
    refused("access-log", path, "MeasurementError", f"{path}:2: ", "(over a week)")


SLOW_ENTRY = (
    "# Time: 2026-01-01T00:00:00Z\n"
    "# Query_time: {query}  Lock_time: {lock} Rows_sent: 1  Rows_examined: 1\n"
    "SELECT 1;\n"
)


@pytest.mark.parametrize(
    ("query", "lock", "said"),
    [
        ("0.5", "-1", "Lock_time = '-1'; expected seconds >= 0"),
        ("NaN", "0", "Query_time = 'NaN'; expected seconds >= 0"),
        ("inf", "0", "Query_time = 'inf'; expected seconds >= 0"),
    ],
)
def test_a_slow_log_time_that_is_no_duration(tmp_path, query, lock, said):
    """Summed as they were, a negative lock time made the statement's lock wait -5 s."""
    path = tmp_path / "slow.log"
    path.write_text(
        SLOW_ENTRY.format(query="0.1", lock="0") + SLOW_ENTRY.format(query=query, lock=lock)
    )
    refused("mysql-slow", path, "MeasurementError", f"{path}:5: ", said)


def test_a_slow_log_rows_affected_that_is_no_count(tmp_path):
    path = tmp_path / "slow.log"
    entry = SLOW_ENTRY.format(query="0.1", lock="0")
    path.write_text(entry.replace("SELECT 1;", "# Rows_affected: many\nUPDATE t SET a = 1;"))
    refused("mysql-slow", path, "MeasurementError", f"{path}:3: ", "Rows_affected = 'many'")


@pytest.mark.parametrize("window_s", ["1e-300", "5e-324"])
def test_windows_too_small_for_the_run(tmp_path, window_s):
    """A row per window and class: 10^302 windows filled memory (a MemoryError, or the machine)."""
    path = tmp_path / "run.jtl"
    path.write_text(
        "timeStamp,elapsed,label,success\n"
        + "".join(f"{1_700_000_000_000 + 1000 * i},5,home,true\n" for i in range(60))
    )
    line = refused("jtl-windows", path, "MeasurementError", WINDOW_S=window_s, at="--window")
    assert "windows over the run's 59.005 s; expected at most 100,000 windows" in line


def test_a_small_file_is_read_within_a_small_address_space(tmp_path):
    """A reader reserved its limit, not the file's size: `tiersim plot` of a 12-byte CSV took
    1 GiB of address space at once (a MemoryError under a limit the bar allows)."""
    import subprocess
    import sys

    from tests.hostile.bounded import ROOT, _limit_memory

    path = tmp_path / "not-a-timeseries.csv"
    path.write_text("a,b\n1,2\n")
    done = subprocess.run(
        [sys.executable, "-m", "sim.cli", "plot", str(path), "-o", str(tmp_path / "plot.html")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        preexec_fn=_limit_memory,
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith(f"error: {path}: not a `tiersim run --timeseries` file"), (
        done.stderr
    )


def test_a_stray_sample_years_away_is_refused_not_averaged_over(tmp_path):
    """One k6 point dated 9999 among a minute's: the run became 8,000 years long and its
    throughput 10^-10/s, without a word."""
    path = tmp_path / "run.json"
    points = [k6_point(second) for second in range(30)]
    points.append(k6_point(0).replace("2026-01-01T00:00:00Z", "9999-12-31T23:59:59Z"))
    path.write_text("\n".join(points) + "\n")
    line = refused("k6-import", path, "MeasurementError", "a sample started at 9999-12-31")
    assert "more than the limit of 2,678,400 seconds" in line
    assert "TIERSIM_MAX_RUN_SECONDS=" in line


def test_a_response_time_of_eons_in_a_jtl(tmp_path):
    path = tmp_path / "run.jtl"
    samples = [f"{1_700_000_000_000 + 1000 * i},5,home,true\n" for i in range(30)]
    samples.append("1700000031000,100000000000000000,home,true\n")  # 10^17 ms
    path.write_text("timeStamp,elapsed,label,success\n" + "".join(samples))
    line = refused("jtl-import", path, "MeasurementError", "a response time of 1e+14 s")
    # within a raised limit the same file is read (a genuine soak test beyond 31 days)
    assert line and read_bounded("jtl-import", path, TIERSIM_MAX_RUN_SECONDS="1e15").output == ""


def test_a_test_plan_nested_thousands_deep(tmp_path):
    """Controllers inside controllers under a thread group: the plan's walk recursed past
    Python's limit (an internal RecursionError)."""
    controllers = '<GenericController testname="c" enabled="true"/><hashTree>' * 5000
    path = tmp_path / "plan.jmx"
    path.write_text(
        '<?xml version="1.0"?>\n<jmeterTestPlan version="1.2"><hashTree><TestPlan testname="t"/>'
        '<hashTree><ThreadGroup testname="g" enabled="true"><stringProp '
        'name="ThreadGroup.num_threads">10</stringProp></ThreadGroup><hashTree>'
        + controllers
        + "</hashTree>" * 5000
        + "</hashTree></hashTree></hashTree></jmeterTestPlan>\n"
    )
    refused("jmx", path, "MeasurementError", f"{path}:2: ", "elements nested more than 200 deep")


def test_a_calibration_file_nested_thousands_deep(tmp_path):
    """`run --calibration` on JSON past the decoder's depth: one line, not an internal error."""
    from click.testing import CliRunner

    from sim.cli import main

    path = tmp_path / "cal.json"
    path.write_text('{"parameters": ' + DEEP + "}")
    result = CliRunner().invoke(main, ["run", "models/demo.toml", "--calibration", str(path)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    message = result.output.strip()
    assert "nested a thousand levels" in message and str(path) in message
    assert "\n" not in message
