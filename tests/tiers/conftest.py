"""The shared lock's three longest theory cases on the reference engine -- an M/M/1 queue of
two nodes at a share of the calls, at full share, and in random order: about 20 s of one core
together -- are marked slow: `make slow-test` (CI) runs them.  Their compiled twins stay in the
default suite, and the two engines compute the same replication with a lock bit for bit
(`test_database_lock.py::test_the_engines_compute_the_same_replication_with_a_lock`: open
arrivals over two nodes, a share, two permits, random order), so the queueing theory is still
checked on every `make test`."""

from __future__ import annotations

import pytest

SLOW_CASES = (
    "test_a_share_of_the_calls_takes_the_lock[reference]",
    "test_a_lock_both_nodes_share_is_one_mm1_queue[reference]",
    "test_random_order_keeps_the_mm1_mean_and_lengthens_its_tail[reference]",
)


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.name in SLOW_CASES:
            item.add_marker(pytest.mark.slow)
