"""The share of requests that failed, which every latency is shown beside.

A response time is measured on the requests that were answered; the requests a full accept
queue refused (Tomcat `acceptCount`), that ended in an error or that the user gave up on after
a timeout are in no percentile.  A configuration that refuses most of its load therefore looks
fast, so no table, figure or SLO judgement reads a latency without this share beside it.

The share is of the requests the users sent, not of the attempts: `count.failed` counts a
request once, when its user gives up on it (after the last of `clients.retry.max_retries`), and a
request answered on a retry is a success whose response time includes the retries.  Per
replication it is failed / (completed + failed) over the replication's window; its interval is
Student-t across replications, as every other metric's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from sim.stats.confidence import Interval, t_interval

FAILED_SHARE = "share.failed"  # the column and JSON name, beside `count.failed`
FAILED_SHARE_MEANING = (
    "share of requests that failed: refused (a full accept queue or listen backlog), an error "
    "response, or given up after a timeout and the last retry"
)


def replication_failed_share(metrics: Mapping[str, float]) -> float:
    """failed / (completed + failed) of one replication's window; NaN when no request ended."""
    completed = metrics.get("count.completed", math.nan)
    failed = metrics.get("count.failed", math.nan)
    ended = completed + failed
    if not ended > 0:  # NaN included
        return math.nan
    return failed / ended


def failed_share(replications: Sequence[Mapping[str, float]], level: float) -> Interval | None:
    """The share over the replications (their metrics), with its Student-t interval at `level`;
    None when no replication had a request end."""
    shares = [replication_failed_share(metrics) for metrics in replications]
    finite = [share for share in shares if not math.isnan(share)]
    if not finite:
        return None
    interval = t_interval(finite, level)
    # a share lies in [0, 1]: the interval is clipped there, as other lower bounds are at 0
    return Interval(
        interval.mean,
        interval.half_width,
        max(0.0, interval.low) if not math.isnan(interval.low) else interval.low,
        min(1.0, interval.high) if not math.isnan(interval.high) else interval.high,
        interval.n,
        interval.level,
    )


def with_failed_share(
    summary: Mapping[str, Interval],
    replications: Sequence[Mapping[str, float]],
    classes: Sequence[str],
    level: float,
) -> dict[str, Interval]:
    """A run's summary with `share.failed` (`failed_share` of its replications' metrics) and
    each request class's `class.<name>.share.failed` beside its latencies: what `tiersim run`
    prints and `sim.Simulation.summary` gives.  A `share.failed` the run reported itself wins."""
    out = dict(summary)
    share = failed_share(replications, level)
    if share is not None:
        out.setdefault(FAILED_SHARE, share)
    for name in classes:
        prefix = f"class.{name}."
        per_class = [
            {k.removeprefix(prefix): v for k, v in m.items() if k.startswith(prefix)}
            for m in replications
        ]
        share = failed_share(per_class, level)
        if share is not None:
            out.setdefault(f"{prefix}{FAILED_SHARE}", share)
    return out


def within_budget(failed_high: float | None, budget: float) -> bool:
    """Whether the failed share is within an error budget, decided as a `<=` SLO on the
    share's interval: its upper bound at or below the budget.  No share (no request ended in
    the window, or not recorded) is no decision in favour."""
    if failed_high is None or math.isnan(failed_high):
        return False
    return failed_high <= budget


def is_latency(metric: str, unit: str | None = None) -> bool:
    """Whether a metric is a time a request took or waited (a response time, a station's wait
    or residence, in seconds): what is read beside the failed share.  The window's length
    (`elapsed`) is in seconds too, and is no latency."""
    if metric == "elapsed":
        return False
    return (
        unit == "s"
        or f".{metric}".find(".response.") >= 0
        or metric.endswith((".wait", ".residence", ".service"))
    )


def budget_percent(budget: float) -> str:
    """An error budget as it was given: `1 %`, `0.5 %`, `20 %`."""
    return f"{100 * budget:g} %"


def percent(share: float | None) -> str:
    """A measured share as people read it: `0 %`, `0.31 %`, `94.2 %`; `-` when unknown.  From
    10 % on, one decimal, so that a share just over a budget of 20 % does not read `20 %`."""
    if share is None or math.isnan(share):
        return "-"
    if share == 0:
        return "0 %"
    value = 100 * share
    text = f"{value:.2g}" if value < 10 else f"{value:.1f}"
    return f"{text} %"
