"""A run's replications, windowed together, each read by its own probes: a probe that holds a
replication's own state (the front's last close, `elapsed.server_close`) gives that
replication's figure, not the first replication's."""

from __future__ import annotations

from sim.run.replication import run_replication
from sim.run.replications import run
from tests.conftest import model_from


def test_each_replication_keeps_its_own_server_close():
    # ab -k -c 2 -n 20 at an event front that closes each kept-alive connection by its
    # KeepAliveTimeout: the last close differs from one replication to the next
    data = {
        "clients": {"kind": "ab", "concurrency": 2, "requests": 20, "keep_alive": True},
        "proxy": {
            "workers": None,
            "mpm": "event",
            "linger_s": 0,
            "demand": {"dist": "exponential", "mean": 1.0},
            "forward": False,
        },
    }
    model = model_from(data, warmup="none", engine="reference")
    pooled = [
        rep.metrics["elapsed.server_close"] for rep in run(model, replications=3).replications
    ]
    alone = [run_replication(model, r).metrics["elapsed.server_close"] for r in range(3)]
    assert pooled == alone
    assert len(set(alone)) == 3  # three different figures: the test can tell them apart
