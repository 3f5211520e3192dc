"""The capacity search as a person reads it: every evaluation with its interval and decision,
the boundary, its failing neighbour, the analytic first guess and the knee."""

from __future__ import annotations

import math

from sim.studies.capacity.search import CapacityResult, Evaluation
from sim.studies.capacity.slo import Slo


def render(result: CapacityResult, console) -> None:
    from rich.table import Table

    metric = result.slos[0].metric
    table = Table(header_style="bold", title=f"evaluations of {result.path}", title_justify="left")
    for column in (
        result.path,
        f"{metric} (estimate)",
        "interval",
        "meets " + " and ".join(map(str, result.slos)),
    ):
        table.add_column(column, justify="right")
    for e in sorted(result.evaluations, key=lambda e: e.value):
        mean, low, high = e.metrics.get(metric, (math.nan, math.nan, math.nan))
        marks = " ← boundary" if e is result.best else " ← knee" if e is result.knee else ""
        table.add_row(
            f"{e.value:g}",
            f"{mean:.4g}",
            f"[{low:.4g}, {high:.4g}]" if e.metrics else e.note,
            ("yes" if e.met else "no") + marks,
        )
    console.print(table)
    bound = "upper" if result.slos[0].upper else "lower"
    guess = "none" if result.guess is None else f"{result.guess:g}"
    console.print(f"analytic first guess: {guess} — {result.guess_note}", markup=False)
    for note in result.notes:
        console.print(note, markup=False)
    if result.best is not None:
        console.print(
            f"{result.direction} {result.path} meeting {' and '.join(map(str, result.slos))}: "
            f"[bold]{result.best.value:g}[/bold] — {_describe(result.best, result.slos)} "
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
    return ", ".join(
        f"{s.metric} {e.metrics[s.metric][0]:.4g} [{e.metrics[s.metric][1]:.4g}, "
        f"{e.metrics[s.metric][2]:.4g}]"
        for s in slos
    )
