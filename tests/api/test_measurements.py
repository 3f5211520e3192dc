"""`sim.import_measurements`, `read_measurements`, `write_measurements`, `estimate`,
`operational_laws`, `plan_experiment`: typed options (no `**options`), the demands as a frame
with units and `ci_low`/`ci_high`, and every argument they cannot use refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import sim
from sim.measurements.errors import MeasurementError
from tests.api.conftest import PLANNING

JTL = [PLANNING / f"users{n}.jtl" for n in (1, 2, 4)]


def test_the_table_round_trips_through_its_file(measured, tmp_path):
    table, path = measured
    assert sorted(table["run"].unique()) == ["users1", "users2", "users4"]
    assert "vm.cpu.utilization" in table.columns
    again = sim.read_measurements(path)
    sim.write_measurements(again, tmp_path / "copy.csv")
    assert sim.read_measurements(tmp_path / "copy.csv").equals(again)


def test_the_cut_and_the_window_are_typed_options():
    whole = sim.import_measurements("jtl", JTL[:1], window_s=10.0)
    cut = sim.import_measurements("jtl", JTL[:1], window_s=10.0, warmup_s=10, until_s=30)
    assert len(whole) > len(cut) >= 2
    assert cut["window_start_s"].min() >= 10.0


def test_estimate_is_the_utilisation_law_through_the_origin(measured):
    """One class, no background: D = sum(U X) / sum(X^2) over the windows (the regression of
    the service demand law U = D X), inside its own interval."""
    table, path = measured
    frame = sim.estimate(path)
    assert list(frame.columns) == [
        "host",
        "class",
        "demand",
        "std_error",
        "ci_low",
        "ci_high",
        "unit",
        "at_bound",
        "method",
        "windows",
    ]
    (row,) = frame.itertuples()
    used = table[table["class"] != "total"]
    used = used[used["vm.cpu.utilization"].notna() & used["throughput"].notna()]
    u, x = used["vm.cpu.utilization"].to_numpy(), used["throughput"].to_numpy()
    assert row.demand == pytest.approx(float(np.sum(u * x) / np.sum(x * x)), rel=1e-9)
    assert row.ci_low <= row.demand <= row.ci_high and row.unit == "s"
    assert frame.attrs["units"]["demand"] == "s" and frame.attrs["warnings"] == []
    with_background = sim.estimate(table[table["class"] == "total"], background=True)
    assert "(background)" in set(with_background["class"])


def test_operational_laws_give_the_think_time_the_response_time_law_implies(measured):
    table, _ = measured
    laws = sim.operational_laws(table)
    implied = laws["users"] / laws["throughput"] - laws["response_mean_s"]
    assert np.allclose(laws["think_s"], implied)


def test_plan_experiment_writes_a_folder_with_typed_options(measured, tmp_path):
    _, path = measured
    said = sim.plan_experiment(path, ["users1", "users4"], tmp_path / "exp", cores=2, predict=8)
    assert said["fit"] == ["users1", "users4"]
    # the predicted level became a run of the copied table, with its users and no figures
    copied = sim.read_measurements(tmp_path / "exp" / "measured.csv")
    assert set(copied["run"]) == {"users1", "users2", "users4", "users8"}
    assert copied.loc[copied["run"] == "users8", "users"].eq(8).all()


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        ({"format": "xml"}, "format"),
        ({"format": 3}, "format"),
        ({"files": []}, "files"),
        ({"files": 3}, "files"),
        ({"window_s": 0}, "window_s"),
        ({"window_s": "10"}, "window_s"),
        ({"warmup_s": -1}, "warmup_s"),
        ({"until_s": float("nan")}, "until_s"),
        ({"class_by": "path"}, "class_by"),
        ({"classes": "^/a=a"}, "classes"),
        ({"utilisation": 3}, "utilisation"),
        ({"start": True}, "start"),
        ({"run": 3}, "run"),
        ({"output": 3}, "output"),
    ],
)
def test_import_refuses_an_argument_it_cannot_use(arguments, parameter):
    given = {"format": "jtl", "files": JTL[:1], **arguments}
    with pytest.raises(sim.ArgumentError) as caught:
        sim.import_measurements(**given)
    assert caught.value.parameter == parameter and "\n" not in str(caught.value)


def test_import_problems_of_the_files_keep_their_own_messages(tmp_path):
    with pytest.raises(ValueError, match=r"no-such\.jtl"):
        sim.import_measurements("jtl", [tmp_path / "no-such.jtl"])
    with pytest.raises(ValueError, match=r"\.txt"):
        sim.import_measurements("jtl", JTL[:1], tmp_path / "out.txt")


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        ({"table": 3}, "table"),
        ({"level": 1.5}, "level"),
        ({"level": 0}, "level"),
        ({"background": "yes"}, "background"),
        ({"host": 3}, "host"),
    ],
)
def test_estimate_refuses_an_argument_it_cannot_use(measured, arguments, parameter):
    given = {"table": measured[0], **arguments}
    with pytest.raises(sim.ArgumentError) as caught:
        sim.estimate(**given)
    assert caught.value.parameter == parameter


def test_estimate_names_an_unknown_host(measured):
    with pytest.raises(MeasurementError, match=r"no host 'db'; expected one of vm"):
        sim.estimate(measured[0], host="db")


def test_the_table_functions_refuse_what_is_not_a_table(tmp_path):
    with pytest.raises(sim.ArgumentError, match=r"^table: expected a DataFrame"):
        sim.write_measurements("table.csv", tmp_path / "x.csv")  # type: ignore[arg-type]
    with pytest.raises(sim.ArgumentError, match=r"^path: "):
        sim.read_measurements(3)  # type: ignore[arg-type]
    with pytest.raises(sim.ArgumentError, match=r"^warmup_s: "):
        sim.operational_laws(tmp_path / "x.csv", warmup_s=-5)
    with pytest.raises(sim.ArgumentError, match=r"^table: "):
        sim.operational_laws(None)  # type: ignore[arg-type]


def test_plan_experiment_takes_the_frame_itself(measured, tmp_path):
    """No file to write first: the frame becomes the folder's measured.csv, the same plan."""
    table, path = measured
    from_frame = sim.plan_experiment(table, ["users1", "users4"], tmp_path / "a", cores=2)
    from_file = sim.plan_experiment(path, ["users1", "users4"], tmp_path / "b", cores=2)
    assert {k: v for k, v in from_frame.items() if k != "folder"} == {
        k: v for k, v in from_file.items() if k != "folder"
    }
    assert sim.read_measurements(tmp_path / "a" / "measured.csv").equals(
        sim.read_measurements(tmp_path / "b" / "measured.csv")
    )


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        ({"table": 3}, "table"),
        ({"fit": "users1"}, "fit"),
        ({"cores": 0}, "cores"),
        ({"cores": "2"}, "cores"),
        ({"predict": [8, -1]}, "predict"),
        ({"threads": 2.5}, "threads"),
        ({"duration_s": 0}, "duration_s"),
        ({"shape": 3}, "shape"),
        ({"think": 0.5}, "think"),
        ({"folder": None}, "folder"),
    ],
)
def test_plan_refuses_an_argument_it_cannot_use(measured, tmp_path, arguments, parameter):
    given = {"table": measured[1], "fit": ["users1", "users4"], "folder": tmp_path, **arguments}
    with pytest.raises(sim.ArgumentError) as caught:
        sim.plan_experiment(**given)
    assert caught.value.parameter == parameter
