"""mod_proxy's connect to a node whose accept queue is full, and its worker's error state:
exact event times on a tiny scenario with deterministic demands.

What the real stack does: Linux drops a SYN to a full accept queue (tcp_abort_on_overflow = 0)
and the front's kernel retransmits it at 1, 3, 7, ... s; connect() fails at mod_proxy's
`connectiontimeout` (default the worker's `timeout`), the worker goes into error state for
`retry` s ("ap_proxy_connect_backend disabling worker", httpd 2.2 and 2.4), and while it is,
`ap_proxy_acquire_connection` answers every request for it 503 at once.

The scenario: a prefork front of 2 children (each caches one connection), `ab -c 2`, Tomcat
with one thread and acceptCount 0 behind a blocking AJP connector, 2-s requests.  User A's
child connects first and pins the only thread for good; user B's connect finds the queue full.
"""

from __future__ import annotations

import pytest

from sim.engines.compiled.support import missing as compiled_lacks
from sim.model.plan import compile_plan
from sim.run.replication import run_replication
from tests.conftest import model_from


def stack(
    requests: int,
    timeout_s: float = 5.0,
    idle_timeout_s: float | None = None,
    retry_s: float | None = None,
    workers: int = 2,
) -> dict:
    data: dict = {
        "clients": {"kind": "ab", "concurrency": 2, "requests": requests},
        "proxy": {
            "workers": workers,
            "mpm": "prefork",
            "linger_s": 0.0,
            "backend_pool": {"timeout_s": timeout_s, "scheme": "ajp"},
        },
        "backends": [
            {
                "name": "tomcat",
                "threads": 1,
                "cores": 4,
                "connector": "blocking",
                "accept_queue": 0,
                "connection_idle_timeout_s": idle_timeout_s,
                "demand": {"dist": "deterministic", "value": 2.0},
            }
        ],
    }
    if retry_s is not None:
        data["balancer"] = {"retry_s": retry_s}
    return data


def metrics(data: dict) -> dict:
    return run_replication(model_from(data, warmup="none", engine="reference"), 0).metrics


def test_the_connect_waits_for_syn_retransmissions_and_fails_at_the_timeout():
    """B's SYN at 0 is dropped, retransmitted at 1 and 3; the next would be at 7, after the
    5-s connectiontimeout: 503 at 5 (A's request ends at 2)."""
    m = metrics(stack(requests=2))
    assert (m["count.completed"], m["count.errors"]) == (1, 1)
    assert m["proxy.responses.503"] == 1
    assert m["tomcat1.connect_failures"] == 1
    assert m["makespan"] == pytest.approx(5.0)


def test_a_retransmitted_syn_is_accepted_once_the_queue_has_room():
    """Tomcat closes A's idle connection at 2 + 2.5 = 4.5, freeing the thread; with a 10-s
    connectiontimeout B's SYN retransmitted at 7 is accepted: B is served from 7 to 9."""
    m = metrics(stack(requests=2, timeout_s=10.0, idle_timeout_s=2.5))
    assert (m["count.completed"], m["count.errors"]) == (2, 0)
    assert m["tomcat1.connect_failures"] == 0
    assert m["makespan"] == pytest.approx(9.0)


@pytest.mark.parametrize(
    "retry_s, completed, failures, end",
    [
        # in error until 66: at 7 A's third request and B's second are answered 503 at once,
        # and so is B's third at 8
        (None, 2, 1, 8.0),
        # in error until 6.5 only: at 7 A's third request goes to the child idle longest, the
        # one with the connection (7-9); B's second, on the other, connects again (SYNs at 7,
        # 8, 10) and fails at 12, the worker in error until 12.5; B's third, at 13, finds the
        # connected child idle longest and is served 13-15
        (0.5, 4, 2, 15.0),
    ],
)
def test_a_failed_connect_puts_the_worker_in_error_state_for_retry(
    retry_s, completed, failures, end
):
    """Two closed-loop users, 3 requests each, 1 s of thinking before each: A's first two
    run 1-3 and 4-6 on the child that connected first; B's connect fails at 6, and B thinks
    until 7.  `retry` (default 60 s) decides what the requests from 7 on meet."""
    data = stack(requests=6, retry_s=retry_s)
    data["clients"] = {
        "kind": "closed",
        "users": 2,
        "requests_per_user": 3,
        "think": {"dist": "deterministic", "value": 1.0},
    }
    m = metrics(data)
    assert (m["count.completed"], m["count.errors"]) == (completed, 6 - completed)
    assert m["tomcat1.connect_failures"] == failures
    assert m["tomcat1.disabled_refusals"] == 6 - completed - failures
    assert m["makespan"] == pytest.approx(end)


@pytest.mark.parametrize("workers, lacks", [(2, True), (1, False)])
def test_only_a_front_that_can_outnumber_the_node_leaves_the_compiled_engine(workers, lacks):
    """A front of 2 children against 1 thread + acceptCount 0 can have a connect wait and
    fail (the compiled engine does not simulate it); with 1 child it never can, and the
    model stays on the compiled engine."""
    plan = compile_plan(model_from(stack(requests=2, workers=workers), warmup="none"))
    lacking = " ".join(compiled_lacks(plan))
    assert ("proxy.backend_pool.connect_failures" in lacking) is lacks
