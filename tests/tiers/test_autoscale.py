"""The autoscalers' decisions against hand-computed ones.

Each case works the controller's arithmetic by hand in its docstring (Kubernetes'
`replica_calculator.go` and `horizontal.go`; AWS's step adjustments), so a failure says which
rule moved.  CPU samples are cores used by a pod whose request is one core (1000m), so a pod at
0.56 cores is at 56 % of its request."""

from __future__ import annotations

import math

import pytest

from sim.tiers.cluster.autoscale import PodSample
from sim.tiers.cluster.autoscale.aws_step import StepAdjustment, StepPolicy, StepScaling
from sim.tiers.cluster.autoscale.hpa import (
    HorizontalPodAutoscaler,
    HpaSpec,
    RatePolicy,
    ScalingRules,
)
from sim.tiers.cluster.autoscale.scrape import ScrapedMetric

NO_WINDOW_DOWN = ScalingRules(0.0, (RatePolicy("Percent", 100, 15.0),))


def cpu(*cores: float | None, unready: int = 0) -> list[PodSample]:
    return [PodSample(c) for c in cores] + [PodSample(0.0, ready=False)] * unready


def hpa(**spec) -> HorizontalPodAutoscaler:
    spec.setdefault("max_replicas", 20)
    spec.setdefault("metric", "cpu_utilization")
    spec.setdefault("target", 50)
    return HorizontalPodAutoscaler(HpaSpec(**spec))


# ----------------------------------------------------------------------------- HPA: tolerance
def test_within_the_tolerance_nothing_changes():
    """4 pods at 0.54 cores of a 1-core request, target 50 %: utilisation
    2160 * 100 // 4000 = 54 %, ratio 54 / 50 = 1.08 <= 1 + 0.1: stay at 4."""
    decision = hpa().decide(0.0, 4, cpu(0.54, 0.54, 0.54, 0.54))
    assert decision.desired == 4


def test_the_tolerance_boundary_is_inclusive_and_utilisation_a_whole_per_cent():
    """4 pods at 0.555 cores: 2220 * 100 // 4000 = 55 % (the controller's integer per cent,
    not 55.5), ratio 55 / 50 = 1.1: within |ratio - 1| <= 0.1, so no change; at 0.56 cores:
    56 %, ratio 1.12, desired ceil(1.12 * 4) = ceil(4.48) = 5."""
    assert hpa().decide(0.0, 4, cpu(0.555, 0.555, 0.555, 0.555)).desired == 4
    assert hpa().decide(0.0, 4, cpu(0.56, 0.56, 0.56, 0.56)).desired == 5


def test_a_tolerance_per_direction():
    """Scale-down tolerance 0.05, scale-up 0 (`behavior.scaleUp.tolerance: 0`): 4 pods at
    52 % give ratio 1.04 > 1 + 0: desired ceil(1.04 * 4) = ceil(4.16) = 5."""
    rules_up = ScalingRules(
        0.0, (RatePolicy("Percent", 100, 15.0), RatePolicy("Pods", 4, 15.0)), tolerance=0.0
    )
    rules_down = ScalingRules(300.0, (RatePolicy("Percent", 100, 15.0),), tolerance=0.05)
    autoscaler = hpa(scale_up=rules_up, scale_down=rules_down)
    assert autoscaler.decide(0.0, 4, cpu(0.52, 0.52, 0.52, 0.52)).desired == 5


# ------------------------------------------------------------------ HPA: stabilisation window
def test_scale_down_takes_the_highest_recommendation_of_the_window():
    """Default scale-down window 300 s, 10 replicas, target 50 %.
    t=0: 50 % -> ratio 1, within: proposal 10 (and 10 recorded as the initial recommendation).
    t=15: 25 % -> ceil(0.5 * 10) = 5; t=30: 35 % -> ceil(0.7 * 10) = 7; t=45: 20 % -> 4.
    Each is stabilised to the highest proposal after now - 300 s, which includes t=0's 10:
    stay at 10 (ScaleDownStabilized).
    t=301, 20 % -> 4: the window (1, 301] holds 5, 7, 4 and 4: desired 7, the maximum, not
    the latest; the rate limit (100 % per 15 s) allows down to 0, min 1."""
    autoscaler = hpa()
    ten = [0.5] * 10
    assert autoscaler.decide(0.0, 10, cpu(*ten)).desired == 10
    for now, load in ((15.0, 0.25), (30.0, 0.35), (45.0, 0.20)):
        decision = autoscaler.decide(now, 10, cpu(*[load] * 10))
        assert (decision.desired, decision.reason) == (10, "ScaleDownStabilized")
    assert autoscaler.decide(301.0, 10, cpu(*[0.20] * 10)).desired == 7


def test_scale_up_window_takes_the_lowest():
    """scaleUp.stabilizationWindowSeconds 60: t=0 at 100 % of a 50 % target with 2 pods:
    proposal ceil(2 * 2) = 4 but the window holds the initial 2: min(2, 4) = 2.  t=30 the
    same: the window (-30, 30] holds 2, 4, 4: stays 2.  t=61: the window (1, 61] holds 4
    (t=30) and 4: desired 4."""
    up = ScalingRules(60.0, (RatePolicy("Percent", 100, 15.0), RatePolicy("Pods", 4, 15.0)))
    autoscaler = hpa(scale_up=up)
    assert autoscaler.decide(0.0, 2, cpu(1.0, 1.0)).desired == 2
    assert autoscaler.decide(30.0, 2, cpu(1.0, 1.0)).desired == 2
    assert autoscaler.decide(61.0, 2, cpu(1.0, 1.0)).desired == 4


# ------------------------------------------------------------------------ HPA: rate limits
def test_scale_up_by_the_larger_of_4_pods_and_100_percent_per_15_s():
    """2 pods at 2 cores each (200 %, target 50 %): ratio 4, proposal ceil(4 * 2) = 8.
    Default policies from 2: Pods 2 + 4 = 6, Percent ceil(2 * 2.0) = 4; Max: 6 (ScaleUpLimit).
    t=14: the +4 of t=0 is inside both 15 s periods (0 > 14 - 15), so each period started at
    6 - 4 = 2: the limit is 6 again, no growth.  t=15: t=0 is no longer after 15 - 15 = 0;
    the same 4 cores over 6 pods, 667m each: 4002 * 100 // 6000 = 66 %, ratio 1.32, proposal
    ceil(1.32 * 6) = ceil(7.92) = 8; limits 10 and 12: desired 8."""
    autoscaler = hpa()
    decision = autoscaler.decide(0.0, 2, cpu(2.0, 2.0))
    assert (decision.desired, decision.reason) == (6, "ScaleUpLimit")
    assert autoscaler.decide(14.0, 6, cpu(*[0.667] * 6)).desired == 6
    assert autoscaler.decide(15.0, 6, cpu(*[0.667] * 6)).desired == 8


@pytest.mark.parametrize(("select", "desired"), [("Max", 6), ("Min", 4), ("Disabled", 2)])
def test_select_policy(select, desired):
    """The same first sync (2 pods, proposal 8; Pods allows 6, Percent 4): selectPolicy Max
    takes 6, Min 4, Disabled keeps 2."""
    up = ScalingRules(0.0, (RatePolicy("Percent", 100, 15.0), RatePolicy("Pods", 4, 15.0)), select)
    assert hpa(scale_up=up).decide(0.0, 2, cpu(2.0, 2.0)).desired == desired


def test_scale_down_by_1_pod_per_minute():
    """scaleDown: no window, Pods 1 per 60 s.  5 pods at 10 % of a 50 % target: ratio 0.2,
    proposal ceil(0.2 * 5) = 1; the limit 5 - 1 = 4 (ScaleDownLimit).  t=15: the -1 of t=0
    is inside the 60 s period, so it started at 4 + 1 = 5 and allows 4: stay at 4.  t=61:
    t=0 is no longer after 61 - 60 = 1: from 4, down to 3."""
    down = ScalingRules(0.0, (RatePolicy("Pods", 1, 60.0),))
    autoscaler = hpa(scale_down=down)
    decision = autoscaler.decide(0.0, 5, cpu(*[0.1] * 5))
    assert (decision.desired, decision.reason) == (4, "ScaleDownLimit")
    assert autoscaler.decide(15.0, 4, cpu(*[0.1] * 4)).desired == 4
    assert autoscaler.decide(61.0, 4, cpu(*[0.1] * 4)).desired == 3


def test_scale_down_by_a_percentage_is_truncated():
    """scaleDown: no window, Percent 50 per 15 s.  5 pods at 10 %: proposal 1; the limit is
    int(5 * (1 - 0.5)) = int(2.5) = 2: desired 2."""
    down = ScalingRules(0.0, (RatePolicy("Percent", 50, 15.0),))
    assert hpa(scale_down=down).decide(0.0, 5, cpu(*[0.1] * 5)).desired == 2


# ----------------------------------------------------------------------- HPA: min and max
def test_outside_the_bounds_the_group_is_brought_back_at_once():
    """12 replicas with maxReplicas 10: 10 (TooManyReplicas), whatever the metric, even none;
    1 replica with minReplicas 2: 2 (TooFewReplicas)."""
    decision = hpa(max_replicas=10).decide(0.0, 12, [])
    assert (decision.desired, decision.reason) == (10, "TooManyReplicas")
    assert hpa(min_replicas=2).decide(0.0, 1, cpu(0.5)).desired == 2


def test_proposals_beyond_the_bounds_stop_at_them():
    """8 pods at 100 % (ratio 2): proposal 16; Pods allows 12, Percent 16; maxReplicas 10
    is lower: 10 (TooManyReplicas).  3 pods at 5 % (ratio 0.1), no scale-down window:
    proposal ceil(0.3) = 1; Percent 100 allows 0; minReplicas 2: 2 (TooFewReplicas)."""
    decision = hpa(max_replicas=10).decide(0.0, 8, cpu(*[1.0] * 8))
    assert (decision.desired, decision.reason) == (10, "TooManyReplicas")
    decision = hpa(min_replicas=2, scale_down=NO_WINDOW_DOWN).decide(0.0, 3, cpu(*[0.05] * 3))
    assert (decision.desired, decision.reason) == (2, "TooFewReplicas")


def test_a_group_scaled_to_zero_by_hand_is_left_alone():
    """`scale.spec.replicas == 0` with minReplicas 1: the controller disables scaling
    (ScalingDisabled) rather than bringing it back to 1."""
    decision = hpa().decide(0.0, 0, [])
    assert (decision.desired, decision.reason) == (0, "ScalingDisabled")


# --------------------------------------------------------------------- HPA: missing metrics
def test_no_metric_changes_nothing_and_records_nothing():
    """No pod has a sample: the controller fails to get the metric and returns before the
    stabilisation: 4 stays, and only the initial recommendation is remembered."""
    autoscaler = hpa()
    decision = autoscaler.decide(0.0, 4, cpu(None, None, None, None))
    assert (decision.desired, decision.reason) == (4, "FailedGetMetric")
    assert autoscaler.recommendations == [(0.0, 4)]


def test_a_missing_pod_counts_as_its_full_request_when_shrinking():
    """No scale-down window.  3 pods at 20 %, one without a sample: ratio 600 * 100 // 3000
    = 20 % / 50 = 0.4, shrinking, so the missing pod counts at max(100, 50) % of its
    request: (200 * 3 + 1000) * 100 // 4000 = 40 %, ratio 0.8, proposal ceil(0.8 * 4) =
    ceil(3.2) = 4: no change.  With its sample (also 20 %): ceil(0.4 * 4) = 2."""
    autoscaler = hpa(scale_down=NO_WINDOW_DOWN)
    assert autoscaler.decide(0.0, 4, cpu(0.2, 0.2, 0.2, None)).desired == 4
    assert hpa(scale_down=NO_WINDOW_DOWN).decide(0.0, 4, cpu(0.2, 0.2, 0.2, 0.2)).desired == 2


def test_unready_pods_count_as_idle_when_growing():
    """2 ready pods at 90 %, 2 not ready: ratio 1.8 from the ready ones (ceil(1.8 * 2) = 4
    were they alone); growing, the unready count as 0: 1800 * 100 // 4000 = 45 %, ratio 0.9:
    the direction reverses, so no change (4).  A missing pod when growing counts as 0 too:
    3 pods at 90 % and one missing: 2700 * 100 // 4000 = 67 %, ratio 1.34, ceil(5.36) = 6."""
    assert hpa().decide(0.0, 4, cpu(0.9, 0.9, unready=2)).desired == 4
    assert hpa().decide(0.0, 4, cpu(0.9, 0.9, 0.9, None)).desired == 6


# ------------------------------------------------------------------ HPA: other metric kinds
def test_requests_per_second_per_pod():
    """Pods metric, target 100 requests/s per pod; pods at 150, 150 and 120: average
    420 000m // 3 = 140 000m, ratio 1.4, desired ceil(1.4 * 3) = ceil(4.2) = 5."""
    autoscaler = hpa(metric="pods", target=100.0)
    assert (
        autoscaler.decide(0.0, 3, [PodSample(150.0), PodSample(150.0), PodSample(120.0)]).desired
        == 5
    )


def test_an_external_p95():
    """External metric, target.value 0.5 s, p95 at 0.8 s, 4 ready pods: ratio 1.6, desired
    ceil(1.6 * 4) = ceil(6.4) = 7 (limits 8 and 8).  With the metric missing: no change.
    target.averageValue 0.5 and a value of 2.6 over 4 replicas: ratio 2.6 / (0.5 * 4) = 1.3,
    desired ceil(2.6 / 0.5) = ceil(5.2) = 6."""
    pods = [PodSample(None)] * 4
    assert hpa(metric="external", target=0.5).decide(0.0, 4, pods, external=0.8).desired == 7
    assert hpa(metric="external", target=0.5).decide(0.0, 4, pods, external=None).desired == 4
    average = hpa(metric="external_average", target=0.5)
    assert average.decide(0.0, 4, pods, external=2.6).desired == 6


# --------------------------------------------------------------------------- AWS step scaling
OUT_STEPS = (
    StepAdjustment(0.0, 10.0, 1),
    StepAdjustment(10.0, 20.0, 2),
    StepAdjustment(20.0, None, 3),
)


def step_out(**policy) -> StepScaling:
    policy.setdefault("steps", OUT_STEPS)
    return StepScaling(1, 20, scale_out=StepPolicy(60.0, "GreaterThanOrEqualToThreshold", **policy))


def test_step_intervals_above_the_threshold_include_their_lower_bound():
    """Threshold 60 (>=): 75 is 15 above, in [10, 20): +2, 10 -> 12; 70 is 10 above: the
    lower bound is inclusive, [10, 20) again: +2; 60 is 0 above: [0, 10): +1; 59 does not
    breach: nothing."""
    assert step_out().decide(0.0, 10, 75.0).desired == 12
    assert step_out().decide(0.0, 10, 70.0).desired == 12
    assert step_out().decide(0.0, 10, 60.0).desired == 11
    assert step_out().decide(0.0, 10, 59.0).desired == 10


def test_step_intervals_below_the_threshold_include_their_upper_bound():
    """Threshold 40 (<=), steps (-10, 0]: -1 and (-inf, -10]: -2.  30 is 10 below: the upper
    bound is inclusive, so (-inf, -10]: -2, 10 -> 8; 35: (-10, 0]: -1."""
    steps = (StepAdjustment(-10.0, 0.0, -1), StepAdjustment(None, -10.0, -2))
    policy = StepPolicy(40.0, "LessThanOrEqualToThreshold", steps)
    assert StepScaling(1, 20, scale_in=policy).decide(0.0, 10, 30.0).desired == 8
    assert StepScaling(1, 20, scale_in=policy).decide(0.0, 10, 35.0).desired == 9


@pytest.mark.parametrize(
    ("current", "percent", "magnitude", "desired"),
    [
        (10, 30, None, 13),  # 3.0
        (11, 30, None, 14),  # 3.3 truncated to 3
        (10, 5, None, 11),  # 0.5: between 0 and 1, made 1
        (4, 25, 2, 6),  # 1.0, raised to MinAdjustmentMagnitude 2
        (14, -10, None, 13),  # -1.4 truncated toward zero to -1
        (15, -50, None, 8),  # -7.5 -> -7
    ],
)
def test_percent_change_in_capacity(current, percent, magnitude, desired):
    """PercentChangeInCapacity as AWS documents its rounding (the comment gives the raw
    change)."""
    steps = (StepAdjustment(None, None, percent),)
    comparison = "GreaterThanOrEqualToThreshold" if percent > 0 else "LessThanOrEqualToThreshold"
    policy = StepPolicy(50.0, comparison, steps, "PercentChangeInCapacity", magnitude)
    scaling = (
        StepScaling(1, 30, scale_out=policy) if percent > 0 else StepScaling(1, 30, scale_in=policy)
    )
    assert scaling.decide(0.0, current, 50.0).desired == desired


def test_exact_capacity_and_the_bounds():
    """ExactCapacity 8 from 3: 8; ChangeInCapacity +30 from 10 with MaxCapacity 20: 20."""
    exact = step_out(steps=(StepAdjustment(0.0, None, 8),), adjustment_type="ExactCapacity")
    assert exact.decide(0.0, 3, 70.0).desired == 8
    assert step_out(steps=(StepAdjustment(0.0, None, 30),)).decide(0.0, 10, 70.0).desired == 20


def test_a_scale_out_in_its_cooldown_counts_the_capacity_already_added():
    """Cooldown 300 s.  t=0: 65 (5 above): +1, 10 -> 11.  t=60: 75 (15 above): the step is
    +2, applied to the 10 before the cooldown: 12, one more than 11.  t=120: 65 again: +1 on
    10 is 11 < 12: nothing.  t=421 (after the cooldown of t=60's activity): 65: +1 on 12: 13."""
    scaling = step_out()
    assert scaling.decide(0.0, 10, 65.0).desired == 11
    assert scaling.decide(60.0, 11, 75.0).desired == 12
    assert scaling.decide(120.0, 12, 65.0).desired == 12
    assert scaling.decide(421.0, 12, 65.0).desired == 13


def test_scale_in_waits_for_its_cooldown_and_a_scale_out_ends_it():
    """Scale-in at <= 30 by -1 with a 300 s cooldown, scale-out at >= 60 by +1.
    t=0: 20: 10 -> 9.  t=60: 20: in the cooldown, nothing.  t=120: 70: scale out at once,
    9 -> 10, ending the scale-in cooldown.  t=180: 20: 10 -> 9."""
    scale_in = StepPolicy(30.0, "LessThanOrEqualToThreshold", (StepAdjustment(None, 0.0, -1),))
    scale_out = StepPolicy(60.0, "GreaterThanOrEqualToThreshold", (StepAdjustment(0.0, None, 1),))
    scaling = StepScaling(1, 20, scale_out=scale_out, scale_in=scale_in)
    assert scaling.decide(0.0, 10, 20.0).desired == 9
    assert scaling.decide(60.0, 9, 20.0).desired == 9
    assert scaling.decide(120.0, 9, 70.0).desired == 10
    assert scaling.decide(180.0, 10, 20.0).desired == 9


def test_the_alarm_needs_its_evaluation_periods_in_a_row():
    """EvaluationPeriods 3: two breaching datapoints change nothing, a datapoint below the
    threshold starts the count again, the third in a row scales; a missing datapoint changes
    nothing (INSUFFICIENT_DATA) and does not break the count."""
    scaling = step_out(evaluation_periods=3)
    assert [scaling.decide(t, 10, v).desired for t, v in ((0, 65.0), (60, 65.0), (120, 50.0))] == [
        10,
        10,
        10,
    ]
    assert scaling.decide(180.0, 10, 65.0).desired == 10
    assert scaling.decide(240.0, 10, None).reason == "INSUFFICIENT_DATA"
    assert scaling.decide(300.0, 10, 65.0).desired == 10
    assert scaling.decide(360.0, 10, 65.0).desired == 11


# ------------------------------------------------------------------------ a scraped metric
def test_a_metric_is_seen_as_of_its_last_scrape_and_after_its_delay():
    """Scrape every 15 s: the value set at t=20 is first seen at the scrape at t=30; before,
    the t=0 value.  With a 10 s pipeline delay as well, at t=34 the visible scrape is
    floor(24 / 15) * 15 = 15 (the old value), at t=40 it is 30 (the new one)."""
    metric: ScrapedMetric[float] = ScrapedMetric(15.0)
    assert metric.read(0.0) is None
    metric.record(0.0, 1.0)
    metric.record(20.0, 2.0)
    assert [metric.read(t) for t in (0.0, 29.0, 30.0)] == [1.0, 1.0, 2.0]
    delayed: ScrapedMetric[float] = ScrapedMetric(15.0, delay_s=10.0)
    delayed.record(0.0, 1.0)
    delayed.record(20.0, 2.0)
    assert [delayed.read(t) for t in (9.0, 34.0, 40.0)] == [None, 1.0, 2.0]


# ------------------------------------------------------------------- the model file's table
def _model_with(autoscale: dict) -> dict:
    return {
        "clients": {"kind": "closed", "users": 10, "think": 1.0},
        "backends": [{"name": "tomcat", "count": 2, "demand": 0.01, "autoscale": autoscale}],
        "run": {"duration_s": 10.0},
    }


HPA_TABLE = {
    "max_replicas": 8,
    "target": 60,
    "cpu_request_cores": 0.5,
    "scale_down": {
        "stabilization_window_s": 60,
        "policies": [{"type": "pods", "value": 1, "period_s": 60}],
    },
}


def test_the_loader_runs_autoscale_and_refuses_in_one_line_what_does_not_run_yet():
    """The reference engine runs the table (`tests/tiers/test_elastic_group.py`); what it does
    not run (a group whose nodes also crash) must not be silently ignored."""
    from sim.model.load import ModelError, parse_model

    assert parse_model(_model_with(HPA_TABLE), source="m.toml").backends[0].autoscale
    crashing = _model_with(HPA_TABLE)
    crashing["backends"][0]["events"] = [{"at_s": 5.0, "kind": "crash"}]
    with pytest.raises(ModelError) as refused:
        parse_model(crashing, "m.toml")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("m.toml: backends.0.events with [autoscale]")
    assert "not simulated yet" in message
    fixed = parse_model(_model_with(HPA_TABLE), overrides=["backends.0.autoscale=none"])
    assert fixed.backends[0].autoscale is None


def test_the_table_is_checked_with_its_defaults():
    """check_only (from-config's check) returns the table: the HPA's API defaults fill what
    the file leaves out (scale up by 100 % or 4 pods per 15 s, no window; 15 s sync)."""
    from sim.model.load import parse_model

    table = parse_model(_model_with(HPA_TABLE), check_only=True).backends[0].autoscale
    assert table is not None
    assert table.scale_up.stabilization_window_s == 0
    assert [(p.type, p.value, p.period_s) for p in table.scale_up.policies] == [
        ("percent", 100, 15.0),
        ("pods", 4, 15.0),
    ]
    assert (table.sync_period_s, table.scale_down.stabilization_window_s) == (15.0, 60)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"min_replicas": 9}, "min_replicas = 9 is above max_replicas = 8"),
        ({"cpu_request_cores": None}, "give cpu_request_cores"),
        ({"scale_up": {"stabilization_window_s": 0, "policies": []}}, "policies"),
        ({"target": 0}, "target"),
    ],
)
def test_a_wrong_table_is_named(change, needle):
    from sim.model.load import ModelError, parse_model

    table = {**HPA_TABLE, **change}
    table = {k: v for k, v in table.items() if v is not None}
    with pytest.raises(ModelError, match=r"backends\.0\.autoscale") as wrong:
        parse_model(_model_with(table), source="m.toml", check_only=True)
    assert needle in str(wrong.value)


# ------------------------------------------------------------------- AWS target tracking
def tracking(**spec):
    from sim.tiers.cluster.autoscale.aws_target import TargetTracking, TargetTrackingSpec

    spec.setdefault("target", 50.0)
    spec.setdefault("min_capacity", 2)
    spec.setdefault("max_capacity", 20)
    return TargetTracking(TargetTrackingSpec(**spec))


def test_target_tracking_scales_out_after_three_datapoints_in_proportion():
    """Target 50 % CPU, 4 instances at 80 %: the high alarm needs 3 datapoints above 50, so
    t=0 and t=60 change nothing; at t=120, ceil(4 * 80 / 50) = ceil(6.4) = 7."""
    policy = tracking()
    assert [policy.decide(t, 4, 80.0).desired for t in (0.0, 60.0, 120.0)] == [4, 4, 7]


def test_target_tracking_scale_out_cooldown_counts_the_added_capacity():
    """From 4 at 80 %: 7 at t=120.  t=180, still 80 % (the new instances not yet in the
    metric): ceil(4 * 80 / 50) = 7 from the capacity before the cooldown, not more than 7:
    nothing.  t=240 at 110 %: ceil(4 * 110 / 50) = ceil(8.8) = 9 > 7: scale out to 9 (a
    larger scale out).  t=541 at 60 %, the cooldown over: ceil(9 * 60 / 50) = ceil(10.8) = 11."""
    policy = tracking()
    for t in (0.0, 60.0, 120.0):
        decision = policy.decide(t, 4, 80.0)
    assert decision.desired == 7
    assert policy.decide(180.0, 7, 80.0).desired == 7
    assert policy.decide(240.0, 7, 110.0).desired == 9
    assert policy.decide(541.0, 9, 60.0).desired == 11


def test_target_tracking_scales_in_slowly_and_never_past_the_target():
    """10 instances at 20 % of a 50 % target: the low alarm (below 45 %) needs 15 datapoints:
    at the 15th (t=840) ceil(10 * 20 / 50) = 4; at 44.9 % it counts as low, at 45 % not; with
    DisableScaleIn nothing is removed."""
    policy = tracking()
    decisions = [policy.decide(60.0 * k, 10, 20.0).desired for k in range(15)]
    assert decisions == [10] * 14 + [4]
    edge = tracking(scale_in_datapoints=1)
    assert edge.decide(0.0, 10, 44.9).desired == math.ceil(10 * 44.9 / 50)  # 9
    assert tracking(scale_in_datapoints=1).decide(0.0, 10, 45.0).desired == 10
    assert tracking(scale_in_datapoints=1, disable_scale_in=True).decide(0.0, 10, 1.0).desired == 10
