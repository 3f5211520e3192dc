"""Run one replication on the compiled engine: allocate the tables, feed the random streams,
grow the tables when the loop asks, and hand the recorder's rows and the checkpoint grid to
the windowing both engines share (`sim.run.finish`), with probe views that compute the
reference's metrics.

Random numbers are drawn here, by NumPy, from the reference's own streams
(`Streams(seed, replication).generator(purpose)`) in the reference's blocks (`sim.random.distributions.BLOCK`), and
handed to the compiled loop block by block: both engines see the same numbers.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np

from sim.engines.compiled import kernel as k
from sim.engines.compiled.classes import chain_choice
from sim.engines.compiled.first_use import announced
from sim.engines.compiled.jvm_plan import SESSIONS_AT_START
from sim.engines.compiled.plan import Plan, build_plan
from sim.model.classes import class_names
from sim.model.plan import Plan as ModelPlan
from sim.model.plan import compile_plan
from sim.model.schema import Model
from sim.observe.checkpoints import CELLS, candidates_of, completion_marks
from sim.observe.classes import ClassStats
from sim.observe.metrics import window_metrics
from sim.observe.probes import REQUESTS, SECONDS
from sim.observe.trace import BINS, TimeseriesSink, Trace, metrics_between, single_window
from sim.random.streams import BLOCK, Streams
from sim.stats.histogram import LogBins
from sim.stats.mser import mser_truncation
from sim.stats.steady_state import WindowCandidates
from sim.tiers.clients.populations import RunawayQueue

MAX_BATCHES = 256  # the reference recorder's default
_tokens = itertools.count(1)


def _refiller(plan: Plan, streams: Streams, block: np.ndarray):
    """refill(stream): the next BLOCK numbers of that stream, written into its row."""
    sources: list[Callable[[], Any]] = []  # each returns an array of BLOCK draws
    for spec in plan.streams:
        rng = streams.generator(spec.purpose)
        if spec.geometric_p is not None:
            sources.append(partial(rng.geometric, spec.geometric_p, BLOCK))
        elif spec.distribution is None:
            sources.append(partial(rng.random, BLOCK))
        else:
            sources.append(partial(spec.distribution.sample, rng, BLOCK))
    reverse = [spec.reverse for spec in plan.streams]

    def refill(stream: int) -> None:
        values = sources[stream]()
        block[stream, :] = values[::-1] if reverse[stream] else values

    return refill


class _Tables:
    """The mutable state of one replication, as the tuple the compiled loop takes."""

    def __init__(self, plan: Plan, model: Model, bins: LogBins, token: int) -> None:
        sizes = k.empty_state_sizes()
        levels = plan.levels
        self.plan = plan
        users = plan.users
        requests = max(64, 2 * users + 16)
        self.counters = np.zeros(sizes["I"], dtype=np.int64)
        self.floats = np.zeros(sizes["F"], dtype=np.float64)
        self.floats[k.F_LAST_CLOSE] = np.nan  # no client connection closed yet
        self.requests_int = np.zeros((requests, sizes["RI"]), dtype=np.int64)
        self.requests_float = np.zeros((requests, sizes["RF"]), dtype=np.float64)
        self.jobs_int = np.zeros((requests * levels, sizes["JI"]), dtype=np.int64)
        self.jobs_float = np.zeros((requests * levels, sizes["JF"]), dtype=np.float64)
        self.free_requests = np.arange(requests - 1, -1, -1, dtype=np.int64)
        calendar = self._calendar_size(requests)
        self.times = np.zeros(calendar, dtype=np.float64)
        self.sequence = np.zeros(calendar, dtype=np.int64)
        self.payloads = np.zeros(calendar, dtype=np.int64)
        self.cpu_heaps = np.zeros((len(plan.cpus_int), requests * levels), dtype=np.int64)
        self.scratch = np.zeros(requests * levels, dtype=np.int64)
        self.users_int = np.full((users, sizes["UI"]), -1, dtype=np.int64)
        self.free_users = np.arange(users - 1, -1, -1, dtype=np.int64)
        # the clients' connections (keep-alive): a row per connection someone refers to
        connections = requests if model.clients.keep_alive else 1
        self.connections = _rows(connections, sizes["CN"], k.CN_IDLE_ENTRY)
        self.connection_times = np.zeros((connections, sizes["CNF"]), dtype=np.float64)
        self.free_connections = np.arange(connections - 1, -1, -1, dtype=np.int64)
        # httpd's children, when they are individuals: a row per child not yet exited
        children = max(2 * plan.children + 64, 1) if plan.children else 1
        self.children = np.zeros((children, sizes["CH"]), dtype=np.int64)
        self.free_children = np.arange(children - 1, -1, -1, dtype=np.int64)
        # the front's connections to the backend nodes, and their pools: one per node, or per
        # child and node when the children are individuals (a child row's pools are reset
        # when it forks)
        backend_rows = requests + 64 if plan.config[k.C_BACKEND_POOLS] else 1
        self.backend_connections = _rows(backend_rows, sizes["BC"], k.BC_IDLE_ENTRY)
        self.backend_released = np.zeros((backend_rows, sizes["BCF"]), dtype=np.float64)
        self.free_backend = np.arange(backend_rows - 1, -1, -1, dtype=np.int64)
        nodes = plan.backend.shape[0]
        self.backend_pools = np.full(
            (children * nodes if plan.children else nodes, sizes["BP"]), -1, dtype=np.int64
        )
        self.backend_pools[:, k.BP_OPEN] = 0
        # mod_jk: each pool's last maintenance (none yet: the first request runs it)
        self.backend_pools_float = np.full(
            (self.backend_pools.shape[0], sizes["BPF"]), -np.inf, dtype=np.float64
        )
        self.backend = plan.backend.copy()
        self.backend_float = plan.backend_float.copy()
        members = plan.members.shape[0]
        self.members_float = np.zeros((members, sizes["BF"]), dtype=np.float64)
        self.members_float[:, k.BF_WEIGHT] = plan.weights
        self.draws = np.zeros((max(len(plan.streams), 1), BLOCK), dtype=np.float64)
        self.positions = np.full(self.draws.shape[0], BLOCK, dtype=np.int64)
        self.kinds = np.full(self.draws.shape[0], k.STREAM_BLOCK, dtype=np.int64)
        self.values = np.zeros(self.draws.shape[0], dtype=np.float64)
        for i, constant in enumerate(plan.constants):
            if constant is not None:
                self.kinds[i] = k.STREAM_CONSTANT
                self.values[i] = constant
        rows = 2 * MAX_BATCHES + 4
        self.rows = np.zeros((rows, len(plan.columns)), dtype=np.float64)
        self.histogram_rows = np.zeros((rows, bins.n_bins), dtype=np.int64)
        self.histogram = np.zeros(bins.n_bins, dtype=np.int64)
        self.stations_int = plan.stations.copy()
        self.stations_float = np.zeros((len(plan.stations), sizes["STF"]), dtype=np.float64)
        self.pools_int = plan.pools.copy()
        self.pools_float = np.zeros((len(plan.pools), sizes["POF"]), dtype=np.float64)
        self.cpus_int = plan.cpus_int.copy()
        self.cpus_float = plan.cpus_float.copy()
        self.members_int = plan.members.copy()
        self.config = plan.config.copy()
        self.config_float = plan.config_float.copy()
        self.replication = plan.replication.copy()
        self.sample_row = np.zeros(len(plan.columns), dtype=np.float64)
        # request classes: their tables, the log of their completions, its length per row
        self.class_stations = plan.class_stations.copy()
        self.class_steps = plan.class_steps.copy()
        self.class_table = plan.class_table.copy()
        self.class_log = np.zeros((1024 if plan.config[k.C_CLASSES] else 1, 2), dtype=np.float64)
        self.class_rows = np.zeros(rows, dtype=np.int64)
        self.token = token
        # the JVMs: their rows, the sessions each holds, who holds replicas of them
        jvms = plan.jvms
        self.jv = jvms.jv.copy()
        self.jvf = jvms.jvf.copy()
        # the sessions' places in access order (expiry, key) and, with cookies, each key's
        # place: a key per user (or session client's row) and node
        count = jvms.jv.shape[0]
        self.jse = np.zeros((count, SESSIONS_AT_START), dtype=np.float64)
        self.jqk = np.full((count, SESSIONS_AT_START), k.NO_KEY, dtype=np.int64)
        keys = self.users_int.shape[0] * int(plan.config[k.C_N_NODES]) if jvms.cookies else 1
        self.jm = np.full((count, keys), -1, dtype=np.int64)
        self.jh = jvms.holders.copy()
        # ab run again: the recorder's row at the start and the end of each run
        runs = max(int(plan.config[k.C_REPEAT]), 1) + 1
        self.brows = np.zeros((runs, len(plan.columns)), dtype=np.float64)
        self.bhist = np.zeros((runs, bins.n_bins), dtype=np.int64)
        self.counters[k.I_AB_BATCH] = 1

        self.counters[k.I_RFREE_TOP] = requests
        self.counters[k.I_UFREE_TOP] = users
        self.counters[k.I_CN_FREE_TOP] = connections
        self.counters[k.I_CH_FREE_TOP] = children
        self.counters[k.I_BC_FREE_TOP] = self.backend_connections.shape[0]
        self.counters[k.I_CH_HEAD] = -1
        self.counters[k.I_CH_TAIL] = -1
        self.counters[k.I_SPAWN_RATE] = 1
        self.counters[k.I_HOLD_OFF] = plan.hold_off
        self.counters[k.I_BATCH] = 5
        self.counters[k.I_STOP_AT] = k.NEVER
        stop_after = None if model.finite else model.run.requests
        self.counters[k.I_STOP_AFTER] = -1 if stop_after is None else stop_after
        self.config[k.C_MAX_INSIDE] = model.run.max_in_flight
        self.config[k.C_MAX_BATCHES] = MAX_BATCHES
        self.config[k.C_N_BINS] = bins.n_bins
        self.config_float[k.CF_BIN_MIN] = bins.min_value
        self.config_float[k.CF_BIN_LOG_GROWTH] = bins._log_growth
        self._grid(model, bins, len(plan.columns))

    def _grid(self, model: Model, bins: LogBins, columns: int) -> None:
        """The progress grid of an MSER run (`sim.observe.checkpoints.Checkpoints`): CELLS
        cells of simulated time, or of completions for a run of `run.requests`."""
        run = model.run
        mser = run.warmup == "mser" and not model.finite
        candidates = CELLS // 2 + 1 if mser else 0
        self.grid = np.zeros((CELLS if mser else 0, 3), dtype=np.float64)
        self.grid_rows = np.zeros((candidates, columns), dtype=np.float64)
        self.grid_histograms = np.zeros((candidates, bins.n_bins), dtype=np.int64)
        self.marks = np.zeros(0, dtype=np.int64)
        self.config[k.C_CELLS] = CELLS
        self.config[k.C_CANDIDATES] = candidates
        if not mser:
            self.config[k.C_GRID] = k.GRID_NONE
        elif run.duration_s is not None:
            self.config[k.C_GRID] = k.GRID_TIME
            self.config_float[k.CF_GRID_STEP] = run.duration_s / CELLS
        else:
            assert run.requests is not None
            self.config[k.C_GRID] = k.GRID_REQUESTS
            self.marks = np.asarray(completion_marks(0, run.requests, CELLS), dtype=np.int64)

    def candidates(self) -> WindowCandidates:
        """The replication's candidate windows, as the reference's recorder gives them."""
        counters = self.counters
        end = int(counters[k.I_NROWS]) - 1
        if self.config[k.C_GRID] == k.GRID_NONE:
            return single_window(
                self.rows[0], self.rows[end], self.histogram_rows[0], self.histogram_rows[end]
            )
        taken = int(counters[k.I_CK_N])
        kept = min(taken, self.grid_rows.shape[0])
        grid = self.grid[:taken]
        return candidates_of(
            grid[:, 0].tolist(),
            grid[:, 1].tolist(),
            grid[:, 2].tolist(),
            [self.grid_rows[i].copy() for i in range(kept)],
            [self.grid_histograms[i].copy() for i in range(kept)],
            end_row=self.rows[end].copy(),
            end_histogram=self.histogram_rows[end].copy(),
            end_completed=float(counters[k.I_COMPLETED]),
            end_response_sum=float(self.floats[k.F_RESPONSE_SUM]),
        )

    def observe_capacity(self) -> None:
        """The front's workers are its children's threads: their probe reads the capacity
        now, as the reference's `ChildProcesses` does."""
        view = self.plan.workers_view
        if view is not None and self.plan.children:
            p = int(self.stations_int[int(self.config[k.C_FRONT]), k.ST_POOL])
            view.capacity = int(self.pools_int[p, k.PO_CAPACITY])

    def _calendar_size(self, requests: int) -> int:
        return 8 * self.plan.levels * requests + int(self.plan.config[k.C_MAX_CORES]) + 1024

    def state(self) -> k.State:
        return k.new_state(
            self.counters,
            self.floats,
            self.config,
            self.config_float,
            self.times,
            self.sequence,
            self.payloads,
            self.requests_int,
            self.requests_float,
            self.jobs_int,
            self.jobs_float,
            self.stations_int,
            self.stations_float,
            self.pools_int,
            self.pools_float,
            self.cpus_int,
            self.cpus_float,
            self.cpu_heaps,
            self.members_int,
            self.members_float,
            self.users_int,
            self.free_requests,
            self.free_users,
            self.draws,
            self.positions,
            self.kinds,
            self.values,
            self.rows,
            self.histogram_rows,
            self.histogram,
            self.scratch,
            self.grid,
            self.grid_rows,
            self.grid_histograms,
            self.marks,
            self.replication,
            self.sample_row,
            self.connections,
            self.connection_times,
            self.free_connections,
            self.children,
            self.free_children,
            self.backend_connections,
            self.backend_released,
            self.free_backend,
            self.backend_pools,
            self.backend,
            self.backend_float,
            self.class_stations,
            self.class_steps,
            self.class_table,
            self.class_log,
            self.class_rows,
            self.backend_pools_float,
            self.token,
            self.jv,
            self.jvf,
            self.jse,
            self.jh,
            self.jm,
            self.jqk,
            self.brows,
            self.bhist,
        )

    def grow(self) -> None:
        """Double whichever table the loop found too small (requests, calendar, sessions)."""
        counters, levels = self.counters, self.plan.levels
        logged = self.class_log.shape[0]
        if self.config[k.C_CLASSES] and counters[k.I_KLOG_N] + counters[k.I_REQ_USED] + 8 > logged:
            more = max(logged, int(counters[k.I_REQ_USED]) + 8)
            self.class_log = _extend(self.class_log, more)
        requests = self.requests_int.shape[0]
        if 2 * counters[k.I_REQ_USED] + 8 > requests:
            more = requests
            self.requests_int = _extend(self.requests_int, more)
            self.requests_float = _extend(self.requests_float, more)
            self.jobs_int = _extend(self.jobs_int, more * levels)
            self.jobs_float = _extend(self.jobs_float, more * levels)
            self.scratch = np.zeros(2 * requests * levels, dtype=np.int64)
            self.cpu_heaps = np.concatenate([self.cpu_heaps, np.zeros_like(self.cpu_heaps)], axis=1)
            self.free_requests = _grown_free_rows(
                self.free_requests, counters, k.I_RFREE_TOP, requests, more
            )
            requests *= 2
        needed = self._calendar_size(requests)
        size = self.times.shape[0]
        if (
            needed > size
            or counters[k.I_HEAP_N]
            + 4 * levels * counters[k.I_REQ_USED]
            + self.config[k.C_MAX_CORES]
            + 64
            > size
        ):
            more = max(needed, 2 * size) - size
            self.times = _extend(self.times, more)
            self.sequence = _extend(self.sequence, more)
            self.payloads = _extend(self.payloads, more)
        users = self.users_int.shape[0]
        if self.config[k.C_CLIENT] == k.CLIENT_SESSIONS and 2 * counters[k.I_USR_USED] + 8 > users:
            self.users_int = np.concatenate([self.users_int, np.full_like(self.users_int, -1)])
            self.free_users = _grown_free_rows(
                self.free_users, counters, k.I_UFREE_TOP, users, users
            )
        size = self.children.shape[0]
        if self.config[k.C_CHILDREN] and counters[k.I_CH_PRESENT] + 40 > size:
            self.children = _extend(self.children, size)
            pools = self.backend_pools
            if self.config[k.C_BACKEND_POOLS]:  # a child's pools: rows child x nodes + node
                self.backend_pools = np.concatenate([pools, np.full_like(pools, -1)])
                maintained = self.backend_pools_float
                self.backend_pools_float = np.concatenate(
                    [maintained, np.full_like(maintained, -np.inf)]
                )
            self.free_children = _grown_free_rows(
                self.free_children, counters, k.I_CH_FREE_TOP, size, size
            )
        size = self.backend_connections.shape[0]
        requests = self.requests_int.shape[0]
        if self.config[k.C_BACKEND_POOLS] and counters[k.I_BC_USED] + requests + 16 > size:
            more = max(size, requests + 16)
            self.backend_connections = np.concatenate(
                [
                    self.backend_connections,
                    _rows(more, self.backend_connections.shape[1], k.BC_IDLE_ENTRY),
                ]
            )
            self.backend_released = _extend(self.backend_released, more)
            self.free_backend = _grown_free_rows(
                self.free_backend, counters, k.I_BC_FREE_TOP, size, more
            )
        self._grow_sessions()
        size = self.connections.shape[0]
        users = max(int(self.config[k.C_USERS]), 1)
        if self.config[k.C_CLIENT_KEEP_ALIVE] and 2 * counters[k.I_CN_USED] + users + 16 > size:
            more = max(size, users + 16)
            self.connections = np.concatenate(
                [self.connections, _rows(more, self.connections.shape[1], k.CN_IDLE_ENTRY)]
            )
            self.connection_times = _extend(self.connection_times, more)
            self.free_connections = _grown_free_rows(
                self.free_connections, counters, k.I_CN_FREE_TOP, size, more
            )

    def _grow_sessions(self) -> None:
        """The JVMs' sessions: the places still held moved to the front of their rows (the
        expired and the left ones are gone), the table doubled when that leaves too little
        room (`kernel._jvm_needs_room`), and with cookies a key for every user row."""
        if not self.config[k.C_N_JVMS]:
            return
        jv, jse, jqk, jm = self.jv, self.jse, self.jqk, self.jm
        keys = self.users_int.shape[0] * int(self.config[k.C_N_NODES])
        if self.config[k.C_JVM_COOKIES] and keys > jm.shape[1]:
            self.jm = np.concatenate([jm, np.full((jm.shape[0], keys - jm.shape[1]), -1)], axis=1)
            jm = self.jm
        worst = int(self.config[k.C_LEVELS] * self.counters[k.I_REQ_USED]) + 8
        heads, tails = jv[:, k.JV_SESS_HEAD], jv[:, k.JV_SESS_TAIL]
        if int((tails + worst).max()) <= jse.shape[1]:
            return
        kept = [
            np.flatnonzero(jqk[v, heads[v] : tails[v]] != k.DEAD) + heads[v] for v in range(len(jv))
        ]
        size = jse.shape[1]
        while max(len(places) for places in kept) + worst > size // 2:
            size *= 2
        times = np.zeros((jse.shape[0], size), dtype=np.float64)
        owners = np.full((jse.shape[0], size), k.NO_KEY, dtype=np.int64)
        for v, places in enumerate(kept):
            held = len(places)
            times[v, :held] = jse[v, places]
            owners[v, :held] = jqk[v, places]
            keyed = owners[v, :held] >= 0
            jm[v, owners[v, :held][keyed]] = np.flatnonzero(keyed)
            jv[v, k.JV_SESS_HEAD] = 0
            jv[v, k.JV_SESS_TAIL] = held
        self.jse, self.jqk = times, owners


def _rows(count: int, fields: int, entry: int) -> np.ndarray:
    """A table of rows with a lazy timer (`kernel._timer_arm`): no calendar entry yet."""
    rows = np.zeros((count, fields), dtype=np.int64)
    rows[:, entry] = -1
    return rows


def _extend(array: np.ndarray, more: int) -> np.ndarray:
    return np.concatenate([array, np.zeros((more, *array.shape[1:]), dtype=array.dtype)])


def _grown_free_rows(
    free: np.ndarray, counters: np.ndarray, top_index: int, size: int, more: int
) -> np.ndarray:
    """A stack of free row numbers (top at counters[top_index]) after its table grew from
    `size` to `size + more` rows: the new rows pushed, the lowest on top, as the kernel pops."""
    top = int(counters[top_index])
    grown = np.zeros(size + more, dtype=np.int64)
    grown[:top] = free[:top]
    grown[top : top + more] = np.arange(size + more - 1, size - 1, -1)
    counters[top_index] = top + more
    return grown


def _sampler(
    plan: Plan, tables: _Tables, bins: LogBins, replication: int, sink: TimeseriesSink
) -> Callable[[int], None]:
    """sample(first): `sim.engines.reference.replication._sample_periodically`'s metrics of the window since
    the last sample (the same probes and names as the run's), streamed to `sink`."""
    last: dict = {}

    def sample(first: int) -> None:
        row = tables.sample_row.copy()
        tables.observe_capacity()
        histogram = tables.histogram.copy()
        if not first:
            metrics = window_metrics(
                plan.columns, last["row"], row, histogram - last["hist"], bins, plan.probes
            )
            metrics["count.in_flight"] = float(tables.counters[k.I_IN_FLIGHT])
            sink(replication, float(tables.floats[k.F_NOW]), metrics)
        last["row"], last["hist"] = row, histogram

    return sample


def simulate(
    model: Model,
    replication: int,
    seed: int,
    bins: LogBins = BINS,
    model_plan: ModelPlan | None = None,
    timeseries: TimeseriesSink | None = None,
):
    """Run the compiled loop to its end; returns the plan and the tables (recorder rows,
    checkpoint grid, counters).  `timeseries` receives a sample every
    `run.timeseries_interval_s`, as on the reference engine."""
    plan = build_plan(model, compile_plan(model) if model_plan is None else model_plan)
    run = model.run
    # a finite workload records from its start and runs to its last outcome
    fixed_warmup = run.warmup if isinstance(run.warmup, float) and not model.finite else None
    token = next(_tokens)
    tables = _Tables(plan, model, bins, token)
    if fixed_warmup is not None:
        tables.config[k.C_WARMUP] = k.WARMUP_FIXED
        tables.config_float[k.CF_WARMUP_S] = fixed_warmup
    else:
        tables.config[k.C_WARMUP] = k.WARMUP_FROM_START
    warm = fixed_warmup or 0.0
    tables.floats[k.F_UNTIL] = (
        warm + run.duration_s
        if run.duration_s is not None and not model.finite
        else run.max_duration_s
    )
    streams = Streams(seed, replication)
    k.REFILLS[token] = _refiller(plan, streams, tables.draws)
    script = chain_choice(model, streams)
    if script is not None:
        k.SCRIPTS[token] = script
    if timeseries is not None:
        tables.config[k.C_SAMPLE] = 1
        tables.config_float[k.CF_SAMPLE_INTERVAL] = run.timeseries_interval_s
        k.SAMPLERS[token] = _sampler(plan, tables, bins, replication, timeseries)
    try:
        with announced(), _terminable():  # numba's first compilation is never silent
            status = k.run_events(tables.state())
            while status == k.GROW:
                tables.grow()  # the random blocks are not reallocated: the refill stays bound
                status = k.run_events(tables.state())
    finally:
        k.REFILLS.pop(token, None)
        k.SAMPLERS.pop(token, None)
        k.SCRIPTS.pop(token, None)
    if status == k.UNSUPPORTED:
        raise RuntimeError(
            "the compiled engine met a node that could neither take nor queue a new backend "
            "connection (proxy.backend_pool.connect_failures), which its features should have "
            "kept on the reference engine: run the model with run.engine = 'reference'"
        )
    if status == k.RUNAWAY:
        inside = int(tables.counters[k.I_RUNAWAY])
        raise RunawayQueue(
            f"{inside} requests are inside the servers (run.max_in_flight = {run.max_in_flight}) "
            f"at t = {tables.floats[k.F_NOW]:.6g} s: the offered load exceeds the capacity of the model"
        )
    return plan, tables


@contextmanager
def _terminable():
    """SIGTERM keeps its default action (the process ends at once) while the compiled loop
    runs.  The loop does not return to the interpreter until it ends, and a Python handler
    (the CLI's, which makes SIGTERM an interrupt) would wait for it, minutes on a long run.
    Ctrl-C, too, is answered only when the loop returns: the loop has no point yet where it
    can stop and go on."""
    import signal
    import threading

    previous = (
        signal.getsignal(signal.SIGTERM)
        if threading.current_thread() is threading.main_thread()
        else None
    )
    if not callable(previous):  # the default already, ignored, or not ours to change
        yield
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_trace(
    model: Model,
    replication: int,
    seed: int,
    model_plan: ModelPlan | None = None,
    timeseries: TimeseriesSink | None = None,
) -> Trace:
    """One replication to its trace, as the reference hands back its own (`sim.run.finish`
    windows both alike)."""
    started = time.perf_counter()
    plan, tables = simulate(model, replication, seed, BINS, model_plan, timeseries)
    tables.observe_capacity()
    counters = tables.counters
    if plan.server_close is not None:
        plan.server_close.front.last_close = float(tables.floats[k.F_LAST_CLOSE])
        plan.server_close.front.open = int(counters[k.I_FRONT_OPEN])
        plan.server_close.front.client_end = plan.server_close.front.last_close
        plan.server_close.front.watched = plan.server_close.front.open
    end = int(counters[k.I_NROWS]) - 1
    rows, histograms = tables.rows, tables.histogram_rows
    candidates = tables.candidates()
    candidates.metrics_between = metrics_between(plan.columns, plan.probes)
    units: dict[str, str] = {}
    metrics = window_metrics(
        plan.columns,
        rows[0],
        rows[end],
        histograms[end] - histograms[0],
        BINS,
        plan.probes,
        units,
    )
    metrics["count.in_flight"] = float(counters[k.I_IN_FLIGHT])
    units["count.in_flight"] = REQUESTS
    run = model.run
    if plan.config[k.C_CLASSES]:
        metrics.update(class_percentiles(model, tables, end, units))
    # ab run again: each run's window, as the reference's `_record_batches` marks it
    brows, bhist = tables.brows, tables.bhist
    for batch in range(1, int(counters[k.I_AB_MARKS])):
        window = window_metrics(
            plan.columns,
            brows[batch - 1],
            brows[batch],
            bhist[batch] - bhist[batch - 1],
            BINS,
            plan.probes,
        )
        metrics.update({f"batch.{batch}.{name}": value for name, value in window.items()})
        units.update({f"batch.{batch}.{name}": units[name] for name in window if name in units})
    notes: list[str] = []
    finished = True
    if model.finite:  # as the reference reports a finite workload
        finished = bool(counters[k.I_FINISHED])
        metrics["makespan"] = float(
            tables.floats[k.F_FINISHED_AT] if finished else tables.floats[k.F_NOW]
        )
        units["makespan"] = SECONDS
        if not finished:
            notes.append(
                f"the workload did not finish within run.max_duration_s = {run.max_duration_s:g} s"
            )
    processes = model.proxy.processes if model.proxy is not None else None
    if processes is not None:
        notes.extend(processes.notes)
    return Trace(
        replication,
        candidates,
        metrics,
        units,
        mser=run.warmup == "mser" and not model.finite,
        notes=notes,
        batch_size=int(counters[k.I_BATCH]),
        finished=finished,
        started=started,
        events=int(counters[k.I_EVENTS]),
    )


def class_percentiles(model: Model, tables: _Tables, end: int, units: dict[str, str]) -> dict:
    """`class.NAME.response.pXX`, as the reference's replication computes them: over the
    replication's own MSER window on its batch rows (from the start of recording without
    MSER), from each class's histogram at the window's first and last rows -- here the
    logged completions up to each row, binned as `ClassStats` bins them."""
    start = 0
    if model.run.warmup == "mser" and not model.finite:  # Recorder.batch_means
        table = tables.rows[: end + 1]
        counts = np.diff(table[:, 1])
        sums = np.diff(table[:, 2])
        full = counts[:-1] if len(counts) > 1 else counts[:0]
        means = sums[: len(full)] / np.where(full > 0, full, 1)
        if len(means) >= 4:
            start = mser_truncation(means, weights=full)
    stats = ClassStats(class_names(model))
    stats.bins = BINS
    logged = int(tables.counters[k.I_KLOG_N])
    log = tables.class_log[:logged]
    classes = len(stats.names)
    flat = log[:, 0].astype(np.int64) * BINS.n_bins + BINS.index(log[:, 1])

    def snapshot(row: int) -> tuple[int, np.ndarray]:
        upto = int(tables.class_rows[row])
        counts = np.bincount(flat[:upto], minlength=classes * BINS.n_bins)
        return 0, counts.reshape(classes, BINS.n_bins)

    return stats.window_percentiles(snapshot(start), snapshot(end), units)
