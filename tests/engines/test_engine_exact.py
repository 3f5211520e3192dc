"""Tiny deterministic scenarios with exact expected event times (timers are exact)."""

from __future__ import annotations

import pytest

from sim.kernel.calendar import Kernel
from sim.kernel.cpu import DedicatedCPU, ProcessorSharingCPU
from sim.kernel.slots import GRANTED, REFUSED, Pool
from sim.run.replication import run_replication
from tests.conftest import model_from, on_both_engines

_on_both_engines = on_both_engines()


def finish_times(jobs, cores, kind=ProcessorSharingCPU):
    """Start `jobs` = [(start, demand)] on a CPU; return each job's completion time."""
    kernel = Kernel()
    cpu = kind(kernel, "cpu", cores)
    done = {}
    for index, (start, demand) in enumerate(jobs):
        kernel.after(
            start,
            lambda i, d=demand: cpu.run(d, lambda _a, i=i: done.__setitem__(i, kernel.now)),
            index,
        )
    kernel.run()
    return [done[i] for i in range(len(jobs))], cpu


def test_processor_sharing_one_core():
    # From t = 0.5 both jobs share one core at rate 1/2: B (1 s) ends at 2.5; A has 0.5 s left, ends at 3.
    times, cpu = finish_times([(0.0, 2.0), (0.5, 1.0)], cores=1)
    assert times == pytest.approx([3.0, 2.5], abs=1e-12)
    assert cpu.counters(3.0) == pytest.approx((3.0, 0.5 + 2 * 2.0 + 0.5, 2.0))


def test_processor_sharing_more_threads_than_cores():
    # Three 1-s jobs on two cores progress at 2/3 each: all end at 1.5; busy area = 2 cores x 1.5 s.
    times, cpu = finish_times([(0.0, 1.0)] * 3, cores=2)
    assert times == pytest.approx([1.5] * 3, abs=1e-12)
    assert cpu.counters(1.5)[0] == pytest.approx(3.0)


def test_processor_sharing_never_slows_when_threads_fit_cores():
    times, _ = finish_times([(0.0, 1.0), (0.2, 1.0), (0.4, 0.1)], cores=4)
    assert times == pytest.approx([1.0, 1.2, 0.5], abs=1e-12)


def test_dedicated_cpu_is_processor_sharing_within_its_cores():
    """The never-shared form gives the same completion times and counters as the general one
    whenever no more jobs than cores run at once."""
    jobs = [(0.0, 1.0), (0.2, 1.0), (0.4, 0.1), (1.05, 0.3), (1.1, 2.0), (1.25, 0.01)]
    general, ps = finish_times(jobs, cores=3)
    dedicated, cpu = finish_times(jobs, cores=3, kind=DedicatedCPU)
    assert dedicated == pytest.approx(general, abs=1e-12)
    for t in (0.3, 1.12, 5.0):
        assert cpu.counters(t) == pytest.approx(ps.counters(t), abs=1e-12)


def test_build_chooses_the_dedicated_cpu_only_when_slots_fit_cores():
    from sim.engines.reference.assemble import assemble
    from sim.model.plan import compile_plan
    from sim.random.streams import Streams

    data = {
        "clients": {"kind": "closed", "users": 5},
        "backends": [
            {"name": "a", "threads": 4, "cores": 4, "demand": 0.1},
            {"name": "b", "threads": 5, "cores": 4, "demand": 0.1},
            {"name": "c", "threads": None, "cores": 4, "demand": 0.1},
        ],
        "run": {"duration_s": 1},
    }
    assembly, _ = assemble(
        compile_plan(model_from(data)), Streams(1, 0), lambda kernel, assembly: None
    )
    kinds = {cpu.name: type(cpu) for cpu in assembly.cpus}
    assert kinds == {
        "a1.cpu": DedicatedCPU,
        "b1.cpu": ProcessorSharingCPU,
        "c1.cpu": ProcessorSharingCPU,
    }


def test_pool_fifo_handover_and_refusal():
    kernel = Kernel()
    pool = Pool(kernel, "workers", capacity=1, queue_limit=1)
    granted = []
    assert pool.acquire(granted.append, "a") == GRANTED
    waiter = pool.acquire(granted.append, "b")
    assert pool.acquire(granted.append, "c") == REFUSED  # queue full
    kernel.after(2.0, lambda _: pool.release())
    kernel.run()
    assert granted == ["b"] and pool.in_use == 1 and pool.waiting == 0
    # busy area, queue area, acquired, refused, wait; then the gauges in use and waiting
    assert pool.counters(2.0) == pytest.approx((2.0, 2.0, 2.0, 1.0, 2.0, 1.0, 0.0))
    assert waiter.cancel() is False  # already granted


def test_pool_cancelled_waiter_is_skipped():
    kernel = Kernel()
    pool = Pool(kernel, "connections", capacity=1)
    granted = []
    pool.acquire(granted.append, "a")
    b = pool.acquire(granted.append, "b")
    pool.acquire(granted.append, "c")
    assert b.cancel() is True and pool.waiting == 1
    pool.release()
    assert granted == ["c"]


def one_child(mpm: str, threads: int) -> dict:
    """worker/event: one child with all the workers (ThreadsPerChild = MaxRequestWorkers)."""
    return {} if mpm == "prefork" else {"threads_per_child": threads}


def server(threads=1, cores=1, service=1.0):
    return [
        {
            "name": "s",
            "threads": threads,
            "cores": cores,
            "demand": {"dist": "deterministic", "value": service},
        }
    ]


def test_ab_makespan_is_exact():
    # ab -c 2 -n 4 on one thread, 1 s each: four requests back to back, the last ends at 4 s.
    model = model_from(
        {"clients": {"kind": "ab", "concurrency": 2, "requests": 4}, "backends": server()},
        warmup="none",
    )
    result = run_replication(model, 0)
    assert result.metrics["makespan"] == pytest.approx(4.0)
    # responses: 1, 2 (queued behind the first), 2, 2
    assert result.metrics["response.mean"] == pytest.approx(7.0 / 4)
    assert result.metrics["count.completed"] == 4


def test_timeout_abandons_but_the_server_keeps_working():
    # One user, no think, 2-s service, 1.5-s timeout, 2 requests: it gives up at 1.5 and 3.0;
    # the server finishes the first abandoned request at 2.0 (a late response).
    clients = {"kind": "closed", "users": 1, "think": 0, "timeout_s": 1.5, "requests_per_user": 2}
    model = model_from({"clients": clients, "backends": server(service=2.0)}, warmup="none")
    result = run_replication(model, 0)
    assert result.metrics["makespan"] == pytest.approx(3.0)
    assert result.metrics["count.timed_out"] == 2
    assert result.metrics["count.late"] == 1
    assert result.metrics["count.completed"] == 0


def test_retries_back_off_exponentially():
    # Attempts at 0, 1.5 (1 + 0.5) and 3.5 (2.5 + 1.0); each times out after 1 s; the user
    # gives up at 4.5.  The server serves all three back to back (0-3, 3-6, 6-9).
    clients = {
        "kind": "ab",
        "concurrency": 1,
        "requests": 1,
        "timeout_s": 1.0,
        "retry": {"max_retries": 2, "backoff_s": 0.5, "multiplier": 2.0},
    }
    model = model_from({"clients": clients, "backends": server(service=3.0)}, warmup="none")
    result = run_replication(model, 0)
    assert result.metrics["makespan"] == pytest.approx(4.5)
    assert (
        result.metrics["count.arrived"],
        result.metrics["count.timed_out"],
        result.metrics["count.retried"],
        result.metrics["count.failed"],
    ) == (3, 3, 2, 1)


def test_full_listen_queue_fails_the_connect_when_syn_retries_are_off():
    # Two threads, no accept queue, ab -c 3 -n 3 at once: the third SYN is dropped at t = 0
    # and, with no retransmission, connect() fails: an error.
    model = model_from(
        {
            "clients": {"kind": "ab", "concurrency": 3, "requests": 3, "tcp": {"syn_retries": 0}},
            "backends": [{**server(threads=2, cores=2)[0], "accept_queue": 0}],
        },
        warmup="none",
    )
    result = run_replication(model, 0)
    assert result.metrics["count.errors"] == 1
    assert result.metrics["count.completed"] == 2
    assert result.metrics["makespan"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "service, rto, makespan, retransmits",
    [
        (0.5, 1.0, 1.5, 1),  # refused at 0, SYN again at 1: served 1 -> 1.5
        (0.5, 3.0, 3.5, 1),  # old stacks: first retransmission after 3 s
        (1.5, 1.0, 4.5, 2),  # refused at 0 and at 1 (still busy), accepted at 1 + 2 = 3
    ],
)
def test_full_listen_queue_syn_retransmission_backs_off(service, rto, makespan, retransmits):
    """One worker, listen backlog 0, ab -c 2: the second client's SYN is dropped and its kernel
    retransmits after initial_rto_s, 2 x initial_rto_s, ... (exact times)."""
    data = {
        "clients": {"kind": "ab", "concurrency": 2, "requests": 2, "tcp": {"initial_rto_s": rto}},
        "proxy": {
            "workers": 1,
            "listen_backlog": 0,
            "demand": {"dist": "deterministic", "value": service},
            "forward": False,
        },
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(makespan)
    assert result.metrics["count.syn_retransmits"] == retransmits
    assert (result.metrics["count.completed"], result.metrics["count.errors"]) == (2, 0)
    assert result.metrics["response.mean"] == pytest.approx((service + makespan) / 2, rel=0.01)


@pytest.mark.parametrize("timeout_s, errors, timed_out", [(6.9, 0, 2), (7.1, 1, 1)])
def test_connect_fails_one_doubled_rto_after_the_last_syn(timeout_s, errors, timed_out):
    """tcp_syn_retries = 2, RTO 1 s, a server busy for 100 s with no listen queue: the second
    client's SYN is dropped at 0 and again at 1 and 3; its kernel waits 4 s more for a SYN-ACK,
    and connect() fails at 7 s (with Linux's 6, at 127 s), not at the last retransmission.  A
    client deadline of 6.9 s comes first; one of 7.1 s finds the connect failed.  (The first
    client, served for 100 s, times out in both.)"""
    data = {
        "clients": {
            "kind": "ab",
            "concurrency": 2,
            "requests": 2,
            "timeout_s": timeout_s,
            "tcp": {"syn_retries": 2},
        },
        "proxy": {
            "workers": 1,
            "listen_backlog": 0,
            "demand": {"dist": "deterministic", "value": 100.0},
            "forward": False,
        },
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["count.syn_retransmits"] == 2
    assert (result.metrics["count.errors"], result.metrics["count.timed_out"]) == (
        errors,
        timed_out,
    )


def test_client_timeout_ends_the_syn_backoff():
    # The second client times out at 2 s while its kernel waits to retransmit at 1 + 2 = 3 s.
    data = {
        "clients": {"kind": "ab", "concurrency": 2, "requests": 2, "timeout_s": 2.0},
        "proxy": {
            "workers": 1,
            "listen_backlog": 0,
            "demand": {"dist": "deterministic", "value": 1.5},
            "forward": False,
        },
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert (result.metrics["count.completed"], result.metrics["count.timed_out"]) == (1, 1)
    assert result.metrics["count.syn_retransmits"] == 1  # the one at t = 1; the next was never sent
    assert result.metrics["makespan"] == pytest.approx(2.0)


def test_a_full_queue_inside_the_stack_is_an_error_response():
    # The proxy accepts, the backend's queue is full: the proxy answers with an error (503),
    # which the client does not retransmit.
    data = {
        "clients": {"kind": "ab", "concurrency": 3, "requests": 3},
        "proxy": {"workers": 10},
        "backends": [{**server(threads=2, cores=2)[0], "accept_queue": 0}],
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert (result.metrics["count.errors"], result.metrics["count.syn_retransmits"]) == (1, 0)
    assert result.metrics["makespan"] == pytest.approx(1.0)


def test_nested_holds_proxy_worker_waits_for_the_backend():
    # One proxy worker, 0.1 s proxy work around a 1-s backend: two simultaneous requests are
    # served strictly one after the other (the worker is held across the backend call).
    data = {
        "clients": {"kind": "ab", "concurrency": 2, "requests": 2},
        "proxy": {"workers": 1, "demand": {"dist": "deterministic", "value": 0.2}},
        "backends": server(threads=2, cores=2),
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(2 * (0.2 + 1.0))
    assert result.metrics["proxy.workers.wait"] == pytest.approx(
        1.2 / 2
    )  # second waited 1.2, first 0


@pytest.mark.parametrize(
    "mpm, client_keep_alive, close_delay, max_requests, makespan",
    [
        ("prefork", False, 0.0, 100, 2.0),  # a worker per request, freed with the response
        (
            "prefork",
            True,
            0.0,
            100,
            7.0,
        ),  # A's idle connection holds the worker for KeepAliveTimeout (5 s)
        ("worker", True, 0.0, 100, 7.0),  # the same with one thread per connection
        # event: the idle connection holds no worker, but counts toward the child's limit: B
        # came while the one worker was busy, so the listener disabled its socket, and enables
        # it again only with connections < ThreadsPerChild + (idle - 1) x 2 = 1: A's idle
        # connection keeps B out until KeepAliveTimeout closes it (event.c)
        ("event", True, 0.0, 100, 7.0),
        ("prefork", True, 0.0, 1, 2.0),  # MaxKeepAliveRequests = 1: closed after the response
        ("prefork", False, None, 100, 4.0),  # the client never closes: lingering close holds 2 s
        ("prefork", False, 0.5, 100, 2.5),  # the client closes after 0.5 s: the drain ends then
        ("prefork", True, None, 100, 9.0),  # keep-alive 5 s, then the lingering close 2 s
        ("event", False, None, 100, 2.0),  # event lingers in the listener, not in a worker
    ],
)
def test_front_worker_is_held_by_keep_alive_and_lingering_close(
    mpm, client_keep_alive, close_delay, max_requests, makespan
):
    """One Apache worker, 1-s requests, ab -c 2 -n 2: the second client waits in the listen
    queue until the first client's connection lets the worker go (exact times)."""
    data = {
        "clients": {
            "kind": "ab",
            "concurrency": 2,
            "requests": 2,
            "keep_alive": client_keep_alive,
            "close_delay_s": close_delay,
        },
        "proxy": {
            "workers": 1,
            "mpm": mpm,
            **one_child(mpm, 1),
            "max_keep_alive_requests": max_requests,
            "demand": {"dist": "deterministic", "value": 1.0},
            "forward": False,
        },
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(makespan)
    assert result.metrics["count.completed"] == 2


def test_keep_alive_reuses_the_worker_within_the_timeout():
    """ab -k -c 1 -n 3 behind one worker: three requests on one connection, no reconnection:
    each pays the connect time only once (0.25 s), 0.25 + 3 x 1 s."""
    data = {
        "clients": {
            "kind": "ab",
            "concurrency": 1,
            "requests": 3,
            "keep_alive": True,
            "connect": {"dist": "deterministic", "value": 0.25},
        },
        "proxy": {
            "workers": 1,
            "demand": {"dist": "deterministic", "value": 1.0},
            "forward": False,
        },
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(3.25)
    without = run_replication(
        model_from({**data, "clients": {**data["clients"], "keep_alive": False}}, warmup="none"), 0
    )
    assert without.metrics["makespan"] == pytest.approx(3.75)


def test_an_event_front_counts_a_kept_alive_connection_once():
    """ab -k -c 1 -n 3 at an unbounded event front (its workers one pool): each request on
    the idle connection takes a worker, but the connection is accepted once, and closed by
    KeepAliveTimeout (5 s) after the last response at 3 s: the front's last close is at 8 s."""
    data = {
        "clients": {"kind": "ab", "concurrency": 1, "requests": 3, "keep_alive": True},
        "proxy": {
            "workers": None,
            "mpm": "event",
            "linger_s": 0,
            "demand": {"dist": "deterministic", "value": 1.0},
            "forward": False,
        },
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(3.0)
    assert result.metrics["proxy.connections.opened"] == 1
    assert result.metrics["proxy.connections.open_now"] == 1  # at the window's end, 3 s
    assert result.metrics["elapsed.server_close"] == pytest.approx(8.0)


@pytest.mark.parametrize(
    "mpm, keep_alive, max_requests, makespan, proxy_busy",
    [
        ("event", True, 100, 3 * 1.0 + 0.5, 3.5),  # one connection: set-up paid once
        ("event", False, 100, 3 * 1.5, 4.5),  # a connection per request
        ("event", True, 2, 3 * 1.0 + 2 * 0.5, 4.0),  # MaxKeepAliveRequests 2: a second connection
        ("prefork", True, 100, 3 * 1.0 + 0.5, 3.5),  # the connection's worker is reused, no accept
        ("prefork", False, 100, 3 * 1.5, 4.5),
    ],
)
def test_connection_set_up_is_paid_once_per_connection(
    mpm, keep_alive, max_requests, makespan, proxy_busy
):
    """ab -c 1 -n 3 at a proxy that serves 1-s requests and spends 0.5 s of CPU on each client
    connection it accepts (proxy.connection_demand): keep-alive spreads the set-up."""
    data = {
        "clients": {"kind": "ab", "concurrency": 1, "requests": 3, "keep_alive": keep_alive},
        "proxy": {
            "workers": 1,
            "mpm": mpm,
            **one_child(mpm, 1),
            "max_keep_alive_requests": max_requests,
            "linger_s": 0,
            "demand": {"dist": "deterministic", "value": 1.0},
            "connection_demand": {"dist": "deterministic", "value": 0.5},
            "forward": False,
        },
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(makespan)
    assert result.metrics["proxy.cpu.utilization"] * result.metrics["makespan"] == pytest.approx(
        proxy_busy
    )


@pytest.mark.parametrize(
    "connector, idle_timeout, pool_max, makespan, completed",
    [
        ("nonblocking", None, None, 2.0, 3),  # a thread per request: the third waits 1 s for one
        ("blocking", None, None, 10.0, 2),  # the stall: 2 threads pinned by idle connections, the
        # third connection is never served; the proxy's read
        # timeout (10 s) ends it with an error
        ("blocking", 4.0, None, 6.0, 3),  # the backend's idle timeout frees a thread at 1 + 4 s
        ("blocking", None, 2, 2.0, 3),  # pools the size of the thread pool: reuse, no stall
        ("blocking-disablereuse", None, None, 2.0, 3),  # each connection closes after its response,
        # freeing its thread for the third at 1 s
    ],
)
def test_blocking_connector_pins_a_thread_per_connection(
    connector, idle_timeout, pool_max, makespan, completed
):
    """ab -c 3 -n 3 through 3 proxy workers to one node with 2 threads on 2 cores, 1-s requests."""
    disable_reuse = connector.endswith("-disablereuse")
    connector = connector.removesuffix("-disablereuse")
    data = {
        "clients": {"kind": "ab", "concurrency": 3, "requests": 3},
        "proxy": {
            "workers": 3,
            "mpm": "worker",
            "threads_per_child": 3,
            "backend_pool": {
                "timeout_s": 10.0,
                "max": pool_max,
                "disable_reuse": disable_reuse,
            },
        },
        "backends": [
            {
                "name": "jetty",
                "threads": 2,
                "cores": 2,
                "connector": connector,
                "connection_idle_timeout_s": idle_timeout,
                "demand": {"dist": "deterministic", "value": 1.0},
            }
        ],
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(makespan)
    assert result.metrics["count.completed"] == completed
    assert result.metrics["count.errors"] == 3 - completed


@pytest.mark.parametrize(
    "max_connections, threads, makespan, completed",
    [
        (2, 200, 10.0, 2),  # 3 pooled connections, 2 slots: the third connection waits until the
        # proxy's read timeout (10 s), although threads are free -- the NIO stall
        (3, 1, 3.0, 3),  # every connection has a slot; one thread serves the 1-s requests in turn
        (None, 1, 3.0, 3),  # unbounded connections: the plain thread-per-request station
    ],
)
def test_nio_max_connections_pins_a_slot_per_connection(
    max_connections, threads, makespan, completed
):
    """ab -c 3 -n 3 through 3 proxy workers to Tomcat NIO (maxConnections, maxThreads) on 2 cores."""
    data = {
        "clients": {"kind": "ab", "concurrency": 3, "requests": 3},
        "proxy": {
            "workers": 3,
            "mpm": "worker",
            "threads_per_child": 3,
            "backend_pool": {"timeout_s": 10.0},
        },
        "backends": [
            {
                "name": "tomcat",
                "threads": threads,
                "cores": 2,
                "max_connections": max_connections,
                "demand": {"dist": "deterministic", "value": 1.0},
            }
        ],
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(makespan)
    assert (result.metrics["count.completed"], result.metrics["count.errors"]) == (
        completed,
        3 - completed,
    )


def test_nio_idle_timeout_frees_the_connection_slot():
    """As above with 2 slots, and keepAliveTimeout 4 s: the first idle connection closes at
    1 + 4 s, the third connection takes its slot and is served 5 - 6 s."""
    data = {
        "clients": {"kind": "ab", "concurrency": 3, "requests": 3},
        "proxy": {
            "workers": 3,
            "mpm": "worker",
            "threads_per_child": 3,
            "backend_pool": {"timeout_s": 10.0},
        },
        "backends": [
            {
                "name": "tomcat",
                "threads": 200,
                "cores": 2,
                "max_connections": 2,
                "connection_idle_timeout_s": 4.0,
                "demand": {"dist": "deterministic", "value": 1.0},
            }
        ],
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(6.0)
    assert result.metrics["count.completed"] == 3


def test_pool_acquire_timeout_is_a_503():
    """Threaded MPM (a reslist per child): one pooled connection, acquire 0.5 s: the second request
    waits for it and gets a 503.
    """
    data = {
        "clients": {"kind": "ab", "concurrency": 2, "requests": 2},
        "proxy": {
            "workers": 2,
            "mpm": "worker",
            "threads_per_child": 2,
            "backend_pool": {"max": 1, "acquire_timeout_s": 0.5},
        },
        "backends": [
            {
                "name": "tomcat",
                "threads": 4,
                "cores": 2,
                "connector": "blocking",
                "demand": {"dist": "deterministic", "value": 1.0},
            }
        ],
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert (result.metrics["count.completed"], result.metrics["count.errors"]) == (1, 1)
    assert result.metrics["makespan"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "module, service, completed, makespan",
    [
        ("mod_jk", 1.0, 1, 1.0),  # looks at 0 and 0.1, gives up at 0.2: an error
        ("mod_jk", 0.15, 1, 0.2),  # freed at 0.15, between the last look (0.1) and giving up (0.2)
        ("mod_jk", 0.05, 2, 0.15),  # freed at 0.05, found at the look at 0.1, served 0.1 - 0.15
        ("mod_proxy", 0.15, 2, 0.3),  # a condition variable: handed over at 0.15 itself
    ],
)
def test_mod_jk_polls_for_a_free_endpoint(module, service, completed, makespan):
    """Threaded MPM, one pooled connection, ab -c 2 -n 2, acquire timeout 0.2 s."""
    data = {
        "clients": {"kind": "ab", "concurrency": 2, "requests": 2},
        "proxy": {
            "workers": 2,
            "mpm": "worker",
            "threads_per_child": 2,
            "backend_pool": {"module": module, "max": 1, "acquire_timeout_s": 0.2},
        },
        "backends": [
            {
                "name": "tomcat",
                "threads": 4,
                "cores": 2,
                "connector": "blocking",
                "demand": {"dist": "deterministic", "value": service},
            }
        ],
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert (result.metrics["count.completed"], result.metrics["count.errors"]) == (
        completed,
        2 - completed,
    )
    assert result.metrics["makespan"] == pytest.approx(makespan)


def test_mod_jk_defaults_wait_for_ever_on_reads_and_200_ms_for_an_endpoint():
    from sim.model.schema import BackendPool

    jk, proxy = BackendPool(module="mod_jk"), BackendPool()
    assert (jk.timeout_s, jk.acquire_timeout_s) == (None, 0.2)
    assert (proxy.timeout_s, proxy.acquire_timeout_s) == (60.0, None)


@pytest.mark.parametrize("ttl, ttl_closed", [(1.0, 1), (None, 0)])
def test_ttl_closes_an_old_idle_connection_and_frees_its_thread(ttl, ttl_closed):
    """One user, think 2 s, two 1-s requests, a 1-thread blocking backend.  With ttl 1 s the
    pooled connection is 2 s old at the second request: it is closed and a new one opened,
    and closing it must free its pinned thread, or the new connection would stall until the
    read timeout.  Without ttl it is reused.  Same times either way; the close is counted.
    Threaded MPM: ttl belongs to the per-child reslist, which a prefork child does not have."""
    from sim.engines.reference.assemble import assemble
    from sim.model.plan import compile_plan
    from sim.random.streams import Streams

    data = {
        "clients": {
            "kind": "closed",
            "users": 1,
            "requests_per_user": 2,
            "think": {"dist": "deterministic", "value": 2.0},
        },
        "proxy": {
            "workers": 2,
            "mpm": "worker",
            "threads_per_child": 2,
            "backend_pool": {"ttl_s": ttl},
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
    model = model_from(data, warmup="none")
    result = run_replication(model, 0)
    assert result.metrics["count.completed"] == 2
    assert result.metrics["makespan"] == pytest.approx(2.0 + 1.0 + 2.0 + 1.0)
    assembly, _ = assemble(compile_plan(model), Streams(1, 0), lambda kernel, assembly: _Silent())
    assembly.clients.start()
    assembly.kernel.run()
    (backend,) = assembly.backend_pools
    assert backend.ttl_closes == ttl_closed
    assert backend.read_timeouts == 0


class _Silent:
    """A recorder that records nothing (for tests that inspect components directly)."""

    arrived = completed = errors = late = timed_out = failed = retried = syn_retransmits = 0

    def complete(self, response_time: float) -> None:
        self.completed += 1


def test_prefork_forks_children_at_a_doubling_rate():
    """MaxClients 10, StartServers 2, 10-s requests, ab -c 10: the parent forks 1, 2, 4, then the
    last 1 child at t = 1, 2, 3, 4 s, so the requests end at 10 (x2), 11, 12 (x2), 13 (x4), 14."""
    data = {
        "clients": {"kind": "ab", "concurrency": 10, "requests": 10},
        "proxy": {
            "workers": 10,
            "cores": 10,
            "start_servers": 2,
            "min_spare_servers": 1,
            "max_spare_servers": 100,
            "demand": {"dist": "deterministic", "value": 10.0},
            "forward": False,
        },
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(14.0)
    assert result.metrics["response.mean"] == pytest.approx(
        (2 * 10 + 11 + 2 * 12 + 4 * 13 + 14) / 10, rel=0.01
    )


def test_prefork_kills_one_idle_child_per_second():
    from sim.kernel.calendar import Kernel
    from sim.tiers.proxy.children import ChildProcesses
    from sim.tiers.proxy.process_management import Spawner

    kernel = Kernel()
    workers = ChildProcesses(
        kernel, "proxy.workers", threads_per_child=1, children=15, queue_limit=None
    )
    Spawner(kernel, workers, prefork=True, max_children=20, min_spare=2, max_spare=10)
    kernel.run(until=3.5)
    assert workers.capacity == 12  # one child killed at each of t = 1, 2, 3
    kernel.run(until=10.5)
    assert workers.capacity == 10  # stops at MaxSpareServers idle children


@pytest.mark.parametrize("graceful, makespan", [(False, 13.0), (True, 16.0)])
def test_prefork_holds_off_doubling_after_a_graceful_restart(graceful, makespan):
    """MaxClients 8, StartServers 2, 10-s requests, ab -c 8 -n 8.  Cold: forks 1, 2, 3 (capped) at
    t = 1, 2, 3.  After a graceful restart: 1 per second for 10 ticks, so t = 1 ... 6."""
    data = {
        "clients": {"kind": "ab", "concurrency": 8, "requests": 8},
        "proxy": {
            "workers": 8,
            "cores": 8,
            "start_servers": 2,
            "min_spare_servers": 1,
            "max_spare_servers": 100,
            "graceful_restart": graceful,
            "demand": {"dist": "deterministic", "value": 10.0},
            "forward": False,
        },
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["makespan"] == pytest.approx(makespan)


@pytest.mark.parametrize(
    "mpm, completed, makespan",
    [
        (
            "prefork",
            2,
            8.0 + 10.0,
        ),  # children 0, 1, 2 take the three requests in turn, each opening its
        # own connection; the third finds both threads pinned by the others'
        # idle connections and stalls until the 10-s read timeout
        ("worker", 3, 9.0),  # one pool for the child's threads: the idle connection is reused
    ],
)
def test_prefork_children_keep_a_connection_each(mpm, completed, makespan):
    """One user thinking 2 s before each of three 1-s requests (sent at 2, 5, 8), three front
    workers, a 2-thread blocking backend."""
    data = {
        "clients": {
            "kind": "closed",
            "users": 1,
            "requests_per_user": 3,
            "think": {"dist": "deterministic", "value": 2.0},
        },
        "proxy": {
            "workers": 3,
            "mpm": mpm,
            **one_child(mpm, 3),
            "linger_s": 0.0,
            "backend_pool": {"timeout_s": 10.0},
        },
        "backends": [
            {
                "name": "tomcat",
                "threads": 2,
                "cores": 2,
                "connector": "blocking",
                "demand": {"dist": "deterministic", "value": 1.0},
            }
        ],
    }
    result = run_replication(model_from(data, warmup="none"), 0)
    assert result.metrics["count.completed"] == completed
    assert result.metrics["makespan"] == pytest.approx(makespan)


@pytest.mark.parametrize("max_spare, exit_closes, threads_pinned", [(1, 1, 1), (10, 0, 2)])
def test_a_prefork_child_that_exits_closes_its_connection(max_spare, exit_closes, threads_pinned):
    """Two users, one 0.5-s request each at t = 0, served by children 0 and 1, which keep a
    connection each (2 threads pinned).  At t = 1 two children are idle: with MaxSpareServers 1
    the youngest (child 1) is killed and its connection closes, freeing its thread."""
    from sim.engines.reference.assemble import assemble
    from sim.model.plan import compile_plan
    from sim.random.streams import Streams

    data = {
        "clients": {"kind": "closed", "users": 2, "requests_per_user": 1},
        "proxy": {
            "workers": 2,
            "start_servers": 2,
            "min_spare_servers": 0,
            "max_spare_servers": max_spare,
            "linger_s": 0.0,
        },
        "backends": [
            {
                "name": "tomcat",
                "threads": 2,
                "cores": 2,
                "connector": "blocking",
                "demand": {"dist": "deterministic", "value": 0.5},
            }
        ],
    }
    assembly, _ = assemble(
        compile_plan(model_from(data, warmup="none")),
        Streams(1, 0),
        lambda kernel, assembly: _Silent(),
    )
    assembly.clients.start()
    assembly.kernel.run(until=1.5)
    (backend,) = assembly.backend_pools
    assert backend.exit_closes == exit_closes
    assert backend.pins.in_use == threads_pinned == backend.open_connections


@pytest.mark.parametrize(
    "max_spare, makespan, completed, errors, mean_response, exit_closes",
    [(1, 1.5, 3, 0, (0.5 + 0.5 + 1.5) / 3, 1), (10, 10.0, 2, 1, 0.5, 0)],
)
def test_a_stopped_prefork_child_frees_the_thread_a_stalled_connection_waits_for(
    max_spare, makespan, completed, errors, mean_response, exit_closes
):
    """seed001's AJP / MaxClients 30 cell in miniature: more prefork children than backend
    threads.  ab -c 3 -n 3; children 0, 1, 2 take the requests at t = 0 and open a connection
    each to a 2-thread blocking backend (0.5-s requests, 2 cores): 0's and 1's bind the threads
    and are answered at 0.5; 2's waits in the backend's accept queue.  At the maintenance tick
    t = 1 children 0 and 1 are idle: above MaxSpareServers 1 the parent stops one (child 1,
    prefork.c `perform_idle_server_maintenance`), the exiting child closes its cached
    connection (its pool is destroyed with the process), the backend's read returns EOF and
    frees the thread, which takes child 2's connection out of the accept queue: served
    1.0-1.5.  With MaxSpareServers 10 nothing frees a thread and child 2's request ends with
    the front's 10-s read timeout (mod_proxy `timeout`)."""
    model = model_from(
        {
            "clients": {"kind": "ab", "concurrency": 3, "requests": 3},
            "proxy": {
                "workers": 3,
                "start_servers": 3,
                "min_spare_servers": 0,
                "max_spare_servers": max_spare,
                "linger_s": 0.0,
                "backend_pool": {"timeout_s": 10.0},
            },
            "backends": [
                {
                    "name": "jetty",
                    "threads": 2,
                    "cores": 2,
                    "connector": "blocking",
                    "demand": {"dist": "deterministic", "value": 0.5},
                }
            ],
        },
        warmup="none",
    )
    metrics = run_replication(model, 0).metrics
    assert metrics["makespan"] == pytest.approx(makespan)
    assert metrics["count.completed"] == completed
    assert metrics["count.errors"] == errors
    assert metrics["response.mean"] == pytest.approx(mean_response)
    assert metrics["jetty1.connections.closed_by_child_exit"] == exit_closes


@pytest.mark.parametrize(
    "disks, makespan, mean_response", [(1, 3.7, 2.7), (2, 2.7, 2.0333333333333)]
)
def test_database_disk_queues_calls_after_their_cpu_work(disks, makespan, mean_response):
    # ab -c 3 -n 3; each request: 0.1 s on the node, a database call (0.5 s of CPU on a
    # 3-core host, then 1 s on a disk), 0.1 s on the node.  All three reach the disk at 0.6;
    # one spindle serves them at 1.6, 2.6, 3.6 (responses 1.7, 2.7, 3.7); two at 1.6, 1.6, 2.6.
    model = model_from(
        {
            "clients": {"kind": "ab", "concurrency": 3, "requests": 3},
            "backends": [
                {
                    "name": "app",
                    "threads": 3,
                    "cores": 3,
                    "db_calls": 1,
                    "demand": {"dist": "deterministic", "value": 0.2},
                }
            ],
            "database": {
                "cores": 3,
                "demand": {"dist": "deterministic", "value": 0.5},
                "disk_demand": {"dist": "deterministic", "value": 1.0},
                "disks": disks,
            },
        },
        warmup="none",
    )
    result = run_replication(model, 0)
    assert result.metrics["makespan"] == pytest.approx(makespan)
    assert result.metrics["response.mean"] == pytest.approx(mean_response)
    assert result.metrics["database.disks.utilization"] == pytest.approx(3.0 / disks / makespan)


def test_a_timed_out_client_reconnects_instead_of_reusing_its_hung_up_connection():
    # ab -k -c 1 -n 2, one Apache worker, 1-s backend, 0.75-s client timeout.  Request 1 times
    # out at 0.75 and the client hangs up; request 2 opens a new connection, which waits for
    # the worker until request 1's response frees it at 1.0, is served 1.0-2.0 and times out
    # at 1.5.  (It must not ride the hung-up connection's worker alongside request 1.)
    model = model_from(
        {
            "clients": {
                "kind": "ab",
                "concurrency": 1,
                "requests": 2,
                "keep_alive": True,
                "timeout_s": 0.75,
            },
            "proxy": {"workers": 1, "mpm": "prefork"},
            "backends": server(threads=None),
        },
        warmup="none",
    )
    metrics = run_replication(model, 0).metrics
    assert metrics["count.timed_out"] == 2 and metrics["count.late"] == 1
    assert metrics["makespan"] == pytest.approx(1.5)
    assert metrics["proxy.workers.wait"] == pytest.approx(0.25 / 2)  # request 2 waited 0.75-1.0
    assert metrics["proxy.workers.busy"] == pytest.approx(1.0)  # never more than the one worker
