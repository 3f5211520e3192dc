"""Malformed measurement files: each gets one line naming the file, the line and what was
expected, never a traceback."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.errors import MeasurementError
from sim.measurements.importer import ImportOptions, import_files

pytest.importorskip("pandas")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "measurements"
HEADER = "timeStamp,elapsed,label,success\n"
GOOD_JTL = HEADER + "1700000000000,12,home,true\n1700000001000,15,home,true\n"
LOG_FORMAT = '%h %l %u %t "%r" %>s %b %D'
AB_REPORT = (FIXTURES / "ab" / "ab_search.txt").read_text()
XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<testResults version="1.2">\n'
SAMPLE = '<httpSample t="{t}" ts="1700000000000" s="true" lb="home" rc="200"/>\n'
LOCUST = (FIXTURES / "locust" / "locust_stats.csv").read_text()
HISTORY = (FIXTURES / "locust" / "locust_stats_history.csv").read_text().splitlines()
SADF = "# hostname;interval;timestamp;CPU;%user;%nice;%system;%iowait;%steal;%idle\n"

# (id, format, file content, options, line, words the message must hold)
CASES = [
    ("empty", "jtl", b"", {}, 1, "the file is empty; expected a JMeter"),
    ("binary", "jtl", b"\x00\x01\x02\xff" * 20, {}, 1, "binary data"),
    (
        "gzip-truncated",
        "jtl",
        gzip.compress(GOOD_JTL.encode())[:-12],
        {},
        None,
        "a damaged or truncated gzip file",
    ),
    ("gzip-empty", "jtl", gzip.compress(b""), {}, 1, "the compressed file is empty"),
    ("utf16", "jtl", GOOD_JTL.encode("utf-16"), {}, 1, "UTF-16 text"),
    (
        "latin1",
        "jtl",
        (HEADER + "1700000000000,12,caf\xe9,true\n").encode("latin-1"),
        {},
        2,
        "is not utf-8; expected utf-8 text (a Latin-1 file? read it with --encoding latin-1)",
    ),
    (
        "no-header",
        "jtl",
        GOOD_JTL.split("\n", 1)[1].encode(),
        {},
        1,
        "no header line (the first line is a sample); expected a JMeter CSV",
    ),
    (
        "wrong-header",
        "jtl",
        b"time,duration,name\n1,2,3\n",
        {},
        1,
        "the header lacks timeStamp, elapsed, label, success",
    ),
    (
        "non-numeric-elapsed",
        "jtl",
        (GOOD_JTL + "1700000002000,abc,home,true\n").encode(),
        {},
        4,
        "elapsed = 'abc'; expected milliseconds >= 0",
    ),
    (
        "truncated-line",
        "jtl",
        (GOOD_JTL + "1700000002000,1").encode(),
        {},
        4,
        "2 fields; expected 4 as named on the header line",
    ),
    (
        "formatted-timestamp",
        "jtl",
        (HEADER + "2024/01/01 12:00:00,12,home,true\n").encode(),
        {},
        2,
        "jmeter.save.saveservice.timestamp_format=ms",
    ),
    (
        "success-word",
        "jtl",
        (HEADER + "1700000000000,12,home,yes\n").encode(),
        {},
        2,
        "success = 'yes'; expected true or false",
    ),
    ("header-only", "jtl", HEADER.encode(), {}, 2, "no samples after the header"),
    (
        "xml-truncated",
        "jtl",
        (XML_HEAD + SAMPLE.format(t=5)).encode(),
        {},
        3,
        "ends inside <testResults> (truncated",
    ),
    ("xml-wrong-root", "jtl", b"<html>\n<body/>\n</html>\n", {}, 1, "root element <html>"),
    (
        "xml-bad-elapsed",
        "jtl",
        (XML_HEAD + SAMPLE.format(t=5) + SAMPLE.format(t="x") + "</testResults>\n").encode(),
        {},
        4,
        "t = 'x'",
    ),
    (
        "xml-not-well-formed",
        "jtl",
        (XML_HEAD + "<httpSample t='1'>\n</sample>\n").encode(),
        {},
        4,
        "not well-formed XML (mismatched tag)",
    ),
    (
        "ab-truncated",
        "ab",
        AB_REPORT.split("Failed requests")[0].encode(),
        {},
        17,
        "the report ends without 'Failed requests:'",
    ),
    ("ab-given-jtl", "ab", GOOD_JTL.encode(), {}, 1, "expected an ab report"),
    (
        "ab-non-numeric",
        "ab",
        AB_REPORT.replace("Complete requests:      150", "Complete requests:      many").encode(),
        {},
        17,
        "Complete requests: 'many'; expected a number",
    ),
    ("gnuplot-wrong-header", "ab-gnuplot", GOOD_JTL.encode(), {}, 1, "expected an ab -g file"),
    (
        "gnuplot-non-numeric",
        "ab-gnuplot",
        b"starttime\tseconds\tctime\tdtime\tttime\twait\nMon\t1700000000\t0\t1\t1\t1\n"
        b"Mon\t1700000000\t0\t1\tfast\t1\n",
        {},
        3,
        "ttime = 'fast'; expected a number >= 0",
    ),
    (
        "gnuplot-short-line",
        "ab-gnuplot",
        b"starttime\tseconds\tctime\tdtime\tttime\twait\nMon\t1700000000\t0\n",
        {},
        2,
        "3 tab-separated fields; expected 6",
    ),
    (
        "access-log-mismatch",
        "access-log",
        b'127.0.0.1 - - [23/Nov/2026:16:52:00 +0000] "GET / HTTP/1.1" 200 31 329\nnot a log line\n',
        {"log_format": LOG_FORMAT},
        2,
        "does not match; expected access-log lines in the LogFormat",
    ),
    (
        "access-log-given-jtl",
        "access-log",
        GOOD_JTL.encode(),
        {"log_format": LOG_FORMAT},
        1,
        "'timeStamp,elapsed,label,success' does not match",
    ),
    (
        "locust-wrong-header",
        "locust",
        b"Type,Name,Count\nGET,home,3\n",
        {},
        1,
        "header lacks Request Count, Failure Count",
    ),
    (
        "locust-non-numeric",
        "locust",
        LOCUST.replace("GET,home,121", "GET,home,lots").encode(),
        {},
        2,
        "Request Count = 'lots'; expected a number >= 0",
    ),
    (
        "locust-history-backwards",
        "locust",
        "\n".join([*HISTORY[:6], HISTORY[2].replace("1795452782", "1795452700")]).encode(),
        {},
        7,
        "goes back in time",
    ),
]

# Utilisation files given with a good JTL: (id, content, line, words)
UTILISATION = [
    (
        "sar-text",
        b"Linux 6.1.0 (vm) \t11/23/2026 \t_x86_64_\t(2 CPU)\n\n04:51:57 PM CPU %user\n",
        1,
        "this is sar's own text: convert the data file with sadf -d",
    ),
    (
        "sadf-local-time",
        (SADF + "vm;1;2023-11-14 22:13:21;-1;1;0;1;0;0;98.00\n").encode(),
        2,
        "has no zone; expected UTC (run sadf without -t)",
    ),
    (
        "sadf-idle-word",
        (SADF + "vm;1;2023-11-14 22:13:21 UTC;-1;1;0;1;0;0;idle\n").encode(),
        2,
        "%idle = 'idle'; expected a percentage 0..100",
    ),
    (
        "plain-percent",
        b"time,host,cpu\n1700000000,db,0.5\n1700000001,db,57\n",
        3,
        "cpu = '57'; expected a fraction 0..1 (a percentage? divide by 100)",
    ),
    ("plain-naive-time", b"time,host,cpu\n2023-11-14T22:13:20,db,0.5\n", 2, "has no UTC offset"),
    (
        "no-overlap",
        (SADF + "vm;1;2020-01-01 00:00:01 UTC;-1;1;0;1;0;0;98.00\n").encode(),
        None,
        "do not overlap the run",
    ),
]


def _expect(exc: MeasurementError, path: Path, line: int | None, words: str) -> None:
    message = str(exc)
    assert "\n" not in message
    prefix = f"{path}:{line}: " if line is not None else f"{path}: "
    assert message.startswith(prefix), message
    assert words in message, message


@pytest.mark.parametrize(
    ("format", "content", "options", "line", "words"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_malformed_file(tmp_path, format, content, options, line, words):
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    with pytest.raises(MeasurementError) as caught:
        import_files(format, [str(path)], ImportOptions(**options))
    _expect(caught.value, path, line, words)


@pytest.mark.parametrize(
    ("content", "line", "words"),
    [case[1:] for case in UTILISATION],
    ids=[case[0] for case in UTILISATION],
)
def test_malformed_utilisation(tmp_path, content, line, words):
    jtl = tmp_path / "run.jtl"
    jtl.write_text(GOOD_JTL)
    path = tmp_path / "cpu.txt"
    path.write_bytes(content)
    with pytest.raises(MeasurementError) as caught:
        import_files("jtl", [str(jtl)], ImportOptions(utilisation=[str(path)]))
    _expect(caught.value, path, line, words)


def test_a_utf8_byte_order_mark_and_latin1_on_request_are_read(tmp_path):
    path = tmp_path / "bom.jtl"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD_JTL.encode())
    assert import_files("jtl", [str(path)], ImportOptions())[-1]["count.completed"] == 2
    path.write_bytes((HEADER + "1700000000000,12,caf\xe9,true\n").encode("latin-1"))
    rows = import_files("jtl", [str(path)], ImportOptions(encoding="latin-1"))
    assert rows[0]["class"] == "café"


@pytest.mark.parametrize("case", ["non-numeric-elapsed", "xml-truncated", "ab-given-jtl"])
def test_cli_reports_one_line_and_exit_code_3(tmp_path, case):
    _, format, content, _options, line, words = next(c for c in CASES if c[0] == case)
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    result = CliRunner().invoke(main, ["import", format, str(path), "-o", str(tmp_path / "t.csv")])
    assert result.exit_code == 3
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.output
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}:{line}: ")
    assert words in lines[0]
    assert not (tmp_path / "t.csv").exists()


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["access-log", "{jtl}"], "access-log needs --log-format"),
        (["jtl", "{jtl}", "--class", "[=x"], "is not a regular expression"),
        (["jtl", "{jtl}", "--class", "x=total"], "is the row of all classes together"),
        (["jtl", "{jtl}", "--window", "0"], "expected seconds > 0"),
        (["access-log", "{jtl}", "--log-format", "%h %t"], "has no response time"),
        (["ab", "{ab}", "{ab}", "--run", "r"], "leave --run out"),
    ],
)
def test_cli_usage_errors_exit_2(tmp_path, arguments, words):
    jtl = tmp_path / "run.jtl"
    jtl.write_text(GOOD_JTL)
    ab = FIXTURES / "ab" / "ab_search.txt"
    argv = ["import", *(a.format(jtl=jtl, ab=ab) for a in arguments), "-o", str(tmp_path / "t.csv")]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert words in result.output
