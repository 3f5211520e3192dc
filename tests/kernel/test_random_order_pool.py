"""A slot pool that hands a released slot to a random waiter (`Pool.serve_in_random_order`,
the hot row's lock of `sim.tiers.database.lock`) against the theory of the M/G/1 queue served
in random order (Kingman 1962): the same mean wait as first-come first-served, and a second
moment larger by 2 / (2 - rho) -- at moderate and at heavy load."""

from __future__ import annotations

import numpy as np
import pytest

from sim.kernel.calendar import Kernel
from sim.kernel.slots import GRANTED, Pool
from sim.stats.confidence import t_interval
from tests.analytic.test_theory import inside


def _waits(rate: float, service_rate: float, random_order: bool, seed: int, horizon_s: float):
    """Poisson arrivals at `rate` to a one-slot pool held Exp(`service_rate`): each waiter's
    wait, the first tenth of the run left out (warm-up)."""
    kernel = Kernel()
    rng = np.random.default_rng(seed)
    pool = Pool(kernel, "lock", 1)
    if random_order:
        order = np.random.default_rng(seed + 1_000_003)
        pool.serve_in_random_order(lambda: float(order.random()))
    waits: list[float] = []
    warm = horizon_s / 10

    def hold(arrived: float) -> None:
        if arrived >= warm:
            waits.append(kernel.now - arrived)
        kernel.call_after(float(rng.exponential(1 / service_rate)), release)

    def release(_: object) -> None:
        pool.release()

    def arrive(_: object) -> None:
        now = kernel.now
        if pool.acquire(hold, now) is GRANTED:
            hold(now)
        kernel.call_after(float(rng.exponential(1 / rate)), arrive)

    kernel.call_after(float(rng.exponential(1 / rate)), arrive)
    kernel.run(until=horizon_s)
    return np.asarray(waits)


@pytest.mark.parametrize(
    "rate, horizon_s",
    [(6.0, 2_000.0), pytest.param(9.0, 6_000.0, marks=pytest.mark.slow)],  # heavy: ~10 s
)
def test_random_order_keeps_the_mean_wait_and_widens_it_by_kingmans_factor(rate, horizon_s):
    """M/M/1, mu = 10: W = rho / (mu - lambda); E[W^2] = 2 rho / (mu - lambda)^2 first-come
    first-served, times 2 / (2 - rho) in random order (rho = 0.6 and the heavy 0.9)."""
    mu = 10.0
    rho = rate / mu
    mean = rho / (mu - rate)
    second_fifo = 2 * rho / (mu - rate) ** 2
    second_random = second_fifo * 2 / (2 - rho)
    runs = {
        order: [_waits(rate, mu, order, seed, horizon_s) for seed in range(10)]
        for order in (False, True)
    }
    for order, second in ((False, second_fifo), (True, second_random)):
        inside(t_interval([w.mean() for w in runs[order]], 0.99), mean)
        inside(t_interval([(w**2).mean() for w in runs[order]], 0.99), second)
    # the factor is told apart: random order's second moment is above FIFO's interval
    assert t_interval([(w**2).mean() for w in runs[True]], 0.99).low > second_fifo
