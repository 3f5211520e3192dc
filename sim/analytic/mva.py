"""Closed product-form networks: exact MVA, Schweitzer's approximation and bounds.

Exact MVA: Reiser & Lavenberg, "Mean-value analysis of closed multichain queuing networks",
JACM 27(2), 1980; multi-server stations by the load-dependent recursion on marginal
probabilities (Bolch et al. 1998, section 8.2).  Schweitzer (1979) / Bard (1979) approximate
MVA.  Asymptotic and balanced-job bounds: Lazowska, Zahorjan, Graham & Sevcik,
*Quantitative System Performance* (1984), ch. 5.  Demands D_k = V_k S_k in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np


@dataclass(frozen=True)
class Station:
    name: str
    demand: float  # D_k = visits x service time per visit [s]
    kind: Literal["queue", "delay"] = "queue"
    servers: int = 1


@dataclass(frozen=True)
class ClosedNetwork:
    stations: tuple[Station, ...]
    think: float = 0.0  # Z [s]

    def __post_init__(self) -> None:
        if self.think < 0:
            raise ValueError("think time must be >= 0")
        for s in self.stations:
            if s.demand < 0 or s.servers < 1:
                raise ValueError(f"station {s.name}: demand must be >= 0 and servers >= 1")


@dataclass
class MvaResult:
    """Arrays indexed by population n = 1..N (row n-1); per-station arrays have a column per station."""

    population: np.ndarray
    throughput: np.ndarray
    response: np.ndarray  # excluding think time
    residence: np.ndarray
    queue_length: np.ndarray
    utilization: np.ndarray
    names: list[str] = field(default_factory=list)


def exact_mva(network: ClosedNetwork, population: int) -> MvaResult:
    stations = network.stations
    k = len(stations)
    d = np.array([s.demand for s in stations])
    q = np.zeros(k)
    # Marginal probabilities p[k][j] = P(j jobs at multi-server station k), for the network with n-1 jobs.
    marginals = {
        i: np.array([1.0]) for i, s in enumerate(stations) if s.kind == "queue" and s.servers > 1
    }
    rows: dict[str, list] = {name: [] for name in ("x", "r", "rk", "qk", "uk")}
    for n in range(1, population + 1):
        r = np.empty(k)
        for i, s in enumerate(stations):
            if s.kind == "delay":
                r[i] = d[i]
            elif s.servers == 1:
                r[i] = d[i] * (1 + q[i])
            else:
                p = marginals[i]
                j = np.arange(1, n + 1)
                r[i] = float((j * d[i] / np.minimum(j, s.servers) * p[:n]).sum())
        x = n / (network.think + r.sum())
        q = x * r
        for i, p in marginals.items():
            s = stations[i]
            new = np.zeros(n + 1)
            j = np.arange(1, n + 1)
            new[1:] = x * d[i] / np.minimum(j, s.servers) * p[:n]
            new[0] = max(0.0, 1.0 - new[1:].sum())
            marginals[i] = new / new.sum()
        rows["x"].append(x)
        rows["r"].append(r.sum())
        rows["rk"].append(r.copy())
        rows["qk"].append(q.copy())
        rows["uk"].append(
            x * d / np.array([s.servers if s.kind == "queue" else np.inf for s in stations])
        )
    return MvaResult(
        population=np.arange(1, population + 1),
        throughput=np.array(rows["x"]),
        response=np.array(rows["r"]),
        residence=np.array(rows["rk"]),
        queue_length=np.array(rows["qk"]),
        utilization=np.array(rows["uk"]),
        names=[s.name for s in stations],
    )


def schweitzer_mva(
    network: ClosedNetwork, population: int, tol: float = 1e-12, max_iter: int = 100_000
):
    """Approximate MVA at one population: Q_k(N-1) ~ Q_k(N) (N-1)/N.  Multi-server stations
    use Seidmann's approximation (a single server of demand D/c plus a delay of D(c-1)/c).
    Returns (throughput, response, queue lengths)."""
    stations = network.stations
    n = population
    q = np.full(len(stations), n / max(len(stations), 1))
    x = 0.0
    for _ in range(max_iter):
        r = np.empty(len(stations))
        for i, s in enumerate(stations):
            if s.kind == "delay":
                r[i] = s.demand
            else:
                c = s.servers
                r[i] = s.demand / c * (1 + (n - 1) / n * q[i]) + s.demand * (c - 1) / c
        x = n / (network.think + r.sum())
        new_q = x * r
        if np.max(np.abs(new_q - q) / np.maximum(new_q, 1e-300)) < tol:
            q = new_q
            break
        q = new_q
    return x, float(r.sum()), q


@dataclass(frozen=True)
class Bounds:
    throughput_upper: float
    throughput_lower: float
    response_lower: float
    response_upper: float
    saturation_population: float


def asymptotic_bounds(network: ClosedNetwork, population: int) -> Bounds:
    """X <= min(N/(D+Z), min_k c_k/D_k); R >= max(D, N max_k(D_k/c_k) - Z); X >= N/(N D + Z)."""
    queues = [s for s in network.stations if s.kind == "queue"]
    delay = sum(s.demand for s in network.stations if s.kind == "delay")
    d = sum(s.demand for s in queues) + delay
    d_max = max((s.demand / s.servers for s in queues), default=0.0)
    z = network.think
    n = population
    x_up = min(n / (d + z), 1 / d_max if d_max > 0 else np.inf)
    return Bounds(
        throughput_upper=x_up,
        throughput_lower=n / (n * d + z),
        response_lower=max(d, n * d_max - z),
        response_upper=n * d,
        saturation_population=(d + z) / d_max if d_max > 0 else np.inf,
    )


def balanced_job_bounds(network: ClosedNetwork, population: int) -> tuple[float, float]:
    """Balanced-job bounds on X for single-server queues (Zahorjan et al. 1982)."""
    queues = [s.demand for s in network.stations if s.kind == "queue"]
    if any(s.servers > 1 for s in network.stations if s.kind == "queue"):
        raise ValueError("balanced-job bounds need single-server stations")
    d, d_max, z, n = sum(queues), max(queues), network.think, population
    d_avg = d / len(queues)
    upper = min(1 / d_max, n / (d + z + (n - 1) * d_avg / (1 + z / d)))
    lower = n / (d + z + (n - 1) * d_max / (1 + z / (n * d)))
    return upper, lower
