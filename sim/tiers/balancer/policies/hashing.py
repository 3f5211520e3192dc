"""Routing by a hash of the request's key: CARP (highest score wins, with load-factor
multipliers) and consistent hashing on a ring with bounded loads (HAProxy
`hash-type consistent` + `hash-balance-factor`).

The key is the request's URL or its session: simulated requests carry no URL, so a URL is
drawn per request from `urls` distinct paths with Zipf popularity (rank k has probability
proportional to 1/k^s): with hash routing the load of a member follows the popularity of
the keys it owns, which uniform keys would hide.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left

import numpy as np

from sim.tiers.balancer.policies.base import Policy, UniformDraws

MASK = 0xFFFFFFFF
CARP_MULTIPLIER = 0x62531965


def rotl32(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & MASK


def carp_url_hash(text: str) -> int:
    """draft-vinod-carp-v1-03 §3.1 (Squid carp.cc): for each character h += ROTL32(h, 19) + c."""
    h = 0
    for c in text.encode():
        h = (h + rotl32(h, 19) + c) & MASK
    return h


def carp_member_hash(name: str) -> int:
    """The member-name hash: the URL hash, then h += h x 0x62531965; h = ROTL32(h, 21)."""
    h = carp_url_hash(name)
    h = (h + h * CARP_MULTIPLIER) & MASK
    return rotl32(h, 21)


def carp_combine(url_hash: int, member_hash: int) -> int:
    x = url_hash ^ member_hash
    x = (x + x * CARP_MULTIPLIER) & MASK
    return rotl32(x, 21)


def carp_load_multipliers(weights: list[float]) -> list[float]:
    """The load-factor multipliers X_k of the draft (§3.3, as in Squid `carpInit`): with the
    shares P_k = weight_k / sum sorted ascending and K members, X_1 = (K P_1)^(1/K) and
    X_k = [(K-k+1)(P_k - P_{k-1}) / (X_1...X_{k-1}) + X_{k-1}^(K-k+1)]^(1/(K-k+1)).
    Returned in the members' own order.  Equal weights give 1 for everyone."""
    total = sum(weights)
    order = sorted(range(len(weights)), key=lambda i: weights[i])
    k_members = len(weights)
    out = [0.0] * k_members
    p_last, x_product, x_last = 0.0, 1.0, 0.0
    for k, i in enumerate(order, start=1):
        kk1 = float(k_members - k + 1)
        share = weights[i] / total
        x = (kk1 * (share - p_last)) / x_product + x_last**kk1
        x = x ** (1.0 / kk1)
        x_product *= x
        x_last, p_last = x, share
        out[i] = x
    return out


class HashKeys:
    """Draws the key of each request: a Zipf-popular URL, or the client's session."""

    __slots__ = ("by", "cdf", "draw", "paths")

    def __init__(self, rng, by: str = "url", urls: int = 1000, zipf_s: float = 1.0) -> None:
        self.by = by
        self.draw = UniformDraws(rng)
        ranks = np.arange(1, urls + 1, dtype=float)
        weights = ranks**-zipf_s
        self.cdf = np.cumsum(weights / weights.sum()).tolist()
        self.cdf[-1] = 1.0
        self.paths = [f"/item/{k}" for k in range(1, urls + 1)]

    def __call__(self, request) -> str:
        if self.by == "session":
            return f"session-{request.user}"
        return self.paths[min(bisect_left(self.cdf, self.draw()), len(self.paths) - 1)]


class Carp(Policy):
    """Cache Array Routing Protocol (draft-vinod-carp-v1-03, Feb 1998; reference
    implementation Squid src/carp.cc): score_k = combine(url_hash, member_hash_k) x X_k, the
    highest score wins; members in error are skipped, so only their keys move.  The member
    name is hashed, so the assignment is stable across runs and configurations."""

    policy_names = ("carp",)  # balancer.policy
    parameters = ("hash_key", "urls", "url_zipf_s")  # the balancer.* parameters it reads

    split = "weighted"
    __slots__ = ("_cache", "keys", "member_hash", "multiplier")

    def __init__(
        self,
        weights,
        names,
        rng,
        *,
        hash_key: str = "url",
        urls: int = 1000,
        url_zipf_s: float = 1.0,
        **params,
    ) -> None:
        super().__init__(weights, names, rng)
        self.keys = HashKeys(rng, hash_key, urls, url_zipf_s)
        self.member_hash = [carp_member_hash(name) for name in self.names]
        self.multiplier = carp_load_multipliers(self.weights)
        self._cache: dict[str, int] = {}  # key -> winner, for the current usable set

    def winner(self, key: str) -> int:
        url_hash = carp_url_hash(key)
        best, best_score = -1, -1.0
        for i in self.active:
            score = carp_combine(url_hash, self.member_hash[i]) * self.multiplier[i]
            if score > best_score:
                best, best_score = i, score
        return best

    def pick(self, request) -> int:
        key = self.keys(request)
        best = self._cache.get(key)
        if best is None:
            best = self._cache[key] = self.winner(key)
        return best

    def membership_changed(self) -> None:
        self._cache.clear()


def ring_hash(text: str) -> int:
    """32-bit ring position: the first 4 bytes of MD5, as ketama does."""
    return int.from_bytes(hashlib.md5(text.encode()).digest()[:4], "big")


class ConsistentHash(Policy):
    """Consistent hashing on a ring (ketama: `ring_points` x weight points per member, MD5
    positions; a key goes to the first point clockwise), with HAProxy's bounded loads
    (`hash-balance-factor` f, src: lb_chash.c `chash_server_is_eligible`, after Mirrokni,
    Thorup & Zadimoghaddam 2018): with `served` requests outstanding in all, the next one
    gets ceil((served + 1) f / 100) slots shared out by weight; a member already holding
    its share is passed over for the next one clockwise.  f = 0 turns the bound off."""

    policy_names = ("consistent_hash",)  # balancer.policy
    parameters = (
        "hash_key",
        "urls",
        "url_zipf_s",
        "ring_points",
        "hash_balance_factor",
    )  # the balancer.* parameters it reads

    split = "weighted"
    __slots__ = ("_start", "balance_factor", "int_weights", "keys", "owners", "positions")

    def __init__(
        self,
        weights,
        names,
        rng,
        *,
        hash_key: str = "url",
        urls: int = 1000,
        url_zipf_s: float = 1.0,
        ring_points: int = 160,
        hash_balance_factor: int = 0,
        **params,
    ) -> None:
        super().__init__(weights, names, rng)
        self.keys = HashKeys(rng, hash_key, urls, url_zipf_s)
        self.int_weights = [max(1, round(w)) for w in self.weights]
        points = sorted(
            (ring_hash(f"{name}-{j}"), i)
            for i, name in enumerate(self.names)
            for j in range(ring_points * self.int_weights[i])
        )
        self.positions = [p for p, _ in points]
        self.owners = [i for _, i in points]
        self.balance_factor = hash_balance_factor
        self._start: dict[str, int] = {}

    def eligible(self, i: int) -> bool:
        """HAProxy `chash_server_is_eligible`, over the usable members in configuration order."""
        load, weights = self.load, self.int_weights
        served = 0
        total_weight = 0
        cumulative = 0
        for j in self.active:
            served += load[j]
            if j < i:
                cumulative += weights[j]
            total_weight += weights[j]
        slots_total = ((served + 1) * self.balance_factor + 99) // 100
        per_weight, remainder = divmod(slots_total, total_weight)
        slots = weights[i] * per_weight
        slots += ((cumulative + weights[i]) * remainder) // total_weight - (
            cumulative * remainder
        ) // total_weight
        return load[i] < max(slots, 1)

    def pick(self, request) -> int:
        key = self.keys(request)
        start = self._start.get(key)
        if start is None:
            start = self._start[key] = bisect_left(self.positions, ring_hash(key)) % len(
                self.positions
            )
        owners, active = self.owners, self.active
        usable = None
        count = len(owners)
        for step in range(count):
            i = owners[(start + step) % count]
            if len(active) != len(self.weights) and i not in active:
                continue
            if not self.balance_factor or self.eligible(i):
                return i
            if usable is None:
                usable = i
        return (
            usable if usable is not None else active[0]
        )  # all over the bound: the first clockwise
