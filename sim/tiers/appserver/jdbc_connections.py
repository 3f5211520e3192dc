"""A JDBC pool that opens its connections as they are first needed (DBCP's `BasicDataSource`).

DBCP opens `initialSize` connections when the pool starts (here: before the node serves) and
then one more each time a borrower finds no idle connection while fewer than `maxTotal` are
open (`GenericObjectPool.borrowObject` -> `create`); the borrower waits for it, holding its
request thread.  A connection, once open, stays in the pool (`maxIdle` defaults to
`maxTotal`, and the evictor is off: `timeBetweenEvictionRunsMillis` -1).  Opening one is the
database's work: PostgreSQL forks a backend and authenticates it (`pgbench --connect` times
it).  A node the autoscaler starts has a fresh JVM and so a fresh pool (`reset`).
"""

from __future__ import annotations

from collections.abc import Callable

from sim.kernel.request import Reply, Request
from sim.kernel.slots import Pool
from sim.tiers.station import Call, PooledCall


class OpeningPooledCall(PooledCall):
    """`PooledCall` whose pool opens a connection (`connect()` seconds) for a borrower that
    finds every open connection in use."""

    __slots__ = ("after", "connect", "initial", "opened")

    def __init__(
        self,
        pool: Pool,
        target: Call,
        after: Callable,
        connect: Callable[[], float],
        initial: int,
    ) -> None:
        super().__init__(pool, target)
        self.after = after  # the calendar's `after(delay, callback, argument)`
        self.connect = connect
        self.initial = initial  # `initialSize`: open from the start
        self.opened = initial  # open connections, including those being opened

    def _go(self, pair: tuple[Request, Reply]) -> None:
        # the pool's busy slots include this borrower's: more than are open means none idle
        if self.pool.in_use > self.opened:
            self.opened += 1
            self.after(self.connect(), self._opened, pair)
        else:
            PooledCall._go(self, pair)

    def _opened(self, pair: tuple[Request, Reply]) -> None:
        PooledCall._go(self, pair)

    def reset(self) -> None:
        """The node's JVM is gone: its connections closed; a new one opens `initialSize`."""
        self.opened = self.initial
