"""The baseline: the benchmark networks as a plain SimPy program would write them.

One generator process per customer, `simpy.Resource` for every pool, `random.expovariate`
for every draw, response times kept in a list.  The semantics are exactly tiersim's, so the
two programs simulate the same network:
  (a) M/M/4: Poisson arrivals, 4 servers, FCFS.
  (b) closed 3-tier chain: N users think Exp(1 s), then hold a proxy worker (8) for the
      whole request; the proxy computes in two bursts of Exp(1 ms) around the backend call;
      the backend holds one of 4 threads (4 cores) and computes two bursts of Exp(15 ms)
      around one call to the database (1 connection, Exp(5 ms)).  Nested holds, as in the
      real stack (tiersim splits a visit's demand into independent bursts around its calls).
"""

from __future__ import annotations

import random
import sys

import simpy


def mm4(
    customers: int, seed: int = 1, rho: float = 0.9, servers: int = 4, mean_service: float = 1.0
) -> float:
    rng = random.Random(seed)
    env = simpy.Environment()
    pool = simpy.Resource(env, capacity=servers)
    arrival_rate = rho * servers / mean_service
    responses: list[float] = []

    def customer():
        arrived = env.now
        with pool.request() as request:
            yield request
            yield env.timeout(rng.expovariate(1.0 / mean_service))
        responses.append(env.now - arrived)

    def source():
        for _ in range(customers):
            yield env.timeout(rng.expovariate(arrival_rate))
            env.process(customer())

    env.process(source())
    env.run()
    return sum(responses) / len(responses)


def chain(requests: int, seed: int = 1, users: int = 100, think: float = 1.0) -> float:
    rng = random.Random(seed)
    env = simpy.Environment()
    workers = simpy.Resource(env, capacity=8)
    threads = simpy.Resource(env, capacity=4)
    database = simpy.Resource(env, capacity=1)
    responses: list[float] = []
    done = env.event()

    def user():
        while True:
            yield env.timeout(rng.expovariate(1.0 / think))
            sent = env.now
            with workers.request() as worker:
                yield worker
                yield env.timeout(rng.expovariate(1.0 / 0.001))
                with threads.request() as thread:
                    yield thread
                    yield env.timeout(rng.expovariate(1.0 / 0.015))
                    with database.request() as connection:
                        yield connection
                        yield env.timeout(rng.expovariate(1.0 / 0.005))
                    yield env.timeout(rng.expovariate(1.0 / 0.015))
                yield env.timeout(rng.expovariate(1.0 / 0.001))
            responses.append(env.now - sent)
            if len(responses) == requests and not done.triggered:
                done.succeed()

    for _ in range(users):
        env.process(user())
    env.run(until=done)
    return sum(responses) / len(responses)


if __name__ == "__main__":
    which, n = sys.argv[1], int(sys.argv[2])
    print(mm4(n) if which == "mm4" else chain(n))
