"""When the front keeps a pool of connections to a node, and when mod_jk's own timeouts act:
decisions the stack plan (`sim.model.stack`) makes and the schema's checks read, kept apart
from both so that the schema can ask without importing the plan that reads it."""

from __future__ import annotations

from typing import Any

# `model` is a `sim.model.schema.Model` and `proxy` its `Proxy`: not imported, since the
# schema imports this module.


def pool_limit_binds(proxy: Any) -> bool:
    """A backend pool `max` below a child's threads can make its requests wait (or, for an
    unbounded front, any `max`); at ThreadsPerChild or above it never can."""
    limit = proxy.backend_pool.max
    if limit is None:
        return False
    processes = proxy.processes
    return processes is None or limit < processes.threads_per_child


def backend_pool_applies(model: Any, pins_per_connection: bool, jk: bool) -> bool:
    """The front's pool of connections to a node is built whenever it can change the answer:
    when connections pin a thread or a slot on the node, when mod_jk's own timeouts and retries
    act, or when a child's pool (`max`) is smaller than the requests the child can send at once
    (ThreadsPerChild), so that requests wait for a connection (`acquire`) or fail.  Otherwise
    every request finds a connection at once and its `ttl`, `acquire` and read `timeout` never
    act: skipping the pool is exact, and keeps the hot path short."""
    proxy = model.proxy
    if proxy is None or not proxy.forward:
        return False
    return pins_per_connection or jk or pool_limit_binds(proxy)


def jk_acts(model: Any) -> bool:
    """mod_jk's own timeouts and retries can act: a reply_timeout, or members that crash
    (refused connects, retried).  Otherwise its ajp13 worker sends each request once and waits
    for the answer, as the plain pool does."""
    proxy = model.proxy
    if proxy is None or not proxy.forward or proxy.backend_pool.module != "mod_jk":
        return False
    return proxy.backend_pool.reply_timeout_s is not None or any(
        group.events for group in model.backends
    )


def connects_can_fail(proxy: Any, group: Any, connector: Any) -> bool:
    """Can the front hold more connections to a node than the node takes (its pinned threads
    or connection slots, `connector.pinned_capacity`) and queues (`accept_queue`)?  Then a
    connect can meet a full accept queue, wait for SYN retransmissions and fail, putting a
    mod_proxy worker in error state.  The front holds at most one connection per busy or
    caching worker thread, so MaxRequestWorkers bounds its connections to one node."""
    if group.accept_queue is None:
        return False
    capacity = connector.pinned_capacity(group)
    if capacity is None:
        return False
    return proxy.workers is None or proxy.workers > capacity + group.accept_queue
