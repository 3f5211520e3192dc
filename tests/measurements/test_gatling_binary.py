"""`tiersim import gatling` on the binary simulation.log of Gatling 3.13 and later.

The logs here are written by `test_gatling_binary_writer.GatlingLogWriter`, which follows
Gatling's `LogFileDataWriter` (3.13.0 to 3.15.1) call for call: the committed fixture
(tests/fixtures/measurements/gatling/binary/, see its README), and the committed text runs'
records written again in the binary layout, which must import to the same rows as the text.
"""

from __future__ import annotations

import gzip
import math
import random
import time

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.errors import MeasurementError
from sim.measurements.formats import gatling
from sim.measurements.importer import ImportOptions, import_files
from tests.measurements.test_gatling_binary_writer import (
    FIXTURE,
    LONG_MIN,
    REFUSED,
    RUN_START_MS,
    STATUS_503,
    TIMEOUT,
    GatlingLogWriter,
    fixture_log,
)

pytest.importorskip("pandas")

TEXT_RUNS = FIXTURE.parents[1]
S = RUN_START_MS


def total(rows: list[dict]) -> dict:
    return next(r for r in rows if r["class"] == "total")


def test_each_request_is_a_sample_with_its_group_path_outcome_and_kind():
    log = gatling.read(FIXTURE)
    assert log.run.version == "3.13.5"
    assert log.run.simulation_start_s == S / 1000
    # the first USER START: before the first request (130) and the first group's start (175)
    assert log.run.first_injected_s == (S + 120) / 1000
    frame = log.frame
    assert list(frame.label) == [
        "home",
        "checkout/cart",
        "checkout/payment/pay",
        "home",
        "Café ☕ search",
        "home",
        "home",
    ]  # the WebSocket message no check awaited is not a request with a response time
    assert list(np.round(frame.start_s * 1000 - S)) == [130, 180, 240, 300, 340, 400, 600]
    assert list(np.round(frame.elapsed_s * 1000)) == [42, 51, 1000, 35, 50, 60, 1]
    assert list(frame.failed) == [False, False, True, False, False, True, True]
    assert list(frame.error_kind) == ["", "", "5xx", "", "", "timeout", "connect"]
    assert frame.url.isna().all() and frame.users.isna().all()


def test_the_import_counts_from_the_first_injected_event_as_the_text_log_does():
    rows = import_files("gatling", [str(FIXTURE)], ImportOptions())
    row = total(rows)
    assert row["count.completed"] == 4 and row["count.errors"] + row["count.timed_out"] == 3
    # from the first USER START (120) to the last response (1240)
    assert row["window_end_s"] == pytest.approx(1.120)
    assert row["throughput"] == pytest.approx(4 / 1.120)
    assert row["response.mean"] == pytest.approx((42 + 51 + 35 + 50) / 4 / 1000)


def test_a_groups_start_before_any_user_moves_time_zero_to_it():
    """Gatling writes a GROUP record when the group ends, but its start counts towards
    `injectStart` (FirstPassParser's `updateInjectStart`), wherever the record is."""
    log = GatlingLogWriter("3.15.1", "G", S, ["Only"])
    log.request("a", S + 60, S + 90, groups=["g"])
    log.group(["g"], S + 50, S + 95, 30, True)
    log.user("Only", False, S + 99)  # a USER END does not count
    read = gatling_read_bytes(log.bytes())
    assert read.run.first_injected_s == (S + 50) / 1000


def gatling_read_bytes(data: bytes, name: str = "simulation.log"):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        return gatling.read(path)


def text_run_as_binary(lines: list[str]) -> bytes:
    """The records of a text log (3.4+ layout) written again in the binary layout, as Gatling
    3.13 would have written the same run."""
    fields = [line.rstrip("\n").split("\t") for line in lines]
    run = next(f for f in fields if f[0] == "RUN")
    start = int(run[3])
    scenarios = sorted({f[1] for f in fields if f[0] == "USER"})
    log = GatlingLogWriter("3.13.5", run[1], start, scenarios)
    for f in fields:
        if f[0] == "USER":
            log.user(f[1], f[2] == "START", int(f[3]))
        elif f[0] == "REQUEST":
            groups = f[1].split(",") if f[1] else []
            message = f[6].strip() if len(f) > 6 else ""
            log.request(f[2], int(f[3]), int(f[4]), f[5] == "OK", message, groups)
    return log.bytes()


@pytest.mark.parametrize(
    "text", ["simulation.log", "checkout-3.8.3/simulation.log.gz"], ids=["3.9.5", "3.8.3"]
)
def test_a_run_written_in_the_binary_layout_imports_to_the_same_rows_as_its_text_log(
    tmp_path, text
):
    """The two committed text runs (60 requests; 6,329 with 2,147 KOs of four kinds), their
    records written as Gatling 3.13 writes them: every column of every row is the same, and
    gzip-compressed alike."""
    source = TEXT_RUNS / text
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt", encoding="utf-8") as handle:
        binary = text_run_as_binary(handle.readlines())
    plain = tmp_path / "simulation.log"
    plain.write_bytes(binary)
    packed = tmp_path / "simulation.log.gz"
    packed.write_bytes(gzip.compress(binary))
    expected = import_files("gatling", [str(source)], ImportOptions())
    for path in (plain, packed):
        rows = import_files("gatling", [str(path)], ImportOptions())
        assert len(rows) == len(expected)
        for got, want in zip(rows, expected, strict=True):
            assert got.keys() == want.keys()
            for column, value in want.items():
                if isinstance(value, float) and math.isnan(value):
                    assert math.isnan(got[column]), column
                elif column != "run":
                    assert got[column] == value, (got["class"], column)


def test_the_cli_imports_a_binary_log_and_gzip_of_it(tmp_path):
    out = tmp_path / "g.csv"
    result = CliRunner().invoke(main, ["import", "gatling", str(FIXTURE), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "checkout/payment/pay" in out.read_text()


def error_of(data: bytes, tmp_path) -> str:
    """The one line the CLI prints for a log of these bytes (exit code 3, no traceback)."""
    path = tmp_path / "simulation.log"
    path.write_bytes(data)
    result = CliRunner().invoke(
        main, ["import", "gatling", str(path), "-o", str(tmp_path / "o.csv")]
    )
    assert result.exit_code == 3, result.output
    assert not isinstance(result.exception, SystemExit) or result.exception.code == 3
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def patched(at: int, new: bytes) -> bytes:
    data = fixture_log().bytes()
    return data[:at] + new + data[at + len(new) :]


# byte offsets in the fixture, from its layout: the RUN record takes bytes 0 to 105
RUN_END = 106


def test_offsets_the_tests_rely_on():
    data = fixture_log().bytes()
    assert data[RUN_END] == 2 and data[RUN_END + 10] == 1  # USER, then the first REQUEST


@pytest.mark.parametrize(
    "data, expected",
    [
        (patched(RUN_END, b"\x09"), "byte 106: record 2 (?): record header 9"),
        (patched(RUN_END + 5, b"\x07"), "byte 106: record 2 (USER): status byte 7 at byte 111"),
        (patched(RUN_END + 1, b"\x00\x00\x00\x05"), "scenario 5, not one of the RUN's 2"),
        # the first request's name: a reference to a string never given
        (patched(RUN_END + 15, b"\xff\xff\xff\xf0"), "a reference at byte 121 to string 16"),
        # its name's length: 2 GiB
        (patched(RUN_END + 19, b"\x7f\xff\xff\xff"), "a string of 2,147,483,647 bytes"),
        # its group count: two thousand million groups
        (patched(RUN_END + 11, b"\x7f\xff\xff\xff"), "2,147,483,647 groups at byte 117, more"),
        # its end before its start
        (patched(RUN_END + 32, b"\x00\x00\x00\x00"), "ends (0 ms) before it starts (130 ms)"),
        (patched(5, b"3.12.0"), "Gatling's version reads '3.12.0', which writes a text log"),
        (patched(5, b"x.y.z!"), "Gatling's version reads 'x.y.z!'"),
        (bytes(16), "byte 0: record 1 (RUN): Gatling's version is 0 bytes long"),
        (patched(83, b"\x7f\xff\xff\xff"), "2,147,483,647 assertions at byte 83, more than"),
    ],
)
def test_a_malformed_log_is_named_with_its_record_and_byte_offset(tmp_path, data, expected):
    line = error_of(data, tmp_path)
    assert line.startswith(f"error: {tmp_path / 'simulation.log'}: byte ")
    assert expected in line
    assert line.endswith("expected Gatling's binary simulation.log (Gatling 3.13 and later)")


def test_a_log_cut_anywhere_is_named_with_the_bytes_that_are_whole(tmp_path):
    """Cut at every byte: each prefix is either whole records (read) or one line saying where
    the last whole record ends; `head -c` of that many bytes reads."""
    data = fixture_log().bytes()
    path = tmp_path / "simulation.log"
    for end in range(len(data)):
        path.write_bytes(data[:end])
        try:
            gatling.read(path)
        except MeasurementError as error:
            message = str(error)
            assert "\n" not in message
            if "head -c" not in message:
                continue  # inside the RUN record, or whole records without a REQUEST
            whole = int(message.split("head -c ")[1].split("`")[0])
            assert whole < end and "the file ends inside record" in message
            path.write_bytes(data[:whole])
            try:
                gatling.read(path)
            except MeasurementError as before:
                assert "no REQUEST records" in str(before)


def test_random_damage_gives_samples_or_one_error_and_never_a_traceback(tmp_path):
    """Seeded byte flips anywhere after the first byte: the reader reads or names the byte;
    nothing else escapes (an IndexError, a UnicodeDecodeError, a MemoryError)."""
    rng = random.Random(43)
    data = bytearray(fixture_log().bytes())
    path = tmp_path / "simulation.log"
    errors = 0
    for _ in range(400):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(3, len(damaged))] = rng.randrange(256)
        path.write_bytes(bytes(damaged))
        try:
            gatling.read(path)
        except MeasurementError as error:
            assert "\n" not in str(error) and "byte" in str(error)
            errors += 1
    assert errors > 100  # most damage is caught, not read as other figures


def test_hostile_counts_are_refused_before_anything_is_allocated(tmp_path):
    """Counts and lengths are checked against the bytes left before a loop or a read: a
    2-GiB string, a billion scenarios or groups are refused at once."""
    log = GatlingLogWriter("3.13.5", "H", S, [])
    hostile = log.bytes()[:-8] + b"\x7f\xff\xff\xff" + b"\x00\x00\x00\x00"  # scenarios
    started = time.perf_counter()
    line = error_of(hostile, tmp_path)
    assert "2,147,483,647 scenarios" in line
    assert time.perf_counter() - started < 5.0


def test_an_unmatched_websocket_message_is_left_out_but_its_start_counts(tmp_path):
    """Gatling logs it with the end `Long.MinValue`, written as the int32 of
    `Long.MinValue - start`; its start is an injected event for FirstPassParser."""
    log = GatlingLogWriter("3.13.0", "W", S, ["ws"])
    log.request("ws incoming", S + 10, LONG_MIN)
    log.request("ws send", S + 20, S + 25)
    read = gatling_read_bytes(log.bytes())
    assert list(read.frame.label) == ["ws send"]
    assert read.run.first_injected_s == (S + 10) / 1000


def test_a_ko_without_a_message_is_of_kind_other_as_in_the_text_log():
    log = GatlingLogWriter("3.13.5", "K", S, ["s"])
    log.request("a", S + 1, S + 2, False, "")
    log.request("b", S + 3, S + 4, True, "")
    read = gatling_read_bytes(log.bytes())
    assert list(read.frame.error_kind) == [gatling.error_kind(""), ""] == ["other", ""]


def test_the_messages_kinds_are_the_text_logs():
    assert gatling.error_kind(STATUS_503) == "5xx"
    assert gatling.error_kind(TIMEOUT) == "timeout"
    assert gatling.error_kind(REFUSED) == "connect"
