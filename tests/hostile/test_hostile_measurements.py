"""Measurement files written to exhaust the reader, and time stamps that would be read wrong:
each refused in one line within the memory and time of `bounded` (limits lowered through the
environment, so that megabytes show what gigabytes would)."""

from __future__ import annotations

import gzip
import zlib

import pytest

from tests.hostile.bounded import read_bounded, refused

HEADER = "timeStamp,elapsed,label,success\n"


def span(path) -> tuple[int, float]:
    """How many samples a JTL holds and the seconds between the first and last start (read
    in this process: these files are small and harmless, their reading is what is tested)."""
    from sim.measurements.formats import jtl

    starts = jtl.read(path).frame["start_s"]
    return len(starts), round(float(starts.max() - starts.min()), 6)


def gzip_of_zeros(path, megabytes: int) -> None:
    """A gzip stream of `megabytes` MiB of one repeated byte (compressed about 1000:1)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    with path.open("wb") as handle:
        handle.write(packer.compress(HEADER.encode()))
        block = b"0" * 2**20
        for _ in range(megabytes):
            handle.write(packer.compress(block))
        handle.write(packer.flush())


def test_a_gzip_bomb_is_stopped_by_its_ratio(tmp_path):
    path = tmp_path / "bomb.jtl.gz"
    gzip_of_zeros(path, 64)
    assert path.stat().st_size < 2**20
    # the ratio is judged past a quarter of the size limit: 2 MiB here
    line = refused(
        "jtl",
        path,
        "MeasurementError",
        "bytes per compressed byte (a gzip bomb?)",
        "TIERSIM_MAX_GZIP_RATIO=400",
        TIERSIM_MAX_MEASUREMENT_BYTES=str(8 * 2**20),
    )
    assert "more than the limit of 100 bytes of text per compressed byte" in line


def test_a_gzip_file_whose_text_passes_the_size_limit(tmp_path):
    path = tmp_path / "big.jtl.gz"
    gzip_of_zeros(path, 4)
    refused(
        "jtl",
        path,
        "MeasurementError",
        "decompressed, the file is larger",
        "TIERSIM_MAX_MEASUREMENT_BYTES=4194304",
        TIERSIM_MAX_MEASUREMENT_BYTES=str(2**20),
        TIERSIM_MAX_GZIP_RATIO="100000",
    )


def test_a_gzip_bomb_at_the_default_limits_stays_within_the_bounds(tmp_path):
    """The default limits themselves: 64 MiB of zeros, judged once 16 MiB are out."""
    path = tmp_path / "bomb.jtl.gz"
    gzip_of_zeros(path, 64)
    refused("jtl", path, "MeasurementError", "a gzip bomb?")


def test_concatenated_gzip_members_are_read_whole(tmp_path):
    """`cat a.gz b.gz` (a rotated log joined) is one text, as gzip reads it."""
    first = HEADER + "".join(f"{1700000000000 + 1000 * i},5,a,true\n" for i in range(10))
    second = "".join(f"{1700000010000 + 1000 * i},5,a,true\n" for i in range(10))
    path = tmp_path / "joined.jtl.gz"
    path.write_bytes(gzip.compress(first.encode()) + gzip.compress(second.encode()))
    assert span(path) == (20, 19.0)


def test_a_truncated_gzip_file(tmp_path):
    path = tmp_path / "cut.jtl.gz"
    whole = gzip.compress((HEADER + "1700000000000,5,a,true\n" * 1000).encode())
    path.write_bytes(whole[: len(whole) // 2])
    refused("jtl", path, "MeasurementError", "truncated gzip", "gzip -t")


def test_a_file_too_large_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "run.jtl"
    path.write_text(HEADER + "1700000000000,5,a,true\n" * 200)
    refused(
        "jtl",
        path,
        "MeasurementError",
        "bytes of measurement text",
        "TIERSIM_MAX_MEASUREMENT_BYTES=4000",
        TIERSIM_MAX_MEASUREMENT_BYTES="1000",
    )


@pytest.mark.parametrize("kind", ["jtl", "access-log", "ab-gnuplot"])
def test_a_device_is_not_read_forever(kind):
    refused(kind, "/dev/zero", "MeasurementError", "not a regular file")


def test_a_limit_set_to_nonsense_is_named(tmp_path):
    path = tmp_path / "run.jtl"
    path.write_text(HEADER + "1700000000000,5,a,true\n")
    outcome = read_bounded("jtl", path, TIERSIM_MAX_MEASUREMENT_BYTES="lots")
    assert outcome.lines == [
        "FileProblem: TIERSIM_MAX_MEASUREMENT_BYTES='lots': expected a whole number "
        "(the limit on bytes of measurement text)"
    ]


def test_xml_entities_in_a_jtl(tmp_path):
    path = tmp_path / "run.jtl"
    entities = '<!ENTITY l0 "hahahahahahahahahaha">' + "".join(
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)
    )
    path.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE testResults [{entities}]>\n<testResults>\n'
        '<httpSample ts="1700000000000" t="5" lb="a" s="true">&l9;</httpSample>\n</testResults>\n'
    )
    refused("jtl", path, "MeasurementError", f"{path}:4: ", "TIERSIM_MAX_ENTITY_CHARS=")


# Time stamps: the unit is read from the magnitude, never assumed.

ONE_PER_SECOND = [1_700_000_000 + i for i in range(11)]  # eleven samples, 10 s apart from first


@pytest.mark.parametrize(
    ("scale", "unit"), [(1, "seconds"), (1000, "milliseconds"), (1_000_000, "microseconds")]
)
def test_time_stamps_in_any_epoch_unit_give_the_same_window(tmp_path, scale, unit):
    path = tmp_path / f"{unit}.jtl"
    path.write_text(HEADER + "".join(f"{t * scale},0,a,true\n" for t in ONE_PER_SECOND))
    # a 1/s test stays 1/s whatever the unit: the samples span 10 s
    assert span(path) == (11, 10.0)


def test_time_stamps_that_mix_seconds_and_milliseconds(tmp_path):
    path = tmp_path / "mixed.jtl"
    lines = [f"{t * 1000},5,a,true\n" for t in ONE_PER_SECOND]
    lines[6] = f"{ONE_PER_SECOND[6]},5,a,true\n"  # a line of another tool's file, in seconds
    path.write_text(HEADER + "".join(lines))
    line = refused("jtl", path, "MeasurementError", f"{path}:8: ", "mixes units")
    assert "seconds since the epoch" in line and "line 2's 1700000000000" in line


def test_xml_time_stamps_in_seconds(tmp_path):
    path = tmp_path / "run.jtl"
    samples = "".join(f'<httpSample ts="{t}" t="5" lb="a" s="true"/>\n' for t in ONE_PER_SECOND)
    path.write_text(f'<?xml version="1.0"?>\n<testResults>\n{samples}</testResults>\n')
    assert span(path) == (11, 10.0)


def test_a_time_stamp_past_microseconds(tmp_path):
    path = tmp_path / "run.jtl"
    path.write_text(HEADER + "1700000000000000000,5,a,true\n")
    refused("jtl", path, "MeasurementError", ":2: ", "beyond microseconds since the epoch")
