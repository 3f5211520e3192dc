"""Apache prefork's process pool: children are forked over time, not all there at once.

Once a second the parent counts idle children (`perform_idle_server_maintenance` in
`server/mpm/prefork/prefork.c`, httpd 2.2/2.4): above `MaxSpareServers` it kills one; below
`MinSpareServers` it forks `idle_spawn_rate` children (bounded by `MaxClients`) and doubles
the rate, up to 32 per second; otherwise the rate resets to 1.  It starts with `StartServers`
children.  After a graceful restart the doubling is held off for the first 10 forking ticks
(`hold_off_on_exponential_spawning = 10`, set when `is_graceful`, counted down per fork).  A cold
or trimmed server therefore reaches MaxClients only after several seconds
(Apache performance-tuning notes), and connections meanwhile wait in the listen queue.
"""

from __future__ import annotations

from typing import cast

from sim.kernel.slots import Pool
from sim.tiers.proxy.children import ProcessTable

MAX_SPAWN_RATE = 32  # children per second (prefork.c)
GRACEFUL_HOLD_OFF = 10  # forking ticks at rate 1 after a graceful restart (prefork.c)


class PreforkSpawner:
    __slots__ = (
        "children",
        "hold_off",
        "kernel",
        "max_clients",
        "max_spare",
        "min_spare",
        "pool",
        "spawn_rate",
    )

    def __init__(
        self,
        kernel,
        pool: Pool,
        *,
        max_clients: int,
        start_servers: int,
        min_spare: int,
        max_spare: int,
        children: ProcessTable | None = None,
        graceful_restart: bool = False,
    ) -> None:
        self.kernel = kernel
        self.pool = pool
        self.children = children  # the children as individuals, when their connections matter
        self.max_clients = max_clients
        self.min_spare = min_spare
        self.max_spare = max_spare
        self.spawn_rate = 1
        self.hold_off = GRACEFUL_HOLD_OFF if graceful_restart else 0
        pool.resize(min(start_servers, max_clients))
        kernel.call_after(1.0, self._maintain, None)

    def _maintain(self, _arg) -> None:
        pool = self.pool
        idle = pool.capacity - pool.in_use
        changed = False
        if idle > self.max_spare:
            if self.children is not None:
                self.children.kill_idle()
            pool.resize(pool.capacity - 1)
            self.spawn_rate = 1
            changed = True
        elif idle < self.min_spare:
            fork = min(self.spawn_rate, self.max_clients - cast(int, pool.capacity))  # finite
            if fork > 0:
                if self.children is not None:
                    self.children.fork(
                        fork
                    )  # before the new slots are handed to waiting connections
                pool.resize(pool.capacity + fork)
                changed = True
            if self.hold_off:
                self.hold_off -= 1
            else:
                self.spawn_rate = min(2 * self.spawn_rate, MAX_SPAWN_RATE)
        else:
            self.spawn_rate = 1
        # With nothing else on the calendar and nothing changed this tick, no later tick can
        # change anything: stop, so that a finished workload is not kept running by this clock.
        if changed or self.kernel.env._queue:
            self.kernel.call_after(1.0, self._maintain, None)
