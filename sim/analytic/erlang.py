"""Markovian single stations: M/M/1, M/M/c (Erlang C), M/M/c/c (Erlang B), M/M/c/K.

Formulas as in Kleinrock, *Queueing Systems* vol. 1 (1975), and Bolch, Greiner, de Meer &
Trivedi, *Queueing Networks and Markov Chains* (1998), sections 6.3-6.6.  Rates per second,
times in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StationMetrics:
    throughput: float
    utilization: float  # per server
    mean_in_system: float
    mean_in_queue: float
    mean_response: float
    mean_wait: float
    wait_probability: float = math.nan  # P(an arrival waits)
    blocking_probability: float = 0.0  # P(an arrival is refused)


def _check_rates(arrival_rate: float, service_rate: float) -> None:
    if not (arrival_rate > 0 and service_rate > 0):
        raise ValueError(
            f"rates must be > 0 (arrival_rate = {arrival_rate}, service_rate = {service_rate})"
        )


def _check_servers(servers) -> None:
    if int(servers) != servers or servers < 1:
        raise ValueError(f"servers must be a whole number >= 1, got {servers}")


def erlang_b(servers: int, offered_load: float) -> float:
    """Blocking probability of M/G/c/c, by the stable recursion B(k) = aB(k-1)/(k + aB(k-1))."""
    if servers < 0 or int(servers) != servers:
        raise ValueError(f"servers must be a whole number >= 0, got {servers}")
    if offered_load < 0:
        raise ValueError(f"offered load must be >= 0, got {offered_load}")
    b = 1.0
    for k in range(1, int(servers) + 1):
        b = offered_load * b / (k + offered_load * b)
    return b


def erlang_c(servers: int, offered_load: float) -> float:
    """P(wait) in M/M/c: C = B / (1 - rho (1 - B)); requires rho = a/c < 1."""
    _check_servers(servers)
    rho = offered_load / servers
    if rho >= 1:
        raise ValueError(f"unstable: offered load {offered_load} >= {servers} servers")
    b = erlang_b(servers, offered_load)
    return b / (1 - rho * (1 - b))


def mm1(arrival_rate: float, service_rate: float) -> StationMetrics:
    return mmc(arrival_rate, service_rate, 1)


def mmc(arrival_rate: float, service_rate: float, servers: int) -> StationMetrics:
    _check_rates(arrival_rate, service_rate)
    _check_servers(servers)
    a = arrival_rate / service_rate
    c = erlang_c(servers, a)
    wait = c / (servers * service_rate - arrival_rate)
    lq = arrival_rate * wait
    return StationMetrics(
        throughput=arrival_rate,
        utilization=a / servers,
        mean_in_system=lq + a,
        mean_in_queue=lq,
        mean_response=wait + 1 / service_rate,
        mean_wait=wait,
        wait_probability=c,
    )


def mm1_response_quantile(arrival_rate: float, service_rate: float, p: float) -> float:
    """FCFS M/M/1 sojourn time is Exp(mu - lambda)."""
    if arrival_rate >= service_rate:
        raise ValueError("unstable: arrival_rate >= service_rate")
    return -math.log(1 - p) / (service_rate - arrival_rate)


def mmc_wait_exceeds(arrival_rate: float, service_rate: float, servers: int, t: float) -> float:
    """P(Wq > t) = C exp(-(c mu - lambda) t)."""
    c = erlang_c(servers, arrival_rate / service_rate)
    return c * math.exp(-(servers * service_rate - arrival_rate) * t)


def mmc_response_exceeds(arrival_rate: float, service_rate: float, servers: int, t: float) -> float:
    """FCFS M/M/c: P(R > t) for the sojourn R = Wq + S. With probability 1 - C there is no wait
    and R = S ~ Exp(mu); otherwise Wq ~ Exp(theta), theta = c mu - lambda, independent of S, and
    P(Wq + S > t) = (theta e^{-mu t} - mu e^{-theta t}) / (theta - mu) (hypoexponential)."""
    _check_rates(arrival_rate, service_rate)
    _check_servers(servers)
    c = erlang_c(servers, arrival_rate / service_rate)
    mu, theta = service_rate, servers * service_rate - arrival_rate
    if theta <= 0:
        raise ValueError("unstable: arrival_rate >= servers x service_rate")
    if math.isclose(theta, mu):
        waited = (1 + mu * t) * math.exp(-mu * t)
    else:
        waited = (theta * math.exp(-mu * t) - mu * math.exp(-theta * t)) / (theta - mu)
    return (1 - c) * math.exp(-mu * t) + c * waited


def mmc_response_quantile(
    arrival_rate: float, service_rate: float, servers: int, p: float
) -> float:
    """The p-quantile of the FCFS M/M/c sojourn time (root of P(R > t) = 1 - p)."""
    from scipy.optimize import brentq

    def excess(t: float) -> float:
        return mmc_response_exceeds(arrival_rate, service_rate, servers, t) - (1 - p)

    high = 1.0 / service_rate
    while excess(high) > 0:
        high *= 2
    return float(brentq(excess, 0.0, high, xtol=1e-12, rtol=1e-12))


def mmck(arrival_rate: float, service_rate: float, servers: int, capacity: int) -> StationMetrics:
    """c servers, at most K in the system; blocked arrivals are lost (PASTA: P_block = pi_K)."""
    _check_rates(arrival_rate, service_rate)
    _check_servers(servers)
    if int(capacity) != capacity or capacity < servers:
        raise ValueError(
            f"capacity K must be a whole number >= servers, got K = {capacity}, c = {servers}"
        )
    a = arrival_rate / service_rate
    n = np.arange(capacity + 1)
    # Log-space weights: a^n/n! for n <= c, a^c/c! (a/c)^(n-c) beyond.
    log_w = np.where(
        n <= servers,
        n * math.log(a) - np.array([math.lgamma(k + 1) for k in n]),
        servers * math.log(a) - math.lgamma(servers + 1) + (n - servers) * math.log(a / servers),
    )
    pi = np.exp(log_w - log_w.max())
    pi /= pi.sum()
    block = float(pi[-1])
    x = arrival_rate * (1 - block)
    big_l = float((n * pi).sum())
    lq = float((np.maximum(n - servers, 0) * pi).sum())
    return StationMetrics(
        throughput=x,
        utilization=x / (servers * service_rate),
        mean_in_system=big_l,
        mean_in_queue=lq,
        mean_response=big_l / x,
        mean_wait=lq / x,
        wait_probability=float(pi[servers:].sum() - block),
        blocking_probability=block,
    )
