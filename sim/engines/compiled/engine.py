"""Run one replication on the compiled engine: allocate the tables, feed the random streams,
grow the tables when the loop asks, and turn the recorder's rows into the reference's metrics.

Random numbers are drawn here, by NumPy, from the reference's own streams
(`Streams(seed, replication).generator(purpose)`) in the reference's blocks of 4096, and
handed to the compiled loop block by block: both engines see the same numbers.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from sim.engines.compiled import kernel as k
from sim.engines.compiled.plan import Plan, build_plan
from sim.model.schema import Model
from sim.observe.metrics import window_metrics
from sim.random.streams import Streams
from sim.stats.histogram import LogBins
from sim.stats.mser import mser_truncation
from sim.tiers.clients.populations import RunawayQueue

BLOCK = 4096  # the reference samplers' block: the same numbers in the same order
MAX_BATCHES = 256  # the reference recorder's default
_tokens = itertools.count(1)


def _refiller(plan: Plan, streams: Streams, block: np.ndarray):
    """refill(stream): the next BLOCK numbers of that stream, written into its row."""
    sources = []
    for spec in plan.streams:
        rng = streams.generator(spec.purpose)
        if spec.geometric_p is not None:
            p = spec.geometric_p
            sources.append(lambda rng=rng, p=p: rng.geometric(p, BLOCK))
        elif spec.distribution is None:
            sources.append(lambda rng=rng: rng.random(BLOCK))
        else:
            distribution = spec.distribution
            sources.append(lambda rng=rng, d=distribution: d.sample(rng, BLOCK))
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
        members = plan.members.shape[0]
        self.members_float = np.zeros((members, sizes["BF"]), dtype=np.float64)
        self.members_float[:, k.BF_WEIGHT] = plan.weights
        self.draws = np.zeros((max(len(plan.streams), 1), BLOCK), dtype=np.float64)
        self.positions = np.full(self.draws.shape[0], BLOCK, dtype=np.int64)
        self.kinds = np.zeros(self.draws.shape[0], dtype=np.int64)
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
        self.token = token

        self.counters[k.I_RFREE_TOP] = requests
        self.counters[k.I_UFREE_TOP] = users
        self.counters[k.I_BATCH] = 5
        self.counters[k.I_STOP_AT] = k.NEVER
        self.counters[k.I_STOP_AFTER] = -1 if model.run.requests is None else model.run.requests
        self.config[k.C_MAX_INSIDE] = model.run.max_in_flight
        self.config[k.C_MAX_BATCHES] = MAX_BATCHES
        self.config[k.C_N_BINS] = bins.n_bins
        self.config_float[k.CF_BIN_MIN] = bins.min_value
        self.config_float[k.CF_BIN_LOG_GROWTH] = bins._log_growth

    def _calendar_size(self, requests: int) -> int:
        return 8 * self.plan.levels * requests + int(self.plan.config[k.C_MAX_CORES]) + 1024

    def state(self) -> k.State:
        return k.State(
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
            self.token,
        )

    def grow(self) -> None:
        """Double whichever table the loop found too small (requests, calendar, sessions)."""
        counters, levels = self.counters, self.plan.levels
        requests = self.requests_int.shape[0]
        if 2 * counters[k.I_REQ_USED] + 8 > requests:
            more = requests
            self.requests_int = _extend(self.requests_int, more)
            self.requests_float = _extend(self.requests_float, more)
            self.jobs_int = _extend(self.jobs_int, more * levels)
            self.jobs_float = _extend(self.jobs_float, more * levels)
            self.scratch = np.zeros(2 * requests * levels, dtype=np.int64)
            self.cpu_heaps = np.concatenate([self.cpu_heaps, np.zeros_like(self.cpu_heaps)], axis=1)
            top = counters[k.I_RFREE_TOP]
            free = np.zeros(2 * requests, dtype=np.int64)
            free[:top] = self.free_requests[:top]
            free[top : top + more] = np.arange(2 * requests - 1, requests - 1, -1)
            self.free_requests = free
            counters[k.I_RFREE_TOP] = top + more
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
            top = counters[k.I_UFREE_TOP]
            free = np.zeros(2 * users, dtype=np.int64)
            free[:top] = self.free_users[:top]
            free[top : top + users] = np.arange(2 * users - 1, users - 1, -1)
            self.free_users = free
            counters[k.I_UFREE_TOP] = top + users


def _extend(array: np.ndarray, more: int) -> np.ndarray:
    return np.concatenate([array, np.zeros((more, *array.shape[1:]), dtype=array.dtype)])


def simulate(model: Model, replication: int, seed: int, bins: LogBins):
    """Run the compiled loop to its end; returns the tables (recorder rows, counters)."""
    plan = build_plan(model)
    run = model.run
    fixed_warmup = run.warmup if isinstance(run.warmup, float) else None
    token = next(_tokens)
    tables = _Tables(plan, model, bins, token)
    if fixed_warmup is not None:
        tables.config[k.C_WARMUP] = k.WARMUP_FIXED
        tables.config_float[k.CF_WARMUP_S] = fixed_warmup
    else:
        tables.config[k.C_WARMUP] = k.WARMUP_FROM_START
    warm = fixed_warmup or 0.0
    tables.floats[k.F_UNTIL] = (
        warm + run.duration_s if run.duration_s is not None else run.max_duration_s
    )
    k.REFILLS[token] = _refiller(plan, Streams(seed, replication), tables.draws)
    try:
        while True:
            status = k.run_events(tables.state())
            if status == k.GROW:
                tables.grow()  # the random blocks are not reallocated: the refill stays bound
                continue
            break
    finally:
        k.REFILLS.pop(token, None)
    if status == k.RUNAWAY:
        inside = int(tables.counters[k.I_RUNAWAY])
        raise RunawayQueue(
            f"{inside} requests are inside the servers (run.max_in_flight = {run.max_in_flight}) "
            f"at t = {tables.floats[k.F_NOW]:.6g} s: the offered load exceeds the capacity of the model"
        )
    return plan, tables


def run_replication(model: Model, replication: int, seed: int, bins: LogBins) -> dict:
    """One replication's metrics and run facts, as the reference computes them."""
    started = time.perf_counter()
    plan, tables = simulate(model, replication, seed, bins)
    counters = tables.counters
    n = int(counters[k.I_NROWS])
    table = tables.rows[:n]
    start = 0
    if model.run.warmup == "mser":
        counts = np.diff(table[:, 1])
        sums = np.diff(table[:, 2])
        full = counts[:-1] if len(counts) > 1 else counts[:0]
        means = sums[: len(full)] / np.where(full > 0, full, 1)
        if len(means) >= 4:
            start = mser_truncation(means, weights=full)
    end = n - 1
    histogram = tables.histogram_rows[end] - tables.histogram_rows[start]
    metrics = window_metrics(
        plan.columns, table[start], table[end], histogram, bins, plan.capacities
    )
    metrics["count.in_flight"] = float(counters[k.I_IN_FLIGHT])
    return {
        "metrics": metrics,
        "warmup_s": float(table[start][0]),
        "batch_size": int(counters[k.I_BATCH]),
        "events": int(counters[k.I_EVENTS]),
        "wall_s": time.perf_counter() - started,
        "completed": metrics["count.completed"],
    }
