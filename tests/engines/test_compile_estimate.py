"""The first compilation's announced estimate: the reference's CPU time scaled by the probe,
over the core share the load leaves, as a range."""

from __future__ import annotations

import math

import pytest

from sim.engines.compile_estimate import (
    CPU_SPREAD,
    REFERENCE,
    Reference,
    core_share,
    estimate,
    probe_cpu_s,
)

MEASURED = Reference(compile_cpu_s=120.0, probe_cpu_s=0.02, measured="test")


def test_the_estimate_scales_the_reference_by_the_probe_and_the_load():
    found = estimate(MEASURED, probe_s=0.04, loads=(3.0, 1.0, 5.0), cores=2)
    assert found is not None
    assert found.cpu_s == pytest.approx(240.0)  # a machine half as fast: twice the CPU time
    # lightest load 1 on 2 cores: a whole core; heaviest 5: 2/6 of one
    assert found.wall_low_s == pytest.approx(240.0 * (1 - CPU_SPREAD))
    assert found.wall_high_s == pytest.approx(240.0 * (1 + CPU_SPREAD) * 3)
    assert found.load == 3.0
    assert found.phrase() == "3–15 min here (2 cores at load 3.0; about 4 min of CPU)"
    assert found.progress(75).startswith("still compiling: 75 s of an estimated 3–15 min")


def test_a_quiet_machine_gets_a_range_in_seconds():
    found = estimate(MEASURED, probe_s=0.01, loads=(0.1, 0.2, 0.3), cores=4)
    assert found is not None
    assert found.phrase() == "45–75 s here (4 cores at load 0.1; about 60 s of CPU)"


def test_core_share():
    assert core_share(0.0, 2) == 1.0
    assert core_share(1.0, 2) == 1.0
    assert core_share(3.0, 2) == pytest.approx(0.5)
    assert core_share(-1.0, 1) == 1.0


def test_without_a_reference_or_a_load_there_is_no_estimate(monkeypatch):
    unmeasured = Reference(compile_cpu_s=math.nan, probe_cpu_s=math.nan, measured="")
    assert estimate(unmeasured, probe_s=0.02, loads=(1.0, 1.0, 1.0), cores=2) is None

    def no_load():
        raise OSError("no load average")

    monkeypatch.setattr("os.getloadavg", no_load)
    assert estimate(MEASURED, probe_s=0.02, cores=2) is None


def test_the_probe_is_short_and_positive():
    seconds = probe_cpu_s(repeats=3)
    assert 0 < seconds < 1


def test_the_shipped_reference_is_measured():
    """REFERENCE holds a measurement (`python -m sim.engines.compile_estimate --measure`)."""
    assert REFERENCE.compile_cpu_s > 0 and REFERENCE.probe_cpu_s > 0
    # a fresh clone's `make demo` compiled for 374 s at load 3 on the reference's 2 cores
    found = estimate(probe_s=REFERENCE.probe_cpu_s, loads=(3.0, 3.0, 3.0), cores=2)
    assert found is not None
    assert found.wall_low_s <= 374 <= found.wall_high_s
