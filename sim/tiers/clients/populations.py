"""Client populations: who sends requests, when, and what they do with the answer.

All populations share one request life cycle (`Clients`): send (after connection set-up
if the request needs a new connection), start the client's timer, and on the outcome
either record the response, or, on a timeout or an error, retry after a capped
exponential back-off or give up.  A timed-out request is abandoned by its client only:
the servers keep working on it, as real servers do, which is how timeouts waste capacity.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate, count
from typing import TYPE_CHECKING, Any, ClassVar

from sim.kernel.request import ABANDONED, ANSWERED, CONNECTION_REFUSED, IN_FLIGHT, Request
from sim.tiers.proxy.client_connections import Connection
from sim.tiers.station import Call

if TYPE_CHECKING:
    from sim.tiers.clients.scripts import ClassChoice

Sampler = Callable[[], float]


class RunawayQueue(RuntimeError):
    """The requests inside the servers passed `run.max_in_flight`: an unstable model."""


CLIENTS: dict[str, type[Clients]] = {}  # clients.kind -> class


def client_class(kind: str) -> type[Clients]:
    return CLIENTS[kind]


class Clients:
    """The shared life cycle; subclasses decide when users send and what they do next."""

    # A user that sends again keeps its identity (`request.user`): client-side balancer
    # stubs keep per-client state for it.  A user that keeps cookies also holds an HTTP
    # session across its requests (`ab` keeps no cookies; an open arrival never returns).
    returning_users = False
    keeps_sessions = False
    kind: ClassVar[str]  # `clients.kind`
    # what `tiersim solve` does with it (`sim.model.features`): exactly one is set by a kind
    product_form: ClassVar[str | None] = None
    approximation: ClassVar[str | None] = None
    feature: ClassVar[str]  # `clients.<kind>`: what an engine must declare to run it

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if kind is not None:
            CLIENTS[kind] = cls
            cls.feature = f"clients.{kind}"

    def __init__(
        self,
        kernel,
        entry: Call,
        recorder,
        *,
        timeout_s: float | None,
        retry,
        connect: Sampler | None,
        tcp=None,
        keep_alive: bool = False,
        host=None,
    ) -> None:
        self.kernel = kernel
        # (cpu, demand sampler, connection demand sampler or None): the load generator's CPU
        self.host = host
        self.entry = entry
        self.recorder = recorder
        self.timeout_s = timeout_s
        self.retry = retry
        self.connect = connect
        # (syn_retries, initial_rto_s): the kernel's SYN retransmission (Linux defaults)
        self.syn_retries = 6 if tcp is None else tcp.syn_retries
        self.initial_rto_s = 1.0 if tcp is None else tcp.initial_rto_s
        self.keep_alive = keep_alive
        self._connections: dict = {}  # user -> Connection, with keep-alive
        self._numbers = count()
        self.in_flight = 0  # attempts sent whose client still waits
        self.finished = False  # finite workloads: every request has had its outcome
        self.on_finished: Callable[[], None] | None = None
        self.on_session_end: Callable[[object], None] | None = (
            None  # the balancer forgets the session
        )
        # a client gave up on a request (its timeout fired): the front's view of its connection
        self.on_give_up: Callable[[Request], None] | None = None
        self.max_inside = float("inf")  # runaway guard: requests inside the servers
        # request classes (`sim.tiers.clients.scripts`): picks each request's class and counts
        # its outcomes per class; None for a model without classes
        self.classes: ClassChoice | None = None
        self.env = kernel.env
        self._replied_cb = self._replied  # bound once: used for every request
        self._timed_out_cb = self._timed_out

    # ------------------------------------------------------------------ life cycle
    def send(
        self,
        user,
        attempt: int = 0,
        first_sent: float | None = None,
        new_connection: bool = False,
        klass: int | None = None,
    ) -> None:
        """Send an attempt; `new_connection` forces a new connection even with keep-alive;
        a retry keeps its request's class (`klass`)."""
        now = self.env._now
        recorder = self.recorder
        if (
            recorder.arrived - recorder.completed - recorder.errors - recorder.late
            > self.max_inside
        ):
            raise RunawayQueue(
                f"{recorder.arrived - recorder.completed - recorder.errors - recorder.late} requests are inside "
                f"the servers (run.max_in_flight = {self.max_inside}) at t = {now:.6g} s: "
                "the offered load exceeds the capacity of the model"
            )
        request = Request(
            next(self._numbers), now if first_sent is None else first_sent, attempt, self, user
        )
        if self.keep_alive:
            connection = self._connections.get(user)
            # A connection the client hung up on (its timeout fired) is gone even while the
            # server still works on its request: the next request connects anew.
            if (
                new_connection
                or connection is None
                or not connection.open
                or connection.client_closed
            ):
                connection = self._connections[user] = Connection()
                new_connection = True
            else:
                new_connection = False
            request.connection = connection
        else:
            new_connection = True
        self.in_flight += 1
        recorder.arrived += 1
        if attempt:
            recorder.retried += 1
        classes = self.classes
        if classes is not None:
            request.klass = k = classes.choose(user) if klass is None else klass
            classes.stats.arrived[k] += 1
            if attempt:
                classes.stats.retried[k] += 1
        if self.timeout_s is not None:
            # The timer covers the whole attempt, connection set-up included.
            request.timer = self.kernel.after(self.timeout_s, self._timed_out_cb, request)
        if self.host is not None:
            # The generator's own CPU first (ab writes the request, and reads the previous
            # response, on its one core): its queue is part of what the client measures.
            cpu, demand, per_connection = self.host
            work = demand()
            if new_connection and per_connection is not None:
                work += per_connection()
            cpu.run(
                work,
                self._host_done_connect
                if new_connection and self.connect is not None
                else self._connected,
                request,
            )
        elif new_connection and self.connect is not None:
            self.kernel.call_after(self.connect(), self._connected, request)
        else:
            self.entry(request, self._replied_cb)

    def _host_done_connect(self, request: Request) -> None:
        assert self.connect is not None  # chosen only with a connection set-up time
        self.kernel.call_after(self.connect(), self._connected, request)

    def _connected(self, request: Request) -> None:
        self.entry(request, self._replied_cb)

    def _retransmit_syn(self, request: Request) -> None:
        if request.state != IN_FLIGHT:
            return  # the client gave up (timeout) while its kernel was backing off
        if request.syn_retransmits > self.syn_retries:
            # the last retransmission went unanswered too: connect() fails (ETIMEDOUT)
            self._replied(request, False)
            return
        self.recorder.syn_retransmits += 1
        if self.connect is not None:
            self.kernel.call_after(self.connect(), self._connected, request)
        else:
            self.entry(request, self._replied_cb)

    def _replied(self, request: Request, ok: bool | None) -> None:
        if request.state != IN_FLIGHT:
            self.recorder.late += 1  # the server finished a request its client had abandoned
            if self.classes is not None:
                self.classes.stats.late[request.klass] += 1
            return
        if ok is CONNECTION_REFUSED:
            # The SYN was dropped at a full listen queue: the attempt stays in flight (its
            # timer runs on) while the client's kernel retransmits, backing off 1, 2, 4 ... RTO.
            # After the last of `tcp_syn_retries` retransmissions it waits one more doubled
            # RTO for the SYN-ACK before connect() fails (ETIMEDOUT): 127 s with Linux's 6
            # and a 1 s RTO (Documentation/networking/ip-sysctl.rst, tcp_syn_retries; the
            # retransmit timer's expiry in tcp_write_timeout, net/ipv4/tcp_timer.c).
            delay = self.initial_rto_s * 2**request.syn_retransmits
            request.syn_retransmits += 1
            self.kernel.call_after(delay, self._retransmit_syn, request)
            return
        request.state = ANSWERED
        self.in_flight -= 1
        if request.timer is not None:
            request.timer.cancel()
        if ok:
            self.recorder.complete(self.env._now - request.sent)
            if self.classes is not None:
                self.classes.stats.complete(request.klass, self.env._now - request.sent)
            self.done(request.user)
        else:
            self.recorder.errors += 1
            if self.classes is not None:
                self.classes.stats.errors[request.klass] += 1
            self._after_failure(request, self.retry.on_error)

    def _timed_out(self, request: Request) -> None:
        if request.state != IN_FLIGHT:
            return
        request.state = ABANDONED
        self.in_flight -= 1
        if request.connection is not None:
            request.connection.client_closed = True  # the client hangs up on the connection
        self.recorder.timed_out += 1
        if self.classes is not None:
            self.classes.stats.timed_out[request.klass] += 1
        if self.on_give_up is not None:
            self.on_give_up(request)
        self._after_failure(request, self.retry.on_timeout)

    def _after_failure(self, request: Request, retry_allowed: bool) -> None:
        retry = self.retry
        if retry_allowed and request.attempt < retry.max_retries:
            delay = min(retry.backoff_s * retry.multiplier**request.attempt, retry.max_backoff_s)
            self.kernel.call_after(delay, self._resend, request)
        else:
            self.recorder.failed += 1  # the user gives up on this request
            if self.classes is not None:
                self.classes.stats.failed[request.klass] += 1
            self.done(request.user)

    def _resend(self, request: Request) -> None:
        # A retry after an error or a timeout opens a new connection even with keep-alive.
        self.send(
            request.user,
            request.attempt + 1,
            request.sent,
            new_connection=True,
            klass=request.klass,
        )

    # ------------------------------------------------------------------ population hooks
    def start(self) -> None:
        raise NotImplementedError

    def done(self, user) -> None:
        """The user's request has had its final outcome (answered, or given up)."""
        raise NotImplementedError

    def _finish(self) -> None:
        self.finished = True
        if self.on_finished is not None:
            self.on_finished()


def ramp_changes(ramp) -> list[tuple[float, int, bool]]:
    """A closed ramp's changes, (time from the start [s], user, called: True, or retired:
    False), in the order the population schedules them: each step moves the users linearly
    from the level the step before left to its `users` over `over_s` (users 0, 1, ... are
    called in turn; on the way down the highest goes first), then holds them `hold_s`."""
    changes: list[tuple[float, int, bool]] = []
    level, t = 0, 0.0
    for step in ramp:
        target = step.users
        if target > level:
            for k in range(level, target):
                changes.append((t + step.over_s * (k - level + 1) / (target - level), k, True))
        elif target < level:
            for k in range(target, level):
                changes.append((t + step.over_s * (level - k) / (level - target), k, False))
        level = target
        t += step.over_s + step.hold_s
    return changes


class ClosedPopulation(Clients):
    """N users cycling think -> request -> response, with an optional ramp schedule.

    A user retired by a ramp-down finishes its current request and then stops; called back by
    a ramp-up before that (a replayed log's users per minute go down and up again), it goes
    on with the cycle it is in rather than start a second one beside it.  A user that has
    sent its `requests_per_user` and stopped is done for good: called back, it sends nothing
    and is not counted again towards the workload's end.
    """

    kind = "closed"
    product_form = "a closed network with the think time as its delay (exact MVA)"
    returning_users = True
    keeps_sessions = True

    def __init__(
        self,
        kernel,
        entry,
        recorder,
        *,
        users: int,
        think: Sampler,
        ramp=None,
        requests_per_user: int | None = None,
        **common,
    ) -> None:
        super().__init__(kernel, entry, recorder, **common)
        self.think = think
        self.users = users
        self.ramp = ramp
        self.requests_per_user = requests_per_user
        self.active = 0
        self.thinking = 0
        self._retired: set[int] = set()
        self._cycling: set[int] = set()  # users whose think-request cycle is under way
        self._stopped: set[int] = set()  # users that sent their requests_per_user: done
        self._sent_by: dict[int, int] = {}
        self._idle_users: list[int] = []
        self._users_done = 0

    def start(self) -> None:
        if not self.ramp:
            for user in range(self.users):
                self._activate(user)
            return
        for at, user, called in ramp_changes(self.ramp):
            self.kernel.call_after(at, self._activate if called else self._retire, user)

    def _activate(self, user: int) -> None:
        self._retired.discard(user)
        if user in self._cycling:
            return  # retired, then called back before its cycle ended: that cycle goes on
        if user in self._stopped:
            return  # it sent all its requests: nothing is left for it to do
        self._cycling.add(user)
        self.active += 1
        self._sent_by.setdefault(user, 0)
        self._issue(user)

    def _retire(self, user: int) -> None:
        self._retired.add(user)

    def _issue(self, user: int) -> None:
        if self.requests_per_user is not None:
            sent = self._sent_by[user]
            if sent >= self.requests_per_user:
                self._cycling.discard(user)
                self._stopped.add(user)
                self.active -= 1
                self._users_done += 1
                if self._users_done == self.users:
                    self._finish()
                return
            self._sent_by[user] = sent + 1
        self.send(user)

    def done(self, user: int) -> None:
        if user in self._retired:
            self._cycling.discard(user)
            self.active -= 1
            return
        self.thinking += 1
        think = self.think() if self.classes is None else self.classes.think(user)
        self.kernel.call_after(think, self._thought, user)

    def _thought(self, user: int) -> None:
        self.thinking -= 1
        if user in self._retired:
            self._cycling.discard(user)
            self.active -= 1
        elif self.requests_per_user is None:
            self.send(user)  # _issue's steady-state case, once per request
        else:
            self._issue(user)


class OpenArrivals(Clients):
    """Poisson (or renewal, or piecewise-rate) arrivals, one request each."""

    kind = "open"
    product_form = "Poisson arrivals: an open (Jackson) network"

    def __init__(
        self,
        kernel,
        entry,
        recorder,
        *,
        interarrival: Sampler | None = None,
        unit_exponential: Sampler | None = None,
        schedule=None,
        total: int | None = None,
        **common,
    ) -> None:
        super().__init__(kernel, entry, recorder, **common)
        self.interarrival = interarrival
        self.unit_exponential = unit_exponential
        self.schedule = schedule  # [(rate, duration)], repeated cyclically
        self._step_ends = list(accumulate(d for _, d in schedule)) if schedule else []
        self.total = total
        self.generated = 0
        self.outcomes = 0

    def start(self) -> None:
        self._schedule_next(0.0)

    def _schedule_next(self, now: float) -> None:
        if self.total is not None and self.generated >= self.total:
            return
        if self.schedule is None:
            interarrival = self.interarrival
            assert interarrival is not None  # given when there is no schedule
            self.kernel.call_after(interarrival(), self._arrive, None)
        else:
            self.kernel.call_after(self._piecewise_poisson_delay(now), self._arrive, None)

    def _piecewise_poisson_delay(self, now: float) -> float:
        """Next arrival of a piecewise-constant-rate Poisson process, exactly: spend an Exp(1)
        amount of integrated rate across the steps (the process is memoryless at boundaries)."""
        unit_exponential = self.unit_exponential
        assert unit_exponential is not None  # given with a schedule
        work = unit_exponential()
        ends = self._step_ends
        cycle = ends[-1]
        t = now
        while True:
            phase = t % cycle
            index = min(bisect_right(ends, phase), len(ends) - 1)
            rate = self.schedule[index][0]
            left = ends[index] - phase
            if rate > 0 and work <= rate * left:
                return t + work / rate - now
            work -= rate * left
            t += left if left > 0 else 1e-12 * cycle

    def _arrive(self, _arg) -> None:
        self.generated += 1
        self.send(self.generated)
        self._schedule_next(self.kernel.env._now)

    def done(self, user) -> None:
        self.outcomes += 1
        if self.total is not None and self.outcomes == self.total:
            self._finish()


class Sessions(Clients):
    """Partly-open (Schroeder, Wierman & Harchol-Balter 2006): sessions arrive as a Poisson
    process; each sends a sequence of requests separated by think times, then leaves."""

    kind = "sessions"
    product_form = (
        "partly-open sessions: Jackson's response time is insensitive to the session structure"
    )
    returning_users = True
    keeps_sessions = True

    def __init__(
        self,
        kernel,
        entry,
        recorder,
        *,
        interarrival: Sampler,
        think: Sampler,
        length: Callable[[], int],
        total: int | None = None,
        **common,
    ) -> None:
        super().__init__(kernel, entry, recorder, **common)
        self.interarrival = interarrival
        self.think = think
        self.length = length
        self.total = total
        self.started = 0
        self.ended = 0
        self._remaining: dict[int, int] = {}

    def start(self) -> None:
        self.kernel.call_after(self.interarrival(), self._arrive, None)

    def _arrive(self, _arg) -> None:
        session = self.started
        self.started += 1
        length = None if self.classes is None else self.classes.begin(session)
        self._remaining[session] = self.length() if length is None else length
        self._next_request(session)
        if self.total is None or self.started < self.total:
            self.kernel.call_after(self.interarrival(), self._arrive, None)

    def _next_request(self, session: int) -> None:
        self._remaining[session] -= 1
        self.send(session)

    def done(self, session: int) -> None:
        if self._remaining[session] > 0:
            think = self.think() if self.classes is None else self.classes.think(session)
            self.kernel.call_after(think, self._next_request, session)
            return
        del self._remaining[session]
        if self.classes is not None:
            self.classes.forget(session)
        if self.on_session_end is not None:
            self.on_session_end(session)
        self.ended += 1
        if self.total is not None and self.ended == self.total:
            self._finish()


class ApacheBench(Clients):
    kind = "ab"
    product_form = "ab -c N: a closed network without think time"

    """`ab -c C -n N [-k]`: C loops each sending back-to-back until N requests were sent.

    Without -k every request opens a new connection (pays `connect`); with -k each loop
    opens one connection and reuses it.  ab keeps no cookies: every request is session-less.
    With `repeat` > 1, ab is started again when a run has had all its outcomes (the runs are
    the batches of one workload: the servers' state carries over); `on_batch(k)` is called at
    the end of run k (1-based).
    """

    returning_users = True

    def __init__(
        self, kernel, entry, recorder, *, concurrency: int, requests: int, repeat: int = 1, **common
    ) -> None:
        super().__init__(kernel, entry, recorder, **common)
        self.concurrency = concurrency
        self.requests = requests
        self.repeat = repeat
        self.batch = 1
        self.issued = 0
        self.outcomes = 0
        self.on_batch: Callable[[int], None] | None = None

    def start(self) -> None:
        for loop in range(self.concurrency):
            self._issue(loop)

    def _issue(self, loop: int) -> None:
        if self.issued >= self.requests:
            return
        self.issued += 1
        self.send(loop)

    def done(self, loop: int) -> None:
        self.outcomes += 1
        if self.outcomes < self.requests:
            self._issue(loop)
            return
        if self.on_batch is not None:
            self.on_batch(self.batch)
        if self.batch == self.repeat:
            self._finish()
            return
        self.batch += 1
        self.issued = self.outcomes = 0
        self.start()
