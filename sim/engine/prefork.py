"""Apache prefork's process pool: children are forked over time, not all there at once.

Once a second the parent counts idle children (`perform_idle_server_maintenance` in
`server/mpm/prefork/prefork.c`, httpd 2.2/2.4): above `MaxSpareServers` it kills one; below
`MinSpareServers` it forks `idle_spawn_rate` children (bounded by `MaxClients`) and doubles
the rate, up to 32 per second; otherwise the rate resets to 1.  It starts with `StartServers`
children.  A cold or trimmed server therefore reaches MaxClients only after several seconds
(Apache performance-tuning notes), and connections meanwhile wait in the listen queue.
"""
from __future__ import annotations

from sim.engine.pool import Pool

MAX_SPAWN_RATE = 32  # children per second (prefork.c)


class PreforkSpawner:
    __slots__ = ("kernel", "pool", "max_clients", "min_spare", "max_spare", "spawn_rate")

    def __init__(self, kernel, pool: Pool, *, max_clients: int, start_servers: int, min_spare: int,
                 max_spare: int) -> None:
        self.kernel = kernel
        self.pool = pool
        self.max_clients = max_clients
        self.min_spare = min_spare
        self.max_spare = max_spare
        self.spawn_rate = 1
        pool.resize(min(start_servers, max_clients))
        kernel.call_after(1.0, self._maintain, None)

    def _maintain(self, _arg) -> None:
        pool = self.pool
        idle = pool.capacity - pool.in_use
        changed = False
        if idle > self.max_spare:
            pool.resize(pool.capacity - 1)
            self.spawn_rate = 1
            changed = True
        elif idle < self.min_spare:
            fork = min(self.spawn_rate, self.max_clients - pool.capacity)
            if fork > 0:
                pool.resize(pool.capacity + fork)
                changed = True
            self.spawn_rate = min(2 * self.spawn_rate, MAX_SPAWN_RATE)
        else:
            self.spawn_rate = 1
        # With nothing else on the calendar and nothing changed this tick, no later tick can
        # change anything: stop, so that a finished workload is not kept running by this clock.
        if changed or self.kernel.env._queue:  # noqa: SLF001
            self.kernel.call_after(1.0, self._maintain, None)
