"""A metric read through its pipeline: sampled at each scrape, seen after a delay.

An autoscaler never reads the live value.  metrics-server scrapes each kubelet every
`--metric-resolution` (15 s by default in metrics-server 0.6+; 60 s before) and the HPA reads
the last scrape; a Prometheus metric behind prometheus-adapter is as old as its
`scrape_interval` (1 m by default) plus the adapter's and rules' evaluation; a CloudWatch
metric is published per period (60 s, or 300 s with basic EC2 monitoring).  `ScrapedMetric`
models that as a step function: at time `t` the reader sees the value the source had at the
last scrape instant `k x interval_s` at or before `t - delay_s`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Value = TypeVar("Value")


@dataclass
class ScrapedMetric(Generic[Value]):
    """`record(t, value)` whenever the source's value changes (what a scrape at `t` or later
    would read); `read(now)` is the value the autoscaler sees at `now`, None before the first
    scrape that found one."""

    interval_s: float
    delay_s: float = 0.0
    _samples: list[tuple[float, Value]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.interval_s <= 0 or self.delay_s < 0:
            raise ValueError("a scrape interval above 0 and a delay of 0 or more")

    def record(self, at_s: float, value: Value) -> None:
        if self._samples and at_s < self._samples[-1][0]:
            raise ValueError("samples are recorded in time order")
        self._samples.append((at_s, value))

    def scrape_instant(self, now_s: float) -> float:
        """The last scrape whose value is visible at `now_s`."""
        # a small tolerance so that 3 x 0.1 s reads the scrape at 0.3 s
        return math.floor((now_s - self.delay_s) / self.interval_s + 1e-9) * self.interval_s

    def read(self, now_s: float) -> Value | None:
        instant = self.scrape_instant(now_s)
        seen: Value | None = None
        kept = 0
        for index, (at, value) in enumerate(self._samples):
            if at > instant:
                break
            seen, kept = value, index
        # what no later read can see again is dropped (reads come in time order)
        del self._samples[:kept]
        return seen
