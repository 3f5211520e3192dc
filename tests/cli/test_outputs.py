"""What the commands leave behind and show: files a colleague can read, a cache that survives
an interruption, reports that count and label right, progress that reads in a log."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from sim.cli import main
from tests.cli.test_bad_input import FAST, _experiment


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


# --------------------------------------------------------------------------- sweeps
def _sweep(folder: Path, users: str) -> Path:
    (folder / "fast.toml").write_text(FAST, encoding="utf-8")
    path = folder / "s.toml"
    path.write_text(
        f'[sweep]\nbase = "fast.toml"\nreplications = 2\n[factors]\n"clients.users" = {users}\n',
        encoding="utf-8",
    )
    return path


def test_sweep_results_are_readable_by_the_group(tmp_path):
    from sim.studies.sweep import store

    previous = os.umask(0o022)
    store._file_mode.cache_clear()
    try:
        result = invoke("sweep", _sweep(tmp_path, "[5]"), "--serial", "-o", tmp_path / "r")
    finally:
        os.umask(previous)
        store._file_mode.cache_clear()
    assert result.exit_code == 0, result.output
    files = [*(tmp_path / "r" / "points").glob("*.parquet"), tmp_path / "r" / "sweep.json"]
    assert len(files) == 2
    for path in files:
        assert path.stat().st_mode & 0o777 == 0o644, (path, oct(path.stat().st_mode))


def test_sweep_report_counts_failed_points_apart(tmp_path):
    result = invoke("sweep", _sweep(tmp_path, "[5, 0]"), "--serial", "-o", tmp_path / "r")
    assert result.exit_code == 3, result.output  # users = 0 is invalid
    page = tmp_path / "r.html"
    assert invoke("report", tmp_path / "r", "-o", page).exit_code == 0
    text = page.read_text(encoding="utf-8")
    assert "<th>points finished</th><td>1 of 2</td>" in text
    assert "<th>failed</th><td>1</td>" in text
    assert "<th>not run yet</th><td>0</td>" in text


# --------------------------------------------------------------------------- calibration
def test_a_torn_cache_line_does_not_swallow_the_next_record(tmp_path):
    from sim.studies.calibration.evaluate import append_line

    cache = tmp_path / "c.jsonl"
    cache.write_text('{"key": "a"}\n{"key": "b", "simul', encoding="utf-8")  # cut short
    append_line(cache, json.dumps({"key": "c"}))
    lines = cache.read_text(encoding="utf-8").splitlines()
    assert lines[-1] == '{"key": "c"}' and len(lines) == 3
    append_line(tmp_path / "new" / "c.jsonl", "{}")
    assert (tmp_path / "new" / "c.jsonl").read_text(encoding="utf-8") == "{}\n"


def test_calibrate_resumes_past_a_torn_line(tmp_path):
    folder = _experiment(tmp_path)
    cache = tmp_path / "cache.jsonl"
    first = invoke("calibrate", folder, "--cache", cache, "--max-evaluations", "2")
    assert first.exit_code == 0, first.output
    whole = cache.read_text(encoding="utf-8")
    lines = whole.splitlines()
    assert len(lines) >= 2
    cache.write_text(whole[: len(whole) - len(lines[-1]) // 2 - 1], encoding="utf-8")  # torn
    second = invoke("calibrate", folder, "--cache", cache, "--max-evaluations", "2")
    assert second.exit_code == 0, second.output
    assert "(1 evaluations simulated, 1 from" in second.stdout, second.stdout
    records = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines()[-1:]]
    assert records[0]["key"]  # the evaluation simulated again is a whole record of its own
    third = invoke("calibrate", folder, "--cache", cache, "--max-evaluations", "2")
    assert "(0 evaluations simulated, 2 from" in third.stdout, third.stdout


# --------------------------------------------------------------------------- tables and reports
def test_reproduce_table_prints_plain_numbers_with_their_unit(tmp_path):
    result = invoke("reproduce", _experiment(tmp_path), "-r", "2")
    assert result.exit_code == 0, result.output
    assert "unit" in result.stdout and "1/s" in result.stdout
    assert not re.search(r"\de[+-]\d", result.stdout), result.stdout
    rows = json.loads(invoke("reproduce", _experiment(tmp_path), "-r", "2", "--json").stdout)
    assert {(r["metric"], r["unit"]) for r in rows} == {
        ("throughput", "1/s"),
        ("response.mean", "s"),
    }


def test_calibrate_table_gives_the_parameter_unit(tmp_path):
    result = invoke("calibrate", _experiment(tmp_path), "--no-cache", "--max-evaluations", "1")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if "backends.0.demand.mean" in line)
    assert re.search(r"│ s +│", line), line
    assert not re.search(r"\de[+-]\d", result.stdout)


@pytest.mark.parametrize(
    "value, text",
    [(2833.6, "2834"), (0.0412, "0.0412"), (123456.4, "123456"), (1.23456e-5, "0.00001235"),
     (0.5, "0.5"), (-3.14159, "-3.142"), (0.0, "0"), (float("nan"), "-")],
)  # fmt: skip
def test_plain_numbers(value, text):
    from sim.present.tables import plain

    assert plain(value) == text


def test_reproduction_report_gives_each_unit_its_own_axis(tmp_path):
    from sim.present.report import build_report

    name = "jetty-7.4.3 mod_proxy_ajp max_clients=150 keep_alive=no requests_to_slow_backend"
    rows = [
        {"figure": "a throughput", "published": 2800.0, "simulated": 2830.0, "ci_low": 2800.0,
         "ci_high": 2860.0, "fitted": False, "metric": "throughput", "unit": "1/s"},
        {"figure": name, "published": 100000.0, "simulated": 99000.0, "ci_low": 98000.0,
         "ci_high": 100000.0, "fitted": False, "metric": "balancer.dispatched.slow1",
         "unit": "requests"},
    ]  # fmt: skip
    path = tmp_path / "r.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    _, figures, _ = build_report(path)
    titles = [f.layout.yaxis.title.text or "" for f in figures]
    assert any("[1/s]" in t for t in titles) and any("[requests]" in t for t in titles)
    for figure in figures:  # never two units on one axis
        units = {t.name for t in figure.data}
        assert len(figure.data) <= 3, units
    bars = [f for f in figures if f.data and f.data[0].type == "bar"]
    assert len(bars) == 2
    for bar in bars:  # names wrapped at spaces, and a margin as wide as their longest line
        longest = max(len(line) for y in bar.data[0].y for line in y.split("<br>"))
        assert longest <= 45 and bar.layout.margin.l >= 7 * longest
    assert "requests_to_slow_backend" in " ".join(bars[1].data[0].y)


# --------------------------------------------------------------------------- progress
class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_off_a_terminal_is_plain_and_rate_limited():
    from sim.present.progress import Reporter

    clock, stream = Clock(), io.StringIO()
    reporter = Reporter(
        Console(file=io.StringIO()), "points", live=False, stream=stream, clock=clock
    )
    with reporter:
        for when, done in [
            (1, 1),
            (2, 2),
            (6, 10),
            (6.5, 12),
            (7, 16),
            (30, 17),
            (31, 17),
            (40, 100),
        ]:
            clock.now = when
            reporter.update(done, 100, failed=1)
    lines = stream.getvalue().splitlines()
    # quiet for the first 5 s; then at 10 %, 16 % (past 15 %), after 10 s without a line, and the end
    assert [line.split(":")[1].split("(")[0].strip() for line in lines] == [
        "10/100", "16/100", "17/100", "100/100",
    ]  # fmt: skip
    assert "1 failed" in lines[0] and "about" in lines[0] and "elapsed" in lines[0]
    assert "\x1b" not in stream.getvalue()


def test_a_short_command_prints_no_progress():
    from sim.present.progress import Reporter

    clock, stream = Clock(), io.StringIO()
    with Reporter(Console(), "rows", live=False, stream=stream, clock=clock) as reporter:
        for done in range(1, 11):
            clock.now = done * 0.3
            reporter.update(done, 10)
            reporter.say(f"evaluation {done}")
    assert stream.getvalue() == ""


def test_events_are_rate_limited_off_a_terminal():
    from sim.present.progress import Reporter

    clock, stream = Clock(), io.StringIO()
    with Reporter(Console(), "capacity", live=False, stream=stream, clock=clock, bar=False) as r:
        for second in range(0, 40):
            clock.now = float(second)
            r.say(f"evaluation {second}")
    assert stream.getvalue().splitlines() == [
        "evaluation 5 (5 s elapsed)", "evaluation 15 (15 s elapsed)",
        "evaluation 25 (25 s elapsed)", "evaluation 35 (35 s elapsed)",
    ]  # fmt: skip


def test_a_milestone_is_not_rate_limited_after_the_quiet_start():
    """A cross-validation fold's start (`milestone`) is printed off a terminal even right after
    another line, where an event (`say`) keeps to its rate; in a command's first quiet
    seconds it says nothing, as everything else."""
    from sim.present.progress import QUIET_S, Reporter

    clock, stream = Clock(), io.StringIO()
    with Reporter(Console(), "rows", live=False, stream=stream, clock=clock, bar=False) as r:
        r.milestone("fold 1/3: a left out")
        clock.now = QUIET_S + 1.0
        r.milestone("fold 2/3: b left out")
        r.say("evaluation 1")
        clock.now = QUIET_S + 1.4
        r.milestone("fold 3/3: c left out")
    assert [line.split(" (")[0] for line in stream.getvalue().splitlines()] == [
        "fold 2/3: b left out", "fold 3/3: c left out",
    ]  # fmt: skip


def test_no_live_bar_in_a_notebook_nor_a_pipe(monkeypatch):
    from sim.present.progress import live_terminal

    forced = Console(file=io.StringIO(), force_terminal=True)
    monkeypatch.delenv("JPY_PARENT_PID", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    if "ipykernel" not in __import__("sys").modules:
        assert live_terminal(forced)
    monkeypatch.setenv("JPY_PARENT_PID", "1")  # a kernel's `!tiersim`: a pty with FORCE_COLOR
    assert not live_terminal(forced)
    monkeypatch.delenv("JPY_PARENT_PID")
    read, write = os.pipe()
    try:
        with os.fdopen(write, "w") as pipe:
            assert not live_terminal(Console(file=pipe, force_terminal=True))
    finally:
        os.close(read)


def test_reproduce_reports_progress_in_a_log(tmp_path, monkeypatch):
    from sim.present import progress

    monkeypatch.setattr(progress, "QUIET_S", 0.0)
    result = invoke("reproduce", _experiment(tmp_path), "-r", "2")
    assert result.exit_code == 0, result.output
    assert re.search(r"rows: 2/2 \(100%\), \d+ s elapsed", result.stderr), result.stderr
    assert "\x1b" not in result.stderr


def test_a_long_step_without_updates_still_gets_a_line_off_a_terminal(monkeypatch):
    """A fit's evaluation or a slow row can take minutes without an update: the heartbeat
    writes a line whenever nothing was said for HEARTBEAT_S (a log never 10 s silent), the
    last progress repeated; and stops at the end of the command."""
    import time

    from sim.present import progress

    monkeypatch.setattr(progress, "QUIET_S", 0.0)
    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.3)
    stream = io.StringIO()
    with progress.Reporter(Console(), "rows", live=False, stream=stream) as reporter:
        deadline = time.monotonic() + 10.0  # a broken heartbeat fails, never hangs
        while "working" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        reporter.update(3, 9)  # said at once (the quiet start is over), then repeated
        while stream.getvalue().count("rows: 3/9") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    lines = stream.getvalue().splitlines()
    assert re.fullmatch(r"rows: working, \d+ s elapsed", lines[0]), lines
    assert sum(line.startswith("rows: 3/9 (33%)") for line in lines) >= 2, lines
    time.sleep(1.0)  # the reporter is closed: nothing more
    assert stream.getvalue().splitlines() == lines


def test_no_heartbeat_on_a_test_clock_nor_before_the_quiet_start_ends(monkeypatch):
    from sim.present import progress

    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.0)
    assert not progress.Reporter(Console(), "rows", live=False, clock=Clock()).heartbeat
    stream = io.StringIO()
    with progress.Reporter(Console(), "rows", live=False, stream=stream):
        __import__("time").sleep(1.0)  # QUIET_S is 5 s: a short command says nothing
    assert stream.getvalue() == ""
