"""Instruction counts per request (valgrind callgrind): a noise-free companion to run_bench.py.

Wall-clock ratios on a shared machine move by +-30 % from round to round; instruction counts
do not (callgrind counts the same total for the same program and inputs).  Each program runs
at two lengths, n and 5n, and the per-request count is (I(5n) - I(n)) / 4n, which cancels
interpreter start-up and imports.  Instructions are not time (cache and branch behaviour
differ), so this is reported beside the wall-clock ratio, never instead of it.

    python bench/instructions.py [--requests 5000]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import sys
sys.path.insert(0, {here!r})
which, program, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if program == "plain":
    import plain_simpy
    getattr(plain_simpy, which)(n)
else:
    from sim.model import load_model
    from sim.run.replication import run_replication
    # the reference engine: the readable one, whose speed against plain SimPy is the bar
    overrides = [f"run.requests={{n}}", "run.engine=reference"]
    run_replication(load_model({here!r} + "/" + which + ".toml", overrides), 0)
"""


def instructions(which: str, program: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/cg.out",
                sys.executable,
                "-c",
                CHILD.format(here=str(HERE)),
                which,
                program,
                str(n),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stderr
    return int(re.search(r"Collected : (\d+)", out).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=5000)
    args = parser.parse_args()
    n = args.requests
    jobs = [(w, p, k) for w in ("mm4", "chain") for p in ("plain", "tiersim") for k in (n, 5 * n)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: instructions(*job), jobs)))
    report = {}
    for which in ("mm4", "chain"):
        per = {
            p: (counts[(which, p, 5 * n)] - counts[(which, p, n)]) / (4 * n)
            for p in ("plain", "tiersim")
        }
        report[which] = {
            "plain_instructions_per_request": per["plain"],
            "tiersim_instructions_per_request": per["tiersim"],
            "ratio": per["plain"] / per["tiersim"],
        }
        print(
            f"{which}: plain SimPy {per['plain']:,.0f} instructions/request, tiersim {per['tiersim']:,.0f}; "
            f"ratio {per['plain'] / per['tiersim']:.2f}x",
            flush=True,
        )
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "instructions.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
