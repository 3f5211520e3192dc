"""`tiersim reproduce NAME --cross-validate`: every published figure left out in turn, the
parameters fitted on the others, the figure predicted with its 90 % interval.

Each fold's fit is one Gauss–Newton step from the experiment's calibration (its `[[fitted]]`
figures) on the fold's figures, using the Jacobian of every figure computed once at that
calibration under common random numbers: p + 1 runs of the table in all, instead of a full
fit per figure (the approximate leave-one-out of Rad & Maleki 2020, exact for a linear model).
Its limit: a fold that moves a parameter far (the figure left out was the only one to pin it)
is extrapolated linearly from the calibration; such folds have wide intervals, and the
sampled check in experiments/uncertainty shows where the model is not linear.

A figure an operational law rejects (`[response_time_law]`) is in no fold's fit; it is
predicted and reported with the reason, and not scored.
"""

from __future__ import annotations

import math
import statistics
from copy import copy
from dataclasses import dataclass
from functools import cached_property

from sim.studies.calibration.analysis import LEVEL, interval_parts, parameter_name
from sim.studies.calibration.figures import Figure, declared_model_error, published_figures
from sim.studies.calibration.fit import Calibration, calibrate
from sim.studies.calibration.linear import cooks_distance, first_order_shares, posterior
from sim.studies.calibration.parameters import free_parameters
from sim.studies.calibration.view import render_intervals
from sim.studies.experiment import figures_of
from sim.studies.records import Experiment, experiment_of
from sim.studies.rows import Row
from sim.studies.spec import FittedSpec


@dataclass
class CrossValidation:
    experiment: str
    rows: list[Row]
    parameters: list[str]

    def summary(self) -> dict:
        return summarise(self.rows)


def summarise(rows: list[Row]) -> dict:
    """Coverage and median relative half-width of the scored rows; the excluded ones listed;
    and the widening the scored rows say their intervals need (`widening`)."""
    scored = [r for r in rows if r.covered is not None and not r.excluded]
    sized = [r for r in scored if r.simulated and r.pi_high is not None]
    widths = [half_width(r, 1.0) for r in sized]
    errors = [abs(r.rel_error) for r in scored if r.rel_error is not None]
    k = widening([distance(r) for r in scored])
    return {
        "figures": len(scored),
        "covered": sum(bool(r.covered) for r in scored),
        "coverage": (sum(bool(r.covered) for r in scored) / len(scored)) if scored else math.nan,
        "median_half_width": statistics.median(widths) if widths else math.nan,
        "median_abs_error": statistics.median(errors) if errors else math.nan,
        "widening": k,
        "median_half_width_widened": (
            statistics.median(half_width(r, k) for r in sized) if sized else math.nan
        ),
        "excluded": [f"{r.figure}: {r.excluded}" for r in rows if r.excluded],
    }


def distance(row: Row) -> float:
    """How far the published figure lies from the prediction, in half-widths of the row's
    interval on the interval's own scale (the logarithm for a log-normal interval): at most 1
    inside, 2 where the interval would have had to be twice as wide to hold it."""
    assert row.published is not None and row.pi_low is not None and row.pi_high is not None
    centre, published = row.simulated, row.published
    if centre > 0 and row.pi_low > 0:  # log-normal: centre x exp(+-spread)
        spread = math.log(row.pi_high / centre)
        off = math.log(published / centre) if published > 0 else math.inf
    else:
        spread, off = (row.pi_high - row.pi_low) / 2, published - centre
    return abs(off) / spread if spread > 0 else (0.0 if off == 0 else math.inf)


def widening(distances: list[float], level: float = LEVEL) -> float:
    """The factor every interval's spread would need for `level` of these figures to be
    inside: the ceil(level x n)-th smallest distance (below 1: the intervals were wider than
    the figures needed).  An empirical quantile of few figures, so itself uncertain: with 15
    figures a 90 % share is the 14th, and one figure more or less inside moves it a step."""
    if not distances:
        return math.nan
    ordered = sorted(distances)
    return ordered[max(math.ceil(level * len(ordered)), 1) - 1]


def half_width(row: Row, factor: float) -> float:
    """The row's interval half-width relative to its prediction, with its spread x factor."""
    assert row.pi_low is not None and row.pi_high is not None
    centre = row.simulated
    if centre > 0 and row.pi_low > 0:
        return math.sinh(factor * math.log(row.pi_high / centre))
    return factor * (row.pi_high - row.pi_low) / 2 / abs(centre)


@dataclass
class _Folds:
    """What both kinds of fold start from: the experiment's calibration, linearised, and its
    published figures in the order of the calibration's rows."""

    calibration: Calibration
    parameters: list
    figures: list[Figure]
    usable: list[int]  # the figures a fold may leave out (not excluded by an operational law)
    pairs: list[tuple[int, str]]  # each row's (record, figure column), in the rows' order
    declared: float | None

    def training(self, i: int) -> list[int]:
        return [k for k in self.usable if k != i]

    def posterior(self, i: int):
        """The one-step fold that leaves figure i out."""
        lin = self.calibration.linearisation
        assert lin is not None  # calibrate() always linearises the fit it returns
        return posterior(lin.problem, self.training(i), declared_discrepancy=self.declared)

    @cached_property
    def full(self):
        """The one-step fit on every usable figure, which each fold leaves one of."""
        lin = self.calibration.linearisation
        assert lin is not None
        return posterior(lin.problem, self.usable, declared_discrepancy=self.declared)

    def influence(self, fold) -> float:
        """Cook's distance of a fold: how far its figure, left out, moves the full fit."""
        return cooks_distance(self.full, fold)


def _folds(experiment: Experiment, **run) -> _Folds:
    calibration = calibrate(experiment, **run)
    spec, records, source = experiment.spec, experiment.records, experiment.source
    figures = published_figures(spec, records, source)
    return _Folds(
        calibration,
        free_parameters(spec, source),
        figures,
        [i for i, f in enumerate(figures) if not f.excluded],
        [(id(r), w.column) for r in records for w in figures_of(spec, r)],
        declared_model_error(spec),
    )


def cross_validate(
    name: str | Experiment,
    replications: int | None = None,
    cache=None,
    workers: int = 1,
    progress=None,
    row_progress=None,
    executor=None,
) -> CrossValidation:
    """The folds: the calibration's runs (its evaluations' rows and the linearisation's p + 1
    runs of the table) on `executor` (else `workers` processes); each fold is then algebra.
    `name` is the experiment's name, or the experiment already read."""
    experiment = experiment_of(name)
    folds = _folds(
        experiment,
        replications=replications,
        cache=cache,
        progress=progress,
        row_progress=row_progress,
        workers=workers,
        executor=executor,
    )
    calibration, figures = folds.calibration, folds.figures
    names = [parameter_name(p) for p in folds.parameters]
    lin = calibration.linearisation
    assert lin is not None
    problem = lin.problem
    by_position = {(id(f.record), f.column): i for i, f in enumerate(figures)}
    out = []
    for base, pair in zip(calibration.rows, folds.pairs):
        row = copy(base)
        i = by_position.get(pair)
        if i is None:  # withheld: nothing to leave out
            out.append(row)
            continue
        figure = figures[i]
        training = folds.training(i)
        post = folds.posterior(i)
        parts = interval_parts(problem, post, figure, i, float(lin.base.noise_sd[i]))
        shift = parts["predicted"] - base.simulated
        row.simulated = parts["predicted"]
        row.ci_low, row.ci_high = base.ci_low + shift, base.ci_high + shift
        row.rel_error = (row.simulated - figure.published) / figure.published
        row.fitted = False
        row.pi_low, row.pi_high = parts["pi_low"], parts["pi_high"]
        row.covered = None if figure.excluded else row.pi_low <= figure.published <= row.pi_high
        row.excluded = figure.excluded
        row.sd_parameters, row.sd_noise = parts["sd_parameters"], parts["sd_noise"]
        row.sd_model, row.sd_measurement = parts["sd_model"], parts["sd_measurement"]
        influence = folds.influence(post)
        row.note = (
            (row.note + "; " if row.note else "")
            + ("" if post.discrepancy_known else "model error not estimable in this fold; ")
            + f"fold fit on {len(training)} figures"
            + (
                f"; influential (Cook's distance {influence:.1f}): the one-step fold moves "
                "furthest here, check it with --exact"
                if influence > 1.0
                else ""
            )
        )
        shares = first_order_shares(problem, post, i)
        row.most_sensitive = None
        if len(shares) and float(shares.max()) > 0:
            best = int(shares.argmax())
            row.most_sensitive = f"{names[best]} ({float(shares[best]):.0%})"
        out.append(row)
    return CrossValidation(calibration.experiment, out, names)


def exact_cross_validate(
    name: str | Experiment,
    replications: int | None = None,
    cache=None,
    workers: int = 1,
    progress=None,
    row_progress=None,
    fold_progress=None,
    executor=None,
) -> CrossValidation:
    """Every fold a full calibration: the parameters fitted to every other published figure,
    the left-out figure then predicted at that fit with its interval.  A fold costs a whole
    fit (tens of evaluations), not algebra, so this is the check on the one-step folds of
    `cross_validate` where the model is far from linear between the calibration and a fold's
    fit (a parameter only the left-out figure pinned, a collapse).

    A fold's fit starts from that fold's one-step estimate, not from the declared starts:
    a start may have been read off the very figure the fold leaves out (a hand fit, or the
    bottleneck law on that row), and where the other figures pin a parameter only weakly the
    fit stops near its start, so the left-out figure would be in its own prediction."""
    experiment = experiment_of(name)
    folds = _folds(
        experiment,
        replications=replications,
        cache=cache,
        progress=progress,
        row_progress=row_progress,
        workers=workers,
        executor=executor,
    )
    figures, usable = folds.figures, folds.usable
    position = {pair: j for j, pair in enumerate(folds.pairs)}
    out = []
    for n, i in enumerate(usable):
        figure = figures[i]
        others = [
            FittedSpec(figure=figures[k].column, selectors=dict(figures[k].record))
            for k in folds.training(i)
        ]
        if fold_progress is not None:
            fold_progress(f"fold {n + 1}/{len(usable)}: {figure.label} left out")
        step = folds.posterior(i)
        starts = tuple(p.from_unit(float(u)) for p, u in zip(folds.parameters, step.mean))
        fold = calibrate(
            experiment,
            replications=replications,
            cache=None,  # the file's cache holds the fit to the file's [[fitted]] figures
            progress=progress,
            row_progress=row_progress,
            workers=workers,
            executor=executor,
            fitted=others,
            starts=starts,
        )
        row = copy(fold.rows[position[(id(figure.record), figure.column)]])
        row.fitted = False
        row.note = (row.note + "; " if row.note else "") + (
            f"exact fold: refitted on {len(others)} figures"
            + ("" if fold.converged else f" (not converged: {fold.message})")
        )
        out.append(row)
    names = [parameter_name(p) for p in folds.parameters]
    return CrossValidation(folds.calibration.experiment, out, names)


def render(result: CrossValidation, console) -> None:
    render_intervals(result.rows, console, f"{result.experiment}: leave-one-out cross-validation")
    s = result.summary()
    console.print(
        f"{s['covered']} of {s['figures']} figures inside their {LEVEL:.0%} prediction interval "
        f"({s['coverage']:.0%}); median half-width ±{s['median_half_width']:.1%} of the "
        f"prediction; median |error| {s['median_abs_error']:.1%}"
    )
    if s["figures"]:
        console.print(
            f"For {LEVEL:.0%} of them to be inside, every interval would have to be "
            f"x{s['widening']:.2f} as wide (median half-width ±{s['median_half_width_widened']:.1%})."
        )
