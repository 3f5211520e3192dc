"""Speed and memory of tiersim against a plain SimPy program of the same network.

Each measurement runs in a fresh subprocess (so peak RSS is its own); the two programs
alternate, round after round, so machine noise hits both alike.  Reported: requests per
wall-clock second (simulation only, imports excluded), the tiersim / plain-SimPy ratio
(median of rounds; also by process CPU time, less disturbed by other load on a shared
machine), and tiersim's peak RSS at n and 10 n requests.

    python bench/run_bench.py [--rounds 3] [--requests 200000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {here!r})
which, program, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if program == "plain":
    import plain_simpy
    start, cpu = time.perf_counter(), time.process_time()
    (plain_simpy.mm4 if which == "mm4" else plain_simpy.chain)(n)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
else:
    from sim.model import load_model
    from sim.run.replication import run_replication
    model = load_model({here!r} + "/" + which + ".toml", [f"run.requests={{n}}"])
    start, cpu = time.perf_counter(), time.process_time()
    result = run_replication(model, 0)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert result.metrics["count.completed"] > 0
print(json.dumps({{"wall_s": wall, "cpu_s": cpu, "requests": n, "peak_rss_mb":
resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def measure(which: str, program: str, n: int) -> dict:
    code = CHILD.format(here=str(HERE))
    out = subprocess.run(
        [sys.executable, "-c", code, which, program, str(n)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--memory-factor", type=int, default=10)
    args = parser.parse_args()
    n = args.requests
    report = {"requests": n, "rounds": args.rounds, "cases": {}}
    for which, label in (
        ("mm4", "(a) M/M/4, rho = 0.9"),
        ("chain", "(b) closed 3-tier chain, N = 100"),
    ):
        rates = {"plain": [], "tiersim": []}
        ratios, cpu_ratios = [], []
        for _ in range(args.rounds):
            plain = measure(which, "plain", n)
            ours = measure(which, "tiersim", n)
            rates["plain"].append(n / plain["wall_s"])
            rates["tiersim"].append(n / ours["wall_s"])
            ratios.append(plain["wall_s"] / ours["wall_s"])
            cpu_ratios.append(plain["cpu_s"] / ours["cpu_s"])
        small = measure(which, "tiersim", n)
        large = measure(which, "tiersim", n * args.memory_factor)
        case = {
            "label": label,
            "plain_simpy_req_per_s": statistics.median(rates["plain"]),
            "tiersim_req_per_s": statistics.median(rates["tiersim"]),
            "speed_ratio_median": statistics.median(ratios),
            "speed_ratios": ratios,
            "cpu_time_ratio_median": statistics.median(cpu_ratios),
            "cpu_time_ratios": cpu_ratios,
            "tiersim_peak_rss_mb": small["peak_rss_mb"],
            f"tiersim_peak_rss_mb_{args.memory_factor}x": large["peak_rss_mb"],
            "rss_ratio": large["peak_rss_mb"] / small["peak_rss_mb"],
        }
        report["cases"][which] = case
        print(
            f"{label}: plain SimPy {case['plain_simpy_req_per_s']:,.0f} req/s, tiersim "
            f"{case['tiersim_req_per_s']:,.0f} req/s, ratio {case['speed_ratio_median']:.2f}x "
            f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)}); CPU-time ratio "
            f"{case['cpu_time_ratio_median']:.2f}x; peak RSS {small['peak_rss_mb']:.0f} MB at "
            f"{n:,} -> {large['peak_rss_mb']:.0f} MB at {n * args.memory_factor:,} ({case['rss_ratio']:.2f}x)",
            flush=True,
        )
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
