"""Exact event-time tests of when the parent's process management acts in a load that starts
some time after httpd (`proxy.uptime_s`: its ticks are at whole seconds of the server's clock,
`ap_wait_or_timeout`)."""

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
