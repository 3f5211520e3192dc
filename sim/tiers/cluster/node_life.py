"""A node's life in an autoscaled group: from the decision that adds it to the moment it is gone.

Adding a node (a Kubernetes pod the ReplicaSet creates, an instance an Auto Scaling group
launches):

1. **provisioning** (`provisioning_s`): scheduling and image pull, or a new machine;
2. **starting** (`jvm_start_s`): the container runs, a new JVM starts the server (Tomcat's
   `Server startup in N ms`); the JVM is a fresh one (`Jvm.restart`: interpreted code, the
   JIT's cold factor, an empty heap; its code compiled already with `warm_pool`), and the
   front keeps no connection to it yet;
3. **ready**: the readiness probe runs `readiness_delay_s` after the container starts
   (`initialDelaySeconds`), then every `readiness_period_s` (`periodSeconds`); the first probe
   at or after the end of the JVM's start passes (`successThreshold` 1), and the node joins
   the balancer's members at that instant, with the balancer's slow start if it has one.

Removing one: the node leaves the members at once (the endpoints controller removes a
terminating pod), finishes what it has, and is gone when its last request is answered; if
that takes longer than `drain_s` (`terminationGracePeriodSeconds`) it is killed and the
requests still in it fail, as in a crash.  A node removed before it was ready is simply gone.
Its kept connections close with it (`BackendPool.close_idle`).

Its JDBC pool goes with its JVM: where opening a connection costs time
(`backends.N.jdbc_connect`, `sim.tiers.appserver.jdbc_connections`), a node that starts again
has only `jdbc_initial_size` open, and its first requests open the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from sim.kernel.calendar import Wakeup

PROBE_TOLERANCE_S = 1e-9  # a probe due at the very end of the JVM's start passes


class State(Enum):
    ABSENT = "absent"
    PROVISIONING = "provisioning"
    STARTING = "starting"
    READY = "ready"
    DRAINING = "draining"


@dataclass(frozen=True)
class NodeTiming:
    """How long a node takes to come and to go [s] (`backends.N.autoscale`)."""

    provisioning_s: float = 0.0
    jvm_start_s: float = 0.0
    readiness_delay_s: float = 0.0
    readiness_period_s: float = 10.0
    drain_s: float = 30.0
    warm_pool: bool = False  # the JVM joins with its JIT's code compiled

    def ready_after_container_s(self) -> float:
        """From the container's start to the readiness probe that passes."""
        late = self.jvm_start_s - self.readiness_delay_s
        probes = 0 if late <= 0 else math.ceil(late / self.readiness_period_s - PROBE_TOLERANCE_S)
        return self.readiness_delay_s + probes * self.readiness_period_s


class NodeLife:
    """One node's states; `member` is its index among the balancer's members.

    `balancer` is the dispatcher (`join`, `leave`, `crash`, `outstanding`); `jvm` the node's
    JVM or None; `connections` the front's pool of connections to it or None; `jdbc` its JDBC
    pool where opening a connection costs time, or None; `slow_start`
    the balancer's ramp or None; `on_change(life)` is told of each change of state."""

    __slots__ = (
        "balancer",
        "connections",
        "container_at",
        "jdbc",
        "jvm",
        "kernel",
        "log",
        "member",
        "name",
        "on_change",
        "ready_at",
        "slow_start",
        "started_at",
        "state",
        "timer",
        "timing",
    )

    def __init__(
        self,
        kernel,
        balancer,
        member: int,
        name: str,
        timing: NodeTiming,
        *,
        jvm=None,
        connections=None,
        jdbc=None,
        slow_start=None,
        ready: bool = False,
        on_change: Callable[[NodeLife], None] | None = None,
    ) -> None:
        self.kernel = kernel
        self.balancer = balancer
        self.member = member
        self.name = name
        self.timing = timing
        self.jvm = jvm
        self.connections = connections
        self.jdbc = jdbc
        self.slow_start = slow_start
        self.on_change = on_change
        self.timer: Wakeup | None = None
        self.started_at = 0.0
        self.container_at = 0.0
        self.ready_at = 0.0
        self.log: list[tuple[float, str]] = []  # (time, state entered): for tests and traces
        # a node of the group's first `count` serves from the start; the others are absent
        self.state = State.READY if ready else State.ABSENT
        if not ready:
            balancer.leave(member)

    @property
    def exists(self) -> bool:
        """Started and not yet gone: the node costs (node-seconds)."""
        return self.state is not State.ABSENT

    @property
    def counted(self) -> bool:
        """A replica of the group as the autoscaler counts it (a terminating one is not)."""
        return self.state not in (State.ABSENT, State.DRAINING)

    def _enter(self, state: State) -> None:
        self.state = state
        self.log.append((self.kernel.now, state.value))
        if self.on_change is not None:
            self.on_change(self)

    # ------------------------------------------------------------------ coming
    def start(self) -> None:
        """The autoscaler asked for this node."""
        assert self.state is State.ABSENT
        self.started_at = self.kernel.now
        self._enter(State.PROVISIONING)
        self.timer = self.kernel.after(self.timing.provisioning_s, self._container_started)

    def _container_started(self, _arg=None) -> None:
        self.container_at = self.kernel.now
        if self.jvm is not None:
            self.jvm.restart(warm=self.timing.warm_pool)
        self._enter(State.STARTING)
        self.timer = self.kernel.after(self.timing.ready_after_container_s(), self._ready)

    def _ready(self, _arg=None) -> None:
        self.timer = None
        self.ready_at = self.kernel.now
        self.balancer.join(self.member)
        if self.slow_start is not None:
            self.slow_start.begin(self.member)
        self._enter(State.READY)

    # ------------------------------------------------------------------ going
    def stop(self) -> None:
        """The autoscaler removes this node."""
        if self.state in (State.PROVISIONING, State.STARTING):
            assert self.timer is not None
            self.timer.cancel()
            self.timer = None
            self._gone()
            return
        assert self.state is State.READY
        self.balancer.leave(self.member)
        if self.slow_start is not None:
            self.slow_start.cancel(self.member)
        self._enter(State.DRAINING)
        if not self.balancer.outstanding[self.member]:
            self._gone()
        else:
            self.timer = self.kernel.after(self.timing.drain_s, self._killed)

    def member_idle(self) -> None:
        """The balancer answered the node's last outstanding request."""
        if self.state is State.DRAINING:
            assert self.timer is not None
            self.timer.cancel()
            self.timer = None
            self._gone()

    def _killed(self, _arg=None) -> None:
        """terminationGracePeriodSeconds ran out: SIGKILL, the requests in it fail."""
        self.timer = None
        self.balancer.crash(self.member)
        self._gone()

    def _gone(self) -> None:
        if self.connections is not None:
            self.connections.close_idle()
        if self.jdbc is not None:
            self.jdbc.reset()  # the JVM and its pool's connections are gone
        self._enter(State.ABSENT)
