"""The connect phase: every hook in one place, none left unconnected."""

from __future__ import annotations

import pytest

from sim.engines.reference import connect as connect_module
from sim.run.replications import run
from tests.conftest import model_from


def sticky_cluster(replication: bool) -> dict:
    data = {
        "clients": {"kind": "closed", "users": 10, "think": {"dist": "exponential", "mean": 0.5}},
        "backends": [
            {
                "name": "node",
                "count": 2,
                "demand": {"dist": "exponential", "mean": 0.01},
                "events": [{"at_s": 20.0, "kind": "crash", "node": 1}],
            }
        ],
        "balancer": {"policy": "round_robin", "sticky_session": True},
    }
    if replication:
        data["cluster"] = {"replication": [{"tier": "web", "mode": "sync", "scope": "all"}]}
    return data


def sessions_lost(replication: bool) -> float:
    model = model_from(sticky_cluster(replication), duration_s=40.0, warmup="none", seed=2)
    return run(model, replications=2).summary["balancer.sessions_lost"].mean


def test_a_crash_under_total_synchronous_replication_loses_no_session():
    """Regression: the replica hook was never connected, so a crash lost every session on the
    node (10 with replication, 10 without)."""
    assert sessions_lost(replication=False) > 0
    assert sessions_lost(replication=True) == 0


def test_an_unconnected_hook_stops_the_run(monkeypatch):
    listed = connect_module.hooks

    def forgetful(parts):
        made = listed(parts)
        return [
            connect_module.Hook(h.name, h.applies, lambda: None, h.connected)
            if h.name.startswith("sessions.replicated")
            else h
            for h in made
        ]

    monkeypatch.setattr(connect_module, "hooks", forgetful)
    model = model_from(sticky_cluster(True), duration_s=5.0, warmup="none")
    with pytest.raises(connect_module.UnconnectedHook, match=r"sessions\.replicated"):
        run(model, replications=1)
