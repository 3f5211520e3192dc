"""The two most expensive cases of the default suite -- the reference engine at rho = 0.95
(`test_theory.py`'s heavy-load tails: about 70 s of one core together) -- are marked slow: `make
slow-test` (CI) runs them.  The compiled engine's cases at the same load stay in the default
suite; the engines compute the same replication bit for bit (`tests/engines/`), so the heavy
tail is still checked against theory on every `make test`."""

from __future__ import annotations

import pytest

SLOW_CASES = (
    "test_heavy_load_mean_and_tail_percentiles[reference-M/M/1 rho=0.95]",
    "test_heavy_load_mean_and_tail_percentiles[reference-M/M/4 rho=0.95]",
)


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.name in SLOW_CASES:
            item.add_marker(pytest.mark.slow)
