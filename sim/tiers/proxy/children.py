"""Apache prefork's children as individuals: which child process serves a connection.

A prefork child is a single-threaded process that keeps its own resources between requests --
above all one cached connection per backend (mod_proxy: no reslist when the MPM has one
thread per process, `proxy_util.c`; mod_jk: `connection_pool_size` must be 1 with prefork).
So the number of open backend connections is the number of children that have served a
proxied request, not the peak concurrency, and a child that exits (MaxSpareServers trimming)
closes its connections.

Which idle child takes the next connection: all idle children wait in accept() on the shared
listening socket; Linux queues such waiters exclusively in arrival order and wakes the first
(`inet_csk_wait_for_connect`, `prepare_to_wait_exclusive`), so the child idle the longest
accepts next and every child takes its turn.  Which idle child is killed: the parent signals
the idle child in the highest scoreboard slot it found (`perform_idle_server_maintenance` in
`server/mpm/prefork/prefork.c`); slots fill in fork order, so the youngest idle child.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable


class ProcessTable:
    """The idle children, in the order they will accept; busy children are those not here."""

    __slots__ = ("_idle", "_next_id", "on_exit")

    def __init__(self, children: int) -> None:
        self._idle: deque[int] = deque(range(children))
        self._next_id = children
        self.on_exit: list[Callable[[int], None]] = []  # called with a child that exited

    def take(self) -> int:
        """The child that accepts a connection (a worker slot was granted)."""
        return self._idle.popleft()

    def give(self, child: int) -> None:
        """The child finished its connection and waits in accept() again."""
        self._idle.append(child)

    def fork(self, count: int) -> None:
        for _ in range(count):
            self._idle.append(self._next_id)
            self._next_id += 1

    def kill_idle(self) -> None:
        """MaxSpareServers: the youngest idle child exits, closing what it held."""
        child = max(self._idle)
        self._idle.remove(child)
        for listener in self.on_exit:
            listener(child)

    @property
    def idle(self) -> int:
        return len(self._idle)
