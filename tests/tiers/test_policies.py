"""Each balancer policy against its documented algorithm, on tiny deterministic scenarios."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.model.schema import POLICY_NAMES
from sim.tiers.balancer.policies import POLICIES, make_policy
from sim.tiers.balancer.policies.hashing import (
    Carp,
    ConsistentHash,
    carp_load_multipliers,
    carp_url_hash,
    rotl32,
)
from sim.tiers.balancer.policies.mod_jk import lb_multiplicities


class Client:
    returning_users = True
    keeps_sessions = True


class Req:
    origin = Client()

    def __init__(self, user=0):
        self.user = user


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def policy_and_clock(name, weights, load=None, **params):
    made = make_policy(
        name,
        weights,
        [chr(ord("a") + i) for i in range(len(weights))],
        np.random.default_rng(7),
        **params,
    )
    clock = Clock()
    load = load if load is not None else [0] * len(weights)
    made.attach(list(range(len(weights))), load, load, clock)
    return made, clock, load


def sequence(made, n, user=0):
    out = []
    for _ in range(n):
        i = made.pick(Req(user))
        if made.on_dispatch:
            made.dispatched(i, Req(user), True)
        if made.on_complete:
            made.completed(i, Req(user), True, 0.1)
        out.append("abcdefgh"[i])
    return "".join(out)


def test_schema_names_every_policy():
    assert set(POLICY_NAMES) == set(POLICIES)


def test_strict_round_robin_rotates_and_skips_members_in_error():
    made, _, _ = policy_and_clock("round_robin", [1, 1, 1])
    assert sequence(made, 4) == "abca"
    made.active[:] = [0, 2]  # b in error
    assert sequence(made, 3) == "cac"


def test_smooth_weighted_round_robin_5_1_1():
    """nginx ngx_http_upstream_round_robin.c: weights 5, 1, 1 give a a b a c a a."""
    made, _, _ = policy_and_clock("byrequests", [5, 1, 1])
    assert sequence(made, 14) == "aabacaa" * 2


def test_byrequests_counts_sticky_requests():
    """A sticky request to c is booked as a win for c: the next pick is not c's turn."""
    made, _, _ = policy_and_clock("byrequests", [1, 1, 1])
    made.sticky(2)
    assert made.lbstatus == [1, 1, -2]
    assert sequence(made, 3) == "aba"  # [2, 2, -1] -> a; [0, 3, 0] -> b; [1, 1, 1] -> a


def test_lighttpd_sqf_the_seed_example():
    """seed 003: A1 busy with one slow request, A2 and A3 free: request 3 -> A2, request 4 -> A3."""
    made, _, load = policy_and_clock("sqf", [1, 1, 1], load=[1, 0, 0])
    first = made.pick(Req())
    load[first] += 1
    second = made.pick(Req())
    assert (first, second) == (1, 2)
    load[second] += 1
    assert made.pick(Req()) == 0  # all at one: the first index wins ties


def test_least_outstanding_breaks_ties_by_rotation():
    made, _, _ = policy_and_clock("least_outstanding", [1, 1, 1])
    assert sequence(made, 3) == "abc"


def test_bybusyness_ties_follow_byrequests_and_busy_wins():
    made, _, load = policy_and_clock("bybusyness", [2, 1])
    assert sequence(made, 3) == "aba"  # all idle: smooth WRR 2:1
    load[:] = [3, 1]
    assert made.pick(Req()) == 1  # fewer busy wins, whatever the lbstatus


def test_bytraffic_bytes_per_loadfactor():
    made, _, _ = policy_and_clock("bytraffic", [2, 1], response_bytes=lambda: 100.0)
    assert sequence(made, 9) == "abaabaaba"


def test_mod_jk_multiplicities_are_lcm_over_lbfactor():
    assert lb_multiplicities([1, 2, 3]) == [6, 3, 2]
    assert lb_multiplicities([4, 6]) == [3, 2]


def test_mod_jk_request_lb_value_and_rotating_ties():
    """lbfactor 1 and 2: mult 2 and 1; lowest lb_value wins, scanning from winner + 1."""
    made, _, _ = policy_and_clock("mod_jk_request", [1, 2])
    assert sequence(made, 6) == "abbabb"
    assert made.lb_value == [4, 4]


def test_mod_jk_decay_halves_per_maintain_interval():
    made, clock, _ = policy_and_clock("mod_jk_request", [1, 1], maintain_s=60.0)
    made.lb_value = [40, 13]
    clock.t = 59.0
    made.pick(Req())
    assert made.lb_value == [40, 13]
    clock.t = 130.0  # two intervals elapsed: >> 2
    made.pick(Req())
    assert made.lb_value == [10, 3] and made.last_maintain == 120.0


def test_mod_jk_session_counts_new_sessions_only():
    made, _, _ = policy_and_clock("mod_jk_session", [1, 1])
    made.dispatched(0, Req(), False)
    made.dispatched(1, Req(), True)
    assert made.lb_value == [0, 1]


def test_mod_jk_busyness_is_in_flight_per_lbfactor():
    made, _, _ = policy_and_clock("mod_jk_busyness", [1, 2])
    made.dispatched(0, Req(), True)
    made.dispatched(1, Req(), True)
    made.dispatched(1, Req(), True)
    assert made.lb_value == [2, 2]
    made.completed(1, Req(), True, 0.1)
    assert made.lb_value == [2, 1]
    made.maintain_s = 1.0
    made.now = lambda: 1000.0  # no decay for B
    assert made.pick(Req()) == 1 and made.lb_value == [2, 1]


def test_mod_jk_recovered_member_starts_at_the_maximum():
    made, _, _ = policy_and_clock("mod_jk_request", [1, 1, 1])
    made.lb_value = [7, 0, 3]
    made.recovered(1)
    assert made.lb_value[1] == 7


def test_carp_hash_by_hand():
    """h += ROTL32(h, 19) + c: "a" -> 97; "ab" -> 97 + 97 * 2**19 + 98."""
    assert carp_url_hash("a") == 97
    assert carp_url_hash("ab") == 97 + 97 * 2**19 + 98
    assert rotl32(0x80000001, 1) == 0x00000003


def test_carp_load_multipliers():
    assert carp_load_multipliers([1, 1, 1]) == pytest.approx([1, 1, 1])
    # Two members, P = (1/3, 2/3): X_1 = (2/3)^(1/2); X_2 = (0 + 1 x (2/3 - 1/3)/X_1 + X_1)
    x1 = math.sqrt(2 / 3)
    assert carp_load_multipliers([2, 1]) == pytest.approx([(1 / 3) / x1 + x1, x1])


def test_carp_multipliers_give_the_weighted_shares_for_uniform_hashes():
    """The draft's defining property: with scores U_k x X_k, U_k uniform, member k wins with
    probability P_k.  (CARP's own hash mixes similar URLs poorly, so real shares deviate.)"""
    draws = np.random.default_rng(3).random((60000, 3)) * np.array(carp_load_multipliers([1, 2, 3]))
    wins = np.bincount(draws.argmax(axis=1), minlength=3) / len(draws)
    for won, share in zip(wins, [1 / 6, 2 / 6, 3 / 6]):
        assert abs(won - share) < 4 * math.sqrt(share * (1 - share) / len(draws))


def test_carp_removal_moves_only_the_removed_members_keys():
    made = Carp([1, 2, 3], ["alpha", "beta", "gamma"], np.random.default_rng(1))
    keys = [f"/object/{k}" for k in range(3000)]
    owners = [made.winner(k) for k in keys]
    assert set(owners) == {0, 1, 2}
    made.active.remove(1)
    moved = [o for k, o in zip(keys, owners) if made.winner(k) != o]
    assert set(moved) == {1}


def test_consistent_hash_bounded_load_walks_clockwise():
    """HAProxy chash_server_is_eligible: 3 members of weight 1, factor 125, 2 requests out
    (both on member 0): slots = ceil(3 x 1.25) = 4, shared 1, 1, 2; member 0 holds 2 >= 1, so a
    key owned by member 0 goes to the next member clockwise."""
    made, _, load = policy_and_clock("consistent_hash", [1, 1, 1], hash_balance_factor=125)
    assert [made.eligible(i) for i in range(3)] == [True, True, True]
    load[:] = [2, 0, 0]
    assert [made.eligible(i) for i in range(3)] == [False, True, True]
    load[:] = [0, 0, 1]
    assert [made.eligible(i) for i in range(3)] == [
        True,
        True,
        False,
    ]  # served 1: ceil(2 x 1.25) = 3 slots, 1 each
    load[:] = [2, 0, 0]
    path = next(p for p in made.keys.paths if made.owners[_start(made, p)] == 0)
    start = _start(made, path)
    clockwise = next(
        made.owners[(start + s) % len(made.owners)]
        for s in range(len(made.owners))
        if made.owners[(start + s) % len(made.owners)] != 0
    )
    made.keys.by = "fixed"
    made.keys = lambda request, p=path: p
    assert made.pick(Req()) == clockwise
    made.balance_factor = 0
    assert made.pick(Req()) == 0


def _start(made, path):
    from bisect import bisect_left

    from sim.tiers.balancer.policies.hashing import ring_hash

    return bisect_left(made.positions, ring_hash(path)) % len(made.positions)


def test_consistent_hash_ring_moves_about_one_nth_on_removal():
    made = ConsistentHash([1, 1, 1, 1], ["n1", "n2", "n3", "n4"], np.random.default_rng(1))
    made.attach([0, 1, 2, 3], [0] * 4, [0] * 4, lambda: 0.0)
    paths = [f"/k/{k}" for k in range(4000)]
    before = []
    for p in paths:
        made.keys = lambda request, p=p: p
        before.append(made.pick(Req()))
    made.active.remove(3)
    after = []
    for p in paths:
        made.keys = lambda request, p=p: p
        after.append(made.pick(Req()))
    moved = [b for b, a in zip(before, after) if a != b]
    assert set(moved) == {3}
    assert 0.15 < len(moved) / len(paths) < 0.35  # about 1/4 with 160 points per member


def test_power_of_two_never_picks_the_more_loaded_of_two():
    made, _, _load = policy_and_clock("power_of_d", [1, 1], load=[5, 0])
    assert {made.pick(Req()) for _ in range(50)} == {1}
    made, _, _load = policy_and_clock("power_of_d", [1, 1, 1, 1], load=[3, 2, 0, 1], choices=4)
    assert {made.pick(Req()) for _ in range(50)} == {2}  # d = N: always the least loaded


def test_join_idle_queue():
    made, _, load = policy_and_clock("join_idle_queue", [1, 1, 1])
    picks = [made.pick(Req()) for _ in range(3)]
    assert picks == [0, 1, 2]  # everyone starts idle, oldest first
    load[:] = [1, 0, 1]  # member 1 finished its request
    made.completed(1, Req(), True, 0.1)
    assert made.pick(Req()) == 1


def test_peak_ewma_jumps_to_peaks_and_decays():
    made, clock, load = policy_and_clock("p2c_peak_ewma", [1, 1], decay_s=10.0)
    made.completed(0, Req(), True, 2.0)
    assert made.cost[0] == 2.0  # peak: taken at once
    clock.t = 10.0
    made.completed(0, Req(), True, 1.0)
    assert made.cost[0] == pytest.approx(2 * math.exp(-1) + 1 * (1 - math.exp(-1)))
    load[1] = 1  # no history but a request pending: the penalty
    assert made.cost_of(1) > 1e12
    load[0] = 2
    assert made.cost_of(0) == pytest.approx(made.cost[0] * 3)


def test_jboss_stub_policies():
    made, _, _ = policy_and_clock("jboss_first_available", [1, 1, 1])
    target = made.pick(Req(user=1))
    assert {made.pick(Req(user=1)) for _ in range(10)} == {target}  # the stub sticks
    made.active.remove(target)
    assert made.pick(Req(user=1)) != target  # re-elected when the target leaves
    shared, _, _ = policy_and_clock("jboss_first_available_identical_all_proxies", [1, 1, 1])
    assert len({shared.pick(Req(user=u)) for u in range(20)}) == 1
    rr, _, _ = policy_and_clock("jboss_round_robin", [1, 1, 1])
    first = rr.pick(Req(user=5))
    assert [rr.pick(Req(user=5)) for _ in range(3)] == [(first + k) % 3 for k in (1, 2, 3)]


def test_lighttpd_round_robin_is_uniform_among_active():
    made, _, _ = policy_and_clock("lighttpd_round_robin", [1, 1, 1])
    made.active[:] = [0, 2]
    picks = [made.pick(Req()) for _ in range(4000)]
    assert set(picks) == {0, 2} and abs(picks.count(0) / 4000 - 0.5) < 4 * math.sqrt(0.25 / 4000)
