"""mod_jk's lb worker: failover between members, their error state and its recovery.

What mod_jk 1.2.48's load balancer does with a request (`service` in
`native/common/jk_lb_worker.c`) once its member's ajp13 worker has failed it
(`sim.tiers.proxy.mod_jk`), with the lb worker's properties (`proxy.backend_pool.lb`):

* **Failover.**  A recoverable failure puts the member in *local* error for this request and
  the request goes to another usable member (`attempt++`).  After `min(lb_retries, members)`
  attempts (lb_retries default 2, JK_LB_RETRIES) a new round starts: `retry++`, at most
  `retries` rounds (default 2), each after `jk_sleep(retry_interval)` (100 ms) and with the
  local error states forgotten (the states are copied again from shared memory).  When no
  member is usable, the members in error state are forced back (`force_recovery`, once per
  request) and tried again; with none at all the answer is 503 (JK_HTTP_SERVER_BUSY).  An
  unrecoverable failure (recovery_options) is answered at once.  The client gets the last
  member's status: 504 after a reply timeout, 503 after a failed connect or no member.
* **Error state** (JK_LB_STATE_ERROR), for all requests: after a reply timeout, when the
  member's reply timeouts (one per timed-out attempt, halved at each maintenance) exceed
  `max_reply_timeouts` (default 0); after a failed connect or another error, at once when the
  member had no other request in flight (`aw->s->busy == 0`) or `error_escalation_time` is 0,
  else only once `error_escalation_time` (default recover_time / 2) has passed since its first
  error without a success.
* **Busy** (JK_LB_STATE_BUSY): a member that could not give an endpoint within
  connection_acquire_timeout is skipped by every request until one finds a free endpoint for
  its process at its start (`ajp_has_endpoint`).
* **Recovery.**  The global maintenance (`maintain_workers`, run by the first request at least
  `worker.maintain` = `balancer.maintain_s` seconds after the previous one) marks a member
  whose error is older than `recover_time` (`balancer.retry_s`, default 60) as recovering
  (JK_LB_STATE_RECOVER), escalates local errors older than error_escalation_time, and forces
  every member back when all are in error.  A recovering member is probed by one real request
  (JK_LB_STATE_PROBE: no other request is sent to it meanwhile) and is OK again on success.

The choice among the usable members is the policy's (`balancer.policy`); a member already
failed by this request is passed over for the next usable one in configuration order.
Time is continuous here where mod_jk counts whole seconds (`time(NULL)`).

A member that crashes (`backends.N.events`) refuses every connect from then on, so its ajp13
worker fails each request after `retries` refused connects; the requests it was serving fail
at the crash itself (the dispatcher's), where mod_jk would read a reset connection, retry on
the same member after retry_interval, be refused, and fail over only then.
"""

from __future__ import annotations

from bisect import insort
from typing import Protocol

from sim.kernel.request import Reply, Request
from sim.tiers.balancer.dispatcher import Dispatcher


class JkLb(Protocol):
    """The lb worker's settings it reads (`proxy.backend_pool.lb`, `sim.model.schema.JkLb`)."""

    @property
    def retries(self) -> int: ...  # worker.lb.retries: rounds over the members
    @property
    def lb_retries(self) -> int: ...  # members tried per round
    @property
    def retry_interval_s(self) -> float: ...  # between rounds
    @property
    def max_reply_timeouts(self) -> int: ...  # reply timeouts before the error state
    @property
    def error_escalation_time_s(self) -> float | None: ...


SERVER_BUSY = 503  # JK_HTTP_SERVER_BUSY: no member left


class LbCall:
    """One request's pass through the lb worker's `service` loop."""

    __slots__ = ("attempt", "failed", "forced", "new_session", "reply", "request", "retry")

    def __init__(self, request: Request, reply: Reply, new_session: bool) -> None:
        self.request = request
        self.reply = reply
        self.new_session = new_session
        self.attempt = 0  # members tried in this round
        self.retry = 0  # rounds done
        self.forced = False  # force_recovery used (once per request)
        self.failed: set[int] = set()  # members in local error for this request


class JkDispatcher(Dispatcher):
    """The balancer as mod_jk's lb worker (see the module)."""

    __slots__ = (
        "busy",
        "escalation_s",
        "first_error",
        "jk_errors",
        "last_error",
        "last_maintain",
        "lb",
        "maintain_s",
        "probing",
        "recovering",
        "reply_timeout_base",
    )

    def __init__(self, kernel, nodes, policy, *, lb: JkLb, maintain_s: float, **kwargs) -> None:
        super().__init__(kernel, nodes, policy, **kwargs)
        n = len(self.nodes)
        self.lb = lb
        self.maintain_s = maintain_s
        # error_escalation_time defaults to recover_time / 2 (jk_lb_worker.c init)
        self.escalation_s = (
            self.retry_s / 2 if lb.error_escalation_time_s is None else lb.error_escalation_time_s
        )
        self.first_error = [0.0] * n  # 0: no error since the last success
        self.last_error = [0.0] * n
        self.probing = [False] * n  # JK_LB_STATE_PROBE
        self.recovering = [False] * n  # JK_LB_STATE_RECOVER: the next request probes it
        self.busy = [False] * n  # JK_LB_STATE_BUSY: no free endpoint at the last look
        self.reply_timeout_base = [0] * n  # reply timeouts counted from here (decay, recovery)
        self.last_maintain = 0.0
        self.jk_errors = 0  # members put into error state

    # ------------------------------------------------------------------ service
    def __call__(self, request: Request, reply: Reply) -> None:
        now = self.kernel.now
        if now - self.last_maintain >= self.maintain_s:
            self._maintain(now)
        busy = self.busy
        if any(busy):
            for index, pool in enumerate(self.nodes):
                if busy[index] and pool.has_endpoint(request.worker):
                    busy[index] = False  # "worker %s busy state ended"
        sessions = self.sessions
        new_session = True
        if sessions is not None and request.origin.keeps_sessions:
            route = sessions.route(request.user)
            new_session = route is None
            if route is not None and self.sticky:
                if self.usable[route]:
                    self.policy.sticky(route)
                    self._try(LbCall(request, reply, False), route)
                    return
                if self.sticky_force:  # sticky_session_force: no failover
                    self.sticky_refused += 1
                    request.status = SERVER_BUSY
                    reply(request, False)
                    return
        self._next(LbCall(request, reply, new_session))

    def _next(self, call: LbCall) -> None:
        """The top of the `while (recoverable)` loop: a new round when this one is done."""
        members = len(self.nodes)
        if call.attempt >= members or call.attempt >= self.lb.lb_retries:
            call.retry += 1
            if call.retry >= self.lb.retries:
                self._fail(call)
                return
            self.kernel.call_after(self.lb.retry_interval_s, self._new_round, call)
            return
        self._choose(call)

    def _new_round(self, call: LbCall) -> None:
        call.failed.clear()  # the states are copied again from shared memory
        call.attempt = 0
        self._choose(call)

    def _choose(self, call: LbCall) -> None:
        """`get_most_suitable_worker`, then forcing recovery once when none is usable."""
        candidates = [
            i
            for i in self.active
            if i not in call.failed and not self.probing[i] and not self.busy[i]
        ]
        if not candidates:
            if not call.forced:
                call.forced = True
                if self._force_recovery():
                    self._choose(call)  # `continue`: the attempt is not counted
                    return
            call.request.status = SERVER_BUSY  # "All tomcat instances failed"
            call.request.recoverable = True
            call.attempt += 1
            self._next(call)
            return
        index = self._pick(call.request)
        if index not in candidates:
            later = [i for i in candidates if i > index]
            index = later[0] if later else candidates[0]
        self._try(call, index)

    def _try(self, call: LbCall, index: int) -> None:
        if self.recovering[index]:
            self.recovering[index] = False
            self.probing[index] = True  # JK_LB_STATE_RECOVER -> JK_LB_STATE_PROBE
        request = call.request
        if call.attempt or call.retry or call.failed:
            self.failovers += 1  # sent again after a failure, to another member or round
        if self.down[index] and not hasattr(self.nodes[index], "node_down"):
            # no connection pool in between to try the connects: refused at once
            self.refused_down += 1
            request.status, request.cause, request.recoverable = SERVER_BUSY, "connect", True
            self._answered(call, index, request, False)
            return
        self._dispatch(index, request, _Attempt(self, call, index), call.new_session)

    def _answered(self, call: LbCall, index: int, request: Request, ok: bool | None) -> None:
        self.probing[index] = False
        if ok:
            self.first_error[index] = 0.0  # JK_LB_STATE_OK
            self.last_error[index] = 0.0
            call.reply(request, ok)
            return
        cause = request.cause
        now = self.kernel.now
        if cause == "busy":
            self.busy[index] = True  # JK_LB_STATE_BUSY (unless in error state)
        elif cause == "reply_timeout":
            pool = self.nodes[index]
            if pool.reply_timeouts - self.reply_timeout_base[index] > self.lb.max_reply_timeouts:
                self._jk_error(index, now)
        else:
            # a failed connect, or any other error: escalate to the global error state at
            # once if the member serves nothing else, else after error_escalation_time
            first = self.first_error[index]
            if (
                self.outstanding[index] == 0
                or self.escalation_s == 0
                or (first > 0 and now - first >= self.escalation_s)
            ):
                self._jk_error(index, now)
            elif first == 0:
                self.first_error[index] = now
            self.last_error[index] = now
        call.failed.add(index)
        if not request.recoverable:
            call.reply(request, False)
            return
        call.attempt += 1
        self._next(call)

    def _fail(self, call: LbCall) -> None:
        self.unavailable += 1
        call.reply(call.request, False)

    # ------------------------------------------------------------------ error state
    def _jk_error(self, index: int, now: float) -> None:
        self.first_error[index] = now
        self.last_error[index] = now
        if self.usable[index]:
            self.jk_errors += 1
            self.usable[index] = False
            self.active.remove(index)
            self.policy.membership_changed()

    def _error(self, index: int) -> None:
        """A crashed member (`backends.N.events`) is found by its refused connects instead."""
        self._jk_error(index, self.kernel.now)

    def _force_recovery(self) -> int:
        forced = [i for i in range(len(self.nodes)) if not self.usable[i]]
        for index in forced:
            self._recovered(index)
        return len(forced)

    def _recovered(self, index: int) -> None:
        pool = self.nodes[index]
        self.reply_timeout_base[index] = getattr(pool, "reply_timeouts", 0)
        self.usable[index] = True
        insort(self.active, index)
        self.policy.recovered(index)
        self.policy.membership_changed()

    def _maintain(self, now: float) -> None:
        """`maintain_workers`: decay the reply-timeout counts, recover members whose error is
        older than recover_time, escalate old local errors, force recovery if all are in error."""
        exponent = int((now - self.last_maintain) // self.maintain_s)
        self.last_maintain = now
        for index, pool in enumerate(self.nodes):
            total = getattr(pool, "reply_timeouts", 0)
            counted = total - self.reply_timeout_base[index]
            self.reply_timeout_base[index] = total - (counted >> exponent)
        non_error = 0
        for index in range(len(self.nodes)):
            if not self.usable[index]:
                if now - self.last_error[index] > self.retry_s:
                    self._recovered(index)
                    self.recovering[index] = True
                    non_error += 1
            elif self.first_error[index] > 0 and now - self.first_error[index] >= self.escalation_s:
                self._jk_error(index, self.last_error[index])
            else:
                non_error += 1
        if not non_error:
            self._force_recovery()

    # ------------------------------------------------------------------ failures
    def crash(self, index: int) -> None:
        super().crash(index)
        refuse = getattr(self.nodes[index], "node_down", None)
        if refuse is not None:
            refuse(True)

    def recover(self, index: int) -> None:
        super().recover(index)
        refuse = getattr(self.nodes[index], "node_down", None)
        if refuse is not None:
            refuse(False)


class _Attempt:
    """The member's answer to one attempt, back to the lb worker's loop."""

    __slots__ = ("call", "dispatcher", "index")

    def __init__(self, dispatcher: JkDispatcher, call: LbCall, index: int) -> None:
        self.dispatcher = dispatcher
        self.call = call
        self.index = index

    def __call__(self, request: Request, ok: bool | None) -> None:
        self.dispatcher._answered(self.call, self.index, request, ok)
