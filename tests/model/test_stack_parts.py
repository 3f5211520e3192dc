"""The decisions the reference assembler used to make from the model file, as stack parts
(`sim.model.parts`): a node's events and work, the front's worker for each node, its children's
management, the balancer, the autoscaled groups.  The engines read these and nothing of the
schema (`tests/architecture/test_schema_readers.py`); results on the bundled models are the
same bit for bit (`tests/engines/`)."""

from __future__ import annotations

from sim.model.plan import compile_plan
from sim.model.stack import StackPlan
from tests.conftest import model_from


def stack_of(data: dict) -> StackPlan:
    stack = compile_plan(model_from(data, duration_s=10.0)).stack
    assert stack is not None
    return stack


def two_nodes(**proxy) -> dict:
    return {
        "clients": {"kind": "closed", "users": 4, "think": 1.0},
        "proxy": {"workers": 8, **proxy},
        "backends": [
            {
                "name": "tomcat",
                "count": 2,
                "threads": 4,
                "demand": 0.01,
                "weight": 2.0,
                "events": [
                    {"at_s": 5.0, "kind": "slow", "factor": 3.0, "node": 2},
                    {"at_s": 1.0, "kind": "crash"},
                ],
            }
        ],
    }


def test_each_node_has_its_own_events_and_the_groups_every_node_ones():
    first, second = stack_of(two_nodes()).nodes
    assert [(e.at_s, e.kind, e.factor) for e in first.events] == [(1.0, "crash", 1.0)]
    assert [(e.at_s, e.kind, e.factor) for e in second.events] == [
        (5.0, "slow", 3.0),
        (1.0, "crash", 1.0),
    ]
    assert (first.weight, first.demand, first.db_calls) == (2.0, 0.01, 0)
    assert first.limits.request_threads == 4 and first.io_wait.mean == 0


def test_mod_proxy_times_its_own_connects_and_has_no_jk_worker():
    stack = stack_of(two_nodes(backend_pool={"module": "mod_proxy", "timeout_s": 7.0}))
    assert stack.front is not None
    worker = stack.front.worker
    assert worker.jk is None and stack.balancer.jk_lb is None
    # connectiontimeout: the worker's timeout unless set apart
    assert worker.read_timeout_s == 7.0 and worker.connect_timeout_s == 7.0


def test_mod_jk_has_its_ajp13_worker_and_lb_worker_and_no_mod_proxy_connect_timeout():
    stack = stack_of(two_nodes(backend_pool={"module": "mod_jk", "reply_timeout_s": 2.0}))
    assert stack.front is not None and stack.front.mod_jk
    worker = stack.front.worker
    assert worker.connect_timeout_s is None
    assert worker.jk is not None and worker.jk.reply_timeout_s == 2.0
    assert stack.balancer.jk_lb is not None


def test_the_parent_manages_the_children_only_with_start_servers():
    unmanaged = stack_of(two_nodes(mpm="worker", threads_per_child=2)).front
    assert unmanaged is not None and unmanaged.processes is not None
    assert unmanaged.processes.management is None
    assert (unmanaged.processes.max_children, unmanaged.processes.start_children) == (4, 4)

    managed = stack_of(
        two_nodes(
            mpm="worker",
            threads_per_child=2,
            start_servers=1,
            min_spare_threads=1,
            max_spare_threads=2,
        )
    ).front
    assert managed is not None and managed.processes is not None
    management = managed.processes.management
    assert management is not None and not management.prefork
    assert managed.processes.start_children == 1
    # httpd raises MaxSpareThreads to MinSpareThreads + ThreadsPerChild + 1 (worker_run)
    assert (management.min_spare, management.max_spare) == (1, 1 + 2 + 1)


def test_an_autoscaled_group_lists_its_nodes_and_those_ready_at_the_start():
    data = {
        "clients": {"kind": "open", "interarrival": 0.3},
        "backends": [
            {
                "name": "web",
                "count": 1,
                "cores": 1,
                "threads": 10,
                "demand": 0.01,
                "autoscale": {"metric": "pods", "target": 1.5, "max_replicas": 3},
            }
        ],
    }
    (group,) = stack_of(data).autoscaled
    assert (group.name, group.members, group.ready) == ("web.autoscale", (0, 1, 2), 1)
    assert stack_of(two_nodes()).autoscaled == ()
