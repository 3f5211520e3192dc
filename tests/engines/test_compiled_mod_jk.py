"""mod_jk's ajp13 worker on the compiled engine: exact event times, on both engines.

Each scenario is tiny and deterministic, so the times follow from mod_jk 1.2.48's
`ajp_service` (jk_ajp_common.c) by hand: `retries` attempts, `retry_interval` between them,
`reply_timeout` per attempt (504), connects whose SYNs a full accept queue drops (503), the
endpoint cache per process (`connection_pool_size`, looked for every 100 ms until
`connection_acquire_timeout`), and `connection_pool_timeout` applied by the process's
maintenance.  Both engines must give those times, and every other metric bit for bit alike.
"""

from __future__ import annotations

import math

import pytest

from sim.run.replication import run_replication
from tests.conftest import model_from

ENGINES = ("reference", "compiled")


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
    """The replication's metrics on both engines, which must agree on every one."""
    results = [run_replication(model_from(data, warmup="none", engine=e), 0) for e in ENGINES]
    reference, compiled = results
    assert compiled.engine == "compiled"
    assert list(compiled.metrics) == list(reference.metrics)
    different = {
        name: (value, compiled.metrics[name])
        for name, value in reference.metrics.items()
        if not (
            value == compiled.metrics[name]
            or (math.isnan(value) and math.isnan(compiled.metrics[name]))
        )
    }
    assert not different
    return reference.metrics


def test_a_reply_timeout_is_retried_on_a_new_connection_then_answered_504():
    """reply_timeout 1 s, retries 2 (two attempts), retry_interval 100 ms, a 3-s request:
    attempt 1 times out at 1.0, attempt 2 is sent at 1.1 on a new connection and times out at
    2.1: 504 then.  The node got both and serves both to the end (abandoned)."""
    m = metrics(jk_stack())
    assert (m["count.completed"], m["count.errors"]) == (0, 1)
    assert m["makespan"] == pytest.approx(2.1)
    assert m["proxy.responses.504"] == 1
    assert m["proxy.responses.503"] == 0
    assert m["tomcat1.jk.attempts"] == 2
    assert m["tomcat1.jk.reply_timeouts"] == 2
    assert m["tomcat1.jk.abandoned"] == 2


@pytest.mark.parametrize(
    "retries, interval, end",
    [
        (1, 0.1, 1.0),  # one attempt: no retry
        (3, 0.5, 1.0 + 0.5 + 1.0 + 0.5 + 1.0),
        (2, 0.0, 2.0),
    ],
)
def test_attempts_are_spaced_by_retry_interval(retries, interval, end):
    m = metrics(jk_stack(retries=retries, retry_interval_s=interval))
    assert m["makespan"] == pytest.approx(end)
    assert m["tomcat1.jk.attempts"] == retries
    assert m["proxy.responses.504"] == 1


@pytest.mark.parametrize(
    "options, attempts",
    [
        (0, 2),
        (1, 1),  # RECOVER_ABORT_IF_TCGETREQUEST: Tomcat has the request, no retry
        (1 | 16, 2),  # ... RECOVER_ALWAYS_HTTP_GET recovers a GET
        (1 | 8 | 16, 1),  # RECOVER_ALWAYS_HTTP_HEAD takes precedence
    ],
)
def test_recovery_options_decide_whether_a_timed_out_request_is_retried(options, attempts):
    m = metrics(jk_stack(recovery_options=options))
    assert m["tomcat1.jk.attempts"] == attempts
    assert m["makespan"] == pytest.approx(1.0 + (attempts - 1) * 1.1)


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


def test_the_node_serves_every_abandoned_attempt_and_retries_amplify_its_load():
    """One Tomcat thread, 3-s requests, reply_timeout 1 s, one user sending two requests 10 s
    apart.  Request 1: attempt 1 holds the thread 0 - 3 (abandoned at 1); attempt 2 at 1.1 waits
    in the accept queue, is abandoned at 2.1, yet is accepted at 3 and served to 6.  Request 2
    at 12.1: 12.1 - 15.1 (abandoned at 13.1), its retry at 13.2 served 15.1 - 18.1.  The last
    think ends the run at 24.2: four attempts served for two requests, all abandoned."""
    user = {"kind": "closed", "users": 1, "requests_per_user": 2, "think": deterministic(10.0)}
    m = metrics(jk_stack(threads=1, clients=user))
    assert (m["count.completed"], m["count.errors"]) == (0, 2)
    assert m["makespan"] == pytest.approx(24.2)
    assert m["tomcat1.jk.attempts"] == 4
    assert m["tomcat1.jk.abandoned"] == 4
    assert m["tomcat1.jk.abandoned_served"] == 4


def test_a_full_accept_queue_drops_the_syn_and_the_connect_gives_up_503():
    """One Tomcat thread, acceptCount 0: B's SYN is dropped; socket_connect_timeout 0.5 s ends
    the connect at 0.5, the retry's at 0.6 + 0.5 = 1.1: 503 (A's 2-s request ends at 2)."""
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
        # Tomcat closes A's idle connection at 2 + 2.5: the SYN retransmitted at 7 gets in
        (2.5, 2, 7.0 + 2.0),
    ],
)
def test_the_kernel_retransmits_the_syn_at_1_3_7_s_until_the_node_accepts(
    idle_timeout, completed, end
):
    """Neither socket_connect_timeout nor socket_timeout, a prefork front: connect() blocks
    while the kernel retransmits the SYN (1, 3, 7, 15, 31, 63 s) and gives up at 127 s."""
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


@pytest.mark.parametrize("think, closed", [(30.0, 0), (70.0, 1)])
def test_connection_pool_timeout_acts_at_the_maintenance_a_request_runs(think, closed):
    """connection_pool_timeout 10 s, a prefork child: its maintenance runs at its first
    request (t = 0), then at a request 60 s (worker.maintain) or more later.  A request 31 s in
    reuses the connection idle for 30 s; one 71 s in runs the maintenance, which closes it
    (unused for 70 s > 10 s) and the request opens a new one."""
    user = {"kind": "closed", "users": 1, "requests_per_user": 2, "think": deterministic(think)}
    data = prefork(jk_stack(demand=1.0, threads=1, clients=user, ttl_s=10.0), workers=1)
    del data["proxy"]["backend_pool"]["reply_timeout_s"]
    m = metrics(data)
    assert m["count.completed"] == 2
    assert m["tomcat1.connections.ttl_closed"] == closed
    assert m["makespan"] == pytest.approx(2 * (1.0 + think))


def test_several_nodes_keep_mod_jk_on_the_reference_engine():
    """Several nodes make the balancer mod_jk's lb worker (failover, error state, recovery),
    which the compiled engine does not implement: `auto` runs such a model on the reference."""
    from sim.engines import choose

    data = jk_stack()
    data["backends"][0]["count"] = 2
    choice = choose(model_from(data))
    assert choice.engine == "reference"
    assert "mod_jk.lb" in choice.note
