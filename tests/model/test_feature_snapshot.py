"""The features of every model file shipped with the project -- names, the settings behind them,
their order -- and the caveat `solve` gives each, as recorded in `feature_snapshot.json`.

The record was written by the hand list of `sim.model.stack` before each stack part came to
decide and declare its own features (issue 39); this test shows the move changed nothing a
user sees: the engine choice's note, `solve`'s caveats and their order.  A change to a shipped
model file, or a feature changed on purpose, is recorded again with
`python -m tests.model.test_feature_snapshot` and the difference read in the diff."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from sim.model.features import solver_caveat
from sim.model.load import load_model
from sim.model.plan import compile_plan

ROOT = Path(__file__).resolve().parents[2]
RECORD = Path(__file__).with_name("feature_snapshot.json")
# model files: the shipped models and templates, the experiments', the notebooks' and the
# benchmarks' (an experiment or sweep file among them is not a model, and is left out)
SOURCES = ("models", "experiments", "notebooks", "bench")


def model_files() -> list[Path]:
    files = sorted(p for folder in SOURCES for p in (ROOT / folder).rglob("*.toml"))
    return [p for p in files if not {"sweep", "experiment"} & set(tomllib.loads(p.read_text()))]


def features_of(path: Path) -> dict:
    stack = compile_plan(load_model(path)).stack
    return {
        "features": [[name, setting] for name, setting in stack.features.items()],
        "caveats": [solver_caveat(name) for name in stack.features],
    }


def test_the_record_covers_every_shipped_model():
    # a model file added to models/ is recorded with the others; the experiments', notebooks'
    # and benchmarks' files are compared where they are recorded
    recorded = json.loads(RECORD.read_text())
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "models").glob("*.toml")}
    assert len(recorded) >= 20
    assert shipped <= set(recorded), sorted(shipped - set(recorded))


def _recorded_files() -> list[Path]:
    recorded = json.loads(RECORD.read_text())
    return [p for p in model_files() if str(p.relative_to(ROOT)) in recorded]


@pytest.mark.parametrize("path", _recorded_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_model_file_has_the_recorded_features_in_the_recorded_order(path):
    recorded = json.loads(RECORD.read_text())[str(path.relative_to(ROOT))]
    assert features_of(path) == recorded


if __name__ == "__main__":
    record = {str(p.relative_to(ROOT)): features_of(p) for p in model_files()}
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    sys.stdout.write(f"{RECORD}: {len(record)} model files\n")
