"""Every feature is declared once, as product-form, an approximation or refused
(`sim.model.features`), and `solve` is never "exact" on a model that uses an approximation."""

from __future__ import annotations

import ast
import inspect

import pytest

import sim.model.stack as stack_module
from sim.analytic.model_solver import solve_model
from sim.model.features import FEATURES, UNDECLARED, declaration
from sim.model.plan import compile_plan
from sim.tiers.appserver.connectors import CONNECTORS, Connector
from sim.tiers.balancer.policies.base import REGISTRY
from sim.tiers.clients.populations import CLIENTS
from sim.tiers.proxy.mpm import MPMS
from tests.conftest import model_from


def _literal_features() -> set[str]:
    """The feature names `sim.model.stack` writes as literals: `out["x"] = ...` and
    `out.setdefault("x", ...)`, read from its source so that a new line there is seen."""
    tree = ast.parse(inspect.getsource(stack_module))
    names: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "out"
            and isinstance(node.slice, ast.Constant)
        ):
            names.add(node.slice.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "setdefault"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.add(node.args[0].value)
    return names


def _class_features() -> set[str]:
    """The features the project's own component classes bring."""
    classes = [*CONNECTORS.values(), *CLIENTS.values(), *MPMS.values(), *REGISTRY.values()]
    return {c.feature for c in classes if c.__module__.startswith("sim.")}


def _every_feature() -> list[str]:
    names = _literal_features() | _class_features()
    names |= {"replication.sync", "replication.async", "appserver.jvm_sessions.closed"}
    return sorted(names)


def test_the_stack_writes_the_features_this_test_enumerates():
    # the enumeration itself must see the stack's lines, or the test below proves nothing
    literal = _literal_features()
    assert {"proxy.lingering_close", "connector.connection_setup", "database"} <= literal
    assert len(literal) >= 30


@pytest.mark.parametrize("feature", _every_feature())
def test_every_feature_is_product_form_an_approximation_or_refused(feature):
    declared = declaration(feature)
    assert declared is not None, f"{feature}: declare it in sim/model/features.py or on its class"
    said = declared.product_form or declared.approximation or declared.refused
    assert said and len(said) > 20  # a sentence that says how or what is left out


def test_a_declaration_is_exactly_one_of_the_three():
    from sim.model.features import Declaration

    with pytest.raises(ValueError):
        Declaration(product_form="a station", approximation="and also not")
    with pytest.raises(ValueError):
        Declaration()
    assert all(isinstance(d, Declaration) for d in FEATURES.values())


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
