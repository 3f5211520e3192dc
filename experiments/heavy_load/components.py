"""Which part of the old pipeline biased heavy-load figures: MSER per replication, the
averaging of per-replication percentiles, or the histogram?  M/M/1 (mu = 10/s), raw response
times captured beside the recorder, each part switched on alone.

    PYTHONPATH=. python experiments/heavy_load/components.py 9.5 5000 30
"""

from __future__ import annotations

import math
import sys

import numpy as np

from sim.observe import recorder as recorder_module
from sim.run import replication as replication_module
from sim.stats.confidence import t_interval
from sim.stats.mser import mser_truncation
from tests.conftest import model_from

RAW: list[tuple[float, float]] = []
_complete = recorder_module.Recorder.complete


def _capture(self, response_time: float) -> None:
    RAW.append((self.kernel.env._now, response_time))
    _complete(self, response_time)


def main(rate: float, duration_s: float, replications: int) -> None:
    recorder_module.Recorder.complete = _capture  # type: ignore[method-assign]
    data = {
        "clients": {"kind": "open", "rate_per_s": rate},
        "backends": [
            {
                "name": "server",
                "threads": 1,
                "cores": 1,
                "demand": {"dist": "exponential", "mean": 0.1},
            }
        ],
        "run": {"duration_s": duration_s, "warmup": "none"},
    }
    model = model_from(data)
    theta = 10.0 - rate
    truth = {"mean": 1 / theta, "p95": -math.log(0.05) / theta, "p99": -math.log(0.01) / theta}
    runs = []
    for r in range(replications):
        RAW.clear()
        replication_module.run_replication(model, r, 1)
        raw = np.asarray(RAW)
        runs.append((raw[:, 0], raw[:, 1]))

    def per_replication_mser(times, values):
        # MSER-5 on each replication alone, on batches as the recorder made them (<= 512)
        batch = 5
        while len(values) / batch > 512:
            batch *= 2
        k = len(values) // batch
        cut = mser_truncation(values[: k * batch].reshape(k, batch).mean(axis=1)) * batch
        return values[cut:], times[cut] if cut < len(times) else times[-1]

    windows = {
        "MSER per replication": [per_replication_mser(t, x)[0] for t, x in runs],
        "no deletion": [x for _, x in runs],
        f"fixed {0.1 * duration_s:g} s": [x[t > 0.1 * duration_s] for t, x in runs],
        f"fixed {0.2 * duration_s:g} s": [x[t > 0.2 * duration_s] for t, x in runs],
    }
    cuts = sorted(per_replication_mser(t, x)[1] for t, x in runs)
    print("truth", {k: round(v, 3) for k, v in truth.items()})
    print("per-replication MSER cut times [s]:", [round(c) for c in cuts if c > 0])
    for label, parts in windows.items():
        line = f"{label:22s}"
        for key, q in (("mean", None), ("p95", 0.95), ("p99", 0.99)):
            own = [
                p.mean() if q is None else np.quantile(p, q, method="inverted_cdf") for p in parts
            ]
            ci = t_interval(own, 0.95)
            pooled = np.concatenate(parts)
            whole = pooled.mean() if q is None else np.quantile(pooled, q, method="inverted_cdf")
            miss = "" if ci.contains(truth[key]) else " MISS"
            line += f" | {key} {ci.mean:.3f} [{ci.low:.3f}, {ci.high:.3f}]{miss} pooled {whole:.3f}"
        print(line)


if __name__ == "__main__":
    main(float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]))
