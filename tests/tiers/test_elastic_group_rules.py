"""The HPA's rules as the reference engine applies them, at hand-computed event times: the
tolerance, the scale-down stabilisation window's maximum, a scale-up policy's limit per period
and the minimum replicas.  Arrivals and demands are deterministic, so every count below is
worked out in the test's docstring (the arithmetic of `tests/tiers/test_autoscale.py`, the
scrape and sync timing of `tests/tiers/test_elastic_group.py`).  The compiled engine does not
run autoscaled groups: `auto` picks the reference engine and says so (that file's last tests).
"""

from __future__ import annotations

import pytest

from tests.conftest import model_from
from tests.tiers.test_elastic_group import deterministic, run_assembled


def decisions(group) -> list[tuple[float, int, str]]:
    return [(s.at_s, s.decision.desired, s.decision.reason) for s in group.history]


@pytest.mark.parametrize(("target", "scaled_at"), [(3.0, 30.0), (3.1, None)])
def test_within_the_tolerance_the_group_keeps_its_size(target, scaled_at):
    """One pod, an arrival every 0.3 s, 10 ms each, requests/s per pod against `target`.
    At 15 the scrape counts the 49 requests completed in [0, 15] (the 50th, at 15.0, ends at
    15.01): 3.267/s; from 30 on each 15 s holds 50: 3.333/s.  Target 3.0: ratio 1.089 at 15,
    within the 0.1 tolerance (no change), then 1.111 at 30: ceil(1.111) = 2 pods.  Target
    3.1: 1.054, then 1.075, always within it: one pod for the whole minute."""
    model = model_from(
        deterministic(1, 0.3, 0.01, {"metric": "pods", "target": target, "max_replicas": 2})
    )
    _, group, _ = run_assembled(model, until=60.0)
    syncs = group.history
    assert [s.at_s for s in syncs] == [0.0, 15.0, 30.0, 45.0, 60.0]
    assert syncs[1].pods[0].value == pytest.approx(49 / 15)
    assert syncs[2].pods[0].value == pytest.approx(50 / 15)
    assert syncs[1].decision.desired == 1
    grown = [s.at_s for s in syncs if s.decision.desired == 2]
    assert (grown[0] if grown else None) == scaled_at


def test_scale_down_waits_for_the_highest_recommendation_to_leave_the_window():
    """Two pods, an arrival every 0.4 s, 0.7 s each (no queueing): about 1.2 requests/s per
    pod against 10: every sync from 15 on recommends 1 pod.  The controller recorded 2 (the
    size it found) at 0; a 60 s scale-down window keeps the highest recommendation of the
    last 60 s, so 15, 30 and 45 stay at 2 (ScaleDownStabilized), and at 60 the record of 0
    has left the window (it holds what is younger than 60 s): 1 pod, web2 drains from 60."""
    autoscale = {
        "metric": "pods",
        "target": 10,
        "min_replicas": 1,
        "max_replicas": 2,
        "scale_down": {
            "stabilization_window_s": 60,
            "policies": [{"type": "percent", "value": 100, "period_s": 15}],
        },
    }
    model = model_from(deterministic(2, 0.4, 0.7, autoscale))
    _, group, _ = run_assembled(model, until=70.0)
    assert decisions(group)[1:] == [
        (15.0, 2, "ScaleDownStabilized"),
        (30.0, 2, "ScaleDownStabilized"),
        (45.0, 2, "ScaleDownStabilized"),
        (60.0, 1, "ReadyForNewScale"),
    ]
    assert group.lives[1].log[0] == (60.0, "draining")


def test_a_scale_up_policy_adds_one_pod_per_minute():
    """One pod, an arrival every 0.1 s, 10 ms each: 149 completed by 15, 9.93/s against a
    target of 1 per pod, so the HPA wants 10 pods, but `behavior.scaleUp` allows 1 pod per
    60 s: 2 at 15 (ScaleUpLimit); at 30, 45 and 60 the pod added at 15 is inside the period,
    so the group may have 1 + 1 = 2; at 75 it has left it (the period holds what is younger
    than 60 s): 3; at 135: 4, the maximum.  New pods start at once (no provisioning, no JVM
    start, the first probe passes) and take their share of the 10/s."""
    autoscale = {
        "metric": "pods",
        "target": 1.0,
        "max_replicas": 4,
        "readiness_period_s": 10,
        "scale_up": {
            "stabilization_window_s": 0,
            "policies": [{"type": "pods", "value": 1, "period_s": 60}],
        },
    }
    model = model_from(deterministic(1, 0.1, 0.01, autoscale))
    _, group, _ = run_assembled(model, until=150.0)
    desired = {at: n for at, n, _ in decisions(group)}
    assert [desired[t] for t in (15.0, 30.0, 60.0, 75.0, 120.0, 135.0, 150.0)] == [
        2,
        2,
        2,
        3,
        3,
        4,
        4,
    ]
    reasons = {at: reason for at, _, reason in decisions(group)}
    assert reasons[15.0] == reasons[30.0] == reasons[75.0] == "ScaleUpLimit"
    assert reasons[150.0] == "TooManyReplicas"
    assert group.history[1].pods[0].value == pytest.approx(149 / 15)


def test_scale_down_stops_at_the_minimum():
    """Three pods, an arrival every 0.4 s (about 0.8 requests/s per pod against 10): the HPA
    recommends 1 (ceil(0.08 x 3)), with no window and 100 % per 15 s allowed, but
    min_replicas = 2: 2 at 15 (TooFewReplicas), and 2 from then on."""
    autoscale = {
        "metric": "pods",
        "target": 10,
        "min_replicas": 2,
        "max_replicas": 3,
        "scale_down": {
            "stabilization_window_s": 0,
            "policies": [{"type": "percent", "value": 100, "period_s": 15}],
        },
    }
    model = model_from(deterministic(3, 0.4, 0.7, autoscale))
    _, group, _ = run_assembled(model, until=45.0)
    assert decisions(group)[1] == (15.0, 2, "TooFewReplicas")
    assert [s.decision.desired for s in group.history[2:]] == [2, 2]
