"""Speed and memory of tiersim's two engines against a plain SimPy program of the same network.

Each measurement runs in a fresh subprocess (so peak RSS is its own); the three programs --
plain SimPy, tiersim's reference engine, tiersim's compiled engine -- alternate, round after
round, so machine noise hits all alike.  Reported: requests per wall-clock second and per
CPU second (simulation only: imports excluded, and for the compiled engine the one-off load
of its cached machine code, timed separately), the ratios to plain SimPy and to the
reference engine (median over rounds of the per-round ratios), and each engine's peak RSS
at n and 10 n requests.

A third case, (c) the Apache 2.4 event MPM + mod_proxy_http + Tomcat 10 model
(`models/apache24-event-tomcat10.toml`: keep-alive clients, httpd's process management, the
backend connection pool), runs on the reference engine alone: the compiled engine does not
implement those mechanisms yet and no plain SimPy program models them.

    python bench/run_bench.py [--rounds 3] [--requests 200000] [--cases mm4,chain,apache24]
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
load = 0.0
if program == "plain":
    import plain_simpy
    start, cpu = time.perf_counter(), time.process_time()
    (plain_simpy.mm4 if which == "mm4" else plain_simpy.chain)(n)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
else:
    from sim.model import load_model
    from sim.run.replication import run_replication
    path = {here!r} + "/" + which + ".toml"
    length = [f"run.requests={{n}}"]
    if which == "apache24":  # a model file of the project; its run.duration_s must not stop it
        path = {here!r} + "/../models/apache24-event-tomcat10.toml"
        length.append("run.duration_s=1e9")
    engine = f"run.engine={{program}}"
    if program == "compiled":  # load the cached machine code before the clock starts
        start = time.perf_counter()
        run_replication(load_model(path, ["run.requests=100", engine]), 0)
        load = time.perf_counter() - start
    model = load_model(path, [*length, engine])
    start, cpu = time.perf_counter(), time.process_time()
    result = run_replication(model, 0)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert result.metrics["count.completed"] > 0 and result.engine == program
print(json.dumps({{"wall_s": wall, "cpu_s": cpu, "requests": n, "load_s": load, "peak_rss_mb":
resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

PROGRAMS = ("plain", "reference", "compiled")


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
    parser.add_argument("--cases", default="mm4,chain,apache24", help="comma-separated")
    args = parser.parse_args()
    cases = args.cases.split(",")
    n = args.requests
    report = {"requests": n, "rounds": args.rounds, "cases": {}}
    measure("mm4", "compiled", 1000)  # compile (or load) the compiled engine once, untimed
    for which, label in (
        ("mm4", "(a) M/M/4, rho = 0.9"),
        ("chain", "(b) closed 3-tier chain, N = 100"),
    ):
        if which not in cases:
            continue
        runs: dict[str, list[dict]] = {program: [] for program in PROGRAMS}
        for _ in range(args.rounds):
            for program in PROGRAMS:
                runs[program].append(measure(which, program, n))
        case: dict = {"label": label}
        for program in PROGRAMS:
            case[f"{program}_req_per_s"] = statistics.median(n / r["wall_s"] for r in runs[program])
            case[f"{program}_req_per_cpu_s"] = statistics.median(
                n / r["cpu_s"] for r in runs[program]
            )
        case["compiled_load_s"] = statistics.median(r["load_s"] for r in runs["compiled"])
        for program, base in (
            ("reference", "plain"),
            ("compiled", "plain"),
            ("compiled", "reference"),
        ):
            ratios = [b["wall_s"] / a["wall_s"] for a, b in zip(runs[program], runs[base])]
            cpu = [b["cpu_s"] / a["cpu_s"] for a, b in zip(runs[program], runs[base])]
            case[f"{program}_over_{base}"] = statistics.median(ratios)
            case[f"{program}_over_{base}_rounds"] = ratios
            case[f"{program}_over_{base}_cpu"] = statistics.median(cpu)
        for program in ("reference", "compiled"):
            small = runs[program][-1]
            large = measure(which, program, n * args.memory_factor)
            case[f"{program}_peak_rss_mb"] = small["peak_rss_mb"]
            case[f"{program}_peak_rss_mb_{args.memory_factor}x"] = large["peak_rss_mb"]
            case[f"{program}_rss_ratio"] = large["peak_rss_mb"] / small["peak_rss_mb"]
            case[f"{program}_req_per_s_{args.memory_factor}x"] = (
                n * args.memory_factor / large["wall_s"]
            )
        report["cases"][which] = case
        print(
            f"{label}: plain SimPy {case['plain_req_per_s']:,.0f} req/s, reference "
            f"{case['reference_req_per_s']:,.0f}, compiled {case['compiled_req_per_s']:,.0f} "
            f"(per CPU second: {case['plain_req_per_cpu_s']:,.0f} / {case['reference_req_per_cpu_s']:,.0f} "
            f"/ {case['compiled_req_per_cpu_s']:,.0f}); compiled / plain "
            f"{case['compiled_over_plain']:.1f}x (CPU {case['compiled_over_plain_cpu']:.1f}x), compiled / "
            f"reference {case['compiled_over_reference']:.1f}x (CPU {case['compiled_over_reference_cpu']:.1f}x; "
            f"rounds {', '.join(f'{r:.1f}' for r in case['compiled_over_reference_rounds'])}), reference / "
            f"plain {case['reference_over_plain']:.2f}x; compiled load {case['compiled_load_s']:.2f} s; "
            f"peak RSS reference {case['reference_peak_rss_mb']:.0f} -> "
            f"{case[f'reference_peak_rss_mb_{args.memory_factor}x']:.0f} MB, compiled "
            f"{case['compiled_peak_rss_mb']:.0f} -> {case[f'compiled_peak_rss_mb_{args.memory_factor}x']:.0f} MB "
            f"at {n:,} -> {n * args.memory_factor:,} requests",
            flush=True,
        )
    if "apache24" in cases:
        report["cases"]["apache24"] = apache24_case(n, args.rounds, args.memory_factor)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(report, indent=2))


def apache24_case(n: int, rounds: int, memory_factor: int) -> dict:
    """(c): the reference engine's rate on the Apache 2.4 event + Tomcat 10 model."""
    runs_c = [measure("apache24", "reference", n) for _ in range(rounds)]
    large_c = measure("apache24", "reference", n * memory_factor)
    case_c = {
        "label": "(c) Apache 2.4 event + Tomcat 10, reference engine",
        "reference_req_per_s": statistics.median(n / r["wall_s"] for r in runs_c),
        "reference_req_per_cpu_s": statistics.median(n / r["cpu_s"] for r in runs_c),
        "reference_req_per_s_rounds": [n / r["wall_s"] for r in runs_c],
        "reference_peak_rss_mb": runs_c[-1]["peak_rss_mb"],
        f"reference_peak_rss_mb_{memory_factor}x": large_c["peak_rss_mb"],
        f"reference_req_per_s_{memory_factor}x": n * memory_factor / large_c["wall_s"],
    }
    print(
        f"{case_c['label']}: {case_c['reference_req_per_s']:,.0f} req/s "
        f"({case_c['reference_req_per_cpu_s']:,.0f} per CPU second; rounds "
        f"{', '.join(f'{r:,.0f}' for r in case_c['reference_req_per_s_rounds'])}); peak RSS "
        f"{case_c['reference_peak_rss_mb']:.0f} -> {large_c['peak_rss_mb']:.0f} MB at {n:,} -> "
        f"{n * memory_factor:,} requests",
        flush=True,
    )
    return case_c


if __name__ == "__main__":
    main()
