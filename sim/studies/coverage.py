"""Do the calibration's parameter intervals cover the truth at their nominal rate?

A trial: an M/M/c queue with a known demand D; its published mean response time is the exact
(Erlang C) value with a measurement error drawn at random (relative sd `measurement_error`,
declared in the trial's experiment.toml, as a user would); the simulation runs with the trial's
own seed.  `tiersim calibrate` then fits D and gives its 95 % interval.  Over many trials the
share of intervals holding the true D should be 95 % within binomial error
(tests/studies/test_uncertainty.py and experiments/uncertainty/parameter_coverage.py: 50 per queue).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim.analytic.erlang import mmc

MODEL = """
[clients]
kind = "open"
rate_per_s = {rate}

[[backends]]
name = "server"
threads = {servers}
cores = {servers}
demand = {{ dist = "exponential", mean = 0.1 }}

[balancer]
policy = "round_robin"

[run]
duration_s = {duration}
warmup = 20
replications = 3
seed = {seed}
"""


@dataclass(frozen=True)
class Trial:
    truth: float
    low: float
    high: float
    estimate: float

    @property
    def covered(self) -> bool:
        return self.low <= self.truth <= self.high


def trial(
    folder: Path,
    seed: int,
    servers: int = 1,
    rate: float = 5.0,
    demand: float = 0.1,
    measurement_error: float = 0.03,
    duration_s: float = 300.0,
) -> Trial:
    """One calibration of D against a noisy exact figure; `folder` is a scratch directory."""
    from sim.studies.calibration.fit import calibrate

    exact = mmc(rate, 1.0 / demand, servers).mean_response
    noise = np.random.default_rng([seed, servers]).normal(0.0, measurement_error)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.toml").write_text(
        MODEL.format(rate=rate, servers=servers, duration=duration_s, seed=seed + 1)
    )
    (folder / "published.csv").write_text(f"row,response_s\nfit,{exact * (1 + noise):.6f}\n")
    stable = 0.98 * servers / rate  # the upper bound keeps the queue stable
    (folder / "experiment.toml").write_text(
        textwrap.dedent(f"""
        [experiment]
        name = "coverage"
        published = "published.csv"
        value_column = "response_s"
        metric = "response.mean"
        measurement_error = {measurement_error}

        [models]
        column = "row"
        fit = "model.toml"

        [[calibrate]]
        parameter = "backends.0.demand.mean"
        bounds = [0.02, {min(0.3, stable):.6f}]
        start = {demand * 0.9:.6f}

        [[fitted]]
        row = "fit"
        """)
    )
    result = calibrate(str(folder))
    (parameter,) = result.parameters
    low, high = parameter["interval"]
    return Trial(demand, low, high, parameter["value"])
