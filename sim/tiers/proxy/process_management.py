"""Apache httpd's process management: children are forked over time, not all there at once.

Once a second the parent counts idle workers (`perform_idle_server_maintenance` in
`server/mpm/prefork/prefork.c`, `server/mpm/worker/worker.c`, `server/mpm/event/event.c`,
httpd 2.4): prefork counts idle children against `MinSpareServers` / `MaxSpareServers`, worker
and event count idle threads across the children against `MinSpareThreads` /
`MaxSpareThreads`.  Above the maximum it tells one child to stop (the pipe of death: a
graceful stop); below the minimum it forks `idle_spawn_rate` children, bounded by the free
scoreboard slots (MaxRequestWorkers / ThreadsPerChild children, at most ServerLimit), and
doubles the rate up to 32 per second -- or resets it to 1 when no slot is free; otherwise the
rate resets to 1.  It starts with `StartServers` children.  After a graceful restart the
doubling is held off for the first 10 forking ticks (`hold_off_on_exponential_spawning = 10`).
A cold or trimmed server therefore reaches MaxRequestWorkers only after several seconds, and
connections meanwhile wait in the listen queue.

The clock is the server's, not the load's.  The parent's main loop (`server_main_loop`) calls
`ap_wait_or_timeout` (`server/mpm_common.c`), which sleeps `apr_sleep(apr_time_from_sec(1))`
whenever no child has exited, and then runs the maintenance: the ticks fall at whole seconds
after the parent entered the loop (it logs "resuming normal operations" just before), whatever
the clients do.  A reaped child only adds a pass without sleeping (`continue`), and httpd sets
no SIGCHLD handler that could cut a sleep short, so the grid stays; the microseconds each pass
costs are neglected.  A load that starts `uptime_s` after the server (`proxy.uptime_s`) meets
its first tick `ceil(uptime_s) - uptime_s` seconds in (a whole second when it starts with the
server); the ticks before the load run on the idle server, as they would have.

Which child is told to stop:
* prefork: the pipe of death is read by a child waiting for a connection, an idle child; the
  model takes the youngest (the highest scoreboard slot, as prefork in 2.2 chose it).
* worker, event: each child's main thread does nothing but block in `read()` on the pipe of
  death (`ap_mpm_podx_check`, `server/mpm_unix.c`, a blocking `apr_file_pipe_create`; the
  "Watch for any messages from the parent over the POD" loop of `child_main`), whatever its
  workers are doing.  Linux queues a pipe's blocked readers exclusively in arrival order and
  wakes the first (`pipe_read`: `wait_event_interruptible_exclusive`, since 5.5), and each
  child blocks there as it starts, so the byte the parent writes (`ap_mpm_podx_signal`) stops
  the oldest child not yet told to stop -- busy or not.
"""

from __future__ import annotations

import math

from sim.tiers.proxy.children import Child, ChildProcesses

MAX_SPAWN_RATE = 32  # children per second (prefork.c, worker.c, event.c)
GRACEFUL_HOLD_OFF = 10  # forking ticks at rate 1 after a graceful restart


class Spawner:
    """The parent's once-a-second maintenance of the children (`ChildProcesses`)."""

    __slots__ = (
        "children",
        "hold_off",
        "kernel",
        "max_children",
        "max_spare",
        "min_spare",
        "prefork",
        "spawn_rate",
    )

    def __init__(
        self,
        kernel,
        children: ChildProcesses,
        *,
        prefork: bool,
        max_children: int,
        min_spare: int,
        max_spare: int,
        graceful_restart: bool = False,
        uptime_s: float = 0.0,
    ) -> None:
        self.kernel = kernel
        self.children = children
        self.prefork = prefork  # spare *children* (prefork) or spare *threads* (worker, event)
        self.max_children = max_children  # scoreboard slots: ap_daemons_limit
        self.min_spare = min_spare
        self.max_spare = max_spare
        self.spawn_rate = 1
        self.hold_off = GRACEFUL_HOLD_OFF if graceful_restart else 0
        # The ticks of the server's clock that came before the load (seconds 1 .. floor of
        # the uptime, the one at the load's very start included) acted on the idle server.
        ticks_before = math.floor(uptime_s)
        for _ in range(ticks_before):
            self.tick()
        kernel.call_after(ticks_before + 1 - uptime_s, self._maintain, None)

    def idle(self, live: list[Child]) -> int:
        """What the parent counts: idle children (prefork) or idle threads (worker, event)."""
        if self.prefork:
            return sum(1 for child in live if child.busy == 0)
        return sum(child.idle for child in live)

    def _maintain(self, _arg) -> None:
        changed = self.tick()
        # With nothing else on the calendar and nothing changed this tick, no later tick can
        # change anything: stop, so that a finished workload is not kept running by this clock.
        if changed or self.kernel.env._queue:
            self.kernel.call_after(1.0, self._maintain, None)

    def tick(self) -> bool:
        """One `perform_idle_server_maintenance`: stop a child, fork some, or nothing; True
        if it stopped or forked one."""
        children = self.children
        live = children.live()
        idle = self.idle(live)
        changed = False
        if idle > self.max_spare:
            if self.prefork:  # an idle child reads the pipe of death: the youngest
                waiting = [child for child in live if child.idle > 0]
                children.stop(max(waiting, key=lambda child: child.number))
            else:  # the first child blocked in read() on it: the oldest
                children.stop(min(live, key=lambda child: child.number))
            self.spawn_rate = 1
            changed = True
        elif idle < self.min_spare:
            free = self.max_children - len(live)
            if free <= 0:
                self.spawn_rate = 1  # the scoreboard is full: MaxRequestWorkers reached
            else:
                children.fork(min(self.spawn_rate, free))
                changed = True
                if self.hold_off:
                    self.hold_off -= 1
                elif self.spawn_rate < MAX_SPAWN_RATE:
                    self.spawn_rate *= 2
        else:
            self.spawn_rate = 1
        return changed
