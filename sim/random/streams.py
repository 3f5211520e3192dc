"""Random streams: one root seed, one independent stream per component and purpose.

A stream is keyed by (replication, purpose name), not by creation order, so adding a
backend or changing a policy does not shift any other component's numbers: two
configurations run with the same seed share their random inputs (common random numbers,
Law 2015 ch. 11), and comparisons between them are sharp.
"""

from __future__ import annotations

from zlib import crc32

import numpy as np

from sim.random.distributions import BLOCK, as_distribution

__all__ = ["BLOCK", "Streams", "sampler"]


class Streams:
    def __init__(self, seed: int, replication: int) -> None:
        self.seed = seed
        self.replication = replication

    def generator(self, purpose: str) -> np.random.Generator:
        """The generator for `purpose` (e.g. "clients.think", "node2.demand")."""
        sequence = np.random.SeedSequence(
            self.seed, spawn_key=(self.replication, crc32(purpose.encode()))
        )
        return np.random.Generator(np.random.PCG64(sequence))


def sampler(spec, streams: Streams, purpose: str, calls: int = 0):
    """A sampler of the distribution `spec` on its own stream; with `calls` downstream calls
    it draws one of calls + 1 bursts (each 1/(calls + 1) of the demand: a visit computes
    around its calls, `sim.tiers.station`)."""
    distribution = as_distribution(spec)
    if calls:
        distribution = distribution.scaled(1.0 / (calls + 1))
    return distribution.sampler(streams.generator(purpose))
