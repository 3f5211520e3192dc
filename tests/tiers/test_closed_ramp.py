"""A closed population's ramp (`clients.ramp`): a user retired by a step down and called back
by the next step up before its cycle ended goes on with that cycle, as one user, rather than
start a second cycle beside it (a replayed log's users per minute go down and up again)."""

from __future__ import annotations

import pytest

from sim.run.replications import run
from tests.conftest import model_from


@pytest.mark.parametrize("engine", ["reference", "compiled"])
@pytest.mark.parametrize("away_s", [0.05, 0.5])
def test_a_user_called_back_before_its_cycle_ended_is_one_user(away_s, engine):
    """Two users, a constant 0.1 s request on two cores and 5 s of thinking: each completes at
    0.1 + 5.1 k s, 12 each in 60 s, 24 in all.  User 1 is retired at 10 s, thinking until
    10.2 s.  Called back at 10.05 s, it goes on with its cycle: the same 24 (a second cycle
    beside it would add 10 more, from 10.15 s).  Called back at 10.5 s, after it stopped at
    10.2 s, it starts afresh: its 2 completions before 10 s and 10.6 + 5.1 k for k = 0..9,
    12 again.  The same on both engines."""
    data = {
        "clients": {
            "kind": "closed",
            "users": 2,
            "think": 5.0,
            "ramp": [
                {"users": 2, "hold_s": 10.0},
                {"users": 1, "hold_s": away_s},
                {"users": 2, "hold_s": 100.0},
            ],
        },
        "backends": [{"name": "app", "cores": 2, "demand": 0.1}],
        "run": {"duration_s": 60.0, "warmup": 0.0, "engine": engine},
    }
    replication = run(model_from(data), replications=1).replications[0]
    assert replication.engine == engine
    assert replication.metrics["throughput"] * 60 == pytest.approx(24)


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_a_user_that_sent_its_requests_is_done_for_good(engine):
    """`clients.requests_per_user` under a ramp: four users, three requests each, a constant
    0.1 s request on four cores and 0.5 s of thinking.  Users 0 and 1 send at 0, 0.6 and 1.2 s
    and are done when their last think time ends, at 1.8 s.  Retired at 10 s and called back
    with users 2 and 3 at 11 s, they have nothing left to send and are not counted again:
    the workload ends when users 2 and 3 are done, at 11 + 1.8 = 12.8 s, with all 12
    requests answered (counted twice, users 0 and 1 would end it at 11 s after 6)."""
    data = {
        "clients": {
            "kind": "closed",
            "users": 4,
            "think": 0.5,
            "requests_per_user": 3,
            "ramp": [
                {"users": 2, "hold_s": 10.0},
                {"users": 0, "hold_s": 1.0},
                {"users": 4, "hold_s": 100.0},
            ],
        },
        "backends": [{"name": "app", "cores": 4, "demand": 0.1}],
        "run": {"max_duration_s": 100.0, "engine": engine},
    }
    replication = run(model_from(data), replications=1).replications[0]
    assert replication.engine == engine and replication.finished
    assert replication.metrics["count.completed"] == 12
    assert replication.metrics["makespan"] == pytest.approx(12.8)
