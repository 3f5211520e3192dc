"""GI/M/1: renewal arrivals to one exponential FCFS server (Kleinrock, Queueing Systems
vol. 1, 1975, GI/M/m chapter).  sigma is the root in (0, 1) of sigma = A*(mu - mu sigma), A*
the Laplace-Stieltjes transform of the interarrival time; R = 1 / (mu (1 - sigma)).

Round robin over N exponential servers gives each server Erlang-N interarrivals (every N-th
Poisson arrival): an E_N/M/1 queue."""

from __future__ import annotations


def erlang_k_m1_sigma(k: int, rate: float, mu: float) -> float:
    """sigma of E_k/M/1 with arrival rate `rate`: A*(s) = (k rate / (k rate + s))^k."""
    if rate >= mu:
        raise ValueError(f"unstable: arrival rate {rate} >= service rate {mu}")
    sigma = rate / mu  # the M/M/1 value, a starting point inside (0, 1)
    for _ in range(10_000):  # a contraction on (0, 1) for rate < mu
        updated = (k * rate / (k * rate + mu - mu * sigma)) ** k
        if abs(updated - sigma) < 1e-15:
            return updated
        sigma = updated
    return sigma


def erlang_k_m1_response(k: int, rate: float, mu: float) -> float:
    """Mean response time of E_k/M/1 [s]."""
    return 1.0 / (mu * (1.0 - erlang_k_m1_sigma(k, rate, mu)))
