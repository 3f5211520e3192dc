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

from sim.studies.sweep.spec import metric_name

_FORM = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|<|>)\s*([-+0-9.eE]+)\s*$")


class SloError(ValueError):
    pass


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
        raise SloError(f"--slo {text!r}: {value!r} is not a number") from None
    return Slo(metric_name(name), op, target)
