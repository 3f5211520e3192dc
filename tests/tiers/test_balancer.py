"""The dispatcher around the policies: error state and failover, crashes, sessions, stale
load reports - exact event times on tiny scenarios with fixed service times."""

from __future__ import annotations

import numpy as np

from sim.kernel.calendar import Kernel
from sim.tiers.balancer.dispatcher import Dispatcher
from sim.tiers.balancer.policies import make_policy
from sim.tiers.balancer.sessions import SessionTable


class CPU:
    speed = 1.0


class Node:
    """A member answering each request `service` seconds (divided by its CPU speed) later."""

    def __init__(self, kernel, name, service):
        self.kernel, self.name, self.service = kernel, name, service
        self.cpu = CPU()
        self.served = []

    def serve(self, request, reply):
        self.served.append((self.kernel.now, request.user))
        self.kernel.call_after(self.service / self.cpu.speed, lambda _a: reply(request, True))


class Users:
    returning_users = True
    keeps_sessions = True


class Request:
    origin = Users()

    def __init__(self, user):
        self.user = user


def build(policy="round_robin", services=(1.0, 1.0), **kwargs):
    kernel = Kernel()
    nodes = [Node(kernel, f"n{i + 1}", s) for i, s in enumerate(services)]
    made = make_policy(
        policy, [1.0] * len(nodes), [n.name for n in nodes], np.random.default_rng(1)
    )
    dispatcher = Dispatcher(kernel, nodes, made, **kwargs)
    answers = []

    def send(at, user):
        def go(_a):
            dispatcher(Request(user), lambda r, ok: answers.append((kernel.now, r.user, ok)))

        kernel.call_after(at, go)

    return kernel, dispatcher, nodes, answers, send


def test_crash_fails_in_flight_requests_and_failover_skips_the_member_for_retry_seconds():
    kernel, d, nodes, answers, send = build(retry_s=10.0, track_failures=True)
    send(0.0, "u0")  # -> n1 (round robin), in flight when n1 crashes at 0.5
    send(0.1, "u1")  # -> n2
    d.schedule([(0.5, 0, "crash", 1.0), (20.0, 0, "recover", 1.0)])
    send(1.0, "u2")  # n1 is in error (its request failed): n2
    send(11.0, "u3")  # retry elapsed, n1 tried by real traffic: refused, fails over to n2
    send(21.0, "u4")  # error state again until 21.0: n2 ... and n1 is back from 21.0
    send(22.0, "u5")
    kernel.run()
    assert answers[0] == (0.5, "u0", False)  # failed at the crash
    assert [u for _, u in nodes[1].served] == ["u1", "u2", "u3", "u4"]
    assert [u for _, u in nodes[0].served] == ["u0", "u5"]
    assert d.refused_down == 1 and d.failovers == 1
    assert all(ok for _, u, ok in answers if u != "u0")
    assert d.outstanding == [0, 0]


def test_a_crash_nobody_noticed_does_not_cost_the_retry_time():
    kernel, d, nodes, _answers, send = build(retry_s=60.0, track_failures=True)
    d.schedule([(1.0, 0, "crash", 1.0), (2.0, 0, "recover", 1.0)])
    send(3.0, "a")
    send(3.0, "b")
    kernel.run()
    assert len(nodes[0].served) == 1 and d.refused_down == 0


def test_all_attempts_refused_is_503():
    kernel, d, _nodes, answers, send = build(retry_s=60.0, track_failures=True)
    d.schedule([(0.0, 0, "crash", 1.0), (0.0, 1, "crash", 1.0)])
    send(1.0, "a")
    send(2.0, "b")
    kernel.run()
    assert [ok for *_, ok in answers] == [False, False]
    assert d.refused_down == 2 and d.unavailable == 2


def test_slow_member_takes_factor_times_longer():
    kernel, d, _nodes, answers, send = build(services=(1.0, 1.0))
    d.schedule([(0.0, 0, "slow", 3.0), (10.0, 0, "recover", 1.0)])
    send(1.0, "a")  # n1: 3 s
    send(1.0, "b")  # n2: 1 s
    send(11.0, "c")  # n1 again, back to 1 s
    kernel.run()
    assert sorted(answers) == [(2.0, "b", True), (4.0, "a", True), (12.0, "c", True)]


def test_sticky_sessions_return_to_their_member_and_are_lost_on_failover():
    sessions = SessionTable()
    kernel, d, nodes, _answers, send = build(
        retry_s=100.0, sessions=sessions, sticky=True, track_failures=True
    )
    for t, user in [(0, "s1"), (0, "s2"), (2, "s1"), (2, "s2"), (4, "s1")]:
        send(t, user)
    d.schedule([(5.0, 0, "crash", 1.0)])
    send(6.0, "s1")  # s1 lived on n1: refused, fails over to n2, its session is lost
    send(8.0, "s1")  # now pinned to n2
    kernel.run()
    assert [u for _, u in nodes[0].served] == ["s1", "s1", "s1"]
    assert [u for _, u in nodes[1].served] == ["s2", "s2", "s1", "s1"]
    assert sessions.created == 3 and sessions.lost == 1


def test_sessions_of_a_crashed_member_die_even_if_the_client_comes_back_to_it():
    sessions = SessionTable()
    kernel, d, nodes, _answers, send = build(
        retry_s=1.0, sessions=sessions, sticky=True, track_failures=True
    )
    send(0.0, "s1")
    d.schedule([(2.0, 0, "crash", 1.0), (3.0, 0, "recover", 1.0)])
    send(5.0, "s1")  # back on n1 after the restart: a new session there
    kernel.run()
    assert [u for _, u in nodes[0].served] == ["s1", "s1"]
    assert sessions.lost == 1 and sessions.created == 2


def test_replication_hook_keeps_a_failed_over_session():
    sessions = SessionTable(replicated=lambda user, home, to: True)
    kernel, d, _nodes, _answers, send = build(
        retry_s=100.0, sessions=sessions, sticky=True, track_failures=True
    )
    send(0.0, "s1")
    d.schedule([(2.0, 0, "crash", 1.0)])
    send(3.0, "s1")
    kernel.run()
    assert sessions.lost == 0 and sessions.created == 1


def test_sticky_session_force_answers_503():
    sessions = SessionTable()
    kernel, d, _nodes, answers, send = build(
        retry_s=100.0, sessions=sessions, sticky=True, sticky_force=True, track_failures=True
    )
    send(0.0, "s1")
    send(0.5, "other")  # n2
    d.schedule([(0.6, 0, "crash", 1.0)])
    send(0.7, "other2")  # refused by n1 -> error state, fails over to n2
    send(3.0, "s1")
    kernel.run()
    assert answers[-1] == (3.0, "s1", False) and d.sticky_refused == 1


def test_without_stickiness_a_session_is_lost_whenever_it_lands_elsewhere():
    sessions = SessionTable()
    kernel, _d, _nodes, _answers, send = build(sessions=sessions, sticky=False)
    for t in range(4):
        send(float(t) * 2, "s1")  # round robin: n1, n2, n1, n2
    kernel.run()
    assert sessions.created == 4 and sessions.lost == 3


def test_stale_reports_make_sqf_herd():
    """sqf reading loads reported every 10 s: all requests of the first interval see the
    t = 0 report (everyone idle) and pile onto the first member; live loads alternate."""
    kernel, _d, nodes, _answers, send = build(
        policy="sqf", services=(100.0, 100.0), report_interval_s=10.0
    )
    for t in range(4):
        send(float(t), f"u{t}")
    send(11.0, "late")  # after the report at 10 s: n2
    kernel.run(until=50)
    assert [u for _, u in nodes[0].served] == ["u0", "u1", "u2", "u3"]
    assert [u for _, u in nodes[1].served] == ["late"]
    kernel, _d, nodes, _answers, send = build(policy="sqf", services=(100.0, 100.0))
    for t in range(4):
        send(float(t), f"u{t}")
    kernel.run(until=50)
    assert [u for _, u in nodes[0].served] == ["u0", "u2"]


def test_model_file_crash_with_sticky_sessions_end_to_end():
    """Two nodes, 20 users with sessions; node 1 crashes at 50 s and recovers at 80 s
    (mod_proxy retry 10 s): requests in flight fail, its sessions are lost on failover."""
    from sim.run.replication import run_replication
    from tests.conftest import model_from

    data = {
        "clients": {"kind": "closed", "users": 20, "think": {"dist": "exponential", "mean": 0.5}},
        "proxy": {"workers": 50, "cores": 2, "demand": 0.0005},
        "balancer": {"policy": "byrequests", "sticky_session": True, "retry_s": 10.0},
        "backends": [
            {
                "name": "app",
                "count": 2,
                "threads": 10,
                "cores": 1,
                "demand": {"dist": "exponential", "mean": 0.04},
                "events": [
                    {"at_s": 50.0, "kind": "crash", "node": 1},
                    {"at_s": 80.0, "kind": "recover", "node": 1},
                ],
            }
        ],
        "run": {"duration_s": 120.0, "warmup": "none", "replications": 1},
    }
    metrics = run_replication(model_from(data), 0, 5).metrics
    assert metrics["balancer.sessions_created"] >= 20
    assert 0 < metrics["balancer.sessions_lost"] <= 20
    assert metrics["count.errors"] >= 1  # the requests in flight at the crash
    assert (
        metrics["balancer.dispatched.app1"] + metrics["balancer.dispatched.app2"]
        >= metrics["count.completed"]
    )


def test_unknown_policy_lists_the_valid_names():
    import pytest

    from sim.model.load import ModelError, parse_model

    base = {
        "clients": {"kind": "open", "rate_per_s": 1.0},
        "backends": [{"demand": 0.1, "count": 2}],
        "run": {"duration_s": 10},
    }
    with pytest.raises(ModelError) as info:
        parse_model({**base, "balancer": {"policy": "least_busy"}})
    assert "balancer.policy = 'least_busy'" in str(info.value) and "'bybusyness'" in str(info.value)
    with pytest.raises(ModelError, match=r"balancer\.choices does not apply to policy 'sqf'"):
        parse_model({**base, "balancer": {"policy": "sqf", "choices": 3}})
    with pytest.raises(ModelError, match=r"balancer\.members"):
        parse_model({**base, "balancer": {"members": ["web"]}})
    with pytest.raises(ModelError, match="whole-number weights"):
        parse_model(
            {
                **base,
                "balancer": {"policy": "mod_jk_request"},
                "backends": [{"demand": 0.1, "weight": 1.5}],
            }
        )
