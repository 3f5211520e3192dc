"""Seed 002 in the suite, cheaply: the -server rows of both containers (two replications each,
four ab batches of 10000 requests).  The collapse must come out of the heap filling with
sessions and the full collections that follow, in Tomcat's fourth batch only."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.model.load import load_model
from sim.run.replications import run
from sim.studies.experiment import is_fitted

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture(scope="module")
def batches():
    out = {}
    for container, file in (
        ("tomcat", "seed002-tomcat6018.toml"),
        ("jetty", "seed002-jetty6114.toml"),
    ):
        summary = run(load_model(MODELS / file), replications=2).summary
        out[container] = summary
    return out


def test_tomcat_collapses_in_the_fourth_batch_and_jetty_does_not(batches):
    tomcat, jetty = batches["tomcat"], batches["jetty"]
    # Tomcat: batch 4 far below batch 3 (upper bound of its interval vs lower bound of batch 3's)
    assert tomcat["batch.4.throughput"].high < 0.2 * tomcat["batch.3.throughput"].low
    # ... because the JVM collected all the time: back-to-back full collections
    assert tomcat["batch.4.app1.jvm.gc_fraction"].low > 0.8
    assert tomcat["batch.3.app1.jvm.full_gcs"].high == 0 < tomcat["batch.4.app1.jvm.full_gcs"].low
    assert tomcat["count.errors"].high == 0  # the heap fills, but not past OutOfMemoryError
    # Jetty: its smaller sessions leave room; batch 4 as fast as batch 3 (within 10 %)
    assert jetty["batch.4.app1.jvm.full_gcs"].high == 0
    assert jetty["batch.4.throughput"].mean == pytest.approx(
        jetty["batch.3.throughput"].mean, rel=0.1
    )


def test_the_server_vm_warms_up_over_the_first_batches(batches):
    for summary in batches.values():
        first, second, third = (summary[f"batch.{k}.throughput"] for k in (1, 2, 3))
        assert first.high < second.low and second.high < third.low


def test_every_session_lives_through_the_run(batches):
    # ab keeps no cookies: 40000 sessions, none expired (30-min timeout, a few minutes of run)
    assert batches["tomcat"]["batch.4.app1.jvm.sessions"].mean == 40000


def test_seed002_marks_which_figures_were_fitted():
    from sim.studies.records import load_experiment

    _, spec, _ = load_experiment("seed002")
    row = {"container": "tomcat-6.0.18", "jvm_mode": "client", "batch": "4"}
    assert not is_fitted(spec, row, "throughput_req_per_s")  # the client collapse is predicted
    assert is_fitted(spec, {**row, "jvm_mode": "server"}, "throughput_req_per_s")
