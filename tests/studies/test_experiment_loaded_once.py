"""`tiersim calibrate` reads its experiment's files once (`sim.studies.calibration.loaded`):
the same objects to every step for one name and [[choose]] candidate, read afresh outside a
calibration, and the same calibration as when every step read the files itself."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from sim.measurements.table import write
from sim.studies import records
from sim.studies.calibration.loaded import load_experiment, loaded_once
from sim.studies.experiment import ExperimentError
from sim.studies.measured_table import CANDIDATE

MODEL = Path(__file__).resolve().parents[2] / "models" / "planner-apache-tomcat.toml"

EXPERIMENT = f"""\
[experiment]
name = "lab"
table = "measured.csv"

[models]
model = "{MODEL}"

[factors.users]
"*" = ["clients.users={{value}}", "run.duration_s=20"]

[[fitted]]
users = 4

[[calibrate]]
parameter = "backends.0.demand.mean"
bounds = [0.002, 0.05]
"""


def lab(tmp_path: Path) -> Path:
    rows = []
    for users, count, response in ((4, 150, 0.012), (8, 290, 0.014)):
        for k, wobble in enumerate((0.95, 1.0, 1.05)):
            rows.append(
                {
                    "run": f"users{users}",
                    "window_start_s": 10.0 * k,
                    "window_end_s": 10.0 * k + 10.0,
                    "class": "total",
                    "users": users,
                    "throughput": round(count * wobble) / 10.0,
                    "response.mean": response / wobble,
                    "count.completed": round(count * wobble),
                    "count.errors": 0,
                }
            )
    # a level nobody measured (tiersim plan --predict): its interval is the withheld step's
    rows.append(
        {"run": "users12", "window_start_s": 0.0, "window_end_s": 0.0, "users": 12.0}
        | {"class": "total"}
    )
    write(rows, tmp_path / "measured.csv")
    (tmp_path / "experiment.toml").write_text(EXPERIMENT, encoding="utf-8")
    return tmp_path


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The names whose files the calibration's steps read (`records.load_experiment` called
    through `loaded`).  `simulate_rows` (shared with `reproduce`) imported the function before
    the patch and still reads the table on its own: not counted."""
    import sim.studies.rows  # noqa: F401  (binds the unpatched function first)

    seen: list[str] = []
    read = records.load_experiment

    def counted(name: str):
        seen.append(name)
        return read(name)

    monkeypatch.setattr(records, "load_experiment", counted)
    return seen


def test_read_once_per_name_and_candidate_inside_and_afresh_outside(tmp_path, reads):
    folder = str(lab(tmp_path))
    with loaded_once():
        first = load_experiment(folder)
        assert load_experiment(folder) is first
        with loaded_once():  # an inner calibration keeps the outer one's experiments
            assert load_experiment(folder) is first
        token = CANDIDATE.set(("backends.0.cores=2",))
        try:
            other = load_experiment(folder)  # a candidate's settings are in its spec
            assert other is not first and load_experiment(folder) is other
            assert other[1] != first[1]
        finally:
            CANDIDATE.reset(token)
    assert reads == [folder, folder]
    again = load_experiment(folder)
    assert again is not first and again[1] == first[1] and again[2] == first[2]
    assert reads == [folder, folder, folder]


def test_an_experiment_that_fails_to_read_is_not_kept(tmp_path, reads):
    folder = lab(tmp_path)
    (folder / "experiment.toml").write_text("[experiment\n", encoding="utf-8")
    with loaded_once():
        for _ in range(2):
            with pytest.raises(ExperimentError):
                load_experiment(str(folder))
    assert len(reads) == 2


def test_calibrate_reads_the_files_once_and_fits_as_before(tmp_path, reads, monkeypatch):
    """A calibration with its withheld-level intervals: the command's steps (the choice, the
    fit, the withheld levels) read the experiment once; with every step reading the files
    itself (no `loaded_once`), the same document."""
    from sim.present.json_text import json_text
    from sim.studies import choose
    from sim.studies.calibration.fit import calibrate

    folder = str(lab(tmp_path))

    def document() -> str:
        fit, choices = choose.calibrate_choosing(
            folder, calibrate, replications=2, max_evaluations=3, draws=0
        )
        return json_text(fit.as_dict() | {"choices": choices})[0]

    once = document()
    assert reads == [folder]
    monkeypatch.setattr(choose, "loaded_once", contextlib.nullcontext)
    reads.clear()
    assert document() == once
    assert len(reads) == 3  # the choice, the fit and the withheld levels each read it
    assert json.loads(once)["parameters"][0]["parameter"] == "backends.0.demand.mean"
