"""CONTRIBUTING.md's recipes, followed exactly, on `run.engine = "auto"`.

A connector is one class, a policy with a parameter of its own is one class: each is defined
in this test module only.  Neither is implemented by the compiled engine, so `auto` must run
the model on the reference engine and say so, naming the component's feature — never run it
as another connector or policy (before the engines declared their features, a connector
added this way ran on the compiled engine as if it were `nonblocking`)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from sim.engines import EngineUnavailable, choose
from sim.model.load import ModelError
from sim.model.plan import compile_plan
from sim.run.simulate import simulate
from sim.tiers.appserver.connectors import CONNECTORS, Connector
from sim.tiers.balancer.policies import policies
from sim.tiers.balancer.policies.base import REGISTRY, Policy, UniformDraws
from tests.conftest import model_from


@pytest.fixture
def virtual_threads():
    """The recipe's whole change for a connector: one class."""

    class VirtualThreads(Connector):
        """Tomcat 11 `useVirtualThreads="true"`: a virtual thread per request, so a request
        never waits for a thread (`maxThreads` does not bound them)."""

        kind = "example_virtual_threads"

    yield VirtualThreads
    del CONNECTORS["example_virtual_threads"]


@pytest.fixture
def biased_policy():
    """The recipe's whole change for a policy with a parameter of its own: one class."""

    class FirstShare(Policy):
        """Send `first_share` of the requests to the first usable member, the rest uniformly
        to the others (an example policy)."""

        policy_names = ("example_first_share",)
        split = "adaptive"  # no even or weighted long-run split

        class Parameters(BaseModel):
            first_share: float = Field(0.5, gt=0, lt=1, description="share of the first member")

        __slots__ = ("draw", "first_share")

        def __init__(self, weights, names, rng, *, first_share: float = 0.5, **params) -> None:
            super().__init__(weights, names, rng, **params)
            self.first_share = first_share
            self.draw = UniformDraws(rng)

        def pick(self, request) -> int:
            active = self.active
            if len(active) == 1 or self.draw() < self.first_share:
                return active[0]
            return active[1 + self.draw.index(len(active) - 1)]

    yield FirstShare
    for name in FirstShare.policy_names:
        del REGISTRY[name]
    policies()  # resynchronise the name table


def node(threads: int | None = 2, count: int = 1, connector: str = "nonblocking") -> dict:
    return {
        "name": "node",
        "count": count,
        "threads": threads,
        "connector": connector,
        "demand": {"dist": "exponential", "mean": 0.02},
        "io_wait": {"dist": "exponential", "mean": 0.05},
    }


def test_a_connector_added_by_the_recipe_runs_on_the_reference_with_a_note(virtual_threads):
    data = {"clients": {"kind": "closed", "users": 20, "think": 0.2}, "backends": [node()]}
    virtual = model_from(
        {**data, "backends": [node(connector="example_virtual_threads")]},
        duration_s=60.0,
        warmup=5.0,
        seed=3,
    )
    choice = choose(compile_plan(virtual))
    assert choice.engine == "reference"
    assert "connector.example_virtual_threads" in choice.note
    compiled = {**data, "backends": [node(connector="example_virtual_threads")]}
    with pytest.raises(EngineUnavailable, match=r"connector\.example_virtual_threads"):
        choose(compile_plan(model_from(compiled, engine="compiled", duration_s=60.0)))

    outcome = simulate(virtual, replications=5)
    assert outcome.ok, outcome.message
    notes = outcome.result.replications[0].notes
    assert any("connector.example_virtual_threads" in note for note in notes)
    # it is the new connector that ran: with 2 request threads the non-blocking connector
    # queues 20 users' requests (utilisation law: at most 2 / 0.07 s = 28.6 req/s through
    # the threads), the virtual threads do not
    pooled = simulate(model_from(data, duration_s=60.0, warmup=5.0, seed=3), replications=2)
    assert pooled.result.summary["throughput"].mean <= 2 / 0.07
    assert outcome.result.summary["throughput"].low > 2 / 0.07 * 1.2


def test_a_policy_with_its_own_parameter_is_one_class(biased_policy):
    data = {
        "clients": {"kind": "open", "rate_per_s": 40.0},
        "backends": [node(threads=None, count=3)],
        "balancer": {"policy": "example_first_share", "first_share": 0.8},
    }
    model = model_from(data, duration_s=60.0, warmup="none", seed=1)
    choice = choose(compile_plan(model))
    assert choice.engine == "reference" and "policy.example_first_share" in choice.note
    outcome = simulate(model, replications=1)
    assert outcome.ok, outcome.message
    summary = outcome.result.summary
    sent = [summary[f"balancer.dispatched.node{i}"].mean for i in (1, 2, 3)]
    share = sent[0] / sum(sent)
    # binomial: 2400 requests at p = 0.8 have sd 0.008; 5 sd either way
    assert abs(share - 0.8) < 0.04, share


def test_a_policy_parameter_is_validated_by_the_policy_and_only_for_it(biased_policy):
    data = {
        "clients": {"kind": "open", "rate_per_s": 40.0},
        "backends": [node(threads=None, count=3)],
        "balancer": {"policy": "example_first_share", "first_share": 1.5},
    }
    with pytest.raises(ModelError, match="first_share"):
        model_from(data)
    data["balancer"] = {"policy": "round_robin", "first_share": 0.5}
    with pytest.raises(ModelError, match=r"balancer\.first_share"):
        model_from(data)
    data["balancer"] = {"policy": "example_first_share", "first_shar": 0.5}
    with pytest.raises(ModelError, match=r"balancer\.first_shar\b"):
        model_from(data)


def test_every_bundled_feature_is_declared_by_an_engine():
    """The reference engine implements every component; the compiled engine's set names only
    features some component or decision brings (a typo there would silently refuse)."""
    import glob

    from sim.engines.compiled.support import IMPLEMENTS
    from sim.model.load import load_model
    from sim.model.plan import compile_plan

    seen: set[str] = set()
    for path in sorted(glob.glob("models/*.toml")):
        seen |= set(compile_plan(load_model(path)).features)
    assert {"clients.closed", "proxy", "connector.nonblocking"} <= seen
    for feature in IMPLEMENTS:
        assert feature.count(".") <= 2 and feature == feature.lower(), feature
