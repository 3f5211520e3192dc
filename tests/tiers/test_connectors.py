"""The proxy's pool of backend connections applies to every connector."""

from __future__ import annotations

from sim.model import stack
from sim.run.replications import run
from tests.conftest import model_from


def front_with_pool(**backend_pool) -> dict:
    return {
        "clients": {"kind": "open", "rate_per_s": 200.0},
        # one worker-MPM child of 50 threads: its backend pool is the front's only one
        "proxy": {
            "workers": 50,
            "mpm": "worker",
            "threads_per_child": 50,
            "backend_pool": backend_pool,
        },
        "backends": [{"threads": 50, "cores": 4, "demand": {"dist": "exponential", "mean": 0.004}}],
    }


def outcome(**backend_pool):
    model = model_from(front_with_pool(**backend_pool), duration_s=20.0, warmup="none", seed=4)
    return run(model, replications=2).summary


def test_one_pooled_connection_with_a_short_acquire_gives_503s_on_a_nonblocking_node():
    """Regression: the default (non-blocking) connector bypassed the pool, so max = 1 with a
    1-ms acquire timeout changed nothing (the same throughput, 0 errors)."""
    default = outcome()
    assert default["count.errors"].mean == 0
    limited = outcome(max=1, acquire_timeout_s=0.001)
    assert limited["count.errors"].low > 100
    assert limited["throughput"].high < default["throughput"].low


def test_skipping_a_pool_that_cannot_act_is_exact(monkeypatch):
    """The pool is skipped only where it cannot act (max >= ThreadsPerChild, connections pinning
    nothing): building it anyway gives the very same numbers."""
    skipped = outcome(max=50, acquire_timeout_s=0.001)
    monkeypatch.setattr(stack, "backend_pool_applies", lambda *_: True)
    built = outcome(max=50, acquire_timeout_s=0.001)
    assert {name: built[name] for name in skipped} == skipped
