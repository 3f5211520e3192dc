"""A run pools the windows each replication's `finish` computed for it alone, instead of
computing them again: the run's metrics, warm-up and intervals are those of windowing every
replication afresh, to the last digit."""

from __future__ import annotations

import math

import pytest

from sim.observe.metrics import PERCENTILES
from sim.observe.trace import BINS
from sim.run.replication import run_replication
from sim.run.replications import run
from sim.stats.windows import PooledWindows
from tests.conftest import differing, model_from

# an M/M/1 at 80 % busy with MSER: candidate windows, a warm-up chosen across replications
MM1 = {
    "clients": {"kind": "open", "rate_per_s": 80.0},
    "backends": [
        {
            "name": "server",
            "threads": 1,
            "cores": 1,
            "demand": {"dist": "exponential", "mean": 0.01},
        }
    ],
    "run": {"duration_s": 30.0, "warmup": "mser", "seed": 7},
}


def _pooled(results, reuse: bool) -> PooledWindows:
    first = results[0].window
    windows = PooledWindows(first.metrics_between, BINS, PERCENTILES, mser=True)
    for rep in results:
        windows.add(rep.window, rep.metrics, rep.windowed if reuse else None)
    windows.choose_window()
    return windows


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_pooling_finishs_windows_gives_the_metrics_of_windowing_afresh(engine):
    model = model_from(MM1, engine=engine)
    results = [run_replication(model, r, 7) for r in range(4)]
    assert all(rep.windowed is not None for rep in results)
    afresh, reused = _pooled(results, reuse=False), _pooled(results, reuse=True)
    assert reused.cut == afresh.cut and reused.warmup_s == afresh.warmup_s
    assert all(len(rep.window.starts) > 1 for rep in results)  # MSER had candidates to choose
    for index in range(len(results)):
        again, pooled = afresh.metrics(index), reused.metrics(index)
        assert list(again) == list(pooled)  # the same names, in the same order
        assert differing(again, pooled) == {}
    level = 0.95
    fresh_summary, fresh_warnings = afresh.summarise([afresh.metrics(i) for i in range(4)], level)
    summary, warnings = reused.summarise([reused.metrics(i) for i in range(4)], level)
    assert warnings == fresh_warnings
    assert list(summary) == list(fresh_summary)
    for name, interval in fresh_summary.items():
        other = summary[name]
        for a, b in zip(
            (interval.mean, interval.low, interval.high), (other.mean, other.low, other.high)
        ):
            assert a == b or (math.isnan(a) and math.isnan(b)), name


def test_a_run_lets_go_of_each_replications_windows_once_pooled():
    """The windows are as large as the candidate windows: the run keeps neither."""
    result = run(model_from(MM1, engine="reference"), replications=3)
    assert all(rep.window is None and rep.windowed is None for rep in result.replications)


def test_windows_of_other_percentiles_are_computed_again():
    """A `windowed` from an accumulator of other percentiles is not taken for this one's."""
    model = model_from(MM1, engine="reference")
    results = [run_replication(model, r, 7) for r in range(2)]
    mine = PooledWindows(results[0].window.metrics_between, BINS, (50, 99), mser=True)
    fresh = PooledWindows(results[0].window.metrics_between, BINS, (50, 99), mser=True)
    for rep in results:
        mine.add(rep.window, rep.metrics, rep.windowed)  # finish's: PERCENTILES
        fresh.add(rep.window, rep.metrics)
    mine.choose_window()
    fresh.choose_window()
    for index in range(2):
        assert differing(mine.metrics(index), fresh.metrics(index)) == {}
