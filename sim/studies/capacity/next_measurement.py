"""`tiersim capacity ... --calibration FILE --draws M --what-next`: which measurement would narrow
the capacity range most, and to what width, before anyone runs it.

Each candidate (`sim.studies.capacity.candidates`: a run a planner could make -- another level
on one node, the same level on two, the database's lock wait at the heaviest level) is
simulated at the very draws the capacity range was made of: the same parameter vectors and the
same seeds (`uncertain.draw_runs`), with the user's `--set` after them and the candidate's own
settings last.  Each of its figures then pairs with the draws' answers, and the linear-Gaussian
preposterior (`preposterior.expected_update`) gives the range's expected width once that figure
is measured, with the interval the draws' few pairs allow.

The figure would be measured with an error of two parts, in quadrature: the calibration's
model error (its relative sd times the figure: what no parameter value removes, taken as the
figure's own, apart from the error the capacity's SLO carries, so a measurement is never
credited with learning the model's error), and the measurement's own noise -- as the fitted
figures of the same metric were known (their median relative sd, `rows[].sd_measurement`), or,
for a figure no fitted row measured, one replication of the model's run window (the sd between
the draws' replications: one load test of that length).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim.studies.calibration.saved import Calibrated
from sim.studies.capacity.candidates import Candidate, default_candidates
from sim.studies.capacity.preposterior import Update, expected_update
from sim.studies.capacity.question import Question
from sim.studies.capacity.search import CapacityResult, SearchBase
from sim.studies.capacity.uncertain import CapacityRange, draw_runs
from sim.studies.kept import KeptLines

# fewer draws than this and the table says its correlations are rough
FEW_DRAWS = 20


@dataclass(frozen=True)
class Measured:
    """One candidate run at one draw: each figure's mean and the sd of one replication of it
    (nan with one replication); `failed` says why there are none."""

    figures: dict[str, tuple[float, float]]
    failed: str = ""


@dataclass(frozen=True)
class CandidateRun:
    """A candidate's run at one draw, as a task an executor can send to another process: the
    question's base (model data, replications), the user's overrides after the draw's."""

    base: SearchBase
    user_overrides: tuple[str, ...]

    def __call__(
        self, drawn: tuple[str, ...], seed: int, settings: tuple[str, ...], figures: tuple[str, ...]
    ) -> Measured:
        from sim.run.simulate import Status, simulate

        outcome = simulate(
            self.base.raw_model,
            seed=seed,
            replications=self.base.replications,
            overrides=(*drawn, *self.user_overrides, *settings),
            source=self.base.source,
            base_dir=Path(self.base.base_dir),
        )
        if outcome.status is Status.INTERRUPTED:
            raise KeyboardInterrupt  # a partial run is not a measurement
        result = outcome.result
        if not outcome.ok or result is None:
            return Measured({}, f"{outcome.status.value}: {outcome.message}")
        values = {}
        for figure in figures:
            interval = result.summary.get(figure)
            if interval is None or not math.isfinite(interval.mean):
                continue
            each = [r.metrics[figure] for r in result.replications if figure in r.metrics]
            one = float(np.std(each, ddof=1)) if len(each) > 1 else math.nan
            values[figure] = (float(interval.mean), one)
        return Measured(values)


# the form of a kept run at a draw; a change of what a line holds changes it
RUN_FORM = "tiersim capacity candidate run 1"


def kept_runs(map_: Callable[..., Any], kept: KeptLines, run: CandidateRun) -> Callable[..., Any]:
    """`map_` over the candidate runs not kept (in the capacity cache, beside the search's
    evaluations); a kept one is replayed, a new one kept as it comes back.  A run is keyed by
    the model as it runs (the draw's values, the user's overrides and the candidate's settings
    applied), the seed, the replications, the figures read and the code."""
    from sim.model.load import ModelError, parse_model
    from sim.studies.kept import fingerprint, kept_map, model_parts
    from sim.studies.source_digest import code_digest

    def key(drawn, seed, settings, figures) -> str | None:
        if kept.path is None:
            return None
        try:
            model = parse_model(
                run.base.raw_model,
                run.base.source,
                [*drawn, *run.user_overrides, *settings],
                Path(run.base.base_dir),
            )
        except ModelError:
            return None  # it runs, and says why as it would without a cache
        return fingerprint(
            RUN_FORM,
            code_digest(),
            *model_parts(model),
            json.dumps(
                {"seed": seed, "replications": run.base.replications, "figures": list(figures)}
            ),
        )

    def record_of(measured: Measured) -> dict[str, Any]:
        figures = {name: list(values) for name, values in measured.figures.items()}
        return {"figures": figures, "failed": measured.failed}

    def whole(record: dict[str, Any]) -> bool:
        figures = record.get("figures")
        return (
            isinstance(record.get("failed"), str)
            and isinstance(figures, dict)
            and all(
                isinstance(values, list)
                and len(values) == 2
                and all(isinstance(v, float | int) and not isinstance(v, bool) for v in values)
                for values in figures.values()
            )
        )

    def replay(record: dict[str, Any]) -> Measured:
        figures = {name: (float(a), float(b)) for name, (a, b) in record["figures"].items()}
        return Measured(figures, record["failed"])

    return kept_map(map_, kept, key, record_of, replay, whole)


@dataclass
class NextMeasurement:
    """A figure of a candidate run and what measuring it buys."""

    candidate: Candidate
    figure: str
    value: float  # the draws' mean of the figure
    sd_model: float  # the calibration's model error on it, in its unit
    sd_measurement: float  # the measurement's own
    measurement_from: str  # where sd_measurement comes from
    update: Update
    sd_today: float  # the answers' sd over the same draws
    width_today: float | None  # the range's width (high - low); None: no range today

    def width(self, ratio: float) -> float | None:
        return None if self.width_today is None else self.width_today * ratio

    def as_dict(self) -> dict:
        return {
            "settings": list(self.candidate.settings),
            "figure": self.figure,
            "why": self.candidate.why,
            "value_over_the_draws": self.value,
            "sd_model": self.sd_model,
            "sd_measurement": self.sd_measurement,
            "measurement_error_from": self.measurement_from,
            "sd_today": self.sd_today,
            "sd_after": self.sd_today * self.update.ratio,
            "width_today": self.width_today,
            "width_after": self.width(self.update.ratio),
            "width_after_interval": [
                self.width(self.update.ratio_low),
                self.width(self.update.ratio_high),
            ],
            **self.update.as_dict(),
        }


@dataclass
class NextMeasurements:
    path: str
    slos: list[str]
    level: float
    draws: int
    low: float | None  # the range today
    high: float | None
    measurements: list[NextMeasurement]  # best first
    notes: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # candidate runs that gave no figures

    @property
    def width_today(self) -> float | None:
        return None if self.low is None or self.high is None else self.high - self.low

    def sentence(self) -> str:
        """The measurement to run, or that the draws single out none."""
        telling = [m for m in self.measurements if m.update.tells]
        if self.measurements and all(m.sd_today == 0 for m in self.measurements):
            return f"every draw gives the same {self.path}: there is no range to narrow"
        if not telling:
            return (
                f"no candidate measurement narrows the range as far as {self.draws} draws can "
                "tell: more --draws, or other --candidate runs"
            )
        best = telling[0]
        u = best.update
        if self.width_today is None:
            return (
                f"measure {best.figure} at {best.candidate.label}: the answers' sd would go from "
                f"{best.sd_today:.3g} to about {best.sd_today * u.ratio:.3g}"
            )
        return (
            f"measure {best.figure} at {best.candidate.label}: the {self.level:.0%} range's "
            f"width would go from {self.width_today:.3g} to about {best.width(u.ratio):.3g} "
            f"({best.width(u.ratio_low):.3g}–{best.width(u.ratio_high):.3g} as the draws allow)"
        )

    def as_dict(self) -> dict:
        return {
            "parameter": self.path,
            "advice": self.sentence(),
            "slo": self.slos,
            "level": self.level,
            "draws": self.draws,
            "range_today": [self.low, self.high],
            "width_today": self.width_today,
            "measurements": [m.as_dict() for m in self.measurements],
            "notes": self.notes,
            "failed_runs": self.failed,
            "method": "preposterior, linear-Gaussian over the capacity's draws: each candidate "
            "simulated at the same parameter draws and seeds; expected Var(c | y) = Var(c) - "
            "Cov(c, y)^2 / (Var(y) + s^2) with s^2 the model error and the measurement's own "
            "noise; correlation shrunk (adjusted r^2), its 90 % interval by Fisher's z; a "
            "measurement narrows the range only when that interval excludes zero",
        }


def weigh(
    question: Question,
    nominal: CapacityResult,
    spread: CapacityRange,
    calibrated: Calibrated,
    given: Sequence[Candidate],
    defaults: bool,
    executor,
    user_overrides: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    kept: KeptLines | None = None,
) -> NextMeasurements:
    """`--what-next` and `--candidate`: the default candidates (when `defaults`; what could not
    be proposed is said among the notes) and the given ones, weighed at the range's draws
    (`kept`: the runs an earlier command kept, replayed, and each new one kept)."""
    candidates = list(given)
    notes: list[str] = []
    if defaults:
        proposed, notes = default_candidates(
            question.base,
            question.path,
            None if nominal.best is None else nominal.best.value,
            calibrated,
            [slo.metric for slo in question.slos],
        )
        candidates = proposed + candidates
    found = what_next(
        question, spread, calibrated, candidates, executor, user_overrides, progress, kept
    )
    found.notes[:0] = notes
    return found


def what_next(
    question: Question,
    spread: CapacityRange,
    calibrated: Calibrated,
    candidates: Sequence[Candidate],
    executor,
    user_overrides: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    kept: KeptLines | None = None,
) -> NextMeasurements:
    """Every candidate run at each of the range's draws (through `executor.map`, in draw order:
    the same numbers on any executor), then each figure's expected update of the range.
    `kept`: the runs at draws an earlier command kept, replayed, and each new one kept as it
    comes back (`kept_runs`)."""
    drawn, seeds = draw_runs(calibrated, spread.draws, question.base.seed)
    runs = list(dict.fromkeys(c.settings for c in candidates))
    figures = {
        settings: tuple(
            dict.fromkeys(f for c in candidates if c.settings == settings for f in c.figures)
        )
        for settings in runs
    }
    tasks = [(d, s, settings, figures[settings]) for settings in runs for d, s in zip(drawn, seeds)]
    run = CandidateRun(question.base, tuple(user_overrides))
    measured: dict[tuple[str, ...], list[Measured]] = {settings: [] for settings in runs}
    map_ = executor.map if kept is None else kept_runs(executor.map, kept, run)
    results = map_(run, *zip(*tasks)) if tasks else iter(())
    for done, (task, result) in enumerate(zip(tasks, results)):
        measured[task[2]].append(result)
        if progress is not None:
            progress(done + 1, len(tasks))
    out = NextMeasurements(
        path=spread.path,
        slos=spread.slos,
        level=spread.level,
        draws=spread.draws,
        low=spread.low,
        high=spread.high,
        measurements=[],
    )
    for settings in runs:
        for m, result in enumerate(measured[settings]):
            if result.failed:
                out.failed.append(
                    f"{', '.join(settings)} at draw {m + 1} gave no figures: {result.failed}"
                )
    weighed: set[tuple[tuple[str, ...], str]] = set()
    for candidate in candidates:
        for figure in candidate.figures:
            if (candidate.settings, figure) in weighed:
                continue  # a default and a given candidate may name the same measurement
            weighed.add((candidate.settings, figure))
            found = _measurement(
                candidate, figure, measured[candidate.settings], spread, calibrated
            )
            if found is None:
                out.failed.append(f"{candidate.label}: no draw gave a value of {figure}")
            else:
                out.measurements.append(found)
    out.measurements.sort(key=lambda m: (not m.update.tells, m.update.ratio, m.update.ratio_high))
    out.notes.extend(_notes(spread, calibrated))
    return out


def _measurement(
    candidate: Candidate,
    figure: str,
    runs: list[Measured],
    spread: CapacityRange,
    calibrated: Calibrated,
) -> NextMeasurement | None:
    """The figure's pairs with the draws' answers (a draw without an answer, or whose run
    failed, is left out) and its expected update."""
    pairs = [
        (answer, run.figures[figure])
        for answer, run in zip(spread.answers, runs)
        if answer is not None and figure in run.figures
    ]
    if not pairs:
        return None
    answers = np.array([a for a, _ in pairs], dtype=float)
    values = np.array([v for _, (v, _) in pairs], dtype=float)
    value = float(np.mean(values))
    sd_model = calibrated.model_error_sd * abs(value)
    sd_measurement, source = _measurement_sd(
        figure, value, [one for _, (_, one) in pairs], calibrated
    )
    update = expected_update(answers, values, math.hypot(sd_model, sd_measurement))
    return NextMeasurement(
        candidate=candidate,
        figure=figure,
        value=value,
        sd_model=sd_model,
        sd_measurement=sd_measurement,
        measurement_from=source,
        update=update,
        sd_today=float(np.std(answers, ddof=1)) if len(answers) > 1 else 0.0,
        width_today=None if spread.low is None or spread.high is None else spread.high - spread.low,
    )


def _measurement_sd(
    figure: str, value: float, per_replication: list[float], calibrated: Calibrated
) -> tuple[float, str]:
    """The measurement's own sd: as the fitted figures of the same metric were known, else one
    replication of the model's run window (pooled over the draws)."""
    known = [f.measurement_sd for f in calibrated.fitted if f.metric == figure and f.measurement_sd]
    if known:
        relative = statistics.median(known)
        return relative * abs(value), f"as the fitted {figure} figures ({relative:.1%})"
    finite = [s for s in per_replication if math.isfinite(s)]
    if not finite:
        return 0.0, "unknown (one replication per draw): taken as exact"
    return float(math.sqrt(np.mean(np.square(finite)))), "one run of the model's window"


def _notes(spread: CapacityRange, calibrated: Calibrated) -> list[str]:
    notes = []
    if spread.draws < FEW_DRAWS:
        notes.append(
            f"from {spread.draws} draws each correlation is known only roughly: the widths "
            "after are given with their 90 % interval over it, and a measurement whose "
            "correlation the draws cannot tell from zero is left at today's width; more --draws "
            "sharpen the ranking"
        )
    missing = sum(a is None for a in spread.answers)
    if missing:
        notes.append(
            f"{missing} of {spread.draws} draws had no {spread.path} meeting the SLO in the "
            "search range: they are left out of the pairs"
        )
    bounds = sum(spread.beyond)
    if bounds:
        notes.append(
            f"{bounds} of {spread.draws} draws' answers are the search's bound, not a boundary: "
            "they count at the bound"
        )
    if calibrated.model_error_sd == 0:
        notes.append(
            "the calibration has no model error: a figure is taken as known up to its "
            "measurement's noise, which overstates what a measurement buys"
        )
    notes.append(
        "a run measures all its figures at once: each row is the update by that one figure "
        "(together they may buy somewhat more, which so few draws cannot estimate)"
    )
    return notes


def render(found: NextMeasurements, console) -> None:
    """The table of candidates, best first, under the range they would narrow."""
    from rich.markup import escape
    from rich.table import Table

    from sim.present.tables import plain

    today = (
        f"today {found.low:g}–{found.high:g}, {found.width_today:.3g} wide"
        if found.width_today is not None
        else "no range today: the sd of the answers"
    )
    table = Table(
        header_style="bold",
        title=escape(
            f"what to measure next: the {found.level:.0%} range of {found.path} after each "
            f"measurement ({today}; {found.draws} draws)"
        ),
        title_justify="left",
    )
    for column in ("measure", "figure", "± sd", "corr. [90 %]", "width after [90 %]", "verdict"):
        table.add_column(
            column,
            justify="left" if column in ("measure", "figure", "verdict") else "right",
            overflow="fold",
        )
    for m in found.measurements:
        u = m.update
        if found.width_today is not None:
            after = (
                f"{m.width(u.ratio):.3g} [{m.width(u.ratio_low):.3g}, {m.width(u.ratio_high):.3g}]"
            )
        else:
            after = f"sd {plain(m.sd_today * u.ratio)} (today {plain(m.sd_today)})"
        corr = (
            "-"
            if math.isnan(u.correlation)
            else f"{u.correlation:+.2f} [{u.correlation_low:+.2f}, {u.correlation_high:+.2f}]"
            if not math.isnan(u.correlation_low)
            else f"{u.correlation:+.2f}"
        )
        table.add_row(
            "\n".join(escape(setting) for setting in m.candidate.settings)
            + (f"\n[dim]{escape(m.candidate.why)}[/dim]" if m.candidate.why else ""),
            escape(m.figure),
            plain(math.hypot(m.sd_model, m.sd_measurement)),
            corr,
            after,
            u.verdict,
        )
    console.print(table)
    console.print(found.sentence(), markup=False)
    for note in found.notes:
        console.print(note, markup=False)
    for line in found.failed:
        console.print(f"warning: {line}", markup=False)
