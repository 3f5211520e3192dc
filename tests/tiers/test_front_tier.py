"""The front tier as httpd 2.4 and mod_jk behave: exact event times on tiny scenarios.

Child processes of the worker and event MPMs (StartServers, Min/MaxSpareThreads, the spawn
rate), each child's own backend connection pool, the event MPM's connection limit per child,
the connection closed after an error status, and the instant the server closed its last
client connection."""

from __future__ import annotations

import pytest

from sim.model.load import ModelError, parse_model

BASE = {
    "clients": {"kind": "ab", "concurrency": 1, "requests": 1},
    "proxy": {"workers": 4},
    "backends": [{"demand": 0.1}],
}


@pytest.mark.parametrize(
    "override, read",
    [
        ("proxy.backend_pool.timeout_s=none", lambda m: m.proxy.backend_pool.timeout_s),
        ("clients.close_delay_s=none", lambda m: m.clients.close_delay_s),
        ("proxy.workers=none", lambda m: m.proxy.workers),
        ('clients.connect="None"', lambda m: m.clients.connect),
    ],
)
def test_none_sets_an_optional_parameter_from_set_and_toml(override, read):
    assert read(parse_model(BASE, overrides=[override])) is None
    path, value = override.split("=")
    *tables, last = path.split(".")
    data = {**BASE, "proxy": dict(BASE["proxy"]), "clients": dict(BASE["clients"])}
    node = data
    for table in tables:
        node = node.setdefault(table, {})
    node[last] = value.strip('"')
    assert read(parse_model(data)) is None


def test_none_is_refused_where_a_parameter_is_not_optional():
    with pytest.raises(ModelError, match=r"proxy\.cores = 'none'"):
        parse_model(BASE, overrides=["proxy.cores=none"])


def run_exact(data: dict):
    from sim.run.replication import run_replication
    from tests.conftest import model_from

    return run_replication(model_from(data, warmup="none"), 0)


def front_only(**proxy) -> dict:
    """A proxy that serves 10-s requests itself on enough cores, ab -c 8 -n 8."""
    return {
        "clients": {"kind": "ab", "concurrency": 8, "requests": 8},
        "proxy": {
            "cores": 8,
            "forward": False,
            "demand": {"dist": "deterministic", "value": 10.0},
            **proxy,
        },
    }


def test_worker_mpm_forks_children_of_threads_at_a_doubling_rate():
    """worker MPM, ThreadsPerChild 2, MaxRequestWorkers 8 (4 children), StartServers 1,
    MinSpareThreads 2: one child at t = 0 (2 requests), the parent forks 1 child at t = 1 and
    2 at t = 2 (rate doubling), so the requests end at 10 (x2), 11 (x2), 12 (x4)."""
    result = run_exact(
        front_only(
            mpm="worker",
            workers=8,
            threads_per_child=2,
            start_servers=1,
            min_spare_threads=2,
            max_spare_threads=100,
        )
    )
    assert result.metrics["makespan"] == pytest.approx(12.0)
    assert result.metrics["response.mean"] == pytest.approx(
        (2 * 10 + 2 * 11 + 4 * 12) / 8, rel=0.01
    )


def test_max_request_workers_is_rounded_down_to_whole_children():
    """MaxRequestWorkers 7 with ThreadsPerChild 2: httpd runs 3 children, 6 workers (AH00316),
    so the 7th request waits for the first to end: 10 + 10 s."""
    result = run_exact(front_only(mpm="worker", workers=7, threads_per_child=2))
    assert result.metrics["makespan"] == pytest.approx(20.0)
    assert any(note.startswith("AH00316") for note in result.notes)


def test_worker_mpm_stops_one_child_per_second_above_max_spare_threads():
    from sim.kernel.calendar import Kernel
    from sim.tiers.proxy.children import ChildProcesses
    from sim.tiers.proxy.process_management import Spawner

    kernel = Kernel()
    children = ChildProcesses(
        kernel, "proxy.workers", threads_per_child=2, children=4, queue_limit=None
    )
    Spawner(kernel, children, prefork=False, max_children=4, min_spare=1, max_spare=4)
    kernel.run(until=1.5)
    # the oldest child is the first reader blocked on the pipe of death: stopped at t = 1
    assert [c.number for c in children.live()] == [1, 2, 3]
    kernel.run(until=5.5)
    assert children.capacity == 4  # stops at MaxSpareThreads idle threads (two children)


def blocking_backend(threads_per_child: int, scheme: str = "http") -> dict:
    """One user, two 1-s requests 0.5 s apart, through a worker-MPM front of 4 threads to a
    blocking backend with one thread; read timeout 10 s."""
    return {
        "clients": {
            "kind": "closed",
            "users": 1,
            "requests_per_user": 2,
            "think": {"dist": "deterministic", "value": 0.5},
        },
        "proxy": {
            "workers": 4,
            "mpm": "worker",
            "threads_per_child": threads_per_child,
            "linger_s": 0.0,
            "backend_pool": {"timeout_s": 10.0, "scheme": scheme},
        },
        "backends": [
            {
                "name": "tomcat",
                "threads": 1,
                "cores": 1,
                "connector": "blocking",
                "demand": {"dist": "deterministic", "value": 1.0},
            }
        ],
    }


@pytest.mark.parametrize(
    "threads_per_child, scheme, completed, makespan, status",
    [
        # two children: the second request is accepted by the other child, which opens its own
        # connection; the backend's one thread is pinned by the first child's idle connection,
        # so it waits until the read timeout: an error at 1.5 + 10 s (the user's last think
        # ends the run 0.5 s later)
        (2, "http", 1, 12.0, "502"),  # mod_proxy_http: "Error reading from remote server"
        (2, "ajp", 1, 12.0, "503"),  # mod_proxy_ajp: an idempotent request gets 503
        (4, "http", 2, 3.0, None),  # one child: its idle connection is reused
    ],
)
def test_each_child_keeps_its_own_backend_connections(
    threads_per_child, scheme, completed, makespan, status
):
    metrics = run_exact(blocking_backend(threads_per_child, scheme)).metrics
    assert metrics["count.completed"] == completed
    assert metrics["makespan"] == pytest.approx(makespan)
    if status is not None:
        assert metrics[f"proxy.responses.{status}"] == 1


def test_an_error_status_closes_the_client_connection():
    """prefork, 2 workers, ab -k -c 3 -n 3; the backend (one thread, no accept queue) refuses
    the second request: a 503, after which httpd does not keep the connection alive
    (ap_status_drops_connection), so the worker frees at once and the third request gets it
    (and its own 503) at t = 0.  Kept alive, it would wait KeepAliveTimeout (5 s)."""
    data = {
        "clients": {"kind": "ab", "concurrency": 3, "requests": 3, "keep_alive": True},
        "proxy": {"workers": 2},
        "backends": [
            {
                "threads": 1,
                "accept_queue": 0,
                "cores": 1,
                "demand": {"dist": "deterministic", "value": 1.0},
            }
        ],
    }
    metrics = run_exact(data).metrics
    assert (metrics["count.completed"], metrics["count.errors"]) == (1, 2)
    assert metrics["makespan"] == pytest.approx(1.0)
    assert metrics["proxy.responses.503"] == 2
    assert metrics["proxy.connections.closed_after_error"] == 2
    # the successful request's connection is closed by KeepAliveTimeout after its response
    assert metrics["elapsed.server_close"] == pytest.approx(1.0 + 5.0)


def test_event_child_stops_accepting_at_its_connection_limit():
    """event, one child of 2 threads (AsyncRequestWorkerFactor 2), ab -k -c 5 -n 5, 1-s
    requests.  t = 0: two accepted, three wait (the listener disables its socket).  t = 1: both
    idle again with 2 keep-alive connections: 2 < 2 + (2 - 1) x 2 accepts two more; t = 2: 4
    connections, 4 < 2 + (2 - 1) x 2 fails, so the fifth waits until the first keep-alive
    connection closes at 1 + 5 s and is served 6 - 7.  The front closes its last connection a
    KeepAliveTimeout after that response."""
    data = {
        "clients": {"kind": "ab", "concurrency": 5, "requests": 5, "keep_alive": True},
        "proxy": {
            "workers": 2,
            "mpm": "event",
            "threads_per_child": 2,
            "cores": 2,
            "forward": False,
            "demand": {"dist": "deterministic", "value": 1.0},
        },
    }
    metrics = run_exact(data).metrics
    assert metrics["makespan"] == pytest.approx(7.0)
    assert metrics["response.mean"] == pytest.approx((1 + 1 + 2 + 2 + 7) / 5, rel=0.01)
    assert metrics["elapsed.server_close"] == pytest.approx(12.0)


def test_event_closes_an_idle_connection_whose_child_has_no_idle_worker():
    """event, one child of 2 threads; 3 users, two 1-s requests each, 0.4-s think.  t = 0: U1 and
    U2 accepted, U3 waits; t = 1: U3 accepted (served 1 - 2).  t = 1.4: U1's next request takes
    the idle worker, U2's finds none: the listener closes U2's connection and U2 connects anew,
    waiting in the listen queue (event.c) until the child is under its limit again."""
    data = {
        "clients": {
            "kind": "closed",
            "users": 3,
            "requests_per_user": 2,
            "keep_alive": True,
            "think": {"dist": "deterministic", "value": 0.4},
        },
        "proxy": {
            "workers": 2,
            "mpm": "event",
            "threads_per_child": 2,
            "cores": 2,
            "forward": False,
            "demand": {"dist": "deterministic", "value": 1.0},
        },
    }
    metrics = run_exact(data).metrics
    assert metrics["count.completed"] == 6
    assert metrics["proxy.connections.closed_no_worker"] == 1
    assert metrics["proxy.connections.opened"] == 4  # U2 connected twice
