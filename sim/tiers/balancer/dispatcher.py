"""The proxy's balancer: which member gets a request, and what happens when members fail.

The choice itself belongs to a policy (`sim.tiers.balancer.policies`); the `Dispatcher` keeps what
every real balancer keeps around it:

* requests outstanding and dispatched per member, and the load view a policy may read:
  live, or as last reported every `balancer.report_interval_s` (a balancer fed by backend
  reports - mod_lbmethod_heartbeat, mod_cluster - sees queue lengths up to Δ old, and a
  load-aware policy then herds onto the member that looked idle);
* the error state: a member whose connections fail is out of rotation for `retry` seconds
  (mod_proxy `retry`, default 60; mod_jk `recover_time`, 60; lighttpd `disable-time`, 1),
  then tried again by real traffic; a refused attempt fails over to another member, at most
  `maxattempts` tries per request (mod_proxy_balancer `maxattempts`, default members);
* session affinity (`sessions.SessionTable`): the route suffix of the session id
  (Tomcat `jvmRoute`) sends a session back to the member that created it;
* failures of members at given times (`backends.N.events`): a crash fails the requests in
  flight on the member and refuses new connections until it recovers; `slow` divides its
  CPU speed;
* membership (`join`, `leave`): a node an autoscaler adds becomes a member when its readiness
  probe passes, one it removes stops being chosen at once and is told of when it has no
  request left (`on_member_idle`), so that it can go (`sim.tiers.cluster.node_life`).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sim.kernel.request import Reply, Request
from sim.observe.probes import FRACTION, REQUESTS, SESSIONS, Metric, Window, ratio
from sim.tiers.balancer.policies.base import Policy


class Dispatcher:
    """Sends each request to the member `policy` picks, with the bookkeeping above."""

    __slots__ = (
        "_dispatched_hook",
        "_pick",
        "active",
        "base_speed",
        "dispatched",
        "down",
        "epoch",
        "failovers",
        "in_flight",
        "kernel",
        "load_view",
        "max_attempts",
        "member",
        "nodes",
        "on_complete",
        "on_member_idle",
        "outstanding",
        "policy",
        "refused_down",
        "report_interval_s",
        "retry_s",
        "sessions",
        "sticky",
        "sticky_force",
        "sticky_refused",
        "unavailable",
        "usable",
    )

    def __init__(
        self,
        kernel,
        nodes: Sequence,
        policy: Policy,
        *,
        report_interval_s: float | None = None,
        retry_s: float = 60.0,
        max_attempts: int | None = None,
        sessions=None,
        sticky: bool = False,
        sticky_force: bool = False,
        track_failures: bool = False,
    ) -> None:
        self.kernel = kernel
        self.nodes = list(nodes)
        n = len(self.nodes)
        self.policy = policy
        self.outstanding = [0] * n
        self.dispatched = [0] * n
        self.active = list(range(n))  # usable members, in configuration order
        self.usable = [True] * n  # False while in error state
        self.down = [False] * n  # the member's process has crashed: connections are refused
        self.epoch = [0] * n  # crashes so far: a session created before the last one died with it
        self.member = [True] * n  # False while the node is not in the balancer's member list
        # (index) -> None, when a member's last outstanding request is answered (a hook:
        # `sim.engines.reference.connect`); None when nobody waits for a member to drain
        self.on_member_idle: Callable[[int], None] | None = None
        self.report_interval_s = report_interval_s
        self.load_view = self.outstanding if report_interval_s is None else [0] * n
        self.retry_s = retry_s
        self.max_attempts = n if max_attempts is None else max_attempts
        self.sessions = sessions
        self.sticky = sticky
        self.sticky_force = sticky_force
        self.in_flight: list[dict[_Returned, Request]] | None = (
            [dict() for _ in range(n)] if track_failures else None
        )
        self.base_speed = [_station(node).cpu.speed for node in self.nodes]
        self.failovers = 0  # attempts sent on to another member after a refusal
        self.refused_down = 0  # attempts refused by a crashed member
        self.unavailable = 0  # requests answered 503: no usable member, or attempts exhausted
        self.sticky_refused = 0  # sticky_session_force: the session's member is in error
        policy.attach(self.active, self.load_view, self.outstanding, lambda: kernel.env._now)
        self._pick = policy.pick
        self._dispatched_hook = policy.dispatched if policy.on_dispatch else None
        self.on_complete: Callable[[int, Any, bool, float], None] | None = (
            policy.completed if policy.on_complete else None
        )
        if report_interval_s is not None:
            kernel.after(report_interval_s, self._report, None)

    # ------------------------------------------------------------------ routing
    def __call__(self, request: Request, reply: Reply) -> None:
        sessions = self.sessions
        if sessions is not None and request.origin.keeps_sessions:
            route = sessions.route(request.user)
            if route is not None and self.sticky:
                if self.usable[route]:
                    self.policy.sticky(route)
                    self._send(route, request, reply, False, 1)
                    return
                if self.sticky_force:  # mod_jk sticky_session_force / mod_proxy nofailover=On
                    self.sticky_refused += 1
                    reply(request, False)
                    return
            new_session = route is None
        else:
            new_session = True
        if not self.active:
            self.unavailable += 1
            reply(request, False)
            return
        self._send(self._pick(request), request, reply, new_session, 1)

    def _send(
        self, index: int, request: Request, reply: Reply, new_session: bool, attempt: int
    ) -> None:
        if self.down[index]:
            # A crashed process: the connection is refused at once, the member goes into
            # error state and the request fails over (mod_proxy_balancer maxattempts).
            self.refused_down += 1
            self._error(index)
            if attempt < self.max_attempts and self.active:
                self.failovers += 1
                self._send(self._pick(request), request, reply, new_session, attempt + 1)
            else:
                self.unavailable += 1
                reply(request, False)
            return
        self._dispatch(index, request, reply, new_session)

    def _dispatch(self, index: int, request: Request, reply: Reply, new_session: bool) -> None:
        """Hand the request to member `index`, accounting for it until it answers."""
        self.outstanding[index] += 1
        self.dispatched[index] += 1
        if self._dispatched_hook is not None:
            self._dispatched_hook(index, request, new_session)
        sessions = self.sessions
        if sessions is not None and request.origin.keeps_sessions:
            sessions.arrive(request.user, index, self.epoch[index])
        returned = _Returned(self, index, reply, self.kernel.env._now)
        if self.in_flight is not None:
            self.in_flight[index][returned] = request
        self.nodes[index].serve(request, returned)

    # ------------------------------------------------------------------ error state
    def _error(self, index: int) -> None:
        if not self.usable[index]:
            return
        self.usable[index] = False
        self.active.remove(index)
        self.policy.membership_changed()
        self.kernel.after(self.retry_s, self._retry, index)

    def member_in_error(self, index: int) -> None:
        """The member's own worker went into error state (a connect that timed out,
        `ap_proxy_connect_backend`): the balancer stops choosing it for `retry`."""
        self._error(index)

    def _retry(self, index: int) -> None:
        """`retry` has elapsed: the member is a candidate again; real traffic probes it."""
        if not self.member[index] or self.usable[index]:
            # it left the member list while in error state (it stays out), or it left and
            # joined again meanwhile (usable already)
            return
        self.usable[index] = True
        insort(self.active, index)
        self.policy.recovered(index)
        self.policy.membership_changed()

    # ------------------------------------------------------------------ failures
    def crash(self, index: int) -> None:
        """The member's process dies: its requests in flight fail (the proxy reads a reset
        connection), the balancer puts it in error state, its sessions are gone."""
        if self.down[index]:
            return
        self.down[index] = True
        self.epoch[index] += 1
        assert self.in_flight is not None  # crashes are scheduled only with track_failures
        pending = self.in_flight[index]
        if pending:
            self._error(index)
        for returned, request in list(pending.items()):
            returned.failed(request)
        pending.clear()
        _drop_queued(self.nodes[index])

    def recover(self, index: int) -> None:
        """The member is back (restarted, at its configured speed); the balancer finds out
        when its error state expires, or at once if it never noticed the crash."""
        self.down[index] = False
        _station(self.nodes[index]).cpu.speed = self.base_speed[index]

    def slow(self, index: int, factor: float) -> None:
        """Every CPU burst started from now on takes `factor` times as long (a noisy
        neighbour, GC pressure, thermal throttling).  Bursts already running keep their pace."""
        _station(self.nodes[index]).cpu.speed = self.base_speed[index] / factor

    def schedule(self, events: Sequence[tuple[float, int, str, float]]) -> None:
        """(at_s, member, kind, factor) from the model's `backends.N.events`."""
        actions: dict[str, Callable] = {
            "crash": lambda arg: self.crash(arg[0]),
            "recover": lambda arg: self.recover(arg[0]),
            "slow": lambda arg: self.slow(arg[0], arg[1]),
        }
        for at_s, index, kind, factor in events:
            self.kernel.after(at_s, actions[kind], (index, factor))

    # ------------------------------------------------------------------ membership
    def watch_answers(self, hook: Callable[[int, Any, bool, float], None]) -> None:
        """Also tell `hook(member, request, ok, elapsed_s)` of every answer, after the
        policy's own `completed` (an autoscaler's external metric reads them)."""
        before = self.on_complete
        if before is None:
            self.on_complete = hook
            return

        def both(member: int, request: Any, ok: bool, elapsed_s: float) -> None:
            before(member, request, ok, elapsed_s)
            hook(member, request, ok, elapsed_s)

        self.on_complete = both

    def track_in_flight(self) -> None:
        """Keep the requests in flight per member from now on, so that a member killed with
        requests outstanding (a crash, a grace period that ran out) fails them."""
        if self.in_flight is None:
            self.in_flight = [dict() for _ in self.nodes]

    def join(self, index: int) -> None:
        """The node becomes a member (its readiness probe passed): usable at once, a fresh
        process (not down), its error state forgotten."""
        self.member[index] = True
        self.down[index] = False
        self.usable[index] = True
        if index not in self.active:
            insort(self.active, index)
        self.policy.recovered(index)
        self.policy.membership_changed()

    def leave(self, index: int) -> None:
        """The node leaves the member list (Kubernetes removes a terminating pod from the
        Service's endpoints): no new request goes to it, a sticky session fails over; its
        requests outstanding still come back."""
        self.member[index] = False
        self.usable[index] = False
        if index in self.active:
            self.active.remove(index)
            self.policy.membership_changed()

    # ------------------------------------------------------------------ stale reports
    def _report(self, _arg) -> None:
        self.load_view[:] = self.outstanding
        self.kernel.after(self.report_interval_s, self._report, None)

    def session_ended(self, user) -> None:
        if self.sessions is not None:
            self.sessions.forget(user)
        forget = getattr(self.policy, "forget", None)
        if forget is not None:
            forget(user)


class _Returned:
    """The member's answer to one request; the balancer accounts for it, then passes it on."""

    __slots__ = ("cancelled", "dispatcher", "index", "reply", "sent")

    def __init__(self, dispatcher: Dispatcher, index: int, reply: Reply, sent: float) -> None:
        self.dispatcher = dispatcher
        self.index = index
        self.reply = reply
        self.sent = sent
        self.cancelled = False

    def __call__(self, request: Request, ok: bool) -> None:
        if self.cancelled:
            return  # answered already: the member crashed while working on it
        dispatcher = self.dispatcher
        dispatcher.outstanding[self.index] -= 1
        if dispatcher.in_flight is not None:
            dispatcher.in_flight[self.index].pop(self, None)
        if dispatcher.on_complete is not None:
            dispatcher.on_complete(self.index, request, ok, dispatcher.kernel.env._now - self.sent)
        idle = dispatcher.on_member_idle
        if idle is not None and not dispatcher.outstanding[self.index]:
            idle(self.index)
        self.reply(request, ok)

    def failed(self, request: Request) -> None:
        """The member crashed: answer the caller with an error now, ignore the member later."""
        dispatcher = self.dispatcher
        self.cancelled = True
        dispatcher.outstanding[self.index] -= 1
        if dispatcher.on_complete is not None:
            dispatcher.on_complete(
                self.index, request, False, dispatcher.kernel.env._now - self.sent
            )
        self.reply(request, False)


def _station(node):
    """The application-server station behind a balancer entry (a blocking connector's
    connection pool wraps its node)."""
    return getattr(node, "node", node)


def _drop_queued(node) -> None:
    """Requests waiting for a thread die with the process.  (Requests already computing
    finish their current CPU burst as ghosts whose answers are ignored: at most one burst
    per thread of phantom load after the crash.)"""
    pool = getattr(_station(node), "pool", None)
    if pool is None:
        return
    for waiter in list(pool._queue):
        if waiter.granted is not None:
            waiter.cancel()


BALANCER_COUNTS = (
    "failovers",
    "refused_down",
    "unavailable",
    "sticky_refused",
    "sessions_created",
    "sessions_lost",
)


class DispatchProbe:
    """The balancer's dispatch counts per member and its own counts (failovers, sessions
    created and lost ...), named `balancer.*`."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.name = "balancer"
        self.dispatcher = dispatcher
        self.members = tuple(getattr(n, "name", None) or n.node.name for n in dispatcher.nodes)
        self.fields = (*self.members, *BALANCER_COUNTS)

    def counters(self, now: float) -> list[float]:
        d = self.dispatcher
        sessions = d.sessions
        return [float(n) for n in d.dispatched] + [
            float(d.failovers),
            float(d.refused_down),
            float(d.unavailable),
            float(d.sticky_refused),
            float(sessions.created if sessions else 0),
            float(sessions.lost if sessions else 0),
        ]

    def metrics(self, w: Window) -> Iterator[Metric]:
        """Each member's share and count of the requests dispatched, and the balancer's own
        counts."""
        for name in BALANCER_COUNTS:
            yield name, w.delta[name], REQUESTS if not name.startswith("sessions") else SESSIONS
        total = sum(w.delta[m] for m in self.members)
        for member in self.members:
            yield f"share.{member}", ratio(w.delta[member], total), FRACTION
            yield f"dispatched.{member}", w.delta[member], REQUESTS
