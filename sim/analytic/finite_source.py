"""Finite source (machine repairman) M/M/c//N: N clients thinking Exp(Z), c servers Exp(S).

Birth-death rates lambda_n = (N - n)/Z, mu_n = min(n, c)/S (Kleinrock 1975, vol. 1 section 3.9;
Bolch et al. 1998 section 6.7).  Computed in log space so N of several thousands is stable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FiniteSourceMetrics:
    probabilities: np.ndarray  # P(n at the station), n = 0..N
    mean_in_system: float
    mean_in_queue: float
    throughput: float
    mean_response: float
    utilization: float  # per server


def finite_source(clients: int, think: float, service: float, servers: int) -> FiniteSourceMetrics:
    if clients < 1 or servers < 1 or think <= 0 or service <= 0:
        raise ValueError("need clients >= 1, servers >= 1, think > 0, service > 0")
    log_p = np.zeros(clients + 1)
    for n in range(1, clients + 1):
        log_p[n] = (
            log_p[n - 1] + math.log((clients - n + 1) / think) - math.log(min(n, servers) / service)
        )
    p = np.exp(log_p - log_p.max())
    p /= p.sum()
    ns = np.arange(clients + 1)
    big_l = float((ns * p).sum())
    lq = float((np.maximum(ns - servers, 0) * p).sum())
    x = (clients - big_l) / think
    return FiniteSourceMetrics(p, big_l, lq, x, big_l / x, x * service / servers)
