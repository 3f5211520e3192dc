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
from functools import partial
from typing import Any

import numpy as np

from sim.engines.compiled import kernel as k
from sim.engines.compiled.classes import chain_choice
from sim.engines.compiled.first_use import announced
from sim.engines.compiled.jvm_plan import SESSIONS_AT_START
from sim.engines.compiled.pauses import PAUSE_EVENTS
from sim.engines.compiled.plan import Plan, build_plan
from sim.engines.pauses import SimulatedProgress, signals_at_pauses
from sim.model.parts.run_control import RunControl
from sim.model.plan import Plan as ModelPlan
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


def _fresh(table: k.Table, count: int, columns: int | None = None) -> np.ndarray:
    """`table.fresh(count, columns)`, a table of zeros taken as the allocator's zeroed pages
    (`np.zeros`), which cost nothing until the loop writes them: the recorder's histogram rows
    (`HROWS`, 2 x 256 batches + 4 rows of 2 766 bins, 11 MB) are mostly never reached, and
    filling every byte of them took about a millisecond a replication, a sixth of the
    kernel's time for a minute of a small model (a calibration runs hundreds)."""
    if table.free or table.fill != 0 or table.fill_columns or table.rows == "scalars":
        return table.fresh(count, columns)
    empty = table.fresh(0, columns)  # its columns and its type
    return np.zeros((count, *empty.shape[1:]), dtype=empty.dtype)


class _Tables:
    """The mutable state of one replication: the tables `kernel.tables.TABLES` declares, by
    name (the loop's `S.RI` is `tables["RI"]`), allocated and grown by family (`ROWS`)."""

    def __init__(
        self, plan: Plan, run: RunControl, keep_alive: bool, bins: LogBins, token: int
    ) -> None:
        self.plan = plan
        levels = plan.levels
        users = plan.users
        requests = max(64, 2 * users + 16)
        # httpd's children, when they are individuals: a row per child not yet exited
        children = max(2 * plan.children + 64, 1) if plan.children else 1
        nodes = plan.backend.shape[0]
        mser = run.mser  # the progress grid (`_grid`)
        jvms = plan.jvms
        # with cookies a JVM's sessions have a key per user (or session client's row) and node
        keys = users * int(plan.config[k.C_N_NODES]) if jvms.cookies else 1
        rows = {
            "calendar": self._calendar_size(requests),
            "requests": requests,
            "jobs": requests * levels,
            "cpus": len(plan.cpus_int),
            "stations": len(plan.stations),
            "pools": len(plan.pools),
            "members": plan.members.shape[0],
            "users": users,
            "streams": max(len(plan.streams), 1),
            "recorder": 2 * MAX_BATCHES + 4,
            "bins": bins.n_bins,
            "columns": len(plan.columns),
            "grid": CELLS if mser else 0,
            "candidates": CELLS // 2 + 1 if mser else 0,
            "marks": 0,
            # the clients' connections (keep-alive): a row per connection someone refers to
            "connections": requests if keep_alive else 1,
            "children": children,
            # the front's pools of connections to the backend nodes: one per node, or per
            # child and node when the children are individuals (reset when a child forks)
            "child_pools": children * nodes if plan.children else nodes,
            "backend_connections": requests + 64 if plan.config[k.C_BACKEND_POOLS] else 1,
            "class_log": 1024 if plan.config[k.C_CLASSES] else 1,
            "jvms": jvms.jv.shape[0],
            "runs": max(int(plan.config[k.C_REPEAT]), 1) + 1,  # ab run again: its windows
        }
        columns = {
            "jobs": requests * levels,
            "block": BLOCK,
            "columns": len(plan.columns),
            "bins": bins.n_bins,
            "sessions": SESSIONS_AT_START,
            "keys": keys,
        }
        planned = {
            "C": plan.config,
            "CF": plan.config_float,
            "STI": plan.stations,
            "POI": plan.pools,
            "CPI": plan.cpus_int,
            "CPF": plan.cpus_float,
            "BI": plan.members,
            "RP": plan.replication,
            "BN": plan.backend,
            "BNF": plan.backend_float,
            "KST": plan.class_stations,
            "KSTEP": plan.class_steps,
            "KF": plan.class_table,
            "JV": jvms.jv,
            "JVF": jvms.jvf,
            "JH": jvms.holders,
            "RAMP": plan.ramp,
            "RATES": plan.rates,
        }
        self.tables: dict[str, Any] = {}
        for table in k.TABLES:
            if table.rows == "plan":
                self.tables[table.name] = planned[table.name].copy()
            elif table.rows == "token":
                self.tables[table.name] = token
            elif table.rows == "scalars":
                self.tables[table.name] = _fresh(table, 0)
            else:
                width = columns.get(table.columns) if isinstance(table.columns, str) else None
                self.tables[table.name] = _fresh(table, rows[table.rows], width)
        self._first_values(plan, run, bins)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.tables[name]

    def __setitem__(self, name: str, table: np.ndarray) -> None:
        self.tables[name] = table

    def _first_values(self, plan: Plan, run: RunControl, bins: LogBins) -> None:
        """What is not a fresh row's value: the first free rows, the balancer's weights, the
        constant streams, the recorder's bins and the run's settings."""
        counters, config, config_float = self["I"], self["C"], self["CF"]
        self["F"][k.F_LAST_CLOSE] = np.nan  # no client connection closed yet
        self["BF"][:, k.BF_WEIGHT] = plan.weights
        for i, constant in enumerate(plan.constants):
            if constant is not None:
                self["SKIND"][i] = k.STREAM_CONSTANT
                self["SVAL"][i] = constant
        counters[k.I_AB_BATCH] = 1
        for table, top in (
            ("RFREE", k.I_RFREE_TOP),
            ("UFREE", k.I_UFREE_TOP),
            ("CNFREE", k.I_CN_FREE_TOP),
            ("CHFREE", k.I_CH_FREE_TOP),
            ("BCFREE", k.I_BC_FREE_TOP),
        ):
            counters[top] = self[table].shape[0]  # every row free
        counters[k.I_CH_HEAD] = -1
        counters[k.I_CH_TAIL] = -1
        counters[k.I_SPAWN_RATE] = 1
        counters[k.I_HOLD_OFF] = plan.hold_off
        counters[k.I_BATCH] = 5
        counters[k.I_STOP_AT] = k.NEVER
        stop_after = run.stop_after_requests
        counters[k.I_STOP_AFTER] = -1 if stop_after is None else stop_after
        config[k.C_MAX_INSIDE] = run.max_in_flight
        config[k.C_MAX_BATCHES] = MAX_BATCHES
        config[k.C_N_BINS] = bins.n_bins
        config_float[k.CF_BIN_MIN] = bins.min_value
        config_float[k.CF_BIN_LOG_GROWTH] = bins._log_growth
        self._grid(run)

    def _grid(self, run: RunControl) -> None:
        """The progress grid of an MSER run (`sim.observe.checkpoints.Checkpoints`): CELLS
        cells of simulated time, or of completions for a run of `run.requests`."""
        config = self["C"]
        config[k.C_CELLS] = CELLS
        config[k.C_CANDIDATES] = self["CKROWS"].shape[0]
        if not self["CKF"].shape[0]:  # no MSER
            config[k.C_GRID] = k.GRID_NONE
        elif run.duration_s is not None:
            config[k.C_GRID] = k.GRID_TIME
            self["CF"][k.CF_GRID_STEP] = run.duration_s / CELLS
        else:
            assert run.stop_after_requests is not None
            config[k.C_GRID] = k.GRID_REQUESTS
            self["MARKS"] = np.asarray(
                completion_marks(0, run.stop_after_requests, CELLS), dtype=np.int64
            )

    def candidates(self) -> WindowCandidates:
        """The replication's candidate windows, as the reference's recorder gives them."""
        counters, rows, histograms = self["I"], self["ROWS"], self["HROWS"]
        end = int(counters[k.I_NROWS]) - 1
        if self["C"][k.C_GRID] == k.GRID_NONE:
            return single_window(rows[0], rows[end], histograms[0], histograms[end])
        taken = int(counters[k.I_CK_N])
        grid_rows, grid_histograms = self["CKROWS"], self["CKHIST"]
        kept = min(taken, grid_rows.shape[0])
        grid = self["CKF"][:taken]
        # views of the tables' rows: `candidates_of` stacks them into arrays of its own
        return candidates_of(
            grid[:, 0].tolist(),
            grid[:, 1].tolist(),
            grid[:, 2].tolist(),
            list(grid_rows[:kept]),
            list(grid_histograms[:kept]),
            end_row=rows[end],
            end_histogram=histograms[end],
            end_completed=float(counters[k.I_COMPLETED]),
            end_response_sum=float(self["F"][k.F_RESPONSE_SUM]),
        )

    def observe_capacity(self) -> None:
        """The front's workers are its children's threads: their probe reads the capacity
        now, as the reference's `ChildProcesses` does."""
        view = self.plan.workers_view
        if view is not None and self.plan.children:
            p = int(self["STI"][int(self["C"][k.C_FRONT]), k.ST_POOL])
            view.capacity = int(self["POI"][p, k.PO_CAPACITY])

    def _calendar_size(self, requests: int) -> int:
        return 8 * self.plan.levels * requests + int(self.plan.config[k.C_MAX_CORES]) + 1024

    def state(self) -> k.State:
        return k.new_state(self.tables)

    def _grow(self, family: str, more: int, top: int | None = None) -> None:
        """Every table of a family of rows (`kernel.tables.ROWS`), `more` rows longer; its
        free-row stack, whose top is `counters[top]`, with the new rows pushed."""
        for table in k.TABLES:
            if table.rows != family:
                continue
            if table.free:
                assert top is not None
                size = self[table.name].shape[0]
                self[table.name] = _grown_free_rows(self[table.name], self["I"], top, size, more)
            else:
                self[table.name] = table.grown(self[table.name], more)

    def grow(self) -> None:
        """Double whichever table the loop found too small (requests, calendar, sessions)."""
        counters, config, levels = self["I"], self["C"], self.plan.levels
        logged = self["KLOG"].shape[0]
        if config[k.C_CLASSES] and counters[k.I_KLOG_N] + counters[k.I_REQ_USED] + 8 > logged:
            self._grow("class_log", max(logged, int(counters[k.I_REQ_USED]) + 8))
        requests = self["RI"].shape[0]
        if 2 * counters[k.I_REQ_USED] + 8 > requests:
            self._grow("requests", requests, k.I_RFREE_TOP)
            self._grow("jobs", requests * levels)
            self["CPH"] = np.concatenate([self["CPH"], np.zeros_like(self["CPH"])], axis=1)
            requests *= 2
        needed = self._calendar_size(requests)
        size = self["HT"].shape[0]
        worst = counters[k.I_HEAP_N] + 4 * levels * counters[k.I_REQ_USED] + config[k.C_MAX_CORES]
        if needed > size or worst + 64 > size:
            self._grow("calendar", max(needed, 2 * size) - size)
        users = self["UI"].shape[0]
        if config[k.C_CLIENT] == k.CLIENT_SESSIONS and 2 * counters[k.I_USR_USED] + 8 > users:
            self._grow("users", users, k.I_UFREE_TOP)
        size = self["CH"].shape[0]
        if config[k.C_CHILDREN] and counters[k.I_CH_PRESENT] + 40 > size:
            self._grow("children", size, k.I_CH_FREE_TOP)
            if config[k.C_BACKEND_POOLS]:  # a child's pools: rows child x nodes + node
                self._grow("child_pools", self["BP"].shape[0])
        size = self["BC"].shape[0]
        if config[k.C_BACKEND_POOLS] and counters[k.I_BC_USED] + requests + 16 > size:
            self._grow("backend_connections", max(size, requests + 16), k.I_BC_FREE_TOP)
        self._grow_sessions()
        size = self["CN"].shape[0]
        users = max(int(config[k.C_USERS]), 1)
        if config[k.C_CLIENT_KEEP_ALIVE] and 2 * counters[k.I_CN_USED] + users + 16 > size:
            self._grow("connections", max(size, users + 16), k.I_CN_FREE_TOP)

    def _grow_sessions(self) -> None:
        """The JVMs' sessions: the places still held moved to the front of their rows (the
        expired and the left ones are gone), the table doubled when that leaves too little
        room (`kernel.jvm.needs_room`), and with cookies a key for every user row."""
        config = self["C"]
        if not config[k.C_N_JVMS]:
            return
        jv, jse, jqk, jm = self["JV"], self["JSE"], self["JQK"], self["JM"]
        keys = self["UI"].shape[0] * int(config[k.C_N_NODES])
        if config[k.C_JVM_COOKIES] and keys > jm.shape[1]:
            self["JM"] = np.concatenate(
                [jm, np.full((jm.shape[0], keys - jm.shape[1]), -1)], axis=1
            )
            jm = self["JM"]
        worst = int(config[k.C_LEVELS] * self["I"][k.I_REQ_USED]) + 8
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
        self["JSE"], self["JQK"] = times, owners


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
        row = tables["TSROW"].copy()
        tables.observe_capacity()
        histogram = tables["HIST"].copy()
        if not first:
            metrics = window_metrics(
                plan.columns, last["row"], row, histogram - last["hist"], bins, plan.probes
            )
            metrics["count.in_flight"] = float(tables["I"][k.I_IN_FLIGHT])
            sink(replication, float(tables["F"][k.F_NOW]), metrics)
        last["row"], last["hist"] = row, histogram

    return sample


def simulate(
    model_plan: ModelPlan,
    replication: int,
    seed: int,
    bins: LogBins = BINS,
    timeseries: TimeseriesSink | None = None,
    simulated: SimulatedProgress | None = None,
):
    """Run the compiled loop to its end; returns the plan and the tables (recorder rows,
    checkpoint grid, counters).  `timeseries` receives a sample every
    `run.timeseries_interval_s`, as on the reference engine; `simulated` the simulated time
    and the horizon at each of the loop's pauses (`sim.engines.compiled.pauses`)."""
    plan = build_plan(model_plan)
    assert model_plan.stack is not None  # compile_plan always decides the stack
    # the tables' probes are the stack's layout, or every metric would read the wrong columns
    model_plan.stack.probes.check(plan.probes, "compiled")
    run = model_plan.run
    token = next(_tokens)
    tables = _Tables(plan, run, model_plan.stack.clients_part.keep_alive, bins, token)
    # a finite workload records from its start and runs to its last outcome
    if run.warmup_s is not None:
        tables["C"][k.C_WARMUP] = k.WARMUP_FIXED
        tables["CF"][k.CF_WARMUP_S] = run.warmup_s
    else:
        tables["C"][k.C_WARMUP] = k.WARMUP_FROM_START
    tables["F"][k.F_UNTIL] = run.horizon_s
    streams = Streams(seed, replication)
    k.REFILLS[token] = _refiller(plan, streams, tables["DRAW"])
    script = chain_choice(model_plan.stack.request_classes, streams)
    if script is not None:
        k.SCRIPTS[token] = script
    if timeseries is not None:
        tables["C"][k.C_SAMPLE] = 1
        tables["CF"][k.CF_SAMPLE_INTERVAL] = run.timeseries_interval_s
        k.SAMPLERS[token] = _sampler(plan, tables, bins, replication, timeseries)
    try:
        with announced():  # numba's first compilation is never silent
            status = _run_loop(tables, simulated)
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
        inside = int(tables["I"][k.I_RUNAWAY])
        now = tables["F"][k.F_NOW]
        raise RunawayQueue(
            f"{inside} requests are inside the servers (run.max_in_flight = {run.max_in_flight}) "
            f"at t = {now:.6g} s: the offered load exceeds the capacity of the model"
        )
    return plan, tables


def _run_loop(tables: _Tables, simulated: SimulatedProgress | None) -> int:
    """Call the loop until it ends: after a full table, grown; after a pause
    (`sim.engines.compiled.pauses`), the progress said and any signal handed over."""
    counters, clock = tables["I"], tables["F"]
    with signals_at_pauses() as deliver_signals:
        while True:
            counters[k.I_PAUSE_AT] = counters[k.I_EVENTS] + PAUSE_EVENTS
            status = k.run_events(tables.state())
            if status == k.GROW:
                tables.grow()  # the random blocks are not reallocated: the refill stays bound
            elif status == k.PAUSE:
                deliver_signals()
                if simulated is not None:
                    simulated(float(clock[k.F_NOW]), float(clock[k.F_UNTIL]))
            else:
                return int(status)


def run_trace(
    model_plan: ModelPlan,
    replication: int,
    seed: int,
    timeseries: TimeseriesSink | None = None,
    simulated: SimulatedProgress | None = None,
) -> Trace:
    """One replication of the plan's model to its trace, as the reference hands back its own
    (`sim.run.finish` windows both alike); `simulated` hears how far the replication has
    come, every fraction of a second."""
    started = time.perf_counter()
    plan, tables = simulate(model_plan, replication, seed, BINS, timeseries, simulated)
    tables.observe_capacity()
    counters = tables["I"]
    if plan.server_close is not None:
        plan.server_close.front.last_close = float(tables["F"][k.F_LAST_CLOSE])
        plan.server_close.front.open = int(counters[k.I_FRONT_OPEN])
        plan.server_close.front.client_end = plan.server_close.front.last_close
        plan.server_close.front.watched = plan.server_close.front.open
    end = int(counters[k.I_NROWS]) - 1
    rows, histograms = tables["ROWS"], tables["HROWS"]
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
    run = model_plan.run
    if plan.config[k.C_CLASSES]:
        metrics.update(class_percentiles(run, model_plan.classes, tables, end, units))
    # ab run again: each run's window, as the reference's `_record_batches` marks it
    brows, bhist = tables["BROWS"], tables["BHIST"]
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
    if run.finite:  # as the reference reports a finite workload
        finished = bool(counters[k.I_FINISHED])
        metrics["makespan"] = float(
            tables["F"][k.F_FINISHED_AT] if finished else tables["F"][k.F_NOW]
        )
        units["makespan"] = SECONDS
        if not finished:
            notes.append(
                f"the workload did not finish within run.max_duration_s = {run.max_duration_s:g} s"
            )
    front = model_plan.stack.front if model_plan.stack is not None else None
    if front is not None:
        notes.extend(front.notes)  # what httpd logs when it adjusts the directives
    return Trace(
        replication,
        candidates,
        metrics,
        units,
        mser=run.mser,
        notes=notes,
        batch_size=int(counters[k.I_BATCH]),
        finished=finished,
        started=started,
        events=int(counters[k.I_EVENTS]),
    )


def class_percentiles(
    run: RunControl, names: tuple[str, ...], tables: _Tables, end: int, units: dict[str, str]
) -> dict:
    """`class.NAME.response.pXX`, as the reference's replication computes them: over the
    replication's own MSER window on its batch rows (from the start of recording without
    MSER), from each class's histogram at the window's first and last rows -- here the
    logged completions up to each row, binned as `ClassStats` bins them."""
    start = 0
    if run.mser:  # Recorder.batch_means
        table = tables["ROWS"][: end + 1]
        counts = np.diff(table[:, 1])
        sums = np.diff(table[:, 2])
        full = counts[:-1] if len(counts) > 1 else counts[:0]
        means = sums[: len(full)] / np.where(full > 0, full, 1)
        if len(means) >= 4:
            start = mser_truncation(means, weights=full)
    stats = ClassStats(names)
    stats.bins = BINS
    logged = int(tables["I"][k.I_KLOG_N])
    log = tables["KLOG"][:logged]
    classes = len(stats.names)
    flat = log[:, 0].astype(np.int64) * BINS.n_bins + BINS.index(log[:, 1])

    def snapshot(row: int) -> tuple[int, np.ndarray]:
        upto = int(tables["KROWS"][row])
        counts = np.bincount(flat[:upto], minlength=classes * BINS.n_bins)
        return 0, counts.reshape(classes, BINS.n_bins)

    return stats.window_percentiles(snapshot(start), snapshot(end), units)
