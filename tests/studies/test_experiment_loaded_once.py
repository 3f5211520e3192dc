"""`tiersim calibrate` and `tiersim reproduce --cross-validate` read their experiment's files
once (`sim.studies.records.Experiment`, read at the top of the command and passed to every
step); a `[[choose]]` candidate is that experiment with the candidate's settings
(`with_candidate`), derived as a value, not read again; a step called on its own by name still
reads the files itself, and fits as when it is given the experiment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.measurements.table import write
from sim.studies import records
from sim.studies.calibration.parameters import CalibrationError
from sim.studies.records import read_experiment, with_candidate

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

CHOOSE = """
[[choose]]
parameter = "backends.0.cores"
values = [1, 2]
"""


def lab(tmp_path: Path, experiment: str = EXPERIMENT) -> Path:
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
    (tmp_path / "experiment.toml").write_text(experiment, encoding="utf-8")
    return tmp_path


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The names whose files were read (`records.load_experiment`, which every step reaches
    through `read_experiment` when it is given a name and not an experiment)."""
    seen: list[str] = []
    read = records.load_experiment

    def counted(name: str):
        seen.append(name)
        return read(name)

    monkeypatch.setattr(records, "load_experiment", counted)
    return seen


def test_a_candidate_is_derived_from_the_experiment_read_once(tmp_path, reads):
    folder = str(lab(tmp_path))
    base = read_experiment(folder)
    chosen = with_candidate(base, ("backends.0.cores=2",))
    assert reads == [folder]  # the candidate reads nothing
    assert chosen.candidate == ("backends.0.cores=2",) and base.candidate == ()
    assert chosen.records is base.records and chosen.folder == base.folder
    # the candidate's settings on the constant column `class`, before every other factor's
    assert list(chosen.spec.factors) == ["class", "users"]
    assert chosen.spec.factors["class"] == {"*": ["backends.0.cores=2"]}
    assert chosen.spec.factors["users"] == base.spec.factors["users"]
    assert "class" not in base.spec.factors  # the experiment read is not changed
    assert chosen.spec.model_copy(update={"factors": base.spec.factors}) == base.spec
    assert with_candidate(base, ()) is base
    with pytest.raises(ValueError, match="already the candidate"):
        with_candidate(chosen, ("backends.0.cores=4",))


def test_the_settings_shared_by_every_row_leave_the_candidates_out(tmp_path):
    from sim.studies.calibration.fit import shared_settings

    base = read_experiment(str(lab(tmp_path)))
    assert shared_settings(base) == ["run.duration_s=20"]
    assert shared_settings(with_candidate(base, ("backends.0.cores=2",))) == ["run.duration_s=20"]


class Threads:
    """An executor of two slots (`sim.studies.executor`'s shape), so that the candidates are
    fitted side by side, each in its own thread."""

    slots = 2
    map = staticmethod(map)


@pytest.mark.parametrize("executor", [None, Threads()], ids=["in-turn", "side-by-side"])
def test_each_candidate_is_fitted_on_its_experiment_with_its_progress(tmp_path, reads, executor):
    """Every candidate's fit is given the experiment with its settings and a progress callback
    made for it, whether the candidates are fitted in turn or side by side in threads."""
    from sim.studies.choose import calibrate_choosing

    folder = str(lab(tmp_path, EXPERIMENT + CHOOSE))
    fitted: list[tuple[tuple[str, ...], str]] = []

    def calibrate(experiment, progress=None, **options):
        assert experiment.spec.factors["class"] == {"*": list(experiment.candidate)}
        fitted.append((experiment.candidate, progress()))
        raise CalibrationError(f"{' '.join(experiment.candidate)} cannot be fitted")

    def progress_for(candidate: tuple[str, ...]):
        return lambda: " ".join(candidate)

    options = {} if executor is None else {"executor": executor}
    with pytest.raises(CalibrationError, match="no \\[\\[choose\\]\\] candidate") as failed:
        calibrate_choosing(folder, calibrate, progress_for=progress_for, draws=0, **options)
    assert "backends.0.cores=1 cannot be fitted; backends.0.cores=2 cannot" in str(failed.value)
    assert sorted(fitted) == [
        (("backends.0.cores=1",), "backends.0.cores=1"),
        (("backends.0.cores=2",), "backends.0.cores=2"),
    ]
    assert reads == [folder]


def test_the_progress_line_names_the_candidate():
    from sim.cli.experiments import evaluations_to

    said: list[str] = []

    class Reporter:
        def say(self, line: str) -> None:
            said.append(line)

    evaluations_to(Reporter(), ("backends.0.cores=2",))(3, 0.25, [0.012])
    evaluations_to(Reporter())(4, 0.5, [0.0125])
    assert said == [
        "backends.0.cores=2: evaluation 3: sum of squared relative errors 0.25 at (0.012)",
        "evaluation 4: sum of squared relative errors 0.5 at (0.0125)",
    ]


def test_calibrate_fits_the_same_given_the_experiment_or_its_name(tmp_path, reads):
    """A calibration with its withheld-level intervals: given the experiment, its steps (the
    choice, the fit, the rows, the withheld levels) read nothing; given the name, the files
    are read once, and the document is the same."""
    from sim.present.json_text import json_text
    from sim.studies import choose
    from sim.studies.calibration.fit import calibrate

    folder = str(lab(tmp_path))

    def document(experiment) -> str:
        fit, choices = choose.calibrate_choosing(
            experiment, calibrate, replications=2, max_evaluations=3, draws=0
        )
        return json_text(fit.as_dict() | {"choices": choices})[0]

    given = read_experiment(folder)
    reads.clear()
    once = document(given)
    assert reads == []
    assert document(folder) == once
    assert reads == [folder]
    assert json.loads(once)["parameters"][0]["parameter"] == "backends.0.demand.mean"


def test_the_calibrate_command_reads_the_experiment_once(tmp_path, reads):
    """`tiersim calibrate` on an experiment with [[choose]] candidates and a withheld level:
    the files read once for the command, both candidates fitted, the withheld level given its
    interval."""
    from sim.cli import main

    folder = str(lab(tmp_path, EXPERIMENT + CHOOSE))
    args = ["calibrate", folder, "--serial", "--no-cache", "-r", "2"]
    result = CliRunner().invoke(main, [*args, "--max-evaluations", "3", "--draws", "0", "--json"])
    assert result.exit_code == 0, result.output
    assert reads == [folder]
    document = json.loads(result.stdout)
    assert [c["set"] for c in document["choices"]] == [
        ["backends.0.cores=1"],
        ["backends.0.cores=2"],
    ]
    (withheld,) = [r for r in document["rows"] if r["figure"] == "users12 throughput"]
    assert withheld["published"] is None and withheld["pi_low"] < withheld["pi_high"]


def test_the_cross_validation_reads_the_experiment_once(tmp_path, reads, monkeypatch):
    from sim.cli import main

    (tmp_path / "lab").mkdir()
    folder = str(lab(tmp_path / "lab"))
    monkeypatch.chdir(tmp_path)  # its calibration's cache: .tiersim-cache/ here
    result = CliRunner().invoke(
        main, ["reproduce", folder, "--cross-validate", "--serial", "-r", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert reads == [folder]
    rows = json.loads(result.stdout)
    assert {r["figure"] for r in rows if r["published"] is not None} >= {"users8 throughput"}


def test_an_experiment_that_fails_to_read_says_so_each_time(tmp_path, reads):
    from sim.studies.experiment import ExperimentError

    folder = lab(tmp_path)
    (folder / "experiment.toml").write_text("[experiment\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(ExperimentError):
            read_experiment(str(folder))
    assert len(reads) == 2
