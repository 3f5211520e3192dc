"""Gatling's binary log read against Gatling's own figures for it: the `known_stats` log of
Gatling's repository (Apache 2.0; tests/fixtures/measurements/gatling/binary/gatling-known-stats/
README.md) and the values its `LogFileReaderSpec` asserts."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from sim.measurements.errors import MeasurementError
from sim.measurements.formats import gatling

KNOWN = (
    Path(__file__).resolve().parents[1]
    / "fixtures/measurements/gatling/binary/gatling-known-stats/simulation.log"
)
WRITTEN_AS = b"3.12.1"  # the development version in the file's RUN record


def with_version(tmp_path: Path, version: bytes) -> Path:
    """The log with its RUN record's version replaced, as LogFileReaderSpec replaces it."""
    raw = KNOWN.read_bytes()
    assert raw[0] == 0 and raw[1:5] == struct.pack(">i", len(WRITTEN_AS))
    assert raw[5 : 5 + len(WRITTEN_AS)] == WRITTEN_AS
    path = tmp_path / "simulation.log"
    path.write_bytes(
        raw[:1] + struct.pack(">i", len(version)) + version + raw[5 + len(WRITTEN_AS) :]
    )
    return path


@pytest.fixture
def known(tmp_path: Path):
    return gatling.read(with_version(tmp_path, b"3.13.0")).frame


def test_its_counts_and_extremes_are_gatlings(known):
    assert (len(known), int(known.failed.sum())) == (105, 1)
    ms = np.sort(np.round(known.elapsed_s.to_numpy() * 1000).astype(int))
    assert (ms[0], ms[-1]) == (87, 368)


@pytest.mark.parametrize(("percent", "expected_ms"), [(0, 87), (70, 113), (99, 368), (100, 368)])
def test_its_percentiles_are_gatlings(known, percent, expected_ms):
    ms = np.sort(np.round(known.elapsed_s.to_numpy() * 1000).astype(int))
    rank = max(int(np.ceil(percent / 100 * len(ms))), 1)  # nearest rank
    assert ms[rank - 1] == expected_ms


def test_as_written_its_development_version_is_refused_in_one_line():
    with pytest.raises(MeasurementError) as refused:
        gatling.read(KNOWN)
    message = str(refused.value)
    assert "\n" not in message and "'3.12.1'" in message and "3.13" in message
