"""Coverage of interval methods for M/M/1's mean, p95 and p99 at heavy load, by repeating
whole experiments of R replications. Exact FCFS sojourn times from the Lindley recursion
(vectorised: W_n = U_n - min_{k<=n} U_k), the queue starting empty as the simulator's does.

Warm-up: MSER-5 per replication (the old pipeline), MSER on the replications' average (the new
one), a fixed 10 % of the run, none. Percentile intervals: the t interval of the replications'
own percentiles (old), sectioning around the pooled percentile (new), and the inversion of
t intervals on the replications' empirical distribution functions.

    python experiments/heavy_load/coverage.py RATE DURATION_S REPLICATIONS EXPERIMENTS LEVEL
    python experiments/heavy_load/coverage.py 9.5 5000 30 40 0.95
"""

from __future__ import annotations

import math
import sys

import numpy as np
from scipy import stats

from sim.stats.mser import mser_truncation

MU = 10.0


def mm1_path(rng, rate: float, duration_s: float) -> tuple[np.ndarray, np.ndarray]:
    n = int(rate * duration_s * 1.1) + 100
    gaps = rng.exponential(1 / rate, n)
    service = rng.exponential(1 / MU, n)
    arrivals = np.cumsum(gaps)
    n = int(np.searchsorted(arrivals, duration_s))
    arrivals, gaps, service = arrivals[:n], gaps[:n], service[:n]
    walk = np.concatenate(([0.0], np.cumsum(service[:-1] - gaps[1:])))
    response = walk - np.minimum.accumulate(walk) + service
    departures = arrivals + response
    done = departures <= duration_s
    return departures[done], response[done]


def batched(values: np.ndarray, rows: int = 512) -> tuple[int, np.ndarray]:
    size = 5
    while len(values) / size > rows:
        size *= 2
    k = len(values) // size
    return size, values[: k * size].reshape(k, size).mean(axis=1)


def main(rate: float, duration_s: float, replications: int, experiments: int, level: float):
    theta = MU - rate
    truth = {"mean": 1 / theta, "p95": -math.log(0.05) / theta, "p99": -math.log(0.01) / theta}
    t = stats.t.ppf((1 + level) / 2, replications - 1)
    root = math.sqrt(replications)
    rng = np.random.default_rng(12345)
    grid = np.exp(np.linspace(math.log(1e-3), math.log(200), 3000))
    tally: dict[str, list] = {}

    def record(name: str, low: float, high: float, key: str) -> None:
        entry = tally.setdefault(name, [0, 0, []])
        entry[0] += low <= truth[key] <= high
        entry[1] += 1
        entry[2].append((high - low) / 2)

    for _ in range(experiments):
        paths = [mm1_path(rng, rate, duration_s) for _ in range(replications)]
        for warmup in ("MSER per replication", "MSER on the average", "fixed 10 %", "none"):
            if warmup == "MSER on the average":
                size = max(batched(r)[0] for _, r in paths)
                k = min(len(r) // size for _, r in paths)
                z = np.mean([r[: k * size].reshape(k, size).mean(axis=1) for _, r in paths], 0)
                cut = mser_truncation(z) * size
                windows = [r[cut:] for _, r in paths]
            elif warmup == "MSER per replication":
                windows = []
                for _, r in paths:
                    size, z = batched(r)
                    windows.append(r[mser_truncation(z) * size :])
            elif warmup == "fixed 10 %":
                windows = [r[d > 0.1 * duration_s] for d, r in paths]
            else:
                windows = [r for _, r in paths]
            means = np.array([w.mean() for w in windows])
            half = t * means.std(ddof=1) / root
            record(f"{warmup}: mean, t", means.mean() - half, means.mean() + half, "mean")
            pooled = np.concatenate(windows)
            for q, key in ((0.95, "p95"), (0.99, "p99")):
                own = np.array([np.quantile(w, q) for w in windows])
                half = t * own.std(ddof=1) / root
                record(f"{warmup}: {key}, t of own", own.mean() - half, own.mean() + half, key)
                xi = float(np.quantile(pooled, q))
                half = t * math.sqrt(((own - xi) ** 2).sum() / (replications - 1)) / root
                record(f"{warmup}: {key}, sectioning", xi - half, xi + half, key)
                cdf = np.array(
                    [np.searchsorted(np.sort(w), grid, "right") / len(w) for w in windows]
                )
                mean, half = cdf.mean(0), t * cdf.std(0, ddof=1) / root
                low, high = grid[np.argmax(mean + half >= q)], grid[np.argmax(mean - half >= q)]
                record(f"{warmup}: {key}, CDF inversion", low, high, key)
    for name, (hits, n, halves) in tally.items():
        print(f"{name:42s} {hits}/{n} = {hits / n:.2f}  mean half-width {np.mean(halves):.3f}")


if __name__ == "__main__":
    main(
        float(sys.argv[1]),
        float(sys.argv[2]),
        int(sys.argv[3]),
        int(sys.argv[4]),
        float(sys.argv[5]),
    )
