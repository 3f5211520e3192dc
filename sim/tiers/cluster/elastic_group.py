"""An autoscaled backend group: the autoscaler's control loop over its nodes' lives.

Every evaluation period the autoscaler (`sim.tiers.cluster.autoscale`: Kubernetes' HPA every
`sync_period_s`, an AWS policy every CloudWatch period) is
given the group's replica count (`scale.spec.replicas`: nodes asked for, starting or ready;
not the ones draining), each counted pod's readiness and its metric as the metrics pipeline
last scraped it, and returns the desired count; the group then starts or removes nodes
(`sim.tiers.cluster.node_life`).

The metric is sampled per node at each scrape (every `scrape_interval_s`, metrics-server's
`--metric-resolution`), over the window since the previous scrape:

- `cpu_utilization`: the node's CPU cores busy on average (busy core-seconds / window), which
  the HPA divides by the pod's CPU request;
- `pods`: the requests the node completed per second;
- an external metric (`external_source`), one value for the group over the same window, of
  the requests the balancer answered from the group's nodes (failed ones included, as a
  load balancer's own metrics count them): `response_p95_s`, their 95th percentile response
  time as the balancer timed it (from handing the request to the node to its answer; the
  nearest-rank quantile of the window's answers, as an exporter's summary computes it, where
  a Prometheus histogram interpolates in its buckets), or `requests_per_s`, their rate.
  A window without an answer has no p95 (the metric is missing).

A node ready for the whole window has a sample.  One that became ready inside it has a
sample over its ready part, which the HPA's CPU rule counts as unready (its sample began
before it was ready, within `--horizontal-pod-autoscaler-cpu-initialization-period`) and a
per-pod metric uses as is.  A node ready after the last scrape has none (a "missing" pod).
A node still provisioning is a Pending pod (unready); one whose JVM is starting is a running
pod not Ready: unready for the CPU rule, missing for a per-pod metric (the controller's
`groupPods`).  A scrape due at a sync's instant is taken first.

When it removes nodes the group picks them as a ReplicaSet does (`getPodsToDelete`): pods
not yet started first, then not ready, then the ones ready for the shortest time.  A node
asked for while every node of the group is in use (some still draining) waits for one to
be gone (a Pending pod).

Measured (`<group>.autoscale.*`): the replicas over time, the ready nodes, the scaling
decisions and nodes added and removed, and the node-seconds (from the decision that adds a
node to the moment it is gone: what the group costs).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sim.observe.probes import COUNT, EVENTS, NODE_SECONDS, NODES, Metric, Window
from sim.tiers.cluster.autoscale.decision import Decision, PodSample
from sim.tiers.cluster.autoscale.scrape import ScrapedMetric
from sim.tiers.cluster.node_life import NodeLife, State

SCRAPE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Sync:
    """One evaluation of the autoscaler: what it was given and what it decided."""

    at_s: float
    replicas: int
    pods: tuple[PodSample, ...]
    decision: Decision
    external: float | None = None  # the external metric's value as read, if any


class ElasticGroup:
    """The control loop of one group (`backends.N.autoscale`) and its probe."""

    fields = (
        "replicas_area",
        "ready_area",
        "node_seconds",
        "scale_ups",
        "scale_downs",
        "nodes_added",
        "nodes_removed",
        "replicas",
        "ready",
        "existing",
    )

    def __init__(
        self,
        kernel,
        name: str,
        autoscaler,
        metric: str,
        lives: Sequence[NodeLife],
        cpus: Sequence,
        stations: Sequence,
        scrape_interval_s: float,
        initial: int,
        external_source: str | None = None,
    ) -> None:
        self.kernel = kernel
        self.name = name  # `<group>.autoscale`
        self.autoscaler = autoscaler
        self.metric = metric
        self.lives = list(lives)
        self.cpus = list(cpus)
        self.stations = list(stations)
        self.scrape_interval_s = scrape_interval_s
        self.replicas = initial  # scale.spec.replicas
        self.pending = 0  # replicas asked for with no node of the group free yet
        self.history: list[Sync] = []
        self.scale_ups = 0
        self.scale_downs = 0
        self.nodes_added = 0
        self.nodes_removed = 0
        self._areas = [0.0, 0.0, 0.0]  # replicas, ready, existing nodes: time integrals
        self._levels = [float(initial), float(initial), float(initial)]
        self._since = 0.0
        self.external_source = external_source
        self._answers: list[float] = []  # response times answered since the last scrape
        self._last_scrape_s = 0.0
        self._scraped: ScrapedMetric[tuple[dict[int, tuple[float, bool]], float | None]] = (
            ScrapedMetric(scrape_interval_s)
        )
        self._scrapes = 0  # scrapes taken (the k-th at k x scrape_interval_s)
        self._base = [self._source(i) for i in range(len(self.lives))]  # (time, counter)
        self._by_member = {life.member: life for life in self.lives}
        for life in self.lives:
            life.on_change = self._changed
        kernel.after(scrape_interval_s, self._scrape_tick, 1)
        kernel.after(0.0, self._sync, None)

    # ------------------------------------------------------------------ the metric
    def _source(self, i: int) -> tuple[float, float]:
        """The node's cumulative count behind the metric, now."""
        now = self.kernel.now
        if self.metric == "cpu_utilization":
            return now, self.cpus[i].counters(now)[0]  # busy core-seconds
        return now, float(self.stations[i].visits)  # requests completed

    def _scrape_tick(self, k: int) -> None:
        if self._scrapes < k:
            self._scrape()
        self.kernel.after(
            (k + 1) * self.scrape_interval_s - self.kernel.now, self._scrape_tick, k + 1
        )

    def _scrape(self) -> None:
        now = self.kernel.now
        self._scrapes += 1
        window_start = now - self.scrape_interval_s
        samples: dict[int, tuple[float, bool]] = {}
        for i, life in enumerate(self.lives):
            if life.state is not State.READY:
                continue
            since, count = self._base[i]
            _, current = self._source(i)
            if now > since:
                whole = since <= window_start + SCRAPE_TOLERANCE
                samples[i] = ((current - count) / (now - since), whole)
            self._base[i] = (now, current)
        self._scraped.record(now, (samples, self._external(now)))
        self._answers = []
        self._last_scrape_s = now

    def answered(self, member: int, _request, _ok: bool, elapsed_s: float) -> None:
        """The balancer answered a request from `member` after `elapsed_s`, failed or not
        (any member of the balancer: another group's are not this group's)."""
        if member in self._by_member:
            self._answers.append(elapsed_s)

    def _external(self, now: float) -> float | None:
        """The external metric over the window since the last scrape."""
        answers = self._answers
        if self.external_source == "requests_per_s":
            window = now - self._last_scrape_s
            return len(answers) / window if window > 0 else None
        if self.external_source == "response_p95_s" and answers:
            ordered = sorted(answers)
            return ordered[math.ceil(0.95 * len(ordered)) - 1]  # nearest rank
        return None

    def _pods(self, seen: dict[int, tuple[float, bool]]) -> list[PodSample]:
        cpu = self.metric == "cpu_utilization"
        pods = [PodSample(None, ready=False)] * self.pending
        for i, life in enumerate(self.lives):
            if not life.counted:
                continue
            if life.state is State.PROVISIONING:  # a Pending pod
                pods.append(PodSample(None, ready=False))
            elif life.state is State.STARTING:
                # running, not Ready: the CPU rule leaves it out as unready; a per-pod
                # metric has no series for it yet (missing)
                pods.append(PodSample(None, ready=not cpu))
            elif i not in seen:
                pods.append(PodSample(None))  # ready after the last scrape: missing
            else:
                value, whole = seen[i]
                pods.append(PodSample(value, ready=whole or not cpu))
        return pods

    # ------------------------------------------------------------------ the loop
    def _sync(self, _arg) -> None:
        now = self.kernel.now
        due = math.floor(now / self.scrape_interval_s + SCRAPE_TOLERANCE)
        if due > self._scrapes:  # a scrape at this very instant comes first
            self._scrape()
        samples, external = self._scraped.read(now) or ({}, None)
        pods = self._pods(samples)
        current = self.replicas
        decision = self.autoscaler.decide(now, current, pods, external)
        self.history.append(Sync(now, current, tuple(pods), decision, external))
        change = decision.desired - current
        if change:
            self._advance(now)
            self.replicas = decision.desired
            if change > 0:
                self.scale_ups += 1
                self.nodes_added += change
                for _ in range(change):
                    self._add()
            else:
                self.scale_downs += 1
                self.nodes_removed += -change
                for _ in range(-change):
                    self._remove()
            self._levels[0] = float(self.replicas)
        self.kernel.after(self.autoscaler.evaluation_period_s, self._sync, None)

    def _add(self) -> None:
        free = next((life for life in self.lives if life.state is State.ABSENT), None)
        if free is None:
            self.pending += 1  # every node of the group is in use: one drains
            self._count()
            return
        free.start()

    def _remove(self) -> None:
        if self.pending:
            self.pending -= 1
            self._count()
            return
        order = {State.PROVISIONING: 0, State.STARTING: 1, State.READY: 2}
        candidates = [life for life in self.lives if life.counted]
        # not started, then not ready, then the most recently ready; the last built on ties
        victim = min(
            candidates,
            key=lambda life: (order[life.state], -life.ready_at, -life.started_at, -life.member),
        )
        victim.stop()

    def _changed(self, life: NodeLife) -> None:
        if life.state is State.READY:
            i = self.lives.index(life)
            self._base[i] = self._source(i)  # its samples start when it is ready
        if life.state is State.ABSENT and self.pending:
            self.pending -= 1
            life.start()  # a pending replica takes the node that is gone
            return
        self._count()

    def _count(self) -> None:
        self._advance(self.kernel.now)
        ready = sum(1 for life in self.lives if life.state is State.READY)
        existing = sum(1 for life in self.lives if life.exists) + self.pending
        self._levels[1] = float(ready)
        self._levels[2] = float(existing)

    def _advance(self, now: float) -> None:
        dt = now - self._since
        if dt > 0:
            for j in range(3):
                self._areas[j] += self._levels[j] * dt
        self._since = now

    def member_idle(self, member: int) -> None:
        """The balancer answered the last outstanding request of `member` (any member of
        the balancer: another group's are not this group's)."""
        life = self._by_member.get(member)
        if life is not None:
            life.member_idle()

    # ------------------------------------------------------------------ the probe
    def counters(self, now: float) -> tuple[float, ...]:
        dt = now - self._since
        areas = [a + level * dt for a, level in zip(self._areas, self._levels)]
        return (
            *areas,
            float(self.scale_ups),
            float(self.scale_downs),
            float(self.nodes_added),
            float(self.nodes_removed),
            *self._levels,
        )

    def metrics(self, w: Window) -> Iterator[Metric]:
        """The replicas asked for (mean and now), the nodes ready (mean and now), the scaling
        decisions and nodes added and removed over the window, and the node-seconds spent."""
        yield "replicas", w.mean_level("replicas_area"), COUNT
        yield "replicas_now", w.level["replicas"], COUNT
        yield "ready", w.mean_level("ready_area"), COUNT
        yield "ready_now", w.level["ready"], COUNT
        yield "scale_ups", w.delta["scale_ups"], EVENTS
        yield "scale_downs", w.delta["scale_downs"], EVENTS
        yield "nodes_added", w.delta["nodes_added"], NODES
        yield "nodes_removed", w.delta["nodes_removed"], NODES
        yield "node_seconds", w.delta["node_seconds"], NODE_SECONDS
