"""A load profile from an access log: arrivals per bin as `clients.schedule`, counted by hand
on a small log, checked against JMeter's own record on a real Tomcat log, replayed by a run,
and one line for a bad log or table."""

from __future__ import annotations

import csv
import gzip
import math
from pathlib import Path

import pytest

from sim.measurements.arrival_profile import LogFormatError, arrival_profile, httpd_format
from sim.measurements.errors import MeasurementError
from sim.model.load import ModelError, load_model

ROOT = Path(__file__).resolve().parents[2]
K1 = ROOT / "notebooks" / "data" / "cluster-db" / "k1"
# setup/server.xml's AccessLogValve pattern (notebooks/data/cluster-db/README.md)
TOMCAT_PATTERN = "%{begin:msec}t %D %{db.borrow.us}r %{db.update.us}r %{db.commit.us}r %s %U"

# Common Log Format, out of time order as a log written at each response's end can be
# (line 5 arrived before line 4); a blank line is skipped.
COMMON = [
    '10.0.0.1 - - [02/Mar/2026:10:00:05 +0000] "GET /a HTTP/1.1" 200 12',
    '10.0.0.2 - - [02/Mar/2026:10:00:30 +0000] "GET /b?q=1 HTTP/1.1" 200 12',
    '10.0.0.1 - - [02/Mar/2026:10:00:59 +0000] "POST /c HTTP/1.1" 503 -',
    '10.0.0.3 - - [02/Mar/2026:10:01:40 +0000] "GET /a HTTP/1.1" 200 12',
    '10.0.0.3 - - [02/Mar/2026:10:01:04 +0000] "GET /a HTTP/1.1" 200 12',
    "",
    '10.0.0.2 - - [02/Mar/2026:10:01:05 +0000] "GET /a HTTP/1.1" 304 -',
    '10.0.0.2 - - [02/Mar/2026:10:02:06 +0000] "GET /a HTTP/1.1" 200 12',
]


def write(tmp_path: Path, lines: list[str], name: str = "access.log") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_arrivals_per_minute_from_the_first_arrival_whole_minutes_only(tmp_path):
    """Bins from 10:00:05: [10:00:05, 10:01:05) holds 10:00:05, :30, :59 and 10:01:04 (4);
    [10:01:05, 10:02:05) holds 10:01:05 and 10:01:40 (2); 10:02:06 is past the last whole
    minute (the log spans 121 s), so it is left out rather than read as a minute's rate."""
    profile = arrival_profile(write(tmp_path, COMMON), "common")
    assert profile.counts == (4, 2)
    assert profile.left_out == 1
    assert profile.rates_per_s() == [4 / 60, 2 / 60]
    assert profile.rates_per_s(scale=1.5) == pytest.approx([0.1, 0.05])
    # 30-second bins from 10:00:05: [05, 35) 2, [35, 65) 2, [65, 95) 1, [95, 125) 1 (10:01:40)
    halves = arrival_profile(write(tmp_path, COMMON), "common", bin_s=30)
    assert (halves.counts, halves.left_out) == ((2, 2, 1, 1), 1)


def test_the_combined_format_and_its_nickname_read_the_same_arrivals(tmp_path):
    combined = [
        line + ' "-" "Mozilla/5.0 (X11; Linux x86_64)"' if line else line for line in COMMON
    ]
    path = write(tmp_path, combined)
    by_name = arrival_profile(path, "combined")
    by_format = arrival_profile(path, '%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"')
    assert by_name == by_format
    assert by_name.counts == (4, 2)


def test_tomcat_attributes_are_read_as_opaque_fields():
    assert httpd_format("%{begin:msec}t %{a.b}r %{s}s %{JSESSIONID}c %U") == (
        "%{begin:msec}t %{a.b}e %{s}e %{JSESSIONID}C %U"
    )


def test_a_real_tomcat_log_counts_what_jmeter_sent_second_by_second():
    """The K = 1 cluster test: the access log's arrivals in 1-second bins against the JMeter
    results of each level (a different tool's clock, at the other end of Apache).  Over each
    level's whole seconds, the bins hold the requests JMeter sent in them: within 1 %
    (a request straddles a bin edge for the ms it spends in Apache)."""
    profile = arrival_profile(K1 / "access-node1.log.gz", TOMCAT_PATTERN, bin_s=1.0)
    levels = [row for row in csv.DictReader((K1 / "levels.csv").open()) if row["kept"] == "1"]
    assert len(levels) == 7
    for level in levels:
        with (K1 / f"users{level['users']}.jtl").open() as jtl:
            sent = [int(row["timeStamp"]) / 1000 for row in csv.DictReader(jtl)]
        first = math.floor(min(sent) - profile.first_arrival_s) + 1
        last = math.floor(max(sent) - profile.first_arrival_s)  # exclusive: partly covered
        jmeter = sum(1 for t in sent if first <= math.floor(t - profile.first_arrival_s) < last)
        logged = sum(profile.counts[first:last])
        assert last - first >= 55
        assert logged == pytest.approx(jmeter, rel=0.01), level["users"]


def test_the_real_log_per_minute_keeps_every_arrival_but_the_last_partial_minute():
    profile = arrival_profile(K1 / "access-node1.log.gz", TOMCAT_PATTERN)
    with gzip.open(K1 / "access-node1.log.gz", "rt") as log:
        with_lines = sum(1 for _ in log)
    assert len(profile.counts) == 9  # the log spans 542.6 s
    assert sum(profile.counts) + profile.left_out == with_lines
    assert 0 < profile.left_out < max(profile.counts)


def model_text(
    log: str = "access.log",
    log_format: str = "common",
    extra: str = "",
    duration_s: float = 120.0,
    backend: str = "demand = 0.001",
) -> str:
    return "\n".join(
        [
            "[clients]",
            'kind = "open"',
            f'schedule = {{access_log = "{log}", log_format = "{log_format}"{extra}}}',
            "[[backends]]",
            'name = "web"',
            "count = 1",
            backend,
            "[run]",
            f"duration_s = {duration_s}",
            "warmup = 0.0",
        ]
    )


def test_a_model_file_replays_the_log_as_its_schedule(tmp_path):
    """The table in the model file is the steps of the log's minutes, times `scale`."""
    write(tmp_path, COMMON)
    (tmp_path / "model.toml").write_text(model_text(extra=", scale = 30"))
    model = load_model(tmp_path / "model.toml")
    steps = [(step.rate_per_s, step.duration_s) for step in model.clients.schedule]
    assert steps == [(pytest.approx(2.0), 60.0), (pytest.approx(1.0), 60.0)]


def test_a_run_offers_the_logs_minutes(tmp_path):
    """The real log's nine whole minutes replayed once (540 s, no warm-up) on a server far
    from saturation: the run completes as many requests as those minutes hold, within three
    Poisson standard deviations."""
    from sim.run.replications import run

    (tmp_path / "model.toml").write_text(
        model_text(
            log=str(K1 / "access-node1.log.gz"),
            log_format=TOMCAT_PATTERN,
            duration_s=540.0,
            backend="demand = 0.0001\ncores = 4\nthreads = 200",
        )
    )
    model = load_model(tmp_path / "model.toml")
    profile = arrival_profile(K1 / "access-node1.log.gz", TOMCAT_PATTERN)
    expected = sum(step.rate_per_s * step.duration_s for step in model.clients.schedule)
    assert expected == pytest.approx(sum(profile.counts))
    result = run(model, replications=1)
    completed = result.replications[0].metrics["throughput"] * 540.0
    assert abs(completed - expected) < 3 * math.sqrt(expected)


@pytest.mark.parametrize(
    ("extra", "lines", "needle"),
    [
        ("", [*COMMON[:2], "not a log line"], "access.log:3: 'not a log line' does not match"),
        (", bin_s = -1", COMMON, "bin_s = -1: Input should be greater than 0"),
        (
            ", bins = 3",
            COMMON,
            "bins is not a field of an access-log schedule; expected access_log",
        ),
        (', log_format = "%h %U"', COMMON, "has no time field; expected %t or %{begin:msec}t"),
        (", bin_s = 600", COMMON, "less than one bin of 600 s; give a smaller bin_s"),
        ("", [], "access.log:1: the file is empty"),
    ],
)
def test_a_bad_log_or_table_is_named_in_one_line(tmp_path, extra, lines, needle):
    write(tmp_path, lines)
    text = model_text(extra=extra)
    if "log_format =" in extra:  # the table's own log_format replaces the default one
        text = text.replace('log_format = "common", ', "")
    (tmp_path / "model.toml").write_text(text)
    with pytest.raises(ModelError) as refused:
        load_model(tmp_path / "model.toml")
    problems = str(refused.value).splitlines()[1:]
    assert len(problems) == 1 and "clients.schedule" in problems[0]
    assert needle in problems[0]


def test_an_end_time_is_not_an_arrival(tmp_path):
    path = write(tmp_path, ["1795813081004 200 /app/work"] * 2)
    with pytest.raises(MeasurementError) as refused:
        arrival_profile(path, "%{end:msec}t %s %U")
    assert str(refused.value).startswith(f"{path}:1: no arrival time")
    with pytest.raises(LogFormatError):
        arrival_profile(path, "%{begin:msec}t %s %U", bin_s=0)
