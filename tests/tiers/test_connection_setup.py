"""A node's serialised set-up of each new connection (`backends.N.connection_setup`: Tomcat 5.5
JK registers each new AJP connection's RequestProcessor in JMX under one static lock, seed001's
JBoss AJP cells), exactly, and its refusal where no connection would pay it."""

from __future__ import annotations

import pytest

from sim.model.load import ModelError, parse_model
from sim.run.replication import run_replication
from tests.conftest import model_from


def _ab(setup: float) -> dict:
    return {
        "clients": {"kind": "ab", "concurrency": 3, "requests": 6},
        "proxy": {
            "workers": 3,
            "start_servers": 3,
            "min_spare_servers": 0,
            "max_spare_servers": 3,
            "linger_s": 0.0,
        },
        "backends": [
            {
                "name": "jboss",
                "threads": 3,
                "cores": 3,
                "connector": "blocking",
                "demand": {"dist": "deterministic", "value": 0.5},
                "connection_setup": {"dist": "deterministic", "value": setup},
            }
        ],
    }


@pytest.mark.parametrize(
    "setup, makespan, mean_response",
    [
        # no set-up: two rounds of three 0.5-s requests
        (0.0, 1.0, 0.5),
        # the three children's new connections are set up one after another (0-0.2, 0.2-0.4,
        # 0.4-0.6): first requests answered at 0.7, 0.9, 1.1; each child's second request
        # reuses its connection and pays nothing: 0.7-1.2, 0.9-1.4, 1.1-1.6
        (0.2, 1.6, (0.7 + 0.9 + 1.1 + 3 * 0.5) / 6),
    ],
)
def test_new_connections_are_set_up_one_at_a_time_and_only_once(setup, makespan, mean_response):
    data = _ab(setup)
    if setup == 0.0:
        del data["backends"][0]["connection_setup"]
    metrics = run_replication(model_from(data, warmup="none"), 0).metrics
    assert metrics["makespan"] == pytest.approx(makespan)
    assert metrics["count.completed"] == 6
    assert metrics["response.mean"] == pytest.approx(mean_response)


def test_a_set_up_no_connection_would_pay_is_refused():
    data = _ab(0.2)
    data["backends"][0]["connector"] = "nonblocking"  # no pinned connections: no front pool
    with pytest.raises(ModelError) as refused:
        parse_model(data, "m.toml")
    message = str(refused.value)
    assert "m.toml" in message and "backends.0.connection_setup" in message
    assert "connector = blocking" in message
