"""Every feature is declared once, as product-form, an approximation or refused, by the stack
part that decides it (`sim.model.features.StackPart`) or on its component class, and `solve` is
never "exact" on a model that uses an approximation."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

import sim.model.parts
from sim.analytic.model_solver import solve_model
from sim.model.features import (
    FEATURES,
    OWNERS,
    UNDECLARED,
    Declaration,
    StackPart,
    approximate,
    declaration,
)
from sim.model.load import load_model
from sim.model.parts.client_connections import ClientConnections
from sim.model.parts.front import Front
from sim.model.parts.nodes import NodePart
from sim.model.parts.shared_lock import SharedLockPart
from sim.model.plan import compile_plan
from sim.model.stack import StackPlan
from sim.tiers.appserver.connectors import CONNECTORS, Connector
from sim.tiers.balancer.policies.base import REGISTRY
from sim.tiers.clients.populations import CLIENTS
from sim.tiers.proxy.mpm import MPMS
from tests.conftest import model_from


def _class_features() -> set[str]:
    """The features the project's own component classes bring."""
    classes = [*CONNECTORS.values(), *CLIENTS.values(), *MPMS.values(), *REGISTRY.values()]
    return {c.feature for c in classes if c.__module__.startswith("sim.")}


def _every_feature() -> list[str]:
    # a family (`appserver.jvm_sessions.`) is checked through one of its members
    names = {name + "closed" if name.endswith(".") else name for name in FEATURES}
    return sorted(names | _class_features())


def test_the_parts_declare_the_features_this_test_enumerates():
    # the enumeration itself must see every part's declarations, or the test below proves
    # nothing: the stack imports every part, whose classes register what they declare
    assert len(FEATURES) >= 40
    assert OWNERS["database.lock"] is SharedLockPart
    assert OWNERS["proxy.lingering_close"] is Front
    assert OWNERS["proxy.client_connections"] is ClientConnections
    assert OWNERS["connector.connection_setup"] is NodePart


def test_the_plan_sees_every_part_s_declarations():
    # the parts register as their classes are defined: every module of sim/model/parts that
    # declares features must be imported by whoever compiles a plan, or `solve` would take a
    # declared feature for an undeclared one (a caveat where none is due)
    for module in pkgutil.iter_modules(sim.model.parts.__path__):
        importlib.import_module(f"sim.model.parts.{module.name}")
    every = {
        name for cls in _subclasses(StackPart) for name in cls.__dict__.get("DECLARATIONS", {})
    }
    probe = "import sim.model.plan, sim.model.features as f; print(sorted(f.FEATURES))"
    seen = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert every and set(ast.literal_eval(seen)) == every


def _subclasses(cls: type) -> set[type]:
    direct = set(cls.__subclasses__())
    return direct.union(*(_subclasses(c) for c in direct)) if direct else set()


@pytest.mark.parametrize("feature", _every_feature())
def test_every_feature_is_product_form_an_approximation_or_refused(feature):
    declared = declaration(feature)
    assert declared is not None, f"{feature}: declare it on its stack part or on its class"
    said = declared.product_form or declared.approximation or declared.refused
    assert said and len(said) > 20  # a sentence that says how or what is left out


def test_a_declaration_is_exactly_one_of_the_three():
    with pytest.raises(ValueError):
        Declaration(product_form="a station", approximation="and also not")
    with pytest.raises(ValueError):
        Declaration()
    assert all(isinstance(d, Declaration) for d in FEATURES.values())


def test_a_feature_two_parts_declare_is_refused():
    before = dict(FEATURES)
    with pytest.raises(TypeError, match=r"database\.lock is declared by both SharedLockPart"):

        class SecondLock(StackPart):
            DECLARATIONS: ClassVar[dict[str, Declaration]] = {
                "database.lock": approximate("a second declaration of the same lock")
            }

    assert before == FEATURES


def _parts(stack: StackPlan) -> list[object]:
    """Every part of `stack` that can bring a feature, sub-parts included."""
    parts: list[object] = [stack.clients_part, stack.clients_part.classes, stack.balancer]
    if stack.front is not None:
        front = stack.front
        parts += [front, front.connections, front.worker]
        parts += [] if front.processes is None else [front.processes]
    parts += stack.nodes
    parts += [node.jvm for node in stack.nodes if node.jvm is not None]
    if stack.database is not None:
        parts.append(stack.database)
        parts += stack.database.mechanisms
    return parts + list(stack.replications)


def _declared_name(feature: str) -> str:
    """The name `feature` is declared under: itself, or its family's prefix."""
    if feature in FEATURES:
        return feature
    return next((f for f in FEATURES if f.endswith(".") and feature.startswith(f)), feature)


MODEL_FILES = sorted((Path(__file__).resolve().parents[2] / "models").glob("*.toml"))


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_each_feature_is_decided_by_the_part_that_declares_it(path):
    stack = compile_plan(load_model(path)).stack
    present = {type(part) for part in _parts(stack)}
    for feature in stack.features:
        name = _declared_name(feature)
        if name in OWNERS:
            assert OWNERS[name] in present, f"{feature}: declared by a part this model lacks"
        else:
            assert feature in _class_features(), f"{feature}: declared by no part and no class"


def _setup_model(setup_s: float) -> dict:
    """A front with a pool of pinned connections to one blocking node whose new connections
    are set up one at a time (`backends.0.connection_setup`)."""
    return {
        "clients": {"kind": "closed", "users": 4, "think": {"dist": "exponential", "mean": 1.0}},
        "proxy": {"workers": 8, "linger_s": 0.0},
        "backends": [
            {
                "name": "tomcat",
                "threads": 8,
                "cores": 2,
                "connector": "blocking",
                "demand": {"dist": "exponential", "mean": 0.01},
                "connection_setup": {"dist": "deterministic", "value": setup_s},
            }
        ],
    }


def test_solve_on_a_serialised_connection_setup_is_not_exact():
    model = model_from(_setup_model(0.1), duration_s=100.0)
    plan = compile_plan(model)
    assert "connector.connection_setup" in plan.features
    answer = solve_model(model, plan)
    assert not answer.exact
    assert any("set up one at a time" in caveat for caveat in answer.caveats)


def test_a_feature_nobody_declared_is_never_exact(monkeypatch):
    class Undeclared(Connector):
        kind = "undeclared_for_test"

    try:
        assert declaration(Undeclared.feature) is None
        data = _setup_model(0.0)
        del data["backends"][0]["connection_setup"]
        model = model_from(data, duration_s=100.0)
        plan = compile_plan(model)
        monkeypatch.setitem(plan.stack.features, Undeclared.feature, "a test's connector")
        from sim.model.plan import _with_declared

        caveats = _with_declared([], plan.stack)
        assert any(a.reason == UNDECLARED for a in caveats)
    finally:
        del CONNECTORS["undeclared_for_test"]


def test_a_product_form_model_stays_exact():
    data = {
        "clients": {"kind": "closed", "users": 5, "think": {"dist": "exponential", "mean": 1.0}},
        "backends": [
            {
                "name": "tomcat",
                "threads": 50,
                "cores": 1,
                "demand": {"dist": "exponential", "mean": 0.05},
            }
        ],
    }
    answer = solve_model(model_from(data, duration_s=100.0))
    assert answer.exact, answer.caveats
