"""Sweep throughput and exactness: serial against a process pool and a Dask LocalCluster, on the
same 200-point sweep (`sweep_bench.toml`), side by side in one run; then a sweep killed half-way
(SIGKILL, then SIGINT, of the whole process group) and resumed.

The points are run in rounds (blocks of the design): in each round the same block runs
serially in this process (`--serial`), serially in one worker process (the per-point
environment of a pool worker: a small heap, no Dask client beside it), in the process pool
and on Dask, in a rotating order, so that load from other users of a shared machine hits all
alike; the pools and the cluster are started once and their workers reused across rounds.
Reported: points per second of each and the ratios to serial (whole run, median round, and
over the clean rounds: other programs' CPU use is measured during every block with psutil,
the machine's busy time minus this process tree's, and each round first waits for a quiet
machine); whether the result tables (sorted by point id, metric columns) are identical from
every way of running and from the resumed run; how many points each killed run had stored.

    python bench/sweep_bench.py [--workers 2] [--sweep bench/sweep_bench.toml]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from sim.studies.sweep.design import expand
from sim.studies.sweep.execute import (
    DaskExecutor,
    ProcessExecutor,
    SerialExecutor,
    manifest,
    tasks_for,
)
from sim.studies.sweep.spec import load_sweep
from sim.studies.sweep.store import ResultStore, load_results

HERE = Path(__file__).resolve().parent
MODES = ["serial", "one_worker", "pool", "dask"]


def metric_table(root: Path, metrics: tuple[str, ...]):
    frame = load_results(root)
    columns = ["point_id", "status", "seed"] + [c for c in frame.columns if c.startswith(metrics)]
    return frame[columns].sort_values("point_id").reset_index(drop=True)


def _busy_cpu_s() -> float:
    times = psutil.cpu_times()
    return sum(
        getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal")
    )


def _own_cpu_s() -> float:
    """CPU time of this process and its live descendants (pool workers, Dask nannies and workers)."""
    total = 0.0
    for process in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        try:
            t = process.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def run_block(executor, tasks, store: ResultStore) -> tuple[float, float]:
    """(wall seconds, fraction of the machine's cores used by other programs meanwhile)."""
    busy, own = _busy_cpu_s(), _own_cpu_s()
    started = time.perf_counter()
    for record in executor.map_unordered(tasks):
        record.pop("_available_metrics", None)
        store.write(record)
    wall = time.perf_counter() - started
    others = (_busy_cpu_s() - busy) - (_own_cpu_s() - own)
    return wall, max(0.0, others / (wall * psutil.cpu_count()))


def wait_for_quiet(threshold: float, limit_s: float) -> float:
    """Wait (up to limit_s) until other programs use less than `threshold` of the cores."""
    deadline = time.monotonic() + limit_s
    while True:
        busy, own = _busy_cpu_s(), _own_cpu_s()
        time.sleep(2.0)
        others = ((_busy_cpu_s() - busy) - (_own_cpu_s() - own)) / (2.0 * psutil.cpu_count())
        if others < threshold or time.monotonic() > deadline:
            return others
        time.sleep(3.0)


def interrupted_then_resumed(
    sweep: Path, root: Path, workers: int, total: int, kills: list[tuple[int, float]]
):
    """Run the CLI; at each (signal, fraction) kill its process group once that fraction of the
    points is stored; finally rerun to completion. Returns the stored counts seen at each kill."""
    command = [
        sys.executable,
        "-c",
        "from sim.cli import entry; entry()",
        "sweep",
        str(sweep),
        "--results",
        str(root),
        "--workers",
        str(workers),
    ]
    seen = []
    for sig, fraction in kills:
        # A job started in the background by a non-interactive shell inherits SIGINT ignored;
        # restore the default so that the CLI sees Ctrl-C as it would in a terminal.
        process = subprocess.Popen(
            command,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        while len(list((root / "points").glob("*.parquet"))) < fraction * total:
            if process.poll() is not None:
                raise RuntimeError(
                    f"the sweep ended before it could be killed: {process.stderr.read().decode()}"
                )
            time.sleep(0.05)
        os.killpg(process.pid, sig)
        code = process.wait()
        seen.append(
            {
                "signal": signal.Signals(sig).name,
                "stored_at_kill": len(list((root / "points").glob("*.parquet"))),
                "exit_code": code,
                "stderr": process.stderr.read().decode().strip()[-200:],
            }
        )
    final = subprocess.run(command, capture_output=True, text=True, check=True)
    return seen, final.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--sweep", default=str(HERE / "sweep_bench.toml"))
    parser.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="blocks of the design, alternating the ways to run them",
    )
    parser.add_argument(
        "--quiet",
        type=float,
        default=0.05,
        help="a round is clean when other programs took less than this share of the cores",
    )
    args = parser.parse_args()
    plan = load_sweep(args.sweep)
    out: dict = {"cores": os.cpu_count(), "workers": args.workers}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        points, _ = expand(plan.spec)
        tasks = tasks_for(plan, points)
        stores = {}
        for mode in MODES:
            stores[mode] = ResultStore(scratch / mode)
            stores[mode].open(manifest(plan, points))
        started = time.perf_counter()
        # one_worker: serial too, but in a worker process like the pool's (a small heap, no
        # Dask client), so that pool / one_worker isolates the parallelism itself.
        executors = {
            "serial": SerialExecutor(),
            "one_worker": ProcessExecutor(1),
            "pool": ProcessExecutor(args.workers),
            "dask": DaskExecutor(local_workers=args.workers),
        }
        out["pool_and_cluster_start_s"] = time.perf_counter() - started
        seconds = {mode: [] for mode in MODES}
        others = []  # per round: the largest share of the cores other programs took during a block
        size = -(-len(tasks) // args.rounds)
        for number in range(args.rounds):
            block = tasks[number * size : (number + 1) * size]
            order = MODES[number % len(MODES) :] + MODES[: number % len(MODES)]
            wait_for_quiet(args.quiet, limit_s=300)
            shares = []
            for mode in order:
                wall, share = run_block(executors[mode], block, stores[mode])
                seconds[mode].append(wall)
                shares.append(share)
            others.append(max(shares))
            print(
                f"round {number + 1}/{args.rounds}: {len(block)} points, "
                + ", ".join(f"{m} {seconds[m][-1]:.1f} s" for m in MODES)
                + f", other programs took up to {others[-1]:.0%} of the cores",
                file=sys.stderr,
            )
        for executor in executors.values():
            executor.close()
        reference = metric_table(scratch / "serial", plan.metrics)
        out["points"] = len(tasks)
        for mode in MODES:
            out[f"{mode}_s"] = sum(seconds[mode])
            out[f"{mode}_points_per_s"] = len(tasks) / sum(seconds[mode])
        clean = [i for i, share in enumerate(others) if share < args.quiet]
        out["rounds"] = args.rounds
        out["other_programs_share_per_round"] = [round(x, 3) for x in others]
        out["clean_rounds"] = len(clean)
        for mode in ("one_worker", "pool", "dask"):
            out[f"{mode}_speedup"] = sum(seconds["serial"]) / sum(seconds[mode])
            out[f"{mode}_speedup_median_round"] = statistics.median(
                s / p for s, p in zip(seconds["serial"], seconds[mode])
            )
            if clean:
                out[f"{mode}_speedup_clean_rounds"] = sum(
                    seconds["serial"][i] for i in clean
                ) / sum(seconds[mode][i] for i in clean)
            out[f"{mode}_table_equals_serial"] = reference.equals(
                metric_table(scratch / mode, plan.metrics)
            )
        out["pool_over_one_worker"] = sum(seconds["one_worker"]) / sum(seconds["pool"])
        out["pool_over_one_worker_median_round"] = statistics.median(
            s / p for s, p in zip(seconds["one_worker"], seconds["pool"])
        )
        out["seconds_per_round"] = {mode: [round(x, 2) for x in seconds[mode]] for mode in MODES}
        if clean:
            out["pool_over_one_worker_clean_rounds"] = sum(
                seconds["one_worker"][i] for i in clean
            ) / sum(seconds["pool"][i] for i in clean)
        out["all_points_ok"] = bool((reference["status"] == "ok").all())
        kills, final = interrupted_then_resumed(
            Path(args.sweep),
            scratch / "killed",
            args.workers,
            len(tasks),
            [(signal.SIGKILL, 0.5), (signal.SIGINT, 0.75)],
        )
        resumed = metric_table(scratch / "killed", plan.metrics)
        out.update(
            {
                "kills": kills,
                "resumed_final_run": final,
                "resumed_points": len(resumed),
                "resumed_unique_ids": bool(resumed["point_id"].is_unique),
                "resumed_table_equals_serial": reference.equals(resumed),
            }
        )
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
