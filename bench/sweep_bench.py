"""Sweep throughput and exactness: serial against a process pool and a Dask LocalCluster, on the
same 200-point sweep (`sweep_bench.toml`), side by side in one run; then a sweep killed half-way
(SIGKILL, then SIGINT, of the whole process group) and resumed.

Reported: points per second serially and in parallel and their ratio; whether the result
tables (sorted by point id, metric columns) are identical from serial, pool, Dask and the
resumed runs; how many points each resumed run found already done.

    python bench/sweep_bench.py [--workers 2] [--sweep bench/sweep_bench.toml]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sim.sweep.execute import DaskExecutor, ProcessExecutor, SerialExecutor, run_sweep
from sim.sweep.spec import load_sweep
from sim.sweep.store import ResultStore, load_results

HERE = Path(__file__).resolve().parent


def metric_table(root: Path, metrics: tuple[str, ...]):
    frame = load_results(root)
    columns = ["point_id", "status", "seed"] + [c for c in frame.columns if c.startswith(metrics)]
    return frame[columns].sort_values("point_id").reset_index(drop=True)


def timed(plan, root: Path, executor) -> tuple[float, int]:
    started = time.perf_counter()
    with executor:
        outcome = run_sweep(plan, ResultStore(root), executor)
    return time.perf_counter() - started, outcome.ran


def interrupted_then_resumed(sweep: Path, root: Path, workers: int, total: int, kills: list[tuple[int, float]]):
    """Run the CLI; at each (signal, fraction) kill its process group once that fraction of the
    points is stored; finally rerun to completion. Returns the stored counts seen at each kill."""
    command = [sys.executable, "-c", "from sim.cli import entry; entry()", "sweep", str(sweep),
               "--results", str(root), "--workers", str(workers)]
    seen = []
    for sig, fraction in kills:
        # A job started in the background by a non-interactive shell inherits SIGINT ignored;
        # restore the default so that the CLI sees Ctrl-C as it would in a terminal.
        process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        while len(list((root / "points").glob("*.parquet"))) < fraction * total:
            if process.poll() is not None:
                raise RuntimeError(f"the sweep ended before it could be killed: {process.stderr.read().decode()}")
            time.sleep(0.05)
        os.killpg(process.pid, sig)
        code = process.wait()
        seen.append({"signal": signal.Signals(sig).name, "stored_at_kill": len(list((root / "points").glob("*.parquet"))),
                     "exit_code": code, "stderr": process.stderr.read().decode().strip()[-200:]})
    final = subprocess.run(command, capture_output=True, text=True, check=True)
    return seen, final.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--sweep", default=str(HERE / "sweep_bench.toml"))
    args = parser.parse_args()
    plan = load_sweep(args.sweep)
    out: dict = {"cores": os.cpu_count(), "workers": args.workers}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        serial_s, points = timed(plan, scratch / "serial", SerialExecutor())
        pool_s, _ = timed(plan, scratch / "pool", ProcessExecutor(args.workers))
        dask_started = time.perf_counter()
        dask = DaskExecutor(local_workers=args.workers)
        dask_setup_s = time.perf_counter() - dask_started
        dask_s, _ = timed(plan, scratch / "dask", dask)
        reference = metric_table(scratch / "serial", plan.metrics)
        out.update({
            "points": points, "serial_s": serial_s, "pool_s": pool_s, "dask_s": dask_s,
            "dask_cluster_start_s": dask_setup_s,
            "serial_points_per_s": points / serial_s, "pool_points_per_s": points / pool_s,
            "dask_points_per_s": points / dask_s, "pool_speedup": serial_s / pool_s, "dask_speedup": serial_s / dask_s,
            "pool_table_equals_serial": reference.equals(metric_table(scratch / "pool", plan.metrics)),
            "dask_table_equals_serial": reference.equals(metric_table(scratch / "dask", plan.metrics)),
            "all_points_ok": bool((reference["status"] == "ok").all()),
        })
        kills, final = interrupted_then_resumed(Path(args.sweep), scratch / "killed", args.workers, points,
                                                [(signal.SIGKILL, 0.5), (signal.SIGINT, 0.75)])
        resumed = metric_table(scratch / "killed", plan.metrics)
        out.update({
            "kills": kills, "resumed_final_run": final,
            "resumed_points": len(resumed), "resumed_unique_ids": bool(resumed["point_id"].is_unique),
            "resumed_table_equals_serial": reference.equals(resumed),
        })
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
