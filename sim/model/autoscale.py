"""`[backends.autoscale]`: an autoscaler for a backend group, and the life of a node it adds.

Its decision is `sim.tiers.cluster.autoscale.hpa` (Kubernetes' HPA, autoscaling/v2); the
field names follow the HPA's spec, in this project's snake case with units.  The reference
engine runs it (`sim.tiers.cluster.elastic_group`, `sim.tiers.cluster.node_life`; the feature
`backends.autoscale`, which the compiled engine does not implement).  What it does not run
yet, the loader refuses in one line (`refuse_autoscale`) rather than run the group at a fixed
`count` while the file says it scales.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sim.tiers.balancer.policies import policy_class
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


class Autoscale(_Strict):
    """A Kubernetes HorizontalPodAutoscaler on the group (autoscaling/v2), and how a node it
    adds comes to serve and how one it removes goes.  `backends.N.count` is the group's size
    at the start (the Deployment's `spec.replicas`)."""

    policy: Literal["hpa"] = Field("hpa", description="the autoscaler: Kubernetes' HPA")
    min_replicas: int = Field(1, ge=1, le=1024, description="`minReplicas`")
    max_replicas: int = Field(..., ge=1, le=1024, description="`maxReplicas`")
    metric: Literal[METRIC_KINDS] = Field(  # type: ignore[valid-type]
        "cpu_utilization",
        description="cpu_utilization (Resource cpu, averageUtilization of the request), pods (a "
        "per-pod averageValue: requests per second), external (an External value, e.g. p95 "
        "response time), external_average (an External averageValue per pod)",
    )
    target: float = Field(
        ...,
        gt=0,
        description="the metric's target: per cent of the CPU request, requests/s per pod, or "
        "the external value in its unit (seconds for a response time)",
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
    scrape_interval_s: float = Field(
        15.0,
        gt=0,
        description="how old the metric the HPA reads may be: metrics-server --metric-resolution "
        "(15 s), or Prometheus scrape_interval (1 m) behind prometheus-adapter [s]",
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

    def autoscaler(self) -> HorizontalPodAutoscaler:
        """The decision this table describes, as the engines will call it."""
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
        if self.metric == "cpu_utilization" and self.cpu_request_cores is None:
            raise ValueError(
                "metric = cpu_utilization is a share of the pod's CPU request: give "
                "cpu_request_cores (its resources.requests.cpu in cores)"
            )
        return self


# the metrics the engine measures per node (`sim.tiers.cluster.elastic_group`)
SIMULATED_METRICS = ("cpu_utilization", "pods")


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
        if spec.metric not in SIMULATED_METRICS:
            return (
                f"{where}.autoscale.metric = {spec.metric!r} is read and checked but not "
                f"simulated yet (the engine measures {' and '.join(SIMULATED_METRICS)} per "
                "node): use one of those"
            )
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
