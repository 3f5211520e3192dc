"""The code a kept result was made by (`sim.studies.source_digest`): any edit of a source file
of the package changes it, so calibrate's and capacity's caches never replay what other code
computed."""

from __future__ import annotations

from sim.studies import source_digest
from sim.studies.calibration import evaluate
from sim.studies.calibration.fit import targets
from sim.studies.records import read_experiment
from tests.api.conftest import experiment


def test_an_edit_a_new_file_or_another_stamp_changes_the_digest(tmp_path):
    package = tmp_path / "sim"
    (package / "engines").mkdir(parents=True)
    (package / "engines" / "loop.py").write_text("SPEED = 1\n")
    (package / "notes.txt").write_text("not code")
    first = source_digest.package_digest(package, "0.1.0")
    assert source_digest.package_digest(package, "0.1.0") == first
    (package / "notes.txt").write_text("not code, edited")
    assert source_digest.package_digest(package, "0.1.0") == first  # only the sources count
    assert source_digest.package_digest(package, "0.1.1") != first
    (package / "engines" / "loop.py").write_text("SPEED = 2\n")
    edited = source_digest.package_digest(package, "0.1.0")
    assert edited != first
    (package / "engines" / "extra.py").write_text("")
    assert source_digest.package_digest(package, "0.1.0") not in (first, edited)
    assert len(source_digest.code_digest()) == 64


def test_calibrates_cache_is_keyed_by_the_code_too(tmp_path, monkeypatch):
    read = read_experiment(str(experiment(tmp_path)))
    goals = targets(read.spec, read.records, read.folder)
    before = evaluate.fingerprint(read.folder, read.spec, goals, 2)
    assert evaluate.fingerprint(read.folder, read.spec, goals, 2) == before
    monkeypatch.setattr(source_digest, "code_digest", lambda: "an edited sim package")
    assert evaluate.fingerprint(read.folder, read.spec, goals, 2) != before
