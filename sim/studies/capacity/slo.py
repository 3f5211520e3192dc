"""Service-level objectives such as `p95<1.0`, decided on the confidence interval.

An SLO `metric < target` is met when the interval's upper bound is below the target (so the
true value is below it with the interval's confidence, one-sided); `metric > target`
(e.g. `throughput>100`) when the lower bound is above.  The point estimate is reported
beside the decision, never used for it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from sim.present.failures import within_budget
from sim.studies.metrics import metric_name

__all__ = ["DEFAULT_ERROR_BUDGET", "Slo", "SloError", "within_budget"]

_FORM = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|<|>)\s*([-+\w.]+)\s*$")


# The share of requests that may fail at a load judged to meet an SLO: a latency is measured
# on the answered requests only (sim.present.failures), so without it a configuration that
# refuses most of its load would "meet" any latency target.
DEFAULT_ERROR_BUDGET = 0.01


class SloError(ValueError):
    pass


def check_error_budget(budget: float, where: str = "--error-budget") -> float:
    if not (isinstance(budget, (int, float)) and 0 <= budget < 1):
        raise SloError(
            f"{where} {budget!r}: give the share of requests that may fail at a load that meets "
            "the SLO, from 0 (none) to below 1, e.g. 0.01 for 1 %"
        )
    return float(budget)


@dataclass(frozen=True)
class Slo:
    metric: str
    op: str  # "<", "<=", ">", ">="
    target: float

    @property
    def upper(self) -> bool:
        """True for `metric < target` (decided on the upper bound)."""
        return self.op in ("<", "<=")

    def met(self, low: float, high: float) -> bool:
        bound = high if self.upper else low
        if math.isnan(bound):
            return False  # no interval, no decision in favour
        return {
            "<": bound < self.target,
            "<=": bound <= self.target,
            ">": bound > self.target,
            ">=": bound >= self.target,
        }[self.op]

    def met_by_estimate(self, value: float) -> bool:
        return self.met(value, value)

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.target:g}"


def parse_slo(text: str) -> Slo:
    match = _FORM.match(text)
    if not match:
        raise SloError(
            f"--slo {text!r}: expected METRIC<VALUE, e.g. p95<1.0, mean<=0.5, throughput>100 "
            "(aliases: mean, p50, p90, p95, p99; or any metric name such as response.p95)"
        )
    name, op, value = match.groups()
    try:
        target = float(value)
    except ValueError:
        raise SloError(f"--slo {text!r}: {value!r} is not a number; e.g. p95<1.0") from None
    if not math.isfinite(target):
        raise SloError(
            f"--slo {text!r}: the target {value} is not a finite number, so every value (or "
            "none) would meet it; give a finite target, e.g. p95<1.0"
        )
    return Slo(metric_name(name), op, target)


def check_metrics(slos: list[Slo], known: set[str]) -> None:
    """Refuse an SLO on a metric the model does not produce, before any simulation: otherwise
    every evaluation gives NaN and the search ends in "no value meets the SLO"."""
    for slo in slos:
        if slo.metric in known:
            continue
        percentiles = sorted(
            (name for name in known if name.startswith("response.p")),
            key=lambda name: float(name.removeprefix("response.p")),
        )
        hint = (
            f"the percentiles are {', '.join(p.removeprefix('response.') for p in percentiles)}"
            if slo.metric.startswith(("response.p", "p"))
            and slo.metric.removeprefix("response.").removeprefix("p").isdigit()
            else "e.g. mean, p95, throughput or a metric name of `tiersim run --json`"
        )
        raise SloError(f"--slo {slo}: this model has no metric {slo.metric!r}; {hint}")
