"""`[backends.autoscale]`: an autoscaler for a backend group, and the life of a node it adds.

Its decision is Kubernetes' HPA (`sim.tiers.cluster.autoscale.hpa`, autoscaling/v2) or an
AWS policy (`aws_target`: target tracking, `aws_step`: step scaling, Application Auto
Scaling); the field names follow their specs, in this project's snake case with units.  The reference
engine runs it (`sim.tiers.cluster.elastic_group`, `sim.tiers.cluster.node_life`; the feature
`backends.autoscale`, which the compiled engine does not implement).  What it does not run
yet, the loader refuses in one line (`refuse_autoscale`) rather than run the group at a fixed
`count` while the file says it scales.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sim.tiers.balancer.policies import policy_class
from sim.tiers.cluster.autoscale.aws_step import StepAdjustment, StepPolicy, StepScaling
from sim.tiers.cluster.autoscale.aws_target import TargetTracking, TargetTrackingSpec
from sim.tiers.cluster.autoscale.group_value import EXTERNAL_SOURCES, GroupValue
from sim.tiers.cluster.autoscale.hpa import (
    HorizontalPodAutoscaler,
    HpaSpec,
    ScalingRules,
    SelectPolicy,
)
from sim.tiers.cluster.autoscale.hpa import RatePolicy as HpaRatePolicy
from sim.tiers.cluster.autoscale.hpa_metrics import METRIC_KINDS


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class RatePolicy(_Strict):
    """One `behavior.scaleUp/scaleDown.policies` entry (`HPAScalingPolicy`)."""

    type: Literal["pods", "percent"] = Field(
        ..., description="Pods: so many pods per period; Percent: so many per cent of the group"
    )
    value: int = Field(..., ge=1, description="pods, or per cent, per period (`value`)")
    period_s: float = Field(
        ..., gt=0, le=1800, description="`periodSeconds` (Kubernetes allows 1..1800) [s]"
    )


class Direction(_Strict):
    """`behavior.scaleUp` or `behavior.scaleDown` (`HPAScalingRules`)."""

    stabilization_window_s: float = Field(
        ...,
        ge=0,
        le=3600,
        description="`stabilizationWindowSeconds`: growing takes the lowest, shrinking the highest "
        "recommendation of this long (0..3600) [s]",
    )
    policies: list[RatePolicy] = Field(..., min_length=1, description="the rate limits")
    select_policy: Literal["max", "min", "disabled"] = Field(
        "max",
        description="`selectPolicy`: Max takes the policy allowing the largest change, Min the "
        "smallest, Disabled forbids this direction",
    )
    tolerance: float = Field(
        0.1,
        ge=0,
        description="`tolerance` (Kubernetes 1.33+; before, --horizontal-pod-autoscaler-tolerance "
        "for both): no change while the metric is within this fraction of its target",
    )


SELECT_POLICIES: dict[str, SelectPolicy] = {"max": "Max", "min": "Min", "disabled": "Disabled"}


def _rules(direction: Direction) -> ScalingRules:
    """The direction as the controller's `HPAScalingRules`."""
    select = SELECT_POLICIES[direction.select_policy]
    return ScalingRules(
        direction.stabilization_window_s,
        tuple(
            HpaRatePolicy("Pods" if p.type == "pods" else "Percent", p.value, p.period_s)
            for p in direction.policies
        ),
        select,
        direction.tolerance,
    )


def _scale_up() -> Direction:
    return Direction(
        stabilization_window_s=0.0,
        policies=[
            RatePolicy(type="percent", value=100, period_s=15.0),
            RatePolicy(type="pods", value=4, period_s=15.0),
        ],
    )


def _scale_down() -> Direction:
    return Direction(
        stabilization_window_s=300.0,
        policies=[RatePolicy(type="percent", value=100, period_s=15.0)],
    )


COMPARISONS = {
    "greater_or_equal": "GreaterThanOrEqualToThreshold",
    "greater": "GreaterThanThreshold",
    "less": "LessThanThreshold",
    "less_or_equal": "LessThanOrEqualToThreshold",
}
ADJUSTMENT_TYPES = {
    "change_in_capacity": "ChangeInCapacity",
    "exact_capacity": "ExactCapacity",
    "percent_change_in_capacity": "PercentChangeInCapacity",
}


class Step(_Strict):
    """One `StepAdjustment`: the interval of `metric - threshold` it holds (no bound: open)."""

    lower: float | None = Field(
        None, description="`MetricIntervalLowerBound`, relative to the threshold (none: -inf)"
    )
    upper: float | None = Field(
        None, description="`MetricIntervalUpperBound`, relative to the threshold (none: +inf)"
    )
    adjustment: int = Field(..., description="`ScalingAdjustment`, in `adjustment_type`'s unit")


class StepAlarm(_Strict):
    """A CloudWatch alarm on the group's metric and the step scaling policy it invokes
    (`StepScalingPolicyConfiguration`)."""

    threshold: float = Field(..., description="the alarm's `Threshold`, in the metric's unit")
    comparison: Literal["greater_or_equal", "greater", "less", "less_or_equal"] = Field(
        ..., description="the alarm's `ComparisonOperator`"
    )
    evaluation_periods: int = Field(
        1, ge=1, le=100, description="`EvaluationPeriods`: breaching datapoints in a row"
    )
    steps: list[Step] = Field(..., min_length=1, description="`StepAdjustments`")
    adjustment_type: Literal[
        "change_in_capacity", "exact_capacity", "percent_change_in_capacity"
    ] = Field("change_in_capacity", description="`AdjustmentType`")
    min_adjustment_magnitude: int | None = Field(
        None, ge=1, description="`MinAdjustmentMagnitude` (percent_change_in_capacity only)"
    )
    cooldown_s: float = Field(300.0, ge=0, description="`Cooldown` (default 300) [s]")

    @model_validator(mode="after")
    def _intervals(self) -> StepAlarm:
        # Application Auto Scaling refuses steps that overlap or leave a gap, and more than
        # one open bound at each end (PutScalingPolicy's ValidationException)
        low = float("-inf")
        ordered = sorted(self.steps, key=lambda s: -math.inf if s.lower is None else s.lower)
        for k, step in enumerate(ordered):
            lower = -math.inf if step.lower is None else step.lower
            upper = math.inf if step.upper is None else step.upper
            if not lower < upper:
                raise ValueError(f"a step's lower bound {lower:g} is not below its upper {upper:g}")
            if k and lower != low:
                raise ValueError(
                    f"the steps leave a gap or overlap at {min(low, lower):g}: each step's lower "
                    "bound is the previous step's upper bound"
                )
            low = upper
        if self.min_adjustment_magnitude is not None and (
            self.adjustment_type != "percent_change_in_capacity"
        ):
            raise ValueError(
                "min_adjustment_magnitude applies to adjustment_type = "
                "'percent_change_in_capacity' only"
            )
        return self

    def policy(self) -> StepPolicy:
        return StepPolicy(
            threshold=self.threshold,
            comparison=COMPARISONS[self.comparison],  # type: ignore[arg-type]
            steps=tuple(StepAdjustment(s.lower, s.upper, s.adjustment) for s in self.steps),
            adjustment_type=ADJUSTMENT_TYPES[self.adjustment_type],  # type: ignore[arg-type]
            min_adjustment_magnitude=self.min_adjustment_magnitude,
            cooldown_s=self.cooldown_s,
            evaluation_periods=self.evaluation_periods,
        )


class Autoscale(_Strict):
    """An autoscaler on the group — a Kubernetes HorizontalPodAutoscaler (autoscaling/v2), an
    AWS target tracking or step scaling policy — and how a node it adds comes to serve and
    how one it removes goes.  `backends.N.count` is the group's size at the start (the
    Deployment's `spec.replicas`, the Auto Scaling group's desired capacity)."""

    policy: Literal["hpa", "aws_target_tracking", "aws_step"] = Field(
        "hpa",
        description="the autoscaler: Kubernetes' HPA; AWS target tracking "
        "(`TargetTrackingScalingPolicyConfiguration`) or step scaling "
        "(`StepScalingPolicyConfiguration`) on the group's metric",
    )
    min_replicas: int = Field(1, ge=1, le=1024, description="`minReplicas`")
    max_replicas: int = Field(..., ge=1, le=1024, description="`maxReplicas`")
    metric: Literal[METRIC_KINDS] = Field(  # type: ignore[valid-type]
        "cpu_utilization",
        description="cpu_utilization (Resource cpu, averageUtilization of the request), pods (a "
        "per-pod averageValue: requests per second), external (an External value, e.g. p95 "
        "response time), external_average (an External averageValue per pod)",
    )
    target: float | None = Field(
        None,
        gt=0,
        description="the metric's target (hpa, aws_target_tracking): per cent of the CPU request "
        "(of the node's cores for AWS), requests/s per pod, or the external value in its unit "
        "(seconds for a response time)",
    )
    external_source: Literal[EXTERNAL_SOURCES] | None = Field(  # type: ignore[valid-type]
        None,
        description="what an external metric measures, over each scrape interval, of the "
        "requests the balancer answered from the group: response_p95_s (their 95th percentile "
        "response time [s], as the balancer timed them: AWS ALB TargetResponseTime p95, an "
        "ingress histogram's p95) or requests_per_s (ALB RequestCount, an ingress's rate)",
    )
    cpu_request_cores: float | None = Field(
        None,
        gt=0,
        description="the pod's `resources.requests.cpu` in cores (500m = 0.5); cpu_utilization "
        "is measured against it",
    )
    sync_period_s: float = Field(
        15.0,
        gt=0,
        description="kube-controller-manager --horizontal-pod-autoscaler-sync-period [s]",
    )
    scrape_interval_s: float | None = Field(
        None,
        gt=0,
        description="how old the metric the autoscaler reads may be: metrics-server "
        "--metric-resolution (15 s, the default for hpa), Prometheus scrape_interval (1 m) "
        "behind prometheus-adapter, a CloudWatch period (period_s, the default for AWS) [s]",
    )
    period_s: float = Field(
        60.0,
        gt=0,
        description="AWS: the CloudWatch metric's `Period`, at which its alarms evaluate (60 s "
        "for detailed monitoring, 300 s for basic) [s]",
    )
    scale_out_cooldown_s: float = Field(
        300.0, ge=0, description="aws_target_tracking: `ScaleOutCooldown` (default 300) [s]"
    )
    scale_in_cooldown_s: float = Field(
        300.0, ge=0, description="aws_target_tracking: `ScaleInCooldown` (default 300) [s]"
    )
    disable_scale_in: bool = Field(False, description="aws_target_tracking: `DisableScaleIn`")
    scale_out_datapoints: int = Field(
        3,
        ge=1,
        description="aws_target_tracking: datapoints above the target in a row before its high "
        "alarm scales out (3 for a one-minute metric)",
    )
    scale_in_datapoints: int = Field(
        15,
        ge=1,
        description="aws_target_tracking: datapoints 10 % below the target in a row before its "
        "low alarm scales in (15 for a one-minute metric)",
    )
    step_scale_out: StepAlarm | None = Field(
        None, description="aws_step: the scale-out alarm and its steps"
    )
    step_scale_in: StepAlarm | None = Field(
        None, description="aws_step: the scale-in alarm and its steps"
    )
    scale_up: Direction = Field(default_factory=_scale_up, description="`behavior.scaleUp`")
    scale_down: Direction = Field(default_factory=_scale_down, description="`behavior.scaleDown`")
    provisioning_s: float = Field(
        0.0,
        ge=0,
        description="from the decision to a started container: scheduling and image pull on a "
        "node with room, or a new node's provisioning (cluster-autoscaler: minutes) [s]",
    )
    jvm_start_s: float = Field(
        0.0,
        ge=0,
        description="the JVM and server start (Tomcat logs `Server startup in N ms`) [s]",
    )
    readiness_delay_s: float = Field(
        0.0,
        ge=0,
        description="readinessProbe.initialDelaySeconds (default 0) before the first probe [s]",
    )
    readiness_period_s: float = Field(
        10.0,
        gt=0,
        description="readinessProbe.periodSeconds (default 10): a started node is seen ready at "
        "the next probe [s]",
    )
    warm_pool: bool = Field(
        False,
        description="a node joins with its JVM's code already compiled (instances pre-initialised "
        "and kept with their memory: AWS EC2 Auto Scaling warm pools in the Running or "
        "Hibernated state); false = a fresh JVM, cold (backends.N.jvm's JIT warm-up)",
    )
    slow_start_s: float = Field(
        0.0,
        ge=0,
        description="the balancer's ramp of a new member's share from 0 to its weight (HAProxy "
        "`slowstart`, AWS target group `slow_start.duration_seconds`); 0 = full share at once [s]",
    )
    drain_s: float = Field(
        30.0,
        ge=0,
        description="a removed node finishes its requests for up to this long "
        "(terminationGracePeriodSeconds, default 30) [s]",
    )

    @property
    def scrape_s(self) -> float:
        """The metric's scrape interval: as given, else metrics-server's 15 s for the HPA and
        the CloudWatch period for an AWS policy."""
        if self.scrape_interval_s is not None:
            return self.scrape_interval_s
        return 15.0 if self.policy == "hpa" else self.period_s

    def autoscaler(self, node_cores: float = 1.0) -> HorizontalPodAutoscaler | GroupValue:
        """The decision this table describes, as the engines call it (`decide(now, replicas,
        pods, external)`); `node_cores` is a node's CPU, which an AWS policy's CPU
        utilisation is a share of."""
        if self.policy == "aws_target_tracking":
            assert self.target is not None  # validated
            tracking = TargetTracking(
                TargetTrackingSpec(
                    target=self.target,
                    min_capacity=self.min_replicas,
                    max_capacity=self.max_replicas,
                    scale_out_cooldown_s=self.scale_out_cooldown_s,
                    scale_in_cooldown_s=self.scale_in_cooldown_s,
                    disable_scale_in=self.disable_scale_in,
                    period_s=self.period_s,
                    scale_out_datapoints=self.scale_out_datapoints,
                    scale_in_datapoints=self.scale_in_datapoints,
                )
            )
            return GroupValue(tracking, self.metric, node_cores)
        if self.policy == "aws_step":
            step = StepScaling(
                self.min_replicas,
                self.max_replicas,
                None if self.step_scale_out is None else self.step_scale_out.policy(),
                None if self.step_scale_in is None else self.step_scale_in.policy(),
                period_s=self.period_s,
            )
            return GroupValue(step, self.metric, node_cores)
        assert self.target is not None  # validated
        spec = HpaSpec(
            max_replicas=self.max_replicas,
            metric=self.metric,
            target=self.target,
            min_replicas=self.min_replicas,
            scale_up=_rules(self.scale_up),
            scale_down=_rules(self.scale_down),
            sync_period_s=self.sync_period_s,
            cpu_request_cores=self.cpu_request_cores or 1.0,
        )
        return HorizontalPodAutoscaler(spec)

    @model_validator(mode="after")
    def _consistent(self) -> Autoscale:
        if self.min_replicas > self.max_replicas:
            raise ValueError(
                f"min_replicas = {self.min_replicas} is above max_replicas = {self.max_replicas}"
            )
        self._policy_fields()
        if (
            self.policy == "hpa"
            and self.metric == "cpu_utilization"
            and (self.cpu_request_cores is None)
        ):
            raise ValueError(
                "metric = cpu_utilization is a share of the pod's CPU request: give "
                "cpu_request_cores (its resources.requests.cpu in cores)"
            )
        return self

    def _policy_fields(self) -> None:
        """Each field is read by its policy: one given to a policy that does not read it
        would silently do nothing."""
        given = self.model_fields_set
        readers = {
            "hpa": _HPA_ONLY,
            "aws_target_tracking": _TRACKING_ONLY,
            "aws_step": _STEP_ONLY,
        }
        for policy, fields in readers.items():
            if policy == self.policy:
                continue
            stray = sorted(f for f in fields & given if f not in readers[self.policy])
            if stray:
                raise ValueError(
                    f"{stray[0]} is read by policy = {policy!r} only, not by "
                    f"policy = {self.policy!r}: remove it or change the policy"
                )
        if self.policy in ("hpa", "aws_target_tracking") and self.target is None:
            raise ValueError(f"policy = {self.policy!r} needs the metric's target: give target")
        if self.policy == "aws_step" and self.target is not None:
            raise ValueError(
                "target is not read by policy = 'aws_step' (its alarms' thresholds are): "
                "remove it, or use policy = 'aws_target_tracking'"
            )
        if self.policy == "aws_step" and self.step_scale_out is None and self.step_scale_in is None:
            raise ValueError(
                "policy = 'aws_step' needs an alarm: give step_scale_out and/or step_scale_in"
            )
        external = self.metric in ("external", "external_average")
        if external and self.external_source is None:
            raise ValueError(
                f"metric = {self.metric!r} needs what it measures: give external_source "
                f"({' or '.join(repr(x) for x in EXTERNAL_SOURCES)})"
            )
        if not external and self.external_source is not None:
            raise ValueError(
                f"external_source is read by an external metric only, not by metric = "
                f"{self.metric!r}: remove it or set metric = 'external'"
            )
        if self.policy != "hpa" and self.metric == "external_average":
            raise ValueError(
                "metric = 'external_average' is the HPA's per-pod target of an external value: "
                "an AWS policy reads the value itself (metric = 'external')"
            )
        if self.policy == "aws_target_tracking" and external:
            # AWS: "the metric value must increase or decrease proportionally to the number
            # of instances" — a response time or a group total does not
            raise ValueError(
                "aws_target_tracking needs a metric that falls in proportion as capacity is "
                "added (cpu_utilization, pods: requests per target): a response time or a "
                "group total belongs to policy = 'aws_step'"
            )


# the fields only one policy reads (`target`, `metric`, the replicas and the node's life are
# everybody's)
_HPA_ONLY = frozenset({"scale_up", "scale_down", "sync_period_s", "cpu_request_cores"})
_TRACKING_ONLY = frozenset(
    {
        "period_s",
        "scale_out_cooldown_s",
        "scale_in_cooldown_s",
        "disable_scale_in",
        "scale_out_datapoints",
        "scale_in_datapoints",
    }
)
_STEP_ONLY = frozenset({"period_s", "step_scale_out", "step_scale_in"})


def refuse_autoscale(model: Any, source: str) -> str | None:
    """The one line that refuses a model whose `[autoscale]` asks for what no engine runs yet
    (`model` is a `sim.model.schema.Model`), or None."""
    members = model.balancer.members
    policy = model.balancer.policy
    for index, group in enumerate(model.backends):
        spec = getattr(group, "autoscale", None)
        if spec is None:
            continue
        where = f"{source}: backends.{index}"
        if spec.max_replicas < 2:
            return (
                f"{where}.autoscale.max_replicas = {spec.max_replicas} leaves the group "
                "nothing to scale: raise max_replicas, or remove [autoscale] for a fixed count"
            )
        if group.count > spec.max_replicas:
            return (
                f"{where}.count = {group.count} is above backends.{index}.autoscale."
                f"max_replicas = {spec.max_replicas}: lower count (the Deployment's replicas "
                "at the start) or raise max_replicas"
            )
        if members is not None and group.name not in members:
            return (
                f"{where}: the autoscaled group {group.name!r} is not among balancer.members, "
                "so no request reaches it: add it to balancer.members or remove [autoscale]"
            )
        if group.events:
            return (
                f"{where}.events with [autoscale] is not simulated yet (a crash and the "
                "autoscaler's node lives are not joined): remove the events or the table"
            )
        if spec.slow_start_s > 0 and not policy_class(policy).reads_weights_live:
            return (
                f"{where}.autoscale.slow_start_s = {spec.slow_start_s:g} ramps a joining "
                f"node's weight, which balancer.policy = {policy!r} does not read at each "
                "pick: set balancer.policy = 'byrequests' (a weighted rotation, as HAProxy's "
                "roundrobin) or slow_start_s = 0"
            )
        if model.cluster.active:
            return (
                f"{where}.autoscale with cluster.replication is not simulated yet (the "
                "replication group's members are fixed): remove one of them"
            )
        proxy = model.proxy
        if proxy is not None and proxy.forward and proxy.backend_pool.module == "mod_jk":
            return (
                f"{where}.autoscale with proxy.backend_pool.module = 'mod_jk' is not simulated "
                "yet (mod_jk's lb worker keeps its own member states): use module = 'mod_proxy'"
            )
    return None
