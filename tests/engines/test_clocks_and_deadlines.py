"""Exact event-time tests of two questions of mechanism (issue 29's live-testbed misses):

* when the parent's process management acts in a load that starts some time after httpd
  (`proxy.uptime_s`: its ticks are at whole seconds of the server's clock, `ap_wait_or_timeout`);
* what a client that has given up sees: its end is its deadline, not the server's later close
  (`elapsed.server_close`), and which requests mod_jk sends when the backend's accept queue holds
  its new connections (the stall of a connector at `maxConnections`).
"""

from __future__ import annotations

import pytest

from sim.run.replication import run_replication
from tests.conftest import model_from, on_both_engines

_on_both_engines = on_both_engines()

TEN_SECONDS = {"dist": "deterministic", "value": 10.0}


def worker_front(start_servers: int, **directives) -> dict:
    """A worker-MPM front of 2-thread children that serves 10-s requests itself."""
    return {
        "workers": 8,
        "mpm": "worker",
        "threads_per_child": 2,
        "start_servers": start_servers,
        "min_spare_threads": 1,
        "cores": 8,
        "linger_s": 0.0,
        "demand": TEN_SECONDS,
        "forward": False,
        **directives,
    }


@pytest.mark.parametrize(
    "uptime_s, makespan",
    [
        (0.0, 11.0),  # the load starts with the server: the first tick 1 s in
        (0.6, 10.4),  # the server's second 1 falls 0.4 s into the load
        (3.25, 10.75),  # its second 4, 0.75 s in
        (2.0, 11.0),  # a whole uptime: the tick at the load's start saw it idle; next at 1 s
    ],
)
def test_the_first_fork_comes_at_the_next_whole_second_of_the_servers_clock(uptime_s, makespan):
    """worker, one child of 2 threads, ab -c 4 -n 4 of 10-s requests: two are served at once, two
    wait in the listen queue for the child the parent forks at its next tick (no idle thread,
    MinSpareThreads 1), and end 10 s after it."""
    data = {
        "clients": {"kind": "ab", "concurrency": 4, "requests": 4},
        "proxy": worker_front(1, uptime_s=uptime_s),
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(makespan, abs=1e-9)


@pytest.mark.parametrize("uptime_s, makespan", [(0.0, 10.0), (2.5, 10.5)])
def test_the_ticks_before_the_load_act_on_the_idle_server(uptime_s, makespan):
    """worker, StartServers 3 (6 threads), MaxSpareThreads raised to 1 + 2 + 1 = 4 (worker_run).
    Started with the server, ab -c 6 finds 6 threads: 10 s.  After 2.5 s of uptime the tick at
    second 1 stopped a child (6 idle > 4; at second 2, 4 are not above 4): 4 are served at once,
    and the other 2 by the child forked at second 3, 0.5 s into the load."""
    data = {
        "clients": {"kind": "ab", "concurrency": 6, "requests": 6},
        "proxy": worker_front(3, max_spare_threads=1, uptime_s=uptime_s),
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(makespan, abs=1e-9)


def test_a_client_that_gave_up_ends_at_its_deadline():
    """One 4-s worker, ab -c 2 -n 2 with a 5-s deadline.  The first client is served 0 - 4.  The
    second waits in the listen queue, is accepted at 4 and gives up at 5; the server serves it
    into the closed socket until 8.  The clients' test ends at 5: the server's close at 8 is
    nobody's end (before, `elapsed.server_close` said 8 and the run went on to it)."""
    data = {
        "clients": {"kind": "ab", "concurrency": 2, "requests": 2, "timeout_s": 5.0},
        "proxy": {
            "workers": 1,
            "cores": 1,
            "forward": False,
            "demand": {"dist": "deterministic", "value": 4.0},
        },
    }
    metrics = run_replication(model_from(data, warmup="none"), 0).metrics
    assert (metrics["count.completed"], metrics["count.timed_out"]) == (1, 1)
    assert metrics["makespan"] == pytest.approx(5.0)
    assert metrics["elapsed.server_close"] == pytest.approx(5.0)


def test_a_connection_still_open_after_a_give_up_does_not_hold_the_figure():
    """The same with keep-alive (KeepAliveTimeout 5, no lingering): the first client's connection
    is closed at 4 + 5 = 9, which it sees; the second's, after its request ends at 8, at 13, which
    nobody sees.  The test ends at 9."""
    data = {
        "clients": {
            "kind": "ab",
            "concurrency": 2,
            "requests": 2,
            "timeout_s": 5.0,
            "keep_alive": True,
        },
        "proxy": {
            "workers": 1,
            "cores": 1,
            "forward": False,
            "linger_s": 0.0,
            "keep_alive_timeout_s": 5.0,
            "demand": {"dist": "deterministic", "value": 4.0},
        },
    }
    metrics = run_replication(model_from(data, warmup="none"), 0).metrics
    assert metrics["makespan"] == pytest.approx(5.0)
    assert metrics["elapsed.server_close"] == pytest.approx(9.0)


def jk_stall(sleep_s: float) -> dict:
    """worker, one child of 4 threads, mod_jk (connection_pool_size = ThreadsPerChild = 4) in
    front of an AJP connector that keeps 2 connections (maxConnections 2, acceptCount 10);
    ab -c 6 -n 6 with a 30-s deadline; the servlet sleeps `sleep_s`."""
    return {
        "clients": {"kind": "ab", "concurrency": 6, "requests": 6, "timeout_s": 30.0},
        "proxy": {
            "workers": 4,
            "mpm": "worker",
            "threads_per_child": 4,
            "linger_s": 0.0,
            "keep_alive": False,
            "cores": 4,
            "demand": {"dist": "deterministic", "value": 0.0},
            "backend_pool": {"module": "mod_jk", "scheme": "ajp", "max": 4},
        },
        "backends": [
            {
                "name": "tomcat",
                "threads": 10,
                "max_connections": 2,
                "accept_queue": 10,
                "cores": 4,
                "demand": {"dist": "deterministic", "value": 0.0},
                "io_wait": {"dist": "deterministic", "value": sleep_s},
            }
        ],
    }


def test_mod_jk_reuses_the_connections_tomcat_accepted_and_strands_the_queued_ones():
    """t = 0: the 4 threads take 4 clients (2 wait in httpd's listen queue); each opens its own
    endpoint's connection: Tomcat accepts 2 (maxConnections), 2 stay in its accept queue with
    their requests sent (mod_jk's connect() succeeded: the kernel completed the handshake).
    t = 1: the 2 accepted are answered; their connections stay open in the child's endpoint
    cache (AJP connectionTimeout -1) and keep both of Tomcat's connection slots.  Their threads
    take the 2 waiting clients, whose requests mod_jk sends on those connected endpoints
    (ajp_get_endpoint prefers a cache slot with a socket): answered at 2.  The 2 queued
    connections are never accepted: their clients give up at 30, and the test ends there."""
    metrics = run_replication(model_from(jk_stall(1.0), warmup="none"), 0).metrics
    assert (metrics["count.completed"], metrics["count.timed_out"]) == (4, 2)
    assert metrics["response.mean"] == pytest.approx((1 + 1 + 2 + 2) / 4, rel=0.01)
    assert metrics["tomcat1.connections.awaiting_thread_now"] == 2
    assert metrics["makespan"] == pytest.approx(30.0)
    assert metrics["elapsed.server_close"] == pytest.approx(30.0)


def test_a_stopped_worker_child_is_the_oldest_and_frees_its_tomcat_connections():
    """worker, StartServers 3 of 2 threads (MaxSpareThreads raised to 1 + 2 + 1 = 4), mod_jk in
    front of an AJP connector that keeps 1 connection; ab -c 2 -n 2 of 0.5-s requests.  t = 0:
    child 0 accepts A, child 1 accepts B (the listeners wait in accept() in turn); A's connection
    is accepted, B's waits in Tomcat's accept queue.  t = 0.5: A is answered and its connection
    stays in child 0's cache.  t = 1: 5 idle threads > 4, and the parent's byte on the pipe of
    death is read by the first child blocked on it, child 0: it exits at once, its endpoint
    closes, and Tomcat accepts B's connection: B is answered at 1.5.  (Had the youngest idle
    child, 2, been stopped, B would have waited for its 30-s deadline.)"""
    data = jk_stall(0.5)
    data["clients"].update(concurrency=2, requests=2)
    data["proxy"].update(
        workers=6, threads_per_child=2, start_servers=3, min_spare_threads=1, max_spare_threads=1
    )
    data["proxy"]["backend_pool"]["max"] = 2
    data["backends"][0]["max_connections"] = 1
    metrics = run_replication(model_from(data, warmup="none"), 0).metrics
    assert (metrics["count.completed"], metrics["count.timed_out"]) == (2, 0)
    assert metrics["makespan"] == pytest.approx(1.5)
    assert metrics["tomcat1.connections.closed_by_child_exit"] == 1
