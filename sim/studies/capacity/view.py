"""The capacity search as a person reads it: every evaluation with its interval, the share of
its requests that failed and its decision, the boundary, its failing neighbour, the analytic
first guess and the knee."""

from __future__ import annotations

import math

from sim.present.failures import budget_percent, percent
from sim.studies.capacity.search import CapacityResult, Evaluation
from sim.studies.capacity.slo import Slo


def render(result: CapacityResult, console) -> None:
    from rich.markup import escape
    from rich.table import Table

    metric = result.slos[0].metric
    budget = budget_percent(result.error_budget)
    judged = " and ".join(map(str, result.slos)) + f" with ≤ {budget} of requests failed"
    table = Table(
        header_style="bold",
        title=escape(f"evaluations of {result.path}; meets: {judged}"),
        title_justify="left",
    )
    table.add_column(result.path, justify="right", min_width=len(result.path), no_wrap=True)
    for column in (
        metric,
        "interval",
        "failed [interval]",
        "failed / sent",
        "meets",
    ):
        table.add_column(escape(column), justify="right", no_wrap=column != "failed / sent")
    for e in sorted(result.evaluations, key=lambda e: e.value):
        mean, low, high = e.metrics.get(metric, (math.nan, math.nan, math.nan))
        marks = " ← boundary" if e is result.best else " ← knee" if e is result.knee else ""
        verdict = "yes" if e.met else f"no: over {budget}" if e.over_budget else "no"
        share, share_low, share_high = e.failed_share
        table.add_row(
            f"{e.value:g}",
            f"{mean:.4g}",
            f"[{low:.4g}, {high:.4g}]" if e.metrics else e.note,
            f"{percent(share)} [{percent(share_low)}, {percent(share_high)}]" if e.metrics else "-",
            "-" if math.isnan(e.failed) else f"{e.failed:,.0f} of {e.failed + e.completed:,.0f}",
            verdict + marks,
        )
    console.print(table)
    console.print(
        "failed: requests refused (a full accept queue or backlog), answered with an error, or "
        "given up after a timeout and the last retry (failed / sent: per replication); a latency is of the "
        "answered requests only, so a value meets the SLO only while the failed share's upper "
        f"bound is ≤ {budget} (--error-budget)",
        markup=False,
    )
    measured = [e for e in result.evaluations if e.replications]
    if measured:
        console.print(
            f"each value: {_spread([e.replications for e in measured], '{:.0f}')} replications "
            f"of a window of {_spread([e.window_s for e in measured], '{:.4g}')} s after "
            f"{_spread([e.warmup_s for e in measured], '{:.4g}')} s of warm-up",
            markup=False,
        )
    warned: dict[str, list[float]] = {}
    for e in sorted(result.evaluations, key=lambda e: e.value):
        for warning in e.warnings:
            warned.setdefault(warning, []).append(e.value)
    for warning, values in warned.items():
        at = ", ".join(f"{v:g}" for v in values)
        console.print(f"warning at {result.path} = {at}: {warning}", markup=False)
    bound = "upper" if result.slos[0].upper else "lower"
    guess = "none" if result.guess is None else f"{result.guess:g}"
    console.print(f"analytic first guess: {guess} — {result.guess_note}", markup=False)
    for note in result.notes:
        console.print(note, markup=False)
    if result.best is not None:
        console.print(
            f"{result.direction} {result.path} meeting {' and '.join(map(str, result.slos))}: "
            f"[bold]{result.best.value:g}[/bold] — {escape(_describe(result.best, result.slos))} "
            f"(decided on the interval's {bound} bound)"
        )
    if result.neighbour is not None:
        console.print(
            f"  {result.neighbour.value:g} does not: {_describe(result.neighbour, result.slos)}",
            markup=False,
        )
    if result.knee is not None:
        console.print(
            f"knee of {metric} against {result.path}: {result.knee.value:g} "
            f"({metric} {result.knee.metrics[metric][0]:.4g}; the point farthest from the chord of the "
            "scaled curve)",
            markup=False,
        )


def _describe(e: Evaluation, slos: list[Slo]) -> str:
    if not e.metrics:
        return e.note
    latencies = ", ".join(
        f"{s.metric} {e.metrics[s.metric][0]:.4g} [{e.metrics[s.metric][1]:.4g}, "
        f"{e.metrics[s.metric][2]:.4g}]"
        for s in slos
    )
    share, low, high = e.failed_share
    return f"{latencies}, {percent(share)} of requests failed [{percent(low)}, {percent(high)}]"


def _spread(values: list[float], form: str) -> str:
    """One value, or the range the evaluations spread over."""
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return "?"
    low, high = min(finite), max(finite)
    return form.format(low) if low == high else f"{form.format(low)} to {form.format(high)}"
