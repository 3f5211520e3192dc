"""The typed experiment file (sim.studies.spec): validated once where it is read, every problem
one line `FILE: field.path = value: what is allowed (the fix)`, no key ignored."""

from __future__ import annotations

import copy
import re
import textwrap
from pathlib import Path

import pytest

from sim.studies.experiment import ExperimentError, figures_of, is_fitted, parse_experiment
from sim.studies.records import load_experiment

SOURCE = Path("exp/experiment.toml")
BASE = {
    "experiment": {"name": "mine", "published": "published.csv"},
    "models": {"column": "name", "t100": "model.toml"},
    "factors": {"users": {"*": ["clients.users={value}"]}},
    "figures": [{"column": "throughput", "metric": "throughput"}],
    "fitted": [{"name": "t100", "figure": "throughput"}],
    "calibrate": [{"parameter": "backends.0.demand.mean", "bounds": [0.005, 0.05]}],
}


def changed(path: str, value) -> dict:
    """BASE with one value set (`figures.0.scale`), or removed (value None)."""
    raw = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node = raw
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if value is None:
        del node[last]
    else:
        node[last] = value
    return raw


def refused(raw: dict) -> list[str]:
    with pytest.raises(ExperimentError) as caught:
        parse_experiment(raw, SOURCE)
    lines = str(caught.value).splitlines()
    assert all(line.startswith(f"{SOURCE}: ") for line in lines), lines
    return [line.removeprefix(f"{SOURCE}: ") for line in lines]


@pytest.mark.parametrize(
    "path, value, expected",
    [
        # unknown keys, in every kind of table, with the near spelling or the known keys
        ("experiment.warmup", 10, "experiment.warmup = 10: unknown key: did you mean warmup_s?"),
        ("figures.0.scael", 2.0, "figures[0].scael = 2.0: unknown key: did you mean scale?"),
        (
            "calibrate.0.bound",
            [1, 2],
            "calibrate[0].bound = [1, 2]: unknown key: did you mean bounds? (calibrate[0] takes",
        ),
        ("figurs", [{"column": "x"}], "figurs: unknown key: did you mean figures?"),
        ("response_time_law", {"users": 6, "respons_column": "r"}, "did you mean response_column"),
        # wrong types
        ("experiment.published", 5, "experiment.published = 5: must be a string (in quotes)"),
        ("figures.0.metric", ["x"], "figures[0].metric = ['x']: must be a string (in quotes)"),
        ("figures", {"column": "x"}, "figures: must be a list ([[figures]] tables)"),
        ("models.t100", 5, "models.t100 = 5: must be a model file name (a string)"),
        ("factors.users.*", "clients.users=1", "factors.users.\"*\" = 'clients.users=1': must"),
        ("calibrate.0.start", True, "calibrate[0].start = True: must be a valid number"),
        ("calibrate.0.bounds", [0.5, 0.1], "calibrate[0].bounds = [0.5, 0.1]: must be [low, high]"),
        ("calibrate.0.scale", "ln", "calibrate[0].scale = 'ln': must be 'log' or 'linear'"),
        ("fitted.0.name", True, "fitted[0].name = True: must be the row's value in that column"),
        ("figures.0.when", {"users": {}}, "figures[0].when.users: must be a column's value"),
        ("experiment.measurement_error", 3, "experiment.measurement_error = 3: must be less than"),
        # a zero or infinite scale (a negative one is a %idle's: allowed)
        ("figures.0.scale", 0, "figures[0].scale = 0: must be a non-zero number"),
        ("figures.0.scale", float("inf"), "figures[0].scale = inf: must be a non-zero number"),
        ("figures.0.scale", "x", "figures[0].scale = 'x': must be a non-zero number"),
        ("figures.0.metric", None, "figures[0].metric: required (the simulated metric compared"),
        # rules that tie the tables together
        ("experiment.windows", "each", "experiment.windows = 'each': only for an imported"),
        ("models.column", None, "models.column: required: the CSV column whose value picks"),
        ("choose", [{"parameter": "x", "values": [1]}], "[[choose]] needs an experiment on an"),
        ("calibrate.0.start", 1.0, "calibrate[0]: start = 1 is outside bounds [0.005, 0.05]"),
    ],
)
def test_a_bad_value_is_named_with_its_field_and_the_fix(path, value, expected):
    assert any(expected in line for line in refused(changed(path, value))), expected


def test_every_problem_is_reported_on_a_line_of_its_own():
    raw = changed("figures.0.scale", 0)
    raw["experiment"]["titel"] = "x"
    assert refused(raw) == [
        "experiment.titel = 'x': unknown key: did you mean title? (experiment takes name, "
        "title, source, published, table, class, windows, warmup_s, value_column, metric, "
        "flag_column, flag_metrics, label_columns, measurement_error, model_error, seed)",
        "figures[0].scale = 0: must be a non-zero number (the published column's value per unit "
        "of the metric, e.g. 1000 for ms, or -100 with offset = 100 for a %idle)",
    ]


def test_valid_values_keep_their_types():
    spec = parse_experiment(changed("figures.0.scale", -100), SOURCE)
    assert spec.figures[0].scale == -100.0 and spec.figures[0].offset == 0.0
    assert spec.models.files == {"t100": "model.toml"} and spec.models.column == "name"
    assert spec.fitted[0].selectors == {"name": "t100"} and spec.fitted[0].figure == "throughput"
    row = {"name": "t100", "users": "100"}
    assert is_fitted(spec, row, "throughput") and not is_fitted(spec, row, "response")
    assert [f.metric for f in figures_of(spec, row)] == ["throughput"]
    # whole numbers stay whole: `values = [1, 2]` sets backends.0.cores=1, not 1.0
    table = {
        "experiment": {"table": "measured.csv"},
        "models": {"model": "m.toml"},
        "figures": [{"column": "response.mean"}],  # the metric defaults to the column
        "choose": [{"parameter": "backends.0.cores", "values": [1, 2]}],
    }
    spec = parse_experiment(table, SOURCE)
    assert spec.figures[0].metric == "response.mean"
    assert [f"{v}" for v in spec.choose[0].values] == ["1", "2"]


def test_the_file_is_validated_where_it_is_read(tmp_path):
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "published.csv").write_text("name,users,throughput\nt100,100,90\n")
    (folder / "experiment.toml").write_text(
        textwrap.dedent("""
        [experiment]
        published = "published.csv"
        [models]
        column = "name"
        t100 = "model.toml"
        [[figures]]
        column = "throughput"
        metric = "throughput"
        scale = 0
        """)
    )
    source = folder / "experiment.toml"
    with pytest.raises(ExperimentError, match=re.escape(f"{source}: figures[0].scale = 0: must")):
        load_experiment(str(folder))
