"""The external metrics and AWS's policies as the reference engine runs them, at hand-computed
event times.  Arrivals and demands are deterministic (the first arrival one interarrival after
0), so every value and decision below is worked out in the test's docstring; the policies'
own arithmetic is `tests/tiers/test_autoscale.py`'s, the scrape and sync timing
`tests/tiers/test_elastic_group.py`'s."""

from __future__ import annotations

import pytest

from tests.conftest import model_from
from tests.tiers.test_elastic_group import deterministic, run_assembled


def decisions(group) -> list[tuple[float, int, str]]:
    return [(s.at_s, s.decision.desired, s.decision.reason) for s in group.history]


def test_the_hpa_on_the_balancers_p95_scales_when_answers_are_slower_than_its_target():
    """One pod, an arrival every 0.3 s, 10 ms each: the balancer times every answer at
    0.010 s.  The scrape at 15 holds 49 answers (the 50th ends at 15.01): p95 0.010 s against
    an External Value target of 0.005 s: ratio 2, ceil(2 x 1 ready pod) = 2 at 15 (the
    default scale-up allows it).  At 0 nothing was scraped yet (FailedGetMetric)."""
    autoscale = {
        "metric": "external",
        "external_source": "response_p95_s",
        "target": 0.005,
        "max_replicas": 3,
    }
    _, group, _ = run_assembled(model_from(deterministic(1, 0.3, 0.01, autoscale)), until=20.0)
    first, second = group.history[:2]
    assert (first.at_s, first.external, first.decision.reason) == (0.0, None, "FailedGetMetric")
    assert second.at_s == 15.0
    assert second.external == pytest.approx(0.010, abs=1e-9)
    assert second.decision.desired == 2


def test_the_hpa_on_the_group_rate_per_pod_asks_value_over_target_pods():
    """One pod, an arrival every 0.1 s, 10 ms each: 149 answers by 15, 9.933/s.  An External
    AverageValue target of 4 per pod: ceil(9.933 / 4) = 3 pods at 15 (2.48 times the target
    per current pod: outside the tolerance; the default scale-up allows +4)."""
    autoscale = {
        "metric": "external_average",
        "external_source": "requests_per_s",
        "target": 4,
        "max_replicas": 5,
    }
    _, group, _ = run_assembled(model_from(deterministic(1, 0.1, 0.01, autoscale)), until=20.0)
    second = group.history[1]
    assert second.external == pytest.approx(149 / 15)
    assert second.decision.desired == 3


def test_aws_target_tracking_scales_out_after_three_datapoints_above_its_target():
    """One instance, an arrival every 0.1 s, 10 ms each; target tracking on requests per
    target (per second here) with target 4; one-minute datapoints.  0: no datapoint yet
    (INSUFFICIENT_DATA); 60: 599 answers in [0, 60], 9.98/s above 4, the high alarm's first
    datapoint; 120: 600/60 = 10, the second; 180: the third: scale out proportionally, to
    ceil(1 x 10 / 4) = 3."""
    autoscale = {
        "policy": "aws_target_tracking",
        "metric": "pods",
        "target": 4,
        "max_replicas": 5,
    }
    _, group, _ = run_assembled(model_from(deterministic(1, 0.1, 0.01, autoscale)), until=185.0)
    assert decisions(group) == [
        (0.0, 1, "INSUFFICIENT_DATA"),
        (60.0, 1, "OK"),
        (120.0, 1, "OK"),
        (180.0, 3, "scale-out"),
    ]
    assert group.history[1].pods[0].value == pytest.approx(599 / 60)
    assert group.nodes_added == 2


STEP_OUT = {
    "threshold": 40,
    "comparison": "greater",
    "evaluation_periods": 2,
    "steps": [{"lower": 0, "upper": 20, "adjustment": 1}, {"lower": 20, "adjustment": 3}],
}


def test_aws_step_scaling_on_cpu_takes_the_step_that_holds_the_breach():
    """One instance of one core, an arrival every 0.1 s, 50 ms each: 599 x 0.05 = 29.95
    busy core-seconds in [0, 60], 49.9 % of the core; then 30 s in each minute, 50 %.  The
    alarm (CPU > 40 for 2 datapoints) is in ALARM at 120; 50 - 40 = 10 lies in the first step
    [0, 20): +1, to 2 instances."""
    autoscale = {"policy": "aws_step", "max_replicas": 4, "step_scale_out": STEP_OUT}
    _, group, _ = run_assembled(model_from(deterministic(1, 0.1, 0.05, autoscale)), until=125.0)
    assert decisions(group) == [
        (0.0, 1, "INSUFFICIENT_DATA"),
        (60.0, 1, "OK"),
        (120.0, 2, "scale-out"),
    ]
    assert group.autoscaler.value(group.history[1].pods, None) == pytest.approx(100 * 29.95 / 60)


def test_aws_step_scale_in_waits_for_its_cooldown():
    """Two instances, an arrival every 0.4 s, 50 ms each, alternating: 75 requests each in
    a minute, 3.75 busy seconds, 6.25 % of a core (the first minute 74 and 75).  The scale-in
    alarm (CPU < 30 for 1 datapoint), its step below the threshold removing one: 1 instance
    at 60; at 120 the alarm holds again but its 300 s cooldown has not passed."""
    scale_in = {
        "threshold": 30,
        "comparison": "less",
        "steps": [{"upper": 0, "adjustment": -1}],
    }
    autoscale = {"policy": "aws_step", "max_replicas": 2, "step_scale_in": scale_in}
    _, group, _ = run_assembled(model_from(deterministic(2, 0.4, 0.05, autoscale)), until=125.0)
    assert decisions(group) == [
        (0.0, 2, "INSUFFICIENT_DATA"),
        (60.0, 1, "scale-in"),
        (120.0, 1, "scale-in cooldown"),
    ]


@pytest.mark.parametrize(
    ("autoscale", "needle"),
    [
        ({"policy": "aws_step", "max_replicas": 2}, "step_scale_out and/or step_scale_in"),
        (
            {"policy": "aws_step", "max_replicas": 2, "target": 3, "step_scale_out": STEP_OUT},
            "target",
        ),
        (
            {
                "policy": "aws_target_tracking",
                "metric": "pods",
                "target": 3,
                "max_replicas": 2,
                "scale_up": {
                    "stabilization_window_s": 0,
                    "policies": [{"type": "pods", "value": 1, "period_s": 60}],
                },
            },
            "scale_up is read by policy = 'hpa' only",
        ),
        (
            {"metric": "pods", "target": 3, "max_replicas": 2, "scale_in_cooldown_s": 60},
            "scale_in_cooldown_s is read by policy = 'aws_target_tracking' only",
        ),
        ({"metric": "external", "target": 0.5, "max_replicas": 2}, "give external_source"),
        (
            {"metric": "pods", "target": 3, "max_replicas": 2, "external_source": "requests_per_s"},
            "external_source is read by an external metric only",
        ),
        (
            {
                "policy": "aws_target_tracking",
                "metric": "external",
                "target": 0.5,
                "external_source": "response_p95_s",
                "max_replicas": 2,
            },
            "policy = 'aws_step'",
        ),
        (
            {
                "policy": "aws_step",
                "max_replicas": 2,
                "step_scale_out": {
                    **STEP_OUT,
                    "steps": [
                        {"lower": 0, "upper": 10, "adjustment": 1},
                        {"lower": 20, "adjustment": 2},
                    ],
                },
            },
            "gap or overlap at 10",
        ),
    ],
)
def test_a_field_its_policy_does_not_read_is_refused_in_one_line(autoscale, needle):
    from sim.model.load import ModelError

    with pytest.raises(ModelError) as refused:
        model_from(deterministic(1, 0.3, 0.01, autoscale))
    message = str(refused.value)
    assert needle in message and "backends.0.autoscale" in message
