"""The points of a sweep whose failed share is beyond the sweep's error budget: their
latencies are of too few of their requests to stand (`sim.present.failures`)."""

from __future__ import annotations

from pathlib import Path

from sim.present.failures import FAILED_SHARE, within_budget


def points_over_budget(root: str | Path, budget: float) -> tuple[int, int]:
    """(points beyond the budget, finished points) of a results directory, judged on each
    point's failed-share upper bound; a point made before the share was recorded is neither."""
    from sim.studies.sweep.store import load_results

    frame = load_results(root)
    if frame.empty or f"{FAILED_SHARE}.ci_high" not in frame:
        return 0, 0
    ok = frame[frame["status"] == "ok"]
    highs = ok[f"{FAILED_SHARE}.ci_high"].dropna()
    return sum(not within_budget(float(high), budget) for high in highs), len(ok)
