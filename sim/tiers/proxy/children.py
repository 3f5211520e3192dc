"""Apache httpd's child processes as individuals, for every MPM: which child accepts a
connection, and when a child may accept at all.

A child is one process with `ThreadsPerChild` worker threads (one for prefork).  It keeps its
own resources between requests -- above all its own pool of connections to each backend
(mod_proxy's reslist and mod_jk's endpoint cache are per process, `proxy_util.c`
`ap_proxy_initialize_worker`, `jk_ajp_common.c`) -- so a new child opens its own backend
connections, and a child that exits closes them (`on_exit`).

Which child accepts the next connection: every child with an idle worker waits in accept()
(prefork: the idle child itself; worker/event: the child's listener thread, which waits for
an idle worker before it accepts again, `ap_queue_info_wait_for_idler`).  Linux queues such
waiters exclusively in arrival order and wakes the first (`inet_csk_wait_for_connect`,
`prepare_to_wait_exclusive`), so the child that has waited longest accepts, and a listener
that still has idle workers after accepting goes back to the end of the line.

The event MPM also bounds each child's open connections (`connections_above_limit` in
`server/mpm/event/event.c`): its listener accepts only while the child has an idle worker and
its connections, lingering closes excepted, are fewer than
`ThreadsPerChild + AsyncRequestWorkerFactor x idle workers`; keep-alive connections count
although no worker holds them.  A listener that found it could not accept disables its
listening socket and enables it again only once the bound holds with one idle worker fewer
(the `- listeners_disabled()` term: no flip-flop).

`ChildProcesses` is the front's worker pool (`proxy.workers`, MaxRequestWorkers) when children
are individuals: a `Pool` whose queue is the listen queue (ListenBacklog) and whose slots are
the children's threads.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from sim.kernel.slots import GRANTED, REFUSED, Pool, Waiter


class Child:
    """One httpd child process."""

    __slots__ = ("busy", "connections", "disabled", "exiting", "keep_alive", "number", "threads")

    def __init__(self, number: int, threads: int) -> None:
        self.number = number  # fork order (the scoreboard slot order)
        self.threads = threads  # ThreadsPerChild; 1 for prefork
        self.busy = 0  # workers serving a request, or (prefork/worker) holding a connection
        self.connections = 0  # open client connections, lingering closes excepted (event)
        self.disabled = False  # event: the listener disabled its socket (not accepting)
        self.exiting = False  # told to stop gracefully (MaxSpare*): accepts nothing more
        self.keep_alive: set = set()  # event: idle keep-alive connections its listener holds

    @property
    def idle(self) -> int:
        return self.threads - self.busy

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Child({self.number}, busy={self.busy}/{self.threads}, conns={self.connections})"


class ChildProcesses(Pool):
    """The front's workers as children's threads, with the listen queue in front of them."""

    __slots__ = (
        "_listening",
        "_next_number",
        "async_factor",
        "children",
        "on_exit",
        "on_stopping",
        "threads_per_child",
    )

    def __init__(
        self,
        kernel,
        name: str,
        *,
        threads_per_child: int,
        children: int,
        queue_limit: int | None,
        async_factor: int | None = None,
    ) -> None:
        super().__init__(kernel, name, 0, queue_limit)
        self.threads_per_child = threads_per_child
        # event: the integer AsyncRequestWorkerFactor; None for prefork and worker (no bound)
        self.async_factor = async_factor
        self.children: dict[int, Child] = {}
        self._listening: deque[Child] = deque()  # children waiting in accept(), oldest first
        self._next_number = 0
        self.on_exit: list[Callable[[Child], None]] = []  # a child exited (closes its pools)
        self.on_stopping: list[Callable[[Child], None]] = []  # told to stop (event: close idle)
        self.fork(children)

    # ------------------------------------------------------------------ accept
    def acquire(self, granted: Callable[[Any], None], arg: Any = None) -> int | Waiter:
        """A new connection: the first listening child accepts it (`arg` is the front's visit:
        its request learns its child), or it waits in the listen queue, or is refused."""
        if self._listening:
            self._accept(self._listening[0], arg)
            return GRANTED
        if self.waiting >= self.queue_limit:
            self.refused += 1
            return REFUSED
        self._disable_listeners()
        now = self.env._now
        self.waiting += 1
        self._queue_signed -= now
        waiter = Waiter(self, granted, arg, now)
        self._queue.append(waiter)
        return waiter

    def _accept(self, child: Child, visit: Any) -> None:
        child.connections += 1
        visit.request.worker = child
        self._take(child)
        self.acquired += 1
        self._update(child)  # back to the end of the line, if it can accept again

    def take_worker(self, child: Child) -> bool:
        """event: a request on one of `child`'s idle keep-alive connections.  Its listener hands
        it to an idle worker without blocking; with none it closes the connection (event.c:
        "If we don't get a worker immediately ... we close the connection; the client can
        re-connect to a different process"): False."""
        if child.idle <= 0:
            return False
        self._take(child)
        self.acquired += 1
        # not an accept: a listener still waiting in accept() keeps its place in the line
        if child in self._listening and not self._can_accept(child):
            self._listening.remove(child)
        return True

    def _take(self, child: Child) -> None:
        child.busy += 1
        self.in_use += 1
        self._busy_signed -= self.env._now

    def free(self, child: Child) -> None:
        """A worker of `child` is free again (its connection closed or, event, went idle)."""
        child.busy -= 1
        self.in_use -= 1
        self._busy_signed += self.env._now
        self._changed(child)

    def connection_closed(self, child: Child) -> None:
        """event: one of `child`'s connections was closed (or went into lingering close)."""
        child.connections -= 1
        self._changed(child)

    def release(self) -> None:  # pragma: no cover - the front frees a child's worker by name
        raise TypeError("ChildProcesses frees a worker with free(child)")

    # ------------------------------------------------------------------ which child listens
    def _can_accept(self, child: Child) -> bool:
        if child.exiting or child.idle <= 0:
            return False
        factor = self.async_factor
        if factor is None:
            return True
        if child.connections == 0:
            return True
        return child.connections < self.threads_per_child + (child.idle - child.disabled) * factor

    def _update(self, child: Child) -> None:
        """Put the child at the end of the accept line, or out of it."""
        if child in self._listening:
            self._listening.remove(child)
        if self._can_accept(child):
            child.disabled = False
            self._listening.append(child)

    def _changed(self, child: Child) -> None:
        if child.exiting:
            self._exit_if_done(child)
            return
        if child not in self._listening:
            self._update(child)
        self._serve_waiters()

    def _serve_waiters(self) -> None:
        queue = self._queue
        while self.waiting and self._listening:
            waiter = queue.popleft()
            granted = waiter.granted
            if granted is None:
                continue  # withdrawn
            now = self.env._now
            waiter.granted = None
            self.waiting -= 1
            self._queue_signed += now
            self.wait_sum += now - waiter.since
            self._accept(self._listening[0], waiter.arg)
            granted(waiter.arg)
        if self.waiting:
            self._disable_listeners()

    def _disable_listeners(self) -> None:
        """event: a connection waits in the listen queue, so every listener saw it and could
        not take it (all workers busy, or at its connection limit): each disables its socket."""
        if self.async_factor is not None:
            for child in self.children.values():
                child.disabled = True

    # ------------------------------------------------------------------ process management
    def fork(self, count: int) -> None:
        """New children: their threads are idle at once (a starting child counts as idle,
        perform_idle_server_maintenance), and they take waiting connections."""
        for _ in range(count):
            child = Child(self._next_number, self.threads_per_child)
            self._next_number += 1
            self.children[child.number] = child
            self.capacity += child.threads
            self._listening.append(child)
        self._serve_waiters()

    def live(self) -> list[Child]:
        """Children not told to stop, in fork order."""
        return [child for child in self.children.values() if not child.exiting]

    def stop(self, child: Child) -> None:
        """Graceful stop (pipe of death): the child accepts nothing more, finishes what it
        serves, and exits once its workers and connections are done."""
        child.exiting = True
        self.capacity -= child.threads
        if child in self._listening:
            self._listening.remove(child)
        for listener in self.on_stopping:
            listener(child)
        self._exit_if_done(child)

    def _exit_if_done(self, child: Child) -> None:
        if child.busy or child.connections or child.number not in self.children:
            return
        del self.children[child.number]
        for listener in self.on_exit:
            listener(child)
