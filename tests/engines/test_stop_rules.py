"""`run.duration_s` and `run.requests` together: the first reached ends the run, and the
result says which (neither is silently ignored)."""

from __future__ import annotations

from sim.run.replication import run_replication
from tests.conftest import model_from

CHAIN = {
    "clients": {"kind": "open", "rate_per_s": 8.0},
    "backends": [{"name": "app", "threads": 1, "demand": {"dist": "exponential", "mean": 0.1}}],
}


def test_requests_reached_first_end_the_run_and_say_so():
    result = run_replication(model_from(CHAIN, duration_s=1000.0, requests=300), 0, 1)
    assert any(n.startswith("ended by run.requests = 300 before") for n in result.notes)
    # 300 responses at 8 per second take about 38 s, far short of the 1000-s horizon
    assert result.metrics["elapsed"] < 100


def test_the_duration_reached_first_ends_the_run_and_says_so():
    result = run_replication(model_from(CHAIN, duration_s=20.0, requests=100_000), 0, 1)
    note = next(n for n in result.notes if n.startswith("ended by run.duration_s = 20 s"))
    assert "of run.requests = 100000 responses" in note
