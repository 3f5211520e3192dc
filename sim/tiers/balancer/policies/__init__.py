"""Balancer policies, each a small class behind one interface (`base.Policy`), by the names
their users know them by (the model file's `balancer.policy`)."""

from __future__ import annotations

from sim.tiers.balancer.policies.base import Policy
from sim.tiers.balancer.policies.hashing import Carp, ConsistentHash
from sim.tiers.balancer.policies.least_load import (
    ByBusyness,
    ByTraffic,
    JoinIdleQueue,
    LeastOutstanding,
    PeakEwma,
    PowerOfChoices,
    ShortestQueueFirst,
    UniformRandom,
)
from sim.tiers.balancer.policies.mod_jk import (
    ModJkBusyness,
    ModJkRequest,
    ModJkSession,
    ModJkTraffic,
)
from sim.tiers.balancer.policies.rotation import (
    FirstActive,
    JBossFirstAvailable,
    JBossFirstAvailableIdenticalAllProxies,
    JBossRoundRobin,
    SmoothWeightedRoundRobin,
    StrictRoundRobin,
)

# model-file name -> (class, the per-policy balancer parameters it reads)
POLICIES: dict[str, tuple[type[Policy], tuple[str, ...]]] = {
    "round_robin": (StrictRoundRobin, ()),
    "random": (UniformRandom, ()),
    "least_outstanding": (LeastOutstanding, ()),
    "lighttpd_round_robin": (UniformRandom, ()),
    "sqf": (ShortestQueueFirst, ()),
    "static": (FirstActive, ()),
    "byrequests": (SmoothWeightedRoundRobin, ()),
    "bytraffic": (ByTraffic, ("response_bytes",)),
    "bybusyness": (ByBusyness, ()),
    "mod_jk_request": (ModJkRequest, ("maintain_s",)),
    "mod_jk_session": (ModJkSession, ("maintain_s",)),
    "mod_jk_traffic": (ModJkTraffic, ("maintain_s", "response_bytes")),
    "mod_jk_busyness": (ModJkBusyness, ("maintain_s",)),
    "carp": (Carp, ("hash_key", "urls", "url_zipf_s")),
    "consistent_hash": (
        ConsistentHash,
        ("hash_key", "urls", "url_zipf_s", "ring_points", "hash_balance_factor"),
    ),
    "power_of_d": (PowerOfChoices, ("choices",)),
    "p2c_peak_ewma": (PeakEwma, ("decay_s",)),
    "join_idle_queue": (JoinIdleQueue, ()),
    "jboss_round_robin": (JBossRoundRobin, ()),
    "jboss_random_robin": (UniformRandom, ()),
    "jboss_first_available": (JBossFirstAvailable, ()),
    "jboss_first_available_identical_all_proxies": (JBossFirstAvailableIdenticalAllProxies, ()),
}

POLICY_NAMES = tuple(POLICIES)


def make_policy(name: str, weights, names, rng, **params) -> Policy:
    cls, _ = POLICIES[name]
    return cls(weights, names, rng, **params)


def policy_class(name: str) -> type[Policy]:
    return POLICIES[name][0]
