"""The planner's answer of a sweep: the cheapest point that meets the SLO.

    [sweep]
    slo = "p95<0.5"                        # the objective, decided on each point's interval
    cheapest = "web.autoscale.node_seconds"   # the cost to minimise (node-seconds: what a
                                              # cloud bills an autoscaled group for)

A point qualifies when its SLO metric's interval is on the right side of the target (the
upper bound for `<`, `sim.studies.capacity.slo`) and its share of failed requests is within
the sweep's `error_budget` on its upper bound: a point that refuses its load would otherwise
"meet" any latency (`sim.present.failures`).  Of the qualifying points the one of least mean
cost is the answer; no monotone relation between a factor and the cost is assumed (a higher
HPA target utilisation runs fewer pods, but a storm of cold pods can cost more than it saves),
so every point is looked at.  Points whose cost interval overlaps the answer's are named as
not distinguishable from it at the sweep's replications.

With a calibration (`sweep.calibration`), each metric also has a 90 % prediction interval over
the calibrated parameters; the answer is then given twice: on the fitted values, and meeting
the SLO over the calibration's range (the prediction interval's bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sim.present.failures import FAILED_SHARE, within_budget
from sim.studies.capacity.slo import Slo


@dataclass(frozen=True)
class Candidate:
    values: dict[str, Any]  # the point's factor values
    cost: float
    cost_low: float
    cost_high: float
    slo_value: float
    slo_bound: float  # the bound the SLO is decided on
    failed_high: float


@dataclass(frozen=True)
class CheapestAnswer:
    slo: Slo
    cost_metric: str
    budget: float
    answer: Candidate | None
    alike: list[Candidate]  # qualifying points whose cost interval overlaps the answer's
    qualifying: int
    finished: int
    over_range: Candidate | None = None  # meets the SLO over the calibration's range
    calibrated: bool = False


def cheapest(
    frame, factors: list[str], slo: Slo, cost_metric: str, budget: float
) -> CheapestAnswer:
    """The cheapest point of a sweep's results `frame` that meets `slo` within `budget`."""
    ok = frame[frame["status"] == "ok"] if "status" in frame else frame
    calibrated = f"{slo.metric}.pi_high" in ok.columns
    fitted: list[Candidate] = []
    over_range: list[Candidate] = []
    for _, row in ok.iterrows():
        failed_high = float(row.get(f"{FAILED_SHARE}.ci_high", math.nan))
        cost = float(row.get(cost_metric, math.nan))
        if math.isnan(cost) or not within_budget(failed_high, budget):
            continue
        low, high = float(row[f"{slo.metric}.ci_low"]), float(row[f"{slo.metric}.ci_high"])
        candidate = Candidate(
            {factor: row[factor] for factor in factors},
            cost,
            float(row.get(f"{cost_metric}.ci_low", math.nan)),
            float(row.get(f"{cost_metric}.ci_high", math.nan)),
            float(row[slo.metric]),
            high if slo.upper else low,
            failed_high,
        )
        if slo.met(low, high):
            fitted.append(candidate)
        if calibrated:
            pi_low, pi_high = (
                float(row[f"{slo.metric}.pi_low"]),
                float(row[f"{slo.metric}.pi_high"]),
            )
            if slo.met(pi_low, pi_high):
                over_range.append(candidate)
    best = min(fitted, key=lambda c: c.cost, default=None)
    alike = (
        [
            c
            for c in fitted
            if c is not best and c.cost_low <= best.cost_high and best.cost_low <= c.cost_high
        ]
        if best is not None
        else []
    )
    return CheapestAnswer(
        slo,
        cost_metric,
        budget,
        best,
        sorted(alike, key=lambda c: c.cost),
        len(fitted),
        len(ok),
        min(over_range, key=lambda c: c.cost, default=None),
        calibrated,
    )


def _point(candidate: Candidate) -> str:
    return ", ".join(f"{factor} = {value!r}" for factor, value in candidate.values.items())


def _cost(answer: CheapestAnswer, candidate: Candidate) -> str:
    text = (
        f"{answer.cost_metric} {candidate.cost:.4g} [{candidate.cost_low:.4g}, "
        f"{candidate.cost_high:.4g}]"
    )
    if answer.cost_metric.endswith("node_seconds"):
        text += f" ({candidate.cost / 3600:.3g} node-hours)"
    return text


def describe(answer: CheapestAnswer) -> list[str]:
    """The answer as the sweep command prints it."""
    budget = f"{answer.budget:.3g}"
    if answer.answer is None:
        return [
            f"no point of {answer.finished} meets {answer.slo} with at most {budget} of its "
            "requests failed: widen the factors' range (more replicas, a lower target)"
        ]
    best = answer.answer
    lines = [
        f"cheapest meeting {answer.slo} (failed share <= {budget}): {_point(best)}: "
        f"{_cost(answer, best)}, {answer.slo.metric} {best.slo_value:.4g} "
        f"(bound {best.slo_bound:.4g}), failed share at most {best.failed_high:.2%}; "
        f"{answer.qualifying} of {answer.finished} points meet it"
    ]
    if answer.alike:
        lines.append(
            "  as cheap within the intervals: "
            + "; ".join(f"{_point(c)} ({c.cost:.4g})" for c in answer.alike)
        )
    if answer.calibrated:
        if answer.over_range is None:
            lines.append("  no point meets it over the calibration's 90 % range")
        else:
            lines.append(
                f"  meeting it over the calibration's 90 % range: {_point(answer.over_range)}: "
                f"{_cost(answer, answer.over_range)}"
            )
    return lines


def answer_of(plan, root) -> list[str]:
    """The answer of a finished sweep (`plan`, a `SweepPlan` with `slo` and `cheapest`) from
    its results directory `root`."""
    from sim.studies.capacity.slo import parse_slo
    from sim.studies.metrics import metric_name
    from sim.studies.sweep.store import load_results

    sweep = plan.spec.sweep
    answer = cheapest(
        load_results(root),
        plan.factor_paths,
        parse_slo(sweep.slo),
        metric_name(sweep.cheapest),
        sweep.error_budget,
    )
    return describe(answer)
