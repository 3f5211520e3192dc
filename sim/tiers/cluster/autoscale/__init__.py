"""Autoscalers: what decides how many nodes a backend group should have.

Each policy is a small state machine fed, at each of its evaluations, the time, the group's
current replica count and the metric as the autoscaler reads it, and returning the desired
replica count with the reason (a `Decision`).  It touches no simulation object: the caller
(an engine) owns the clock, the nodes and the metric pipeline, so the same policy object
serves both engines and the tests compute its decisions by hand.

The family:

- `hpa.HorizontalPodAutoscaler`: Kubernetes' HPA (autoscaling/v2) as the controller
  computes it (kube-controller-manager `pkg/controller/podautoscaler`: `replica_calculator.go`
  for the proposal from the metric, `horizontal.go` for the stabilisation windows and the
  `behavior` rate limits), every `--horizontal-pod-autoscaler-sync-period` (15 s);
- `aws_step.StepScaling`: an AWS step scaling policy (Application Auto Scaling
  `StepScalingPolicyConfiguration`: step adjustments relative to a CloudWatch alarm's
  threshold, the three adjustment types, `MinAdjustmentMagnitude`, `Cooldown`);
- `aws_target.TargetTracking`: an AWS target tracking policy (its two managed alarms and
  the proportional adjustment);
- `scrape.ScrapedMetric`: a metric read through its scrape interval and pipeline delay
  (metrics-server's `--metric-resolution`, Prometheus' `scrape_interval`), which every
  policy may read its metric through.

What an engine needs to drive one (the reference engine in Python calls these objects; the
compiled engine will need the same decisions inside its loop): a timer at each evaluation
(`evaluation_period_s`), the group's replica count (`scale.spec.replicas`: nodes asked for,
starting or ready), per node whether it is ready and its metric sample (CPU used over its
request, requests per second) or the group-level value (p95 for an external metric), and
then to start or drain nodes to reach the decision.  The state a policy keeps is small and
flat, so that a compiled loop can hold it in arrays: the HPA keeps its recent
recommendations and scale events as (time, count) pairs no older than its longest window or
policy period; step scaling keeps the alarm's breach count and the last scaling activity;
target tracking the two alarms' counts and the cooldowns.
"""

from sim.tiers.cluster.autoscale.decision import Decision, PodSample

__all__ = ["Decision", "PodSample"]
