"""A node's HotSpot JVM: the heap, its garbage collections, sessions held in it, and JIT warm-up.

The heap (`-Xmx`, with `-Xms` equal) is a young generation (`-Xmn`: eden plus two survivor
spaces, `-XX:SurvivorRatio`) and an old generation (the rest).

* **Allocation drives young collections.** Every request allocates `allocation_kb` in eden,
  almost all of it garbage by the time the request ends.  When eden is full a young
  collection (ParNew / the serial copying collector) stops the world for a fixed part plus a
  copying cost per MiB of *live* young objects: the sessions created since the previous one,
  which it promotes into the old generation.
* **Sessions are the live set that grows.** A servlet session stays reachable until it
  times out: `session_timeout_s` (web.xml `<session-timeout>`, 30 min) after its last access,
  removed by a periodic sweep (Tomcat `ManagerBase.processExpiresFrequency` x
  `backgroundProcessorDelay` = 6 x 10 s; Jetty `scavengePeriod`).  An expired session is
  garbage in the old generation until a full collection.  Clients that keep cookies reuse
  their session; clients that do not (`ab`) make the application create one per request.
  With session replication each node also holds the replicas it receives (total replication:
  every other node's sessions; buddy replication: its buddies').
* **Full collections cost grows with the live data.** When a young collection's promotion
  does not fit in the old generation (promotion failure, CMS concurrent-mode failure), a
  stop-the-world mark-sweep-compact collects the whole heap: a fixed part plus a cost per MiB
  of live data.  Live data the old generation cannot hold stays in the young generation,
  shrinking eden: as the live set approaches the heap size the young collections come after
  fewer and fewer requests and each brings a full collection that frees almost nothing -
  back-to-back full collections, throughput collapsing towards zero.
* **OutOfMemoryError** when the live data exceeds the heap (`Java heap space`), or with
  `-XX:+UseGCOverheadLimit` when `GCTimeLimit` (98 %) of the time goes to collections and less
  than `GCHeapFreeLimit` (2 %) of the heap is free after five full collections in a row
  (HotSpot's `AdaptiveSizePolicyGCTimeLimitThreshold`).  From then on every request fails
  (the servlet's allocation throws; the container answers 500).
* **Stop-the-world means the whole node:** a pause is `cpu.pause(until)` on the node's CPU,
  so request threads and replication work (applying other nodes' updates) stall alike, and a
  synchronous sender on another node waits for the paused receiver.
* **JIT warm-up:** the CPU demand of a request is multiplied by
  warm + (cold - warm) exp(-k / warmup_requests) after k requests served: interpreted code
  first, compiled code later (server VM `-server`: C2, slow to warm up, fast when warm;
  client VM `-client`: C1, quick to a slower steady state).

Not modelled: CMS's concurrent cycles (their CPU share while the old generation is above
`CMSInitiatingOccupancyFraction`), tenuring ages (a session is promoted at the first young
collection after its creation; with 30-min sessions the age makes no difference), heap
fragmentation, and the allocation of replication messages.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterator

from sim.observe.probes import COLLECTIONS, FRACTION, MEBIBYTES, SESSIONS, Metric, Window
from sim.tiers.station import finish_failed

MIB = 1024.0 * 1024.0

# HotSpot AdaptiveSizePolicyGCTimeLimitThreshold: consecutive full collections over both
# limits before "GC overhead limit exceeded" is thrown.
OVERHEAD_LIMIT_COLLECTIONS = 5


class Jvm:
    """The JVM of one backend node.  `served(user)` is called once per request that ends."""

    fields = (
        "young_gcs",
        "full_gcs",
        "gc_time",
        "sessions",
        "live_mb",
        "old_used_mb",
        "resident_mb",
        "out_of_memory",
    )

    def __init__(self, kernel, name: str, cpu, spec) -> None:
        self.kernel = kernel
        self.name = f"{name}.jvm"
        self.cpu = cpu
        self.spec = spec
        heap = spec.heap_mb * MIB
        young = spec.young_bytes
        self.heap = heap
        self.young = young
        self.eden = young * spec.survivor_ratio / (spec.survivor_ratio + 2)
        self.old_capacity = heap - young
        self.baseline = spec.baseline_mb * MIB
        self.session_bytes = float(spec.session_bytes)
        self.allocation = spec.allocation_kb * 1024.0
        self.creates_sessions = spec.creates_sessions
        self.cookies = True  # set by build: do the clients return the session cookie?
        self.replica_holders: list[Jvm] = []  # nodes that hold a replica of this node's sessions
        # Sessions held (own and replicas): key -> expiry time, least recently accessed first.
        self.sessions: OrderedDict = OrderedDict()
        self._next_session = 0
        # Heap state [bytes]
        self.eden_used = 0.0
        self.new_live = 0.0  # live bytes allocated since the last young collection (sessions)
        self.old_used = self.baseline  # the container and application are tenured at start-up
        self.young_resident = 0.0  # live data the old generation could not take
        self.old_high_water = self.old_used
        self.young_touched = 0.0
        # JIT
        self.served_count = 0
        self.warming = spec.jit_warmup_requests > 0  # the demand factor still falls
        self.demand_factor = spec.jit_cold_factor if self.warming else spec.jit_warm_factor
        # Collections
        self.paused_until = 0.0
        self.young_gcs = 0
        self.full_gcs = 0
        self.gc_time = 0.0
        self.out_of_memory: str | None = None
        self._last_full_end = 0.0
        self._gc_time_at_last_full = 0.0
        self._over_limit = 0
        if self.creates_sessions:
            kernel.after(spec.expiry_check_s, self._sweep, None)

    def restart(self, warm: bool = False) -> None:
        """A new JVM in the node's place (a pod an autoscaler starts, `sim.tiers.cluster.
        node_life`): interpreted code again (the JIT's cold factor), the heap at its baseline,
        no sessions, no OutOfMemoryError.  `warm`: the JIT's code is already compiled (an
        instance resumed from a warm pool with its memory).  The collection counters run on:
        they are the node's, cumulative across its JVMs."""
        spec = self.spec
        self.sessions.clear()
        self.eden_used = 0.0
        self.new_live = 0.0
        self.old_used = self.baseline
        self.young_resident = 0.0
        self.young_touched = 0.0
        self.old_high_water = self.old_used
        self.served_count = 0
        self.warming = spec.jit_warmup_requests > 0 and not warm
        self.demand_factor = spec.jit_cold_factor if self.warming else spec.jit_warm_factor
        self.out_of_memory = None
        self._last_full_end = self.kernel.now
        self._gc_time_at_last_full = self.gc_time
        self._over_limit = 0

    # ------------------------------------------------------------------ requests
    def burst_sampler(self, sample: Callable[[], float]) -> Callable[[], float]:
        """The node's CPU demand draws, scaled by the JIT warm-up factor of the moment."""
        return lambda: sample() * self.demand_factor

    def served(self, user) -> float:
        """A request ends on this node: its allocation, its session.  Returns the time its
        response must wait for a collection it triggered (0 if none); -1 once the JVM has
        thrown OutOfMemoryError (the request fails)."""
        if self.out_of_memory is not None:
            return -1.0
        spec = self.spec
        self.served_count += 1
        if self.warming:
            self.demand_factor = spec.jit_warm_factor + (
                spec.jit_cold_factor - spec.jit_warm_factor
            ) * math.exp(-self.served_count / spec.jit_warmup_requests)
        live = 0.0
        if self.creates_sessions:
            now = self.kernel.now
            key = (self.name, user) if self.cookies else (self.name, self._new_session())
            expires = now + spec.session_timeout_s
            live = self._hold(key, expires)
            for holder in self.replica_holders:
                holder.hold_replica(key, expires)
        wait = self._allocate(self.allocation, live)
        if self.out_of_memory is not None:
            return -1.0
        return wait

    def _new_session(self) -> int:
        self._next_session += 1
        return self._next_session

    def _hold(self, key, expires: float) -> float:
        """Create or touch a session; returns the live bytes newly allocated for it."""
        sessions = self.sessions
        if key in sessions:
            sessions.move_to_end(key)
            sessions[key] = expires
            return 0.0
        sessions[key] = expires
        return self.session_bytes

    def hold_replica(self, key, expires: float) -> None:
        """Another node's session was created or touched: keep (or refresh) its replica."""
        if self.out_of_memory is not None:
            return
        live = self._hold(key, expires)
        if live:
            self._allocate(live, live)

    def _sweep(self, _arg) -> None:
        """The session manager's background expiry: expired sessions become old-gen garbage."""
        now = self.kernel.now
        sessions = self.sessions
        while sessions and next(iter(sessions.values())) <= now:
            sessions.popitem(last=False)
        self.kernel.after(self.spec.expiry_check_s, self._sweep, None)

    # ------------------------------------------------------------------ the heap
    def live_bytes(self) -> float:
        return self.baseline + len(self.sessions) * self.session_bytes

    def _allocate(self, nbytes: float, live: float) -> float:
        """Allocate in eden; a full eden triggers a young collection (and perhaps a full one).
        Returns how long from now the node is paused (0 if no collection)."""
        self.eden_used += nbytes
        self.new_live += live
        if self.eden_used < self.eden - self.young_resident:
            return 0.0
        spec = self.spec
        now = self.kernel.now
        begin = max(now, self.paused_until)  # a collection asked for during a pause runs after it
        self.young_touched = self.young
        promoted = self.new_live
        young_pause = spec.young_pause_s + spec.young_s_per_mb * promoted / MIB
        self.young_gcs += 1
        self.eden_used = 0.0
        self.new_live = 0.0
        pause = young_pause
        if self.old_used + promoted <= self.old_capacity:
            self.old_used += promoted
            self.old_high_water = max(self.old_high_water, self.old_used)
        else:
            pause += self._full_collection(begin, young_pause)
        self.paused_until = begin + pause
        self.gc_time += pause
        self.cpu.pause(self.paused_until)
        return self.paused_until - now

    def _full_collection(self, begin: float, young_pause: float) -> float:
        """Mark-sweep-compact of the whole heap after a failed promotion; returns its pause."""
        spec = self.spec
        live = self.live_bytes()
        pause = spec.full_pause_s + spec.full_s_per_mb * live / MIB
        self.full_gcs += 1
        self.old_used = min(live, self.old_capacity)
        self.old_high_water = max(self.old_high_water, self.old_used)
        self.young_resident = live - self.old_used
        if self.young_resident >= self.eden:
            self.out_of_memory = "Java heap space"
            return pause
        # -XX:+UseGCOverheadLimit, judged over the time since the previous full collection.
        end = begin + young_pause + pause
        gc_time_at_end = self.gc_time + young_pause + pause
        elapsed = end - self._last_full_end
        in_gc = (gc_time_at_end - self._gc_time_at_last_full) / elapsed if elapsed > 0 else 1.0
        over = in_gc > spec.gc_time_limit and self.heap - live < spec.gc_heap_free_limit * self.heap
        self._over_limit = self._over_limit + 1 if over else 0
        if spec.gc_overhead_limit and self._over_limit >= OVERHEAD_LIMIT_COLLECTIONS:
            self.out_of_memory = "GC overhead limit exceeded"
        self._last_full_end = end
        self._gc_time_at_last_full = gc_time_at_end
        return pause

    # ------------------------------------------------------------------ metrics
    def resident_mb(self) -> float:
        """top RES: the JVM's own memory plus the heap pages touched so far (with -Xms = -Xmx
        the heap is reserved at start but a page is resident only once written)."""
        return (
            self.spec.non_heap_mb
            + (max(self.young_touched, self.eden_used) + self.old_high_water) / MIB
        )

    def counters(self, now: float) -> tuple[float, ...]:
        return (
            float(self.young_gcs),
            float(self.full_gcs),
            self.gc_time,
            float(len(self.sessions)),
            self.live_bytes() / MIB,
            self.old_used / MIB,
            self.resident_mb(),
            0.0 if self.out_of_memory is None else 1.0,
        )

    def metrics(self, w: Window) -> Iterator[Metric]:
        """The fraction of time collecting, the collections, and the heap's gauges at the
        window's end (sessions held, live and old-generation MiB, resident MiB, whether an
        OutOfMemoryError was thrown)."""
        yield "gc_fraction", w.mean_level("gc_time"), FRACTION
        yield "young_gcs", w.delta["young_gcs"], COLLECTIONS
        yield "full_gcs", w.delta["full_gcs"], COLLECTIONS
        yield "sessions", w.level["sessions"], SESSIONS
        yield "live_mb", w.level["live_mb"], MEBIBYTES
        yield "old_used_mb", w.level["old_used_mb"], MEBIBYTES
        yield "resident_mb", w.level["resident_mb"], MEBIBYTES
        yield "out_of_memory", w.level["out_of_memory"], FRACTION


class JvmAfterRequest:
    """Installed as a node's `Station.post`: the JVM's accounting of each request, holding its
    thread through a collection the request triggered, then the next hook (replication)."""

    __slots__ = ("jvm", "kernel", "then")

    def __init__(self, jvm: Jvm, then=None) -> None:
        self.jvm = jvm
        self.then = then  # e.g. replication's AfterRequest, or None
        self.kernel = jvm.kernel

    def __call__(self, visit, finish) -> None:
        wait = self.jvm.served(visit.request.user)
        if wait < 0:
            finish_failed(visit)
        elif wait > 0:
            self.kernel.call_after(wait, self._resume, (visit, finish))
        else:
            self._resume((visit, finish))

    def _resume(self, pair) -> None:
        visit, finish = pair
        if self.then is None:
            finish(visit)
        else:
            self.then(visit, finish)
