"""A new prediction that carries a calibration's uncertainty: a model run at parameter draws.

`tiersim run MODEL --calibration FILE --draws M`: the model runs once at the fitted values (the
usual replications and their confidence interval: the simulation's noise), then at M points
drawn from the fit's Gaussian (scrambled Sobol), each with its own seed and a few replications;
when `[[choose]]` left candidates open, the draws are shared among them by their weights, each
from its own fit (`Calibrated.points`).  The draws' spread holds the parameters' uncertainty
and the simulation noise together, through the model's non-linearity; the 90 % prediction
interval is its 5-95 % quantiles, widened by the calibration's model error (a relative sd no
simulation holds).  Each part is reported as its own sd, and the parameter with the largest
first-order variance index (squared correlation across the draws) is what to measure next.
The method is the calibration's own sampled intervals (docs/design.md, "Prediction
intervals"), and `tiersim calibrate` predicts a level no run measured with this very function.

What the interval is of: by default **the stack's mean figure** (the long-run throughput, mean
and p95 of the stack the model stands for).  Given the level it will be compared with (a
`MeasuredLevel`: a held-out level of a measured table), a figure that level measured is also
widened by **that measurement's own noise** -- a window of finite length, a finite count of
requests (`sim.studies.measured_level`) -- in quadrature beside the model error, as the
calibration's own rows are: then it is the interval of a measurement of the figure.  Each
prediction says which (`interval_of`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from sim.present.failures import percent, replication_failed_share
from sim.stats.confidence import t_quantile
from sim.studies.calibration.linear import estimated_sd, interval_factor, model_error_quantile
from sim.studies.calibration.linearise import SEED_OFFSET
from sim.studies.calibration.saved import Calibrated
from sim.studies.measured_level import MeasuredLevel

LEVEL = 0.90
# what an interval is of (`Prediction.interval_of`)
MEAN = "mean"  # the stack's mean figure: parameters, simulation noise, model error
MEASUREMENT = "measurement"  # a measurement of it: and the measured level's own noise
SAID = {MEAN: "mean figure", MEASUREMENT: "a measurement"}  # the table's cells


@dataclass
class Prediction:
    metric: str
    value: float  # at the fitted values
    pi_low: float
    pi_high: float
    sd_parameters: float  # in the metric's unit
    sd_noise: float
    sd_model: float
    most_sensitive: str
    sd_measurement: float = 0.0  # the measured level's own noise, in the metric's unit
    interval_of: str = MEAN  # MEAN or MEASUREMENT


@dataclass
class Propagation:
    draws: int
    draw_replications: int
    level: float
    unstable_draws: int  # draws whose parameters overload the system (not simulated)
    failed_draws: list[str]  # other draws that produced no result, with why
    predictions: dict[str, Prediction]
    parameters: list[str]
    model_error_sd: float
    left_out: list[str]
    structures: str = ""  # the [[choose]] candidates drawn, with their weights
    measured: MeasuredLevel | None = None  # the level the figures are to be compared with
    # the share of requests that failed, least and most over the simulated draws (the
    # response figures are of the answered requests only); None: no draw ended a request
    failed_share: tuple[float, float] | None = None
    # draws of the calibration's sequence the fitted figures ruled out ahead of these, each
    # replaced by the next (`Calibrated.screened`)
    screened: int = 0

    @property
    def method(self) -> str:
        over = f" over {self.structures}" if self.structures else ""
        screened = (
            f" ({self.screened} more the fitted figures rule out screened, each replaced by "
            "the next of the sequence)"
            if self.screened
            else ""
        )
        return (
            f"sampled: {self.draws} parameter draws{screened} x {self.draw_replications} "
            f"replications{over}, model error {self.model_error_sd:.1%}"
        )

    @property
    def interval_of(self) -> str:
        """What the intervals are of, in words (the CLI's title and `--json`'s field)."""
        if self.measured is None:
            return (
                "the stack's mean figures (parameters, simulation noise, model error), not of "
                "a measurement of them, which would add the measurement's own noise"
            )
        shown = [p.metric for p in self.predictions.values() if p.interval_of == MEASUREMENT]
        return (
            f"a measurement of them for {', '.join(shown) or 'no figure'} "
            f"({self.measured.describe()}: its own noise added); of the stack's mean figures "
            "for the rest"
        )

    def as_dict(self) -> dict:
        return {
            "level": self.level,
            "method": self.method,
            "draws": self.draws,
            "draw_replications": self.draw_replications,
            "unstable_draws": self.unstable_draws,
            "failed_draws": self.failed_draws,
            "screened_draws": self.screened,
            "parameters": self.parameters,
            "not_applied": self.left_out,
            "model_error_sd": self.model_error_sd,
            "structures": self.structures,
            "interval_of": self.interval_of,
            "failed_share_over_draws": None
            if self.failed_share is None
            else list(self.failed_share),
            "measured": None if self.measured is None else self.measured.as_dict(),
            "metrics": {name: asdict(p) for name, p in self.predictions.items()},
        }


def propagate(
    run_at: Callable[[list[str], int], Any],
    nominal: dict[str, float],
    calibrated: Calibrated,
    draws: int,
    draw_replications: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    map_: Callable[..., Iterable[Any]] = map,
    measured: MeasuredLevel | None = None,
) -> Propagation:
    """Simulate at `draws` parameter points: `run_at(overrides, seed)` runs the model with a
    point's overrides (the caller puts its user's own overrides after them, so a parameter the
    user set is theirs, not drawn) and `draw_replications` replications, and returns its
    `simulate()` outcome; `nominal` is the fitted run's metric means.  The draws go through
    `map_` (builtin map, or an executor's: all at once, outcomes in draw order; each draw's
    seed is in its task, so the numbers are the same).  With `measured`, each figure that
    level measured gets an interval of a measurement of it (module docstring)."""
    from sim.run.simulate import Status

    points = calibrated.points(draws, seed)
    units = np.array([point.units for point in points])
    means: list[dict[str, float]] = []
    noise: list[dict[str, float]] = []
    kept: list[int] = []
    unstable, failed = 0, []
    outcomes = map_(
        run_at,
        [point.overrides for point in points],
        [seed + SEED_OFFSET * (m + 1) for m in range(len(points))],
    )
    for m, outcome in enumerate(outcomes):
        if progress is not None:
            progress(m + 1, len(points))
        if outcome.status is Status.UNSTABLE:
            unstable += 1
            continue
        if outcome.result is None:
            failed.append(f"draw {m + 1}: {outcome.message}")
            continue
        summary = outcome.result.summary
        means.append({k: i.mean for k, i in summary.items()})
        noise.append({k: _mean_sd(i) for k, i in summary.items()})
        kept.append(m)
    predictions = {}
    normal = model_error_quantile(0.5 + LEVEL / 2, None)
    tail = (1 - LEVEL) / 2
    kept_units = units[kept] if kept else units[:0]
    for metric, centre in nominal.items():
        if len(means) < 2 or not all(metric in d for d in means):
            continue
        y = np.array([d[metric] for d in means])
        if not np.all(np.isfinite(y)):
            continue
        total = float(np.var(y, ddof=1))
        noise_var = float(np.mean(np.square([d[metric] for d in noise])))
        # where the fit estimated its model error, the whole interval takes the Student-t
        # quantile the linear intervals take (`interval_factor`); the draws are Gaussian, so
        # their spread is scaled by its ratio to the normal quantile
        relative = abs(centre) if centre else 1.0
        parameter_var = max(total - noise_var, 0.0) / relative**2
        estimated = estimated_sd(
            parameter_var, calibrated.model_error_sd, calibrated.residual_noise_sd
        )
        # the measured level's own noise, relative as the model error: known from its samples
        # (or its count), so it joins the known part of the variance, not the estimated one
        measurement_sd = (measured.relative_sd(metric) if measured is not None else None) or 0.0
        z = interval_factor(
            math.sqrt(total / relative**2 + calibrated.model_error_sd**2 + measurement_sd**2),
            estimated,
            calibrated.model_error_dof,
            LEVEL,
        )
        outside = z * math.hypot(calibrated.model_error_sd, measurement_sd) * abs(centre)
        below = max(centre - float(np.quantile(y, tail)), 0.0) * z / normal
        above = max(float(np.quantile(y, 1 - tail)) - centre, 0.0) * z / normal
        shares = [
            float(np.corrcoef(kept_units[:, j], y)[0, 1] ** 2)
            if np.std(kept_units[:, j]) > 0 and np.std(y) > 0
            else 0.0
            for j in range(kept_units.shape[1])
        ]
        best = int(np.argmax(shares)) if shares else 0
        predictions[metric] = Prediction(
            metric=metric,
            value=centre,
            pi_low=centre - math.hypot(below, outside),
            pi_high=centre + math.hypot(above, outside),
            sd_parameters=math.sqrt(max(total - noise_var, 0.0)),
            sd_noise=math.sqrt(min(noise_var, total)),
            sd_model=calibrated.model_error_sd * abs(centre),
            most_sensitive=(
                f"{calibrated.names[best]} ({shares[best]:.0%})"
                if shares and shares[best] > 0
                else ""
            ),
            sd_measurement=measurement_sd * abs(centre),
            interval_of=MEASUREMENT if measured is not None and metric in measured.errors else MEAN,
        )
    shares = [replication_failed_share(d) for d in means]
    ended = [share for share in shares if not math.isnan(share)]
    return Propagation(
        failed_share=(min(ended), max(ended)) if ended else None,
        draws=draws,
        draw_replications=draw_replications,
        level=LEVEL,
        unstable_draws=unstable,
        failed_draws=failed,
        predictions=predictions,
        parameters=calibrated.names,
        model_error_sd=calibrated.model_error_sd,
        left_out=list(calibrated.left_out),
        structures=calibrated.structures,
        screened=calibrated.screened(draws),
        measured=measured,
    )


def _mean_sd(interval) -> float:
    """The sd of a draw's mean, s / sqrt(n), from its Student-t interval: unbiased in variance,
    which is what the split of the draws' variance into noise and parameters needs (with two
    replications, the half-width over 1.96 would overstate it 6.5 times).  `t_quantile` is
    `scipy.stats.t.ppf`, bit for bit, remembered: this runs for every metric of every draw."""
    if interval.n < 2 or not math.isfinite(interval.half_width):
        return 0.0
    return float(interval.half_width / t_quantile(0.5 + interval.level / 2, interval.n - 1))


# The metrics the table shows (every metric is in the JSON): the end-to-end figures a planner
# sizes by, and each station's utilisation.
SHOWN = ("throughput", "response.mean", "response.p50", "response.p95", "response.p99")


def render(propagation: Propagation, console, units: dict[str, str]) -> None:
    from rich.table import Table

    from sim.present.tables import plain

    measured = propagation.measured is not None
    table = Table(
        header_style="bold",
        title=f"predictions with the calibration's uncertainty ({propagation.method})",
    )
    columns = ["metric", "at the fit", "90% PI", "sd: parameters", "sd: noise", "sd: model"]
    if measured:
        columns += ["sd: measurement", "interval of"]
    for column in (*columns, "measure next"):
        left = column in ("metric", "measure next", "interval of")
        table.add_column(column, justify="left" if left else "right")
    for name, p in propagation.predictions.items():
        if name not in SHOWN and not name.endswith(".utilization"):
            continue
        unit = units.get(name, "")
        cells = [
            f"{name} [{unit}]" if unit else name,
            plain(p.value),
            f"[{plain(p.pi_low)}, {plain(p.pi_high)}]",
            plain(p.sd_parameters),
            plain(p.sd_noise),
            plain(p.sd_model),
        ]
        if measured:
            cells += [plain(p.sd_measurement), SAID[p.interval_of]]
        table.add_row(*cells, p.most_sensitive)
    console.print(table)
    console.print(f"the 90 % intervals are of {propagation.interval_of}", markup=False)
    if not measured:
        console.print(
            "  (to compare with a measured level, give it: --measured TABLE --measured-run RUN)",
            markup=False,
        )
    if propagation.failed_share is not None:
        least, most = propagation.failed_share
        over = f"{percent(least)}" if least == most else f"{percent(least)} to {percent(most)}"
        console.print(
            f"requests failed (share) over the draws: {over} (the response figures are of the "
            "answered requests only)",
            markup=False,
        )
    if propagation.left_out:
        console.print(
            "not applied (fitted for some rows of the experiment only): "
            + ", ".join(propagation.left_out)
        )
    if propagation.unstable_draws:
        console.print(
            f"warning: {propagation.unstable_draws} of {propagation.draws} parameter draws "
            "overload the system (the offered load exceeds capacity there): the intervals above "
            "are over the stable draws only, and the real risk of saturation is that share",
            markup=False,
        )
    for line in propagation.failed_draws:
        console.print(f"warning: {line}", markup=False)
