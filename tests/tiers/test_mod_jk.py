"""mod_jk 1.2.48's own timeouts, retries and error state, and Jetty's usable thread budget:
exact event times on tiny scenarios with deterministic demands, on both engines where the
compiled engine implements the scenario (its lb worker it does not), every metric bit for bit
alike.

The expected times follow `ajp_service` (jk_ajp_common.c: `retries` attempts, the first
counted, `retry_interval` between them, `reply_timeout` per attempt, 504 after a reply timeout,
503 after a failed connect) and the lb worker's `service` (jk_lb_worker.c: failover, rounds,
error state, forced recovery)."""

from __future__ import annotations

import pytest

from sim.engines.compiled.support import missing as compiled_lacks
from sim.engines.reference.assemble import assemble
from sim.model.load import ModelError, parse_model
from sim.model.plan import compile_plan
from sim.random.streams import Streams
from sim.run.replication import run_replication
from tests.conftest import differing, model_from
from tests.engines.test_engine_exact import _Silent


def deterministic(value: float) -> dict:
    return {"dist": "deterministic", "value": value}


def jk_stack(demand: float = 3.0, threads: int = 4, clients: dict | None = None, **pool) -> dict:
    """A worker-MPM front (one child of 4 threads) with mod_jk to one blocking Tomcat node."""
    return {
        "clients": clients or {"kind": "ab", "concurrency": 1, "requests": 1},
        "proxy": {
            "workers": 4,
            "mpm": "worker",
            "threads_per_child": 4,
            "linger_s": 0.0,
            "backend_pool": {"module": "mod_jk", "reply_timeout_s": 1.0, **pool},
        },
        "backends": [
            {
                "name": "tomcat",
                "threads": threads,
                "cores": 4,
                "connector": "blocking",
                "demand": deterministic(demand),
            }
        ],
    }


def prefork(data: dict, workers: int = 4) -> dict:
    """The same front as prefork children (one thread each: one cached endpoint)."""
    data["proxy"].update(mpm="prefork", workers=workers)
    del data["proxy"]["threads_per_child"]
    return data


def metrics(data: dict) -> dict:
    """The replication's metrics on the reference engine and, when it implements the model,
    on the compiled engine, which must agree on every one."""
    reference = run_replication(model_from(data, warmup="none", engine="reference"), 0)
    model = model_from(data, warmup="none", engine="compiled")
    if compiled_lacks(compile_plan(model)):
        return reference.metrics
    compiled = run_replication(model, 0)
    assert compiled.engine == "compiled"
    assert list(compiled.metrics) == list(reference.metrics)
    assert not differing(reference.metrics, compiled.metrics)
    return reference.metrics


def test_a_reply_timeout_is_retried_then_answered_504():
    """reply_timeout 1 s, retries 2 (the default: two attempts), retry_interval 100 ms, a 3-s
    request: attempt 1 times out at 1.0, attempt 2 is sent at 1.1 on a new connection and times
    out at 2.1, and the client gets 504 then.  The node received both."""
    m = metrics(jk_stack())
    assert (m["count.completed"], m["count.errors"]) == (0, 1)
    assert m["makespan"] == pytest.approx(2.1)
    assert m["proxy.responses.504"] == 1
    assert m["tomcat1.jk.attempts"] == 2
    assert m["tomcat1.jk.reply_timeouts"] == 2
    assert m["tomcat1.jk.abandoned"] == 2


@pytest.mark.parametrize(
    "retries, interval, end",
    [
        (1, 0.1, 1.0),  # one attempt: no retry at all
        (3, 0.5, 1.0 + 0.5 + 1.0 + 0.5 + 1.0),
        (2, 0.0, 2.0),
    ],
)
def test_attempts_are_retries_spaced_by_retry_interval(retries, interval, end):
    m = metrics(jk_stack(retries=retries, retry_interval_s=interval))
    assert m["makespan"] == pytest.approx(end)
    assert m["tomcat1.jk.attempts"] == retries
    assert m["proxy.responses.504"] == 1


@pytest.mark.parametrize(
    "options, attempts",
    [
        (0, 2),
        (1, 1),  # RECOVER_ABORT_IF_TCGETREQUEST: Tomcat has the request, no retry
        (2, 2),  # RECOVER_ABORT_IF_TCSENDHEADER: no header came, so it does not act
        (1 | 16, 2),  # ... but RECOVER_ALWAYS_HTTP_GET recovers a GET
        (1 | 8 | 16, 1),  # RECOVER_ALWAYS_HTTP_HEAD takes precedence: a GET is not recovered
    ],
)
def test_recovery_options_forbid_a_retry_once_the_node_has_the_request(options, attempts):
    m = metrics(jk_stack(recovery_options=options))
    assert m["tomcat1.jk.attempts"] == attempts
    assert m["makespan"] == pytest.approx(1.0 + (attempts - 1) * 1.1)
    assert m["proxy.responses.504"] == 1


def test_the_node_serves_every_abandoned_attempt_and_retries_amplify_its_load():
    """One Tomcat thread, 3-s requests, reply_timeout 1 s; one user sends two requests, with 10 s
    of thinking after each.  Request 1: attempt 1 takes the thread (0 - 3, abandoned at 1);
    attempt 2 at 1.1 waits in the accept queue and is abandoned at 2.1 -- but Tomcat accepts it
    at 3 and serves it to 6 all the same.  Request 2 at 12.1 finds the thread free (12.1 - 15.1,
    abandoned at 13.1); its retry at 13.2 waits behind it, is abandoned at 14.2 and served
    15.1 - 18.1.  The user's last think ends the run at 24.2.  Four requests reached the node for
    two sent, and all four were served to the end while nobody waited for them."""
    user = {
        "kind": "closed",
        "users": 1,
        "requests_per_user": 2,
        "think": deterministic(10.0),
    }
    m = metrics(jk_stack(threads=1, clients=user))
    assert m["count.errors"] == 2
    assert m["makespan"] == pytest.approx(24.2)
    assert m["count.completed"] == 0
    assert m["tomcat1.jk.attempts"] == 4
    assert m["tomcat1.jk.abandoned"] == 4
    assert m["tomcat1.jk.abandoned_served"] == 4


def test_without_reply_timeout_mod_jk_waits_for_ever_even_with_socket_timeout():
    """socket_timeout sets no read timeout on Unix (no USE_SO_RCVTIMEO): a 30-s request with
    socket_timeout 1 s is answered after 30 s."""
    data = jk_stack(demand=30.0, timeout_s=1.0)
    del data["proxy"]["backend_pool"]["reply_timeout_s"]
    m = metrics(data)
    assert (m["count.completed"], m["makespan"]) == (1, pytest.approx(30.0))


def test_a_full_accept_queue_drops_the_syn_and_the_connect_times_out_503():
    """Tomcat with one thread and acceptCount 0 (a blocking connector): user B's connection
    finds the backlog full, its SYN is dropped and retransmitted at 1 s; socket_connect_timeout
    0.5 s ends the connect at 0.5 and the retry at 0.6 + 0.5 = 1.1: 503.  (User A's 2-s request
    holds the thread meanwhile.)"""
    data = jk_stack(
        demand=2.0,
        threads=1,
        clients={"kind": "ab", "concurrency": 2, "requests": 2},
        socket_connect_timeout_s=0.5,
        reply_timeout_s=10.0,
    )
    data["backends"][0]["accept_queue"] = 0
    m = metrics(data)
    assert (m["count.completed"], m["count.errors"]) == (1, 1)
    assert m["proxy.responses.503"] == 1
    assert m["tomcat1.jk.connect_failures"] == 2
    assert m["makespan"] == pytest.approx(2.0)


@pytest.mark.parametrize(
    "idle_timeout, completed, end",
    [
        # A's child keeps its connection, pinning the only thread: B's connect gives up after
        # the last retransmission's 127 s, twice (100 ms apart): 503 at 254.1
        (None, 1, 127.0 + 0.1 + 127.0),
        # Tomcat closes A's idle connection at 2 + 2.5: the SYN retransmitted at 7 is accepted
        (2.5, 2, 7.0 + 2.0),
    ],
)
def test_the_kernel_retransmits_the_syn_until_the_node_accepts(idle_timeout, completed, end):
    """As above with neither socket_connect_timeout nor socket_timeout, behind a prefork front
    (each child caches one connection): connect() blocks while the kernel retransmits the SYN
    at 1, 3, 7, 15, 31 and 63 s and gives up at 127 s (tcp_syn_retries 6)."""
    data = jk_stack(
        demand=2.0,
        threads=1,
        clients={"kind": "ab", "concurrency": 2, "requests": 2},
        reply_timeout_s=300.0,
    )
    data["backends"][0]["accept_queue"] = 0
    data["backends"][0]["connection_idle_timeout_s"] = idle_timeout
    m = metrics(prefork(data))
    assert (m["count.completed"], m["count.errors"]) == (completed, 2 - completed)
    assert m["makespan"] == pytest.approx(end)


def test_a_reply_in_time_cancels_the_timer_and_keeps_the_connection():
    """A 0.5-s request under a 1-s reply timeout: one attempt, answered at 0.5; the second
    request (after 2 s of thinking) reuses the pooled connection."""
    user = {"kind": "closed", "users": 1, "requests_per_user": 2, "think": deterministic(2.0)}
    m = metrics(jk_stack(demand=0.5, clients=user))
    assert (m["count.completed"], m["count.errors"]) == (2, 0)
    assert m["makespan"] == pytest.approx(0.5 + 2.0 + 0.5 + 2.0)
    assert m["tomcat1.jk.attempts"] == 2
    assert m["tomcat1.jk.reply_timeouts"] == 0
    assert m["tomcat1.connections.open_now"] == 1


@pytest.mark.parametrize(
    "service, completed, end",
    [
        (1.0, 1, 1.0),  # both look at 0 and 0.1 and give up at 0.2: 503, 503
        (0.15, 1, 0.2),  # freed at 0.15, after their last look: both still give up at 0.2
        (0.05, 2, 0.2),  # freed at 0.05: the first finds it at 0.1; the second gives up at 0.2
    ],
)
def test_the_endpoint_limit_per_child_makes_requests_look_every_100_ms(service, completed, end):
    """One child of 3 threads, connection_pool_size 1, ab -c 3 -n 3 (no reply timeout):
    request 1 takes the child's one endpoint; requests 2 and 3 find none and look again 100 ms
    later, giving up at connection_acquire_timeout (200 ms) with 503."""
    data = jk_stack(demand=service, clients={"kind": "ab", "concurrency": 3, "requests": 3}, max=1)
    del data["proxy"]["backend_pool"]["reply_timeout_s"]
    data["proxy"].update(workers=3, threads_per_child=3)
    m = metrics(data)
    assert m["count.completed"] == completed
    assert m["count.errors"] == 3 - completed
    assert m["tomcat1.acquire_timeouts"] == 3 - completed
    assert m["proxy.responses.503"] == 3 - completed
    assert m["tomcat1.jk.attempts"] == completed
    assert m["makespan"] == pytest.approx(end)


def test_several_nodes_keep_mod_jk_on_the_reference_engine():
    """Several nodes make the balancer mod_jk's lb worker (failover, error state, recovery),
    which the compiled engine does not implement: `auto` runs such a model on the reference."""
    from sim.engines import choose

    data = jk_stack()
    data["backends"][0]["count"] = 2
    choice = choose(compile_plan(model_from(data)))
    assert choice.engine == "reference"
    assert "mod_jk.lb" in choice.note


def two_members(first: dict, second: dict, clients: dict | None = None, **balancer) -> dict:
    return {
        "clients": clients or {"kind": "ab", "concurrency": 1, "requests": 1},
        "proxy": {
            "workers": 4,
            "mpm": "worker",
            "threads_per_child": 4,
            "linger_s": 0.0,
            "backend_pool": {"module": "mod_jk", "reply_timeout_s": 1.0},
        },
        "balancer": {"policy": "round_robin", **balancer},
        "backends": [
            {"name": "a", "threads": 4, "cores": 4, "connector": "blocking", **first},
            {"name": "b", "threads": 4, "cores": 4, "connector": "blocking", **second},
        ],
    }


def test_the_lb_worker_fails_over_after_the_reply_timeouts():
    """Member a takes 3 s, b 0.2 s; round robin sends the request to a: two attempts time out
    (1.0, 2.1), a goes into error state (2 reply timeouts > max_reply_timeouts 0) and the lb
    worker sends the request to b at once: 200 at 2.3."""
    m = metrics(
        two_members({"demand": deterministic(3.0)}, {"demand": deterministic(0.2)}),
    )
    assert (m["count.completed"], m["count.errors"]) == (1, 0)
    assert m["makespan"] == pytest.approx(2.3)
    assert (m["balancer.dispatched.a1"], m["balancer.dispatched.b1"]) == (1, 1)


def test_all_members_timing_out_take_two_rounds_and_a_forced_recovery():
    """Both members take 3 s.  Round 1: a (504 at 2.1, error state), b (504 at 4.2, error
    state).  Round 2 after 100 ms: none usable, so both are forced back; a at 4.3 - 6.4, b at
    6.4 - 8.5 (lb_retries 2 per round), then 504: 2 x 2 x 2 = 8 requests for one."""
    m = metrics(two_members({"demand": deterministic(3.0)}, {"demand": deterministic(3.0)}))
    assert m["count.errors"] == 1
    assert m["proxy.responses.504"] == 1
    assert m["makespan"] == pytest.approx(8.5)
    assert m["a1.jk.attempts"] + m["b1.jk.attempts"] == 8


def test_a_dead_member_is_refused_put_in_error_state_and_recovered_after_recover_time():
    """Member a crashes at 0 and restarts at 1; recover_time (balancer.retry_s) 5 s, and
    worker.maintain 60 s (the default).  The first request's two connects to a are refused
    (0, 0.1): a goes into error state and b serves it 0.1 - 0.2.  Requests every 10 s go to b
    only until the first maintenance at >= 60 s marks a as recovering; a serves again after."""
    user = {
        "kind": "closed",
        "users": 1,
        "requests_per_user": 9,
        "think": deterministic(10.0),
    }
    data = two_members(
        {"demand": deterministic(0.1), "events": [{"at_s": 0.0, "kind": "crash"}]},
        {"demand": deterministic(0.1)},
        clients=user,
        retry_s=5.0,
    )
    data["backends"][0]["events"].append({"at_s": 1.0, "kind": "recover"})
    model = model_from(data, warmup="none")
    m = run_replication(model, 0).metrics
    assert (m["count.completed"], m["count.errors"]) == (9, 0)
    assert m["a1.jk.connect_failures"] == 2
    # requests at 0, 10.2, 20.3, ..., 80.8: the first to b after two refusals, then b alone
    # until the one at 60.7 finds a recovering; a and b alternate after
    assert m["response.p99"] == pytest.approx(0.2, rel=0.02)  # (histogram bins)

    assembly, _ = assemble(compile_plan(model), Streams(1, 0), lambda kernel, assembly: _Silent())
    assembly.clients.start()
    dispatcher = assembly.dispatcher
    assembly.kernel.run(until=59.0)
    assert dispatcher.usable == [False, True]
    assert dispatcher.dispatched == [1, 6]
    assembly.kernel.run()
    assert dispatcher.usable == [True, True]
    assert dispatcher.dispatched[0] > 1


def test_a_lone_dead_member_gets_503_after_every_round():
    """One member that is down, behind the lb worker: two refused connects per round (100 ms
    apart), 100 ms between the rounds, the second forced: 503 at 0.3, four connects."""
    data = jk_stack(demand=0.1)
    data["backends"][0]["events"] = [{"at_s": 0.0, "kind": "crash"}]
    m = metrics(data)
    assert m["proxy.responses.503"] == 1
    assert m["makespan"] == pytest.approx(0.3)
    assert m["tomcat1.jk.connect_failures"] == 4


@pytest.mark.parametrize(
    "override, message",
    [
        ("proxy.backend_pool.retries=0", "retries"),
        ("proxy.backend_pool.retry_interval_s=-1", "retry_interval_s"),
        ("proxy.backend_pool.recovery_options=32", "recovery_options"),
        ("proxy.backend_pool.reply_timeout_s=0", "reply_timeout_s"),
        ("proxy.backend_pool.lb.lb_retries=0", "lb_retries"),
    ],
)
def test_bad_mod_jk_values_are_refused_with_the_parameter_named(override, message):
    base = jk_stack()
    with pytest.raises(ModelError, match=message):
        parse_model(base, overrides=[override])


def test_mod_jk_properties_need_mod_jk():
    data = jk_stack()
    data["proxy"]["backend_pool"]["module"] = "mod_proxy"
    with pytest.raises(ModelError, match='set module = "mod_jk"'):
        parse_model(data)


def test_optional_mod_jk_timeouts_take_none():
    model = parse_model(
        jk_stack(timeout_s=2.0),
        overrides=["proxy.backend_pool.reply_timeout_s=none"],
    )
    pool = model.proxy.backend_pool
    assert pool.reply_timeout_s is None
    assert pool.connect_timeout_s == 2.0  # socket_connect_timeout defaults to socket_timeout
    assert (
        parse_model(
            jk_stack(timeout_s=2.0), overrides=["proxy.backend_pool.socket_connect_timeout_s=none"]
        ).proxy.backend_pool.connect_timeout_s
        is None
    )


def test_documented_defaults():
    pool = parse_model(jk_stack()).proxy.backend_pool
    assert (pool.retries, pool.retry_interval_s, pool.recovery_options) == (2, 0.1, 0)
    assert (pool.lb.retries, pool.lb.lb_retries, pool.lb.max_reply_timeouts) == (2, 2, 0)
    assert pool.connect_timeout_s is None  # socket_timeout 0: a blocking connect()


# --------------------------------------------------------------------------- Jetty's budget
def jetty(threads: int, acceptors: int, selectors: int) -> dict:
    return {
        "clients": {"kind": "ab", "concurrency": 4, "requests": 4},
        "backends": [
            {
                "name": "jetty",
                "threads": threads,
                "acceptors": acceptors,
                "selectors": selectors,
                "cores": 4,
                "demand": deterministic(1.0),
            }
        ],
    }


@pytest.mark.parametrize(
    "threads, acceptors, selectors, usable",
    [(4, 0, 0, 4), (4, 1, 0, 3), (4, 1, 1, 2), (5, 2, 2, 1)],
)
def test_the_usable_thread_budget_is_max_threads_less_acceptors_and_selectors(
    threads, acceptors, selectors, usable
):
    """Four 1-s requests at once on `usable` request threads: the last ends at ceil(4 / usable)."""
    model = model_from(jetty(threads, acceptors, selectors), warmup="none")
    assert model.backends[0].request_threads == usable
    m = run_replication(model, 0).metrics
    assert m["makespan"] == pytest.approx(-(-4 // usable))


def test_a_pool_without_a_request_thread_is_refused():
    with pytest.raises(ModelError, match="insufficient maxThreads"):
        parse_model(jetty(2, 1, 1))


@pytest.mark.parametrize("think, closed", [(30.0, 0), (70.0, 1)])
def test_connection_pool_timeout_acts_at_the_maintenance_a_request_runs(think, closed):
    """mod_jk connection_pool_timeout 10 s behind a prefork front (one child): the child's
    maintenance runs at its first request (t = 0) and then at a request 60 s (worker.maintain)
    or more after that.  A second request 30 + 1 s in reuses the connection idle for 30 s; one
    70 + 1 s in runs the maintenance first, which closes it (unused for 70 s > 10 s), and opens
    a new one.  mod_proxy's ttl would have closed it in both cases (and not with prefork)."""
    user = {"kind": "closed", "users": 1, "requests_per_user": 2, "think": deterministic(think)}
    data = prefork(jk_stack(demand=1.0, threads=1, clients=user, ttl_s=10.0), workers=1)
    del data["proxy"]["backend_pool"]["reply_timeout_s"]
    m = metrics(data)
    assert m["count.completed"] == 2
    assert m["tomcat1.connections.ttl_closed"] == closed


@pytest.mark.parametrize("escalation, in_error", [(None, False), (0.0, True)])
def test_a_failed_connect_to_a_busy_member_is_a_local_error_until_escalation(escalation, in_error):
    """ab -c 3 -n 3, round robin over a (one thread, acceptCount 0, 10-s requests) and b.
    Request 1 takes a's thread, request 2 goes to b, request 3 to a: its SYNs are dropped and
    both connects time out (socket_connect_timeout 0.5 s: 0.5, 0.6 - 1.1).  a still serves
    request 1, so by default (error_escalation_time = recover_time / 2) it is only in local
    error: request 3 fails over to b (1.1 - 1.2) and a stays usable.  With
    error_escalation_time 0 it goes into error state at once."""
    data = two_members(
        {"demand": deterministic(10.0), "threads": 1, "accept_queue": 0},
        {"demand": deterministic(0.1)},
        clients={"kind": "ab", "concurrency": 3, "requests": 3},
    )
    pool = data["proxy"]["backend_pool"]
    pool.update(socket_connect_timeout_s=0.5, reply_timeout_s=20.0)
    if escalation is not None:
        pool["lb"] = {"error_escalation_time_s": escalation}
    model = model_from(data, warmup="none")
    m = run_replication(model, 0).metrics
    assert (m["count.completed"], m["count.errors"]) == (3, 0)
    assert m["a1.jk.connect_failures"] == 2
    assert (m["balancer.dispatched.a1"], m["balancer.dispatched.b1"]) == (2, 2)
    assembly, _ = assemble(compile_plan(model), Streams(1, 0), lambda kernel, assembly: _Silent())
    assembly.clients.start()
    assembly.kernel.run(until=5.0)
    assert assembly.dispatcher.usable[0] is not in_error


def test_members_without_a_free_endpoint_are_busy_and_the_request_gets_503():
    """One child of 3 threads, connection_pool_size 1, ab -c 3 -n 3 over a and b (1-s
    requests).  Request 3 goes to a, whose one endpoint is taken: mod_jk looks at 0 and 0.1 and
    gives up at 0.2 (connection_acquire_timeout 200 ms), a is busy; b likewise 0.2 - 0.4.  The
    second round (0.5) finds both busy and none in error to force: 503 at 0.5."""
    data = two_members(
        {"demand": deterministic(1.0)},
        {"demand": deterministic(1.0)},
        clients={"kind": "ab", "concurrency": 3, "requests": 3},
    )
    data["proxy"].update(workers=3, threads_per_child=3)
    data["proxy"]["backend_pool"].update(max=1)
    del data["proxy"]["backend_pool"]["reply_timeout_s"]
    model = model_from(data, warmup="none")
    m = run_replication(model, 0).metrics
    assert (m["count.completed"], m["count.errors"]) == (2, 1)
    assert m["proxy.responses.503"] == 1
    assert m["a1.acquire_timeouts"] + m["b1.acquire_timeouts"] == 2
    assembly, _ = assemble(compile_plan(model), Streams(1, 0), lambda kernel, assembly: _Silent())
    assembly.clients.start()
    assembly.kernel.run(until=0.6)
    assert assembly.dispatcher.busy == [True, True]
