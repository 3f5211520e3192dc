"""Multi-class product-form networks: exact multi-class MVA, Schweitzer-Bard approximate MVA,
and open multi-class (BCMP) networks.

Closed: C chains, chain c with a fixed population N_c and its own think time Z_c; station k
serves chain c with demand D_kc (visits x service time per visit).  Exact MVA (Reiser &
Lavenberg, "Mean-value analysis of closed multichain queuing networks", JACM 27(2), 1980)
runs the recursion over every population vector n <= N, so its cost is prod_c (N_c + 1):
by the arrival theorem a chain-c customer arriving at station k sees the network with one
chain-c customer fewer,

    R_kc(n) = D_kc (1 + Q_k(n - e_c))                    single server (FCFS exp., PS)
    R_kc(n) = D_kc sum_j j / min(j, m_k) p_k(j-1 | n - e_c)   m_k servers (load-dependent)
    X_c(n)  = n_c / (Z_c + sum_k R_kc(n)),   Q_kc(n) = X_c(n) R_kc(n)

with the marginal probabilities p_k(j | n) = sum_c X_c(n) D_kc / min(j, m_k) p_k(j-1 | n - e_c)
(Bolch, Greiner, de Meer & Trivedi, *Queueing Networks and Markov Chains*, 1998, §8.2).
Beyond `STATE_LIMIT` vectors the Schweitzer (1979) / Bard (1979) approximation replaces
Q_k(n - e_c) by Q_k(N) - Q_kc(N) / N_c and iterates at N alone, multi-server stations by
Seidmann's approximation (a single server of demand D/m plus a delay of D (m-1)/m).

Open: class c arrives at rate lambda_c (Poisson); a processor-sharing station with m servers
has the M/M/m number-in-system distribution of its total load, and a job's mean residence is
proportional to its demand (BCMP 1975; Kelly 1979), so R_kc = D_kc * R_k / D_k with D_k the
demand averaged over the arrivals -- for one server, R_kc = D_kc / (1 - rho_k).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STATE_LIMIT = 200_000  # population vectors the exact recursion may visit


@dataclass(frozen=True)
class MultiClassNetwork:
    """Stations (rows) by classes (columns) of demands; `servers[k]` None = a delay station."""

    stations: tuple[str, ...]
    demands: np.ndarray  # shape (K, C) [s]
    servers: tuple[int | None, ...]
    think: tuple[float, ...]  # Z_c per class [s] (closed networks)

    def __post_init__(self) -> None:
        demands = np.asarray(self.demands, dtype=float)
        if demands.shape != (len(self.stations), len(self.think)):
            raise ValueError(
                f"demands must be stations x classes = {len(self.stations)} x {len(self.think)}, "
                f"got {demands.shape}"
            )
        if (demands < 0).any() or any(z < 0 for z in self.think):
            raise ValueError("demands and think times must be >= 0")
        object.__setattr__(self, "demands", demands)


@dataclass
class MultiClassResult:
    method: str  # "exact multi-class MVA", "Schweitzer-Bard approximate MVA", "open (BCMP)"
    throughput: np.ndarray  # X_c [1/s]
    response: np.ndarray  # R_c, think time excluded [s]
    residence: np.ndarray  # R_kc [s], per request of class c at station k, all visits
    queue_length: np.ndarray  # Q_kc
    utilization: np.ndarray  # per station, per server (0 for delays)


def state_space(populations: tuple[int, ...]) -> int:
    return int(np.prod([n + 1 for n in populations], dtype=float))


def solve_closed(
    network: MultiClassNetwork, populations: tuple[int, ...], state_limit: int = STATE_LIMIT
) -> MultiClassResult:
    """Exact multi-class MVA when the population vectors number at most `state_limit`, else
    Schweitzer-Bard; `result.method` says which."""
    if state_space(populations) <= state_limit:
        return exact_multiclass_mva(network, populations)
    return schweitzer_multiclass_mva(network, populations)


def exact_multiclass_mva(
    network: MultiClassNetwork, populations: tuple[int, ...]
) -> MultiClassResult:
    d = network.demands
    k_count, c_count = d.shape
    total = sum(populations)
    multi = [k for k, m in enumerate(network.servers) if m is not None and m > 1]
    zero = tuple(0 for _ in populations)
    # the recursion goes level by level (customers in total): level s needs only level s - 1,
    # so memory is one level of vectors, each with its stations' queue lengths and marginals
    queue: dict[tuple[int, ...], np.ndarray] = {zero: np.zeros(k_count)}
    marginal: dict[tuple[int, ...], dict[int, np.ndarray]] = {
        zero: {k: np.array([1.0]) for k in multi}
    }
    r = np.zeros((k_count, c_count))
    x = np.zeros(c_count)
    for size in range(1, total + 1):
        level = {
            (*m[:c], m[c] + 1, *m[c + 1 :])
            for m in queue
            for c in range(c_count)
            if m[c] < populations[c]
        }
        next_queue: dict[tuple[int, ...], np.ndarray] = {}
        next_marginal: dict[tuple[int, ...], dict[int, np.ndarray]] = {}
        for n in sorted(level):
            r = np.zeros((k_count, c_count))
            x = np.zeros(c_count)
            for c in range(c_count):
                if n[c] == 0:
                    continue
                fewer = (*n[:c], n[c] - 1, *n[c + 1 :])
                for k, servers in enumerate(network.servers):
                    if servers is None:
                        r[k, c] = d[k, c]
                    elif servers == 1:
                        r[k, c] = d[k, c] * (1.0 + queue[fewer][k])
                    else:
                        p = marginal[fewer][k]
                        j = np.arange(1, len(p) + 1)
                        r[k, c] = d[k, c] * float((j / np.minimum(j, servers) * p).sum())
                x[c] = n[c] / (network.think[c] + r[:, c].sum())
            next_queue[n] = (r * x).sum(axis=1)
            next_marginal[n] = {}
            for k in multi:
                servers = network.servers[k]
                assert servers is not None  # multi: the stations with more than one server
                new = np.zeros(size + 1)
                j = np.arange(1, size + 1)
                for c in range(c_count):
                    if n[c] == 0:
                        continue
                    fewer = (*n[:c], n[c] - 1, *n[c + 1 :])
                    new[1:] += x[c] * d[k, c] / np.minimum(j, servers) * marginal[fewer][k]
                new[0] = max(0.0, 1.0 - new[1:].sum())
                next_marginal[n][k] = new / new.sum()
        queue, marginal = next_queue, next_marginal
    return _result("exact multi-class MVA", network, x, r)


def schweitzer_multiclass_mva(
    network: MultiClassNetwork,
    populations: tuple[int, ...],
    tol: float = 1e-10,
    max_iter: int = 100_000,
) -> MultiClassResult:
    d = network.demands
    k_count, c_count = d.shape
    n = np.asarray(populations, dtype=float)
    queues = [k for k, m in enumerate(network.servers) if m is not None]
    q = np.zeros((k_count, c_count))
    if queues:
        q[queues, :] = n / len(queues)
    r = np.zeros((k_count, c_count))
    x = np.zeros(c_count)
    for _ in range(max_iter):
        total = q.sum(axis=1)
        for c in range(c_count):
            if n[c] == 0:
                continue
            seen = total - q[:, c] / n[c]  # the queue an arriving chain-c customer sees
            for k, servers in enumerate(network.servers):
                if servers is None:
                    r[k, c] = d[k, c]
                else:
                    r[k, c] = d[k, c] / servers * (1 + seen[k]) + d[k, c] * (servers - 1) / servers
            x[c] = n[c] / (network.think[c] + r[:, c].sum())
        new = r * x
        if np.max(np.abs(new - q) / np.maximum(new, 1e-300)) < tol:
            q = new
            break
        q = new
    return _result("Schweitzer-Bard approximate MVA", network, x, r)


def _result(
    method: str, network: MultiClassNetwork, x: np.ndarray, r: np.ndarray
) -> MultiClassResult:
    servers = np.array([np.inf if m is None else m for m in network.servers], dtype=float)
    return MultiClassResult(
        method=method,
        throughput=x.copy(),
        response=r.sum(axis=0),
        residence=r.copy(),
        queue_length=r * x,
        utilization=(network.demands * x).sum(axis=1) / servers,
    )
