"""Coverage of the calibration's parameter intervals over many seeds (README, "Coverage").

    PYTHONPATH=. python experiments/uncertainty/parameter_coverage.py [TRIALS] [--duration S]

For each queue (M/M/1 at lambda = 5, M/M/2 at lambda = 12, both D = 0.1 s) and each seed: an
exact mean response time with a 3 % measurement error drawn at random, a calibration of D
(sim.studies.coverage.trial), and whether its 95 % interval holds D = 0.1.  Prints
the coverage with its exact (Clopper-Pearson) 95 % interval and the median interval width.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from scipy import stats

from sim.studies.coverage import trial


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trials", type=int, nargs="?", default=50)
    parser.add_argument("--duration", type=float, default=150.0)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        for servers, rate in ((1, 5.0), (2, 12.0)):
            found = [
                trial(
                    Path(scratch) / f"{servers}-{seed}",
                    seed,
                    servers,
                    rate,
                    duration_s=args.duration,
                )
                for seed in range(args.trials)
            ]
            covered = sum(t.covered for t in found)
            low, high = stats.binomtest(covered, len(found)).proportion_ci(0.95)
            width = statistics.median((t.high - t.low) / 2 / t.estimate for t in found)
            print(
                f"M/M/{servers}: {covered} of {len(found)} intervals hold D "
                f"({covered / len(found):.0%}, exact 95 % interval [{low:.0%}, {high:.0%}]; "
                f"nominal 95 %); median half-width ±{width:.1%}"
            )
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
