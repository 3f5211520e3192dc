"""Fit each backend's mean CPU demand to its single-backend figure (seed 003), and print
the values to write into lighttpd.toml.

    .venv/bin/python experiments/seed003/calibrate.py

Each backend alone is a closed loop of ab's 16 connections through the proxy; the backend
is the bottleneck, so throughput ~ cores / demand.  The fit starts there and applies the
fixed-point update demand *= simulated / published (three rounds, 5 replications each);
it reads no withheld figure.
"""
from __future__ import annotations

from pathlib import Path

from sim.model.load import load_model
from sim.runner import run

HERE = Path(__file__).resolve().parent
PUBLISHED = {"fast": (0, 2833.60, 2), "slow": (1, 1249.45, 1)}  # group -> (index, req/s, cores)


def fit(group: str, rounds: int = 3, replications: int = 5) -> tuple[float, float, float, float]:
    index, target, cores = PUBLISHED[group]
    demand = cores / target
    for _ in range(rounds):
        model = load_model(HERE / "lighttpd.toml", [
            f'balancer.members=["{group}"]', f'backends.{index}.cpu={{dist="exponential", mean={demand!r}}}'])
        interval = run(model, replications=replications).summary["throughput"]
        demand *= interval.mean / target
    model = load_model(HERE / "lighttpd.toml", [
        f'balancer.members=["{group}"]', f'backends.{index}.cpu={{dist="exponential", mean={demand:.4g}}}'])
    interval = run(model, replications=replications).summary["throughput"]
    return demand, interval.mean, interval.low, interval.high


if __name__ == "__main__":
    for group, (index, target, _) in PUBLISHED.items():
        demand, mean, low, high = fit(group)
        print(f"backends.{index}.cpu mean = {demand:.4g} s  ->  {mean:.1f} req/s [{low:.1f}, {high:.1f}] "
              f"vs published {target} ({(mean - target) / target:+.2%})")
