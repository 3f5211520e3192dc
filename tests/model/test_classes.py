"""Request classes and session scripts: the schema's checks, the engine's routing per class,
the per-class metrics, and the multi-class MVA against the normalising constant."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from sim.analytic.model_solver import solve_model
from sim.analytic.multiclass_mva import (
    MultiClassNetwork,
    exact_multiclass_mva,
    schweitzer_multiclass_mva,
    solve_closed,
)
from sim.model.load import ModelError, load_model, parse_model
from sim.run.replications import run
from sim.studies.capacity.slo import parse_slo
from tests.conftest import model_from, simulate

BASE = {
    "clients": {"kind": "closed", "users": 10, "think": 0.5, "mix": {"view": 0.8, "edit": 0.2}},
    "backends": [{"name": "app", "demand": 0.01, "db_calls": 1}],
    "database": {"demand": 0.002},
    "classes": [{"name": "view"}, {"name": "edit", "backend": {"demand": 0.05, "db_calls": 4}}],
    "run": {"duration_s": 60.0, "warmup": 5.0},
}


def invalid(change) -> str:
    data = copy.deepcopy(BASE)
    change(data)
    with pytest.raises(ModelError) as error:
        parse_model(data, "<test>")
    return str(error.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["clients"]["mix"].update(edit=0.3), "clients.mix: probabilities"),
        (lambda d: d["clients"]["mix"].update(search=0.0), "clients.mix.search: no class"),
        (lambda d: d["clients"].pop("mix"), "say how clients pick one"),
        (lambda d: d.pop("classes"), "add [[classes]]"),
        (
            lambda d: d["clients"].update(mix=None, script={"steps": [{"name": "x"}]}),
            "clients.script.steps.0.class = 'x'",
        ),
        (
            lambda d: d["clients"].update(
                mix=None,
                script={
                    "steps": [{"name": "a", "class": "view"}, {"name": "b", "class": "edit"}],
                    "transitions": {"a": {"b": 1.0}, "b": {"a": 1.0}},
                },
            ),
            "can never end",
        ),
        (lambda d: d["clients"].update(mix_by="user", users=7), "whole number of users"),
        (lambda d: d["classes"][1].update(served_by="proxy"), "has no [proxy]"),
        (
            lambda d: d["backends"][0].update(db_calls=0),
            "backends.0.db_calls = 0: that node has no connection to the database",
        ),
        (
            lambda d: d.update(
                clients={"kind": "open", "rate_per_s": 1, "script": {"steps": [{"name": "view"}]}}
            ),
            "use clients.mix",
        ),
    ],
)
def test_bad_classes_are_refused_with_the_field_and_the_fix(change, message):
    assert message in invalid(change)


def test_a_script_of_default_classes_is_the_one_class_model():
    """Classes that use the tiers' defaults draw the one-class model's random numbers: seed
    004's seven-step script gives exactly the fitted model's figures."""
    one = load_model("models/seed004-jboss323-maxdb.toml", ["run.replications=1"])
    script = load_model("models/seed004-jboss323-maxdb-script.toml", ["run.replications=1"])
    a, b = run(one, replications=1).summary, run(script, replications=1).summary
    for name in ("throughput", "response.mean", "response.p95", "jboss1.cpu.utilization"):
        assert a[name].mean == b[name].mean
    steps = ("home", "login", "view_items", "add_to_cart", "delete_from_cart", "confirm_order")
    for step in (*steps, "buy"):
        assert b[f"class.{step}.count.completed"].mean == 60 * 20  # 20 sessions per user


def test_per_class_metrics_add_up_and_carry_their_demands():
    result = simulate(BASE, replications=2, seed=3)
    s = result.summary
    total = s["class.view.count.completed"].mean + s["class.edit.count.completed"].mean
    assert total == s["count.completed"].mean
    assert math.isclose(
        s["class.view.throughput"].mean + s["class.edit.throughput"].mean,
        s["throughput"].mean,
        rel_tol=1e-9,
    )
    assert s["class.edit.response.mean"].mean > 3 * s["class.view.response.mean"].mean
    assert s["class.edit.response.p95"].mean >= s["class.edit.response.p50"].mean
    assert result.units["class.edit.response.p95"] == "s"
    assert result.units["class.view.count.errors"] == "requests"
    # database visits: 1 per view, 4 per edit
    visits = s["database.throughput"].mean / s["throughput"].mean
    share = s["class.edit.throughput"].mean / s["throughput"].mean
    assert math.isclose(visits, 1 + 3 * share, rel_tol=0.01)  # visits cut by the window's ends


def test_a_static_class_is_served_by_the_proxy_alone():
    data = copy.deepcopy(BASE)
    data["proxy"] = {"workers": 50, "demand": 0.0005}
    data["classes"].append({"name": "static", "served_by": "proxy", "proxy": {"demand": 0.001}})
    data["clients"]["mix"] = {"view": 0.5, "edit": 0.1, "static": 0.4}
    s = simulate(data, replications=1, seed=5).summary
    forwarded = s["app1.throughput"].mean / s["throughput"].mean
    static = s["class.static.throughput"].mean / s["throughput"].mean
    assert math.isclose(forwarded, 1 - static, rel_tol=1e-3)
    assert s["class.static.response.mean"].mean < s["class.view.response.mean"].mean


def test_a_markov_script_visits_its_steps_in_the_cbmg_ratios():
    """home -> search (0.6) or end; search -> home (0.5) or end: visits 1/(1 - 0.3) = 1.43
    to home and 0.86 to search per session."""
    data = copy.deepcopy(BASE)
    data["clients"] = {
        "kind": "sessions",
        "session_rate_per_s": 5.0,
        "think": 0.2,
        "script": {
            "steps": [{"name": "home", "class": "view"}, {"name": "search", "class": "edit"}],
            "transitions": {
                "home": {"search": 0.6, "end": 0.4},
                "search": {"home": 0.5, "end": 0.5},
            },
        },
    }
    model = model_from(data)
    assert np.allclose(model.clients.script.visits(), [1 / 0.7, 0.6 / 0.7])
    s = simulate(data, replications=1, seed=7, duration_s=400.0).summary
    ratio = s["class.edit.count.completed"].mean / s["class.view.count.completed"].mean
    assert abs(ratio - 0.6) < 0.05
    assert solve_model(model).throughput_per_s == pytest.approx(5.0 * (1 + 0.6) / 0.7)


def test_writes_session_decides_replication_per_class():
    data = copy.deepcopy(BASE)
    data["backends"][0]["count"] = 2
    data["cluster"] = {"replication": [{"tier": "web", "trigger": "set_and_get"}]}
    data["classes"][0]["writes_session"] = False
    s = simulate(data, replications=1, seed=9).summary
    assert s["replication.web.replicated"].mean == s["class.edit.count.completed"].mean


def test_exact_multiclass_mva_is_the_normalising_constant():
    """X_c = G(N - e_c) / G(N) for two single-server stations and per-class think times."""
    d, z, n = np.array([[0.01, 0.04], [0.02, 0.005]]), (0.1, 0.2), (5, 3)

    def g(pop):
        total = 0.0
        for a0 in range(pop[0] + 1):
            for b0 in range(pop[0] + 1 - a0):
                for a1 in range(pop[1] + 1):
                    for b1 in range(pop[1] + 1 - a1):
                        term = math.comb(a0 + a1, a0) * d[0, 0] ** a0 * d[0, 1] ** a1
                        term *= math.comb(b0 + b1, b0) * d[1, 0] ** b0 * d[1, 1] ** b1
                        rest = (pop[0] - a0 - b0, pop[1] - a1 - b1)
                        for zc, m in zip(z, rest):
                            term *= zc**m / math.factorial(m)
                        total += term
        return total

    network = MultiClassNetwork(("a", "b"), d, (1, 1), z)
    exact = exact_multiclass_mva(network, n)
    assert exact.throughput[0] == pytest.approx(g((4, 3)) / g(n), rel=1e-10)
    assert exact.throughput[1] == pytest.approx(g((5, 2)) / g(n), rel=1e-10)
    approximate = schweitzer_multiclass_mva(network, n)
    assert np.allclose(approximate.throughput, exact.throughput, rtol=0.05)
    assert solve_closed(network, n, state_limit=10).method.startswith("Schweitzer")


def test_an_slo_may_name_a_class():
    slo = parse_slo("class.search.response.p95<1")
    assert slo.metric == "class.search.response.p95" and slo.target == 1.0
