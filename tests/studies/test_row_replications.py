"""A calibration's points read each row's `run.replications` once: the parameters' values and a
point's seed do not set it, so the row's model is loaded (and checked) once, not once per point
(`sim.studies.calibration.linearise.RowReplications`)."""

from __future__ import annotations

import sim.studies.calibration.linearise as linearise
from sim.studies.calibration.linearise import RowReplications

MODEL = """
[clients]
kind = "open"
rate_per_s = 5.0

[[backends]]
name = "server"
demand = { dist = "exponential", mean = 0.05 }

[run]
duration_s = 60
replications = 7
seed = 3
"""


def _counted_loads(monkeypatch) -> list[tuple[str, ...]]:
    loads: list[tuple[str, ...]] = []
    load = linearise.load_row_model

    def counted(model_file, overrides):
        loads.append(overrides)
        return load(model_file, overrides)

    monkeypatch.setattr(linearise, "load_row_model", counted)
    return loads


def test_a_rows_replications_are_read_once_over_its_points(tmp_path, monkeypatch):
    model = tmp_path / "model.toml"
    model.write_text(MODEL)
    loads = _counted_loads(monkeypatch)
    counts = RowReplications()
    row = ("clients.rate_per_s=4.0",)
    for demand, seed in ((0.05, 11), (0.06, 12), (0.07, 13)):
        moved = (f"backends.0.demand.mean={demand!r}", f"run.seed={seed}")
        assert counts(model, row, moved, (*row, *moved)) == 7
    assert loads == [("clients.rate_per_s=4.0", "backends.0.demand.mean=0.05", "run.seed=11")]
    # another row of the same file is another model: read once more
    assert counts(model, ("run.replications=3",), (), ("run.replications=3",)) == 3
    assert len(loads) == 2


def test_a_point_that_sets_the_replications_is_read_at_each_value(tmp_path, monkeypatch):
    model = tmp_path / "model.toml"
    model.write_text(MODEL)
    loads = _counted_loads(monkeypatch)
    counts = RowReplications()
    for replications in (2, 4, 2):
        moved = (f"run.replications = {replications}",)
        assert counts(model, (), moved, moved) == replications
    assert len(loads) == 2  # the second 2 is the first's run again
    whole = ("run={duration_s=60, replications=5, seed=3}",)
    assert counts(model, (), whole, whole) == 5
