"""A capacity search's kept evaluations (`sim.studies.capacity.kept`): the fingerprint of an
evaluation changes with everything its figures depend on -- so a kept evaluation is never
replayed for another model, value, seed, run length, SLO, calibration, sampled file or code --
and a record goes through the file unchanged."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from sim.studies.capacity import kept as kept_module
from sim.studies.capacity.kept import KeptEvaluations, calibration_digest
from sim.studies.capacity.search import _task, search_base
from sim.studies.capacity.slo import parse_slo
from tests.conftest import one_server_file

SLOS = [parse_slo("response.mean<1")]


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "server.toml"
    path.write_text(one_server_file(duration_s=200, warmup_s=20, replications=3))
    return path


def fingerprint(
    model, *overrides: str, value=2.0, seed=None, replications=None, slos=SLOS, calibration=""
):
    base = search_base(model, tuple(overrides), replications, seed)
    task = _task(base, "clients.rate_per_s", value, False, ("response.mean",), 0)
    return KeptEvaluations(model.parent / "cache.jsonl", calibration).fingerprint(task, slos)


def test_every_input_of_an_evaluation_changes_its_fingerprint(model):
    same = fingerprint(model)
    assert same == fingerprint(model)
    others = [
        fingerprint(model, value=2.5),  # the searched value
        fingerprint(model, "run.duration_s=300"),  # the run length (--set)
        fingerprint(model, "run.warmup=30"),  # the warm-up
        fingerprint(model, 'run.engine="reference"'),  # the engine asked for
        fingerprint(model, "backends.0.threads=2"),  # the model
        fingerprint(model, seed=12),
        fingerprint(model, replications=4),
        fingerprint(model, slos=[parse_slo("response.mean<2")]),
        fingerprint(model, calibration="another calibration"),
    ]
    assert same not in others and len(set(others)) == len(others)
    model.write_text(model.read_text().replace("mean = 0.3", "mean = 0.31"))  # the file edited
    assert fingerprint(model) != same


def test_the_code_and_a_sampled_file_are_in_the_fingerprint(model, monkeypatch):
    samples = model.parent / "demand.csv"
    samples.write_text("elapsed\n0.2\n0.3\n0.4\n")
    model.write_text(
        model.read_text().replace(
            '{ dist = "exponential", mean = 0.3 }',
            '{ dist = "empirical", csv = "demand.csv", column = "elapsed" }',
        )
    )
    before = fingerprint(model)
    samples.write_text("elapsed\n0.2\n0.3\n0.5\n")  # same model text, other samples
    sampled = fingerprint(model)
    assert sampled != before
    monkeypatch.setattr(kept_module, "code_digest", lambda: "an edited sim package")
    assert fingerprint(model) not in (before, sampled)


def test_a_calibration_digest_is_of_its_content_exactly():
    @dataclasses.dataclass
    class Fit:
        values: tuple[float, ...]
        cov: np.ndarray

    def digest(value: float, last: float) -> str:
        return calibration_digest(Fit((value,), np.array([[1.0, 0.0], [0.0, last]])))

    assert calibration_digest(None) == ""
    assert digest(0.1, 2.0) == digest(0.1, 2.0)
    assert digest(0.1, 2.0) != digest(0.1000001, 2.0)
    assert digest(0.1, 2.0) != digest(0.1, 2.0 + 1e-12)  # beyond numpy's printed digits


def record_of(task, **changed):
    """A record as `run_point` makes it, with `changed` fields."""
    record = {
        "point_id": task.point_id,
        "clients.rate_per_s": 2.0,
        "status": "ok",
        "error_kind": None,
        "error": None,
        "share.failed": 0.0,
        "share.failed.ci_low": 0.0,
        "share.failed.ci_high": math.nan,
        "count.failed": 0.0,
        "count.completed": 381.0,
        "replications": 3,
        "window_s": 180.0,
        "warmup_s": 20.0,
        "warnings": '["response.p99: few responses beyond it"]',
        "response.mean": 0.1 + 0.2,  # 0.30000000000000004: a float's shortest repr
        "response.mean.ci_low": 1e-310,
        "response.mean.ci_high": math.inf,
        "model": "{... a whole model: not kept}",
        "runtime_s": 0.4,
    }
    return record | changed


def test_a_kept_record_comes_back_unchanged(model, tmp_path):
    base = search_base(model, (), None, None)
    task = _task(base, "clients.rate_per_s", 2.0, False, ("response.mean",), 0)
    record = record_of(task)
    cache = tmp_path / "cache.jsonl"
    writer = KeptEvaluations(cache)
    key = writer.fingerprint(task, SLOS)
    writer.keep(key, record, task)
    writer.keep(key, record, task)  # once only
    assert writer.simulated == 2 and len(cache.read_text().splitlines()) == 1
    reader = KeptEvaluations(cache)
    back = reader.recall(key, task)
    assert back is not None and reader.reused == 1
    assert not {"model", "point_id", "runtime_s"} & set(back)
    assert back["response.mean"] == 0.1 + 0.2 and back["response.mean.ci_low"] == 1e-310
    assert back["response.mean.ci_high"] == math.inf and math.isnan(back["share.failed.ci_high"])
    kept_part = {k: v for k, v in record.items() if k in back}
    assert json.dumps(back, sort_keys=True) == json.dumps(kept_part, sort_keys=True)
    assert reader.said() == f"resumed: 1 of 1 evaluations from {cache}"


@pytest.mark.parametrize(
    "changed",
    [
        {"replications": "3"},
        {"response.mean.ci_high": None},
        {"warnings": "not JSON"},
        {"warnings": "[1, 2]"},
        {"status": "ok", "error_kind": "unstable"},
        {"clients.rate_per_s": 2.5},  # another value's figures under this value's key
        {"count.completed": True},
    ],
)
def test_a_hand_edited_line_is_run_again_not_read(model, tmp_path, changed):
    """A line with the right key but not a whole record of the evaluation (edited by hand, or
    made by anything but this code) is run again, never read into a wrong answer or a crash."""
    base = search_base(model, (), None, None)
    task = _task(base, "clients.rate_per_s", 2.0, False, ("response.mean",), 0)
    cache = tmp_path / "cache.jsonl"
    writer = KeptEvaluations(cache)
    key = writer.fingerprint(task, SLOS)
    writer.keep(key, record_of(task), task)
    assert KeptEvaluations(cache).recall(key, task) is not None
    line = json.loads(cache.read_text())
    line["record"] |= changed
    cache.write_text(json.dumps(line) + "\n")
    reader = KeptEvaluations(cache)
    assert reader.recall(key, task) is None and reader.reused == 0
    reader.keep(key, record_of(task), task)  # run again: kept after the edited line
    replayed = KeptEvaluations(cache).recall(key, task)
    assert json.dumps(replayed, sort_keys=True) == json.dumps(reader.known[key], sort_keys=True)


def test_an_unstable_value_is_kept_without_figures(model, tmp_path):
    base = search_base(model, (), None, None)
    task = _task(base, "clients.rate_per_s", 2.0, False, ("response.mean",), 0)
    unstable = record_of(
        task, status="failed", error_kind="unstable", error="utilization 1.2", replications=0
    )
    unstable |= {name: math.nan for name in ("response.mean", "count.completed", "window_s")}
    cache = tmp_path / "cache.jsonl"
    writer = KeptEvaluations(cache)
    key = writer.fingerprint(task, SLOS)
    writer.keep(key, unstable, task)
    assert KeptEvaluations(cache).recall(key, task)["error_kind"] == "unstable"


def test_a_failure_that_stops_the_search_is_not_kept(model, tmp_path):
    base = search_base(model, (), None, None)
    task = _task(base, "clients.rate_per_s", 2.0, False, ("response.mean",), 0)
    cache = tmp_path / "cache.jsonl"
    writer = KeptEvaluations(cache)
    internal = {"clients.rate_per_s": 2.0, "status": "failed", "error_kind": "internal"}
    writer.keep(writer.fingerprint(task, SLOS), internal, task)
    assert not cache.exists()


def test_without_a_file_nothing_is_kept_or_replayed(model):
    base = search_base(model, (), None, None)
    task = _task(base, "clients.rate_per_s", 2.0, False, ("response.mean",), 0)
    nothing = KeptEvaluations(None)
    assert nothing.fingerprint(task, SLOS) is None and nothing.recall(None, task) is None
    assert nothing.said() is None
