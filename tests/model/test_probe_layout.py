"""The probe layout (`sim.model.parts.probes`): decided from the model without building, and
exactly what each engine records -- for every shipped model, random stacks, and the compiled
engine's tables; studies learn metric names from it without building an assembly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from sim.engines.reference.assemble import assemble
from sim.model.load import load_model
from sim.model.parts.probes import LayoutMismatch
from sim.model.plan import compile_plan
from sim.observe.metrics import window_metrics
from sim.observe.recorder import Recorder
from sim.observe.trace import BINS
from sim.random.streams import Streams
from sim.studies.metrics import metric_names
from tests.conftest import model_from
from tests.engines.test_properties import stacks

SHIPPED = sorted((Path(__file__).parents[2] / "models").glob("*.toml"))


def built(model):
    """The reference's probes and recorder columns for `model`, from a real assembly."""
    assembly, recorder = assemble(
        compile_plan(model),
        Streams(0, 0),
        lambda kernel, a: Recorder(kernel, a.probes(), BINS, recording=False),
    )
    return assembly.probes(), recorder.columns


def layout_of(model):
    stack = compile_plan(model).stack
    assert stack is not None
    return stack.probes


def assert_same_as_built(model) -> None:
    probes, columns = built(model)
    layout = layout_of(model)
    assert [(p.name, tuple(p.fields)) for p in probes] == [(s.name, s.fields) for s in layout.slots]
    assert list(layout.columns) == columns


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_model_records_its_layout(path):
    assert_same_as_built(load_model(path))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stacks())
def test_random_stacks_record_their_layout(data):
    assert_same_as_built(model_from(data, duration_s=20.0, warmup="none", max_duration_s=1e5))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_the_layouts_metric_names_are_the_built_probes(path):
    """The views name every metric as the built components do (the names studies accept)."""
    model = load_model(path)
    probes, columns = built(model)
    row = np.zeros(len(columns))
    from_components = set(window_metrics(columns, row, row, np.ones(BINS.n_bins), BINS, probes))
    layout = layout_of(model)
    from_layout = set(
        window_metrics(list(layout.columns), row, row, np.ones(BINS.n_bins), BINS, layout.views())
    )
    assert from_layout == from_components
    assert from_components <= metric_names(model)


def test_metric_names_are_learnt_without_building(monkeypatch):
    import sim.engines.reference.assemble as reference

    def refuse(*args, **kwargs):
        raise AssertionError("metric_names built an assembly")

    monkeypatch.setattr(reference, "assemble", refuse)
    names = metric_names(load_model(SHIPPED[0]))
    assert "response.p95" in names and any(name.endswith(".cpu.utilization") for name in names)


def test_a_run_that_records_other_probes_is_stopped():
    """A probe out of order (or missing) stops the run, naming the engine and the probes."""
    model = model_from(
        {
            "clients": {"kind": "closed", "users": 5},
            "backends": [{"name": "t", "count": 2, "threads": 4, "demand": 0.01}],
            "run": {"duration_s": 1},
        }
    )
    layout = layout_of(model)
    probes, _ = built(model)
    layout.check(probes, "reference")  # as built: no complaint
    swapped = [probes[1], probes[0], *probes[2:]]
    with pytest.raises(LayoutMismatch, match=r"the reference engine records other probes.*probe 0"):
        layout.check(swapped, "reference")
    with pytest.raises(LayoutMismatch, match="compiled"):
        layout.check(probes[:-1], "compiled")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_the_compiled_tables_record_the_layout(path):
    """The compiled engine's probes (its tables' views) are the layout, for every shipped
    model it runs."""
    pytest.importorskip("numba")
    from sim.engines.compiled.plan import build_plan
    from sim.engines.compiled.support import missing

    model = load_model(path)
    plan = compile_plan(model)
    if missing(plan):
        pytest.skip("a model the compiled engine does not run")
    tables = build_plan(plan)
    layout_of(model).check(tables.probes, "compiled")
    assert tables.columns == list(layout_of(model).columns)
