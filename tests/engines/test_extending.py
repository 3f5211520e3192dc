"""The recipe of CONTRIBUTING.md, done: a new balancer policy is one class in one file.

The class below is the whole change.  Defining it registers it under its `policy_names`;
the model file accepts the name, the stability check and `solve` read its `split`, and a run
uses it — with no other file touched."""

from __future__ import annotations

import pytest

from sim.model.plan import compile_plan
from sim.run.simulate import simulate
from sim.tiers.balancer.policies import policies
from sim.tiers.balancer.policies.base import REGISTRY, Policy
from tests.conftest import model_from


@pytest.fixture
def example_policy():
    """The whole change of the recipe: one class.  Defined here so that it is registered
    for this test only (the registry is global)."""

    class LeastRecentlyUsed(Policy):
        """Send to the usable member that was picked longest ago (an example policy)."""

        policy_names = ("example_least_recently_used",)
        split = "even"  # a rotation in the long run

        __slots__ = ("last",)

        def __init__(self, weights, names, rng, **params) -> None:
            super().__init__(weights, names, rng, **params)
            self.last = [-1] * len(self.weights)

        def pick(self, request) -> int:
            chosen = min(self.active, key=lambda i: self.last[i])
            self.last[chosen] = max(self.last) + 1
            return chosen

    yield LeastRecentlyUsed
    del REGISTRY["example_least_recently_used"]
    policies()  # resynchronise the name table


def test_a_policy_defined_in_one_class_is_accepted_and_used(example_policy):
    data = {
        "clients": {"kind": "open", "rate_per_s": 30.0},
        "backends": [{"name": "node", "count": 3, "demand": {"dist": "exponential", "mean": 0.01}}],
        "balancer": {"policy": "example_least_recently_used"},
    }
    model = model_from(data, duration_s=30.0, warmup="none", seed=1)
    assert compile_plan(model).split == "even"
    outcome = simulate(model, replications=1)
    assert outcome.ok, outcome.message
    summary = outcome.result.summary
    dispatched = [summary[f"balancer.dispatched.node{i}"].mean for i in (1, 2, 3)]
    # a strict rotation: the three members differ by at most one request
    assert max(dispatched) - min(dispatched) <= 1 and sum(dispatched) > 500
