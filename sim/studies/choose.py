"""`[[choose]]`: a structural value of the model that no continuous fit can move (a count:
the cores of the bottleneck host, a pool size), chosen by calibrating once per candidate and
keeping the candidate whose fit meets the fitted figures best.

    [[choose]]
    parameter = "backends.0.cores"
    values = [1, 2, 4, 8]

Each candidate is set on every row (before the row's factors) and the experiment's
`[[calibrate]]` parameters are fitted with it; its score is the fit's cost, the sum over the
fitted figures of the squared relative error over the figure's measurement error (the
likelihood the fit itself maximises, so the candidates compete on the same terms; they have the
same free parameters, so no penalty for their number is needed).  Several `[[choose]]` entries
are crossed.  Only an experiment on an imported table (`[experiment] table = ...`) takes
`[[choose]]`.

Why it matters for a load test: with the demand fitted, the core count sets how early the
response time rises with the load, and the cores a request can really use are fewer than the
host has when other work (the load generator, a neighbour) shares it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sim.studies.calibration.figures import published_figures
from sim.studies.calibration.parameters import CalibrationError
from sim.studies.calibration.withheld import default_draws, withheld_intervals
from sim.studies.records import Experiment, experiment_of, with_candidate
from sim.studies.spec import ExperimentSpec

CLOSE = 2.0  # a cost this near the best one's: a candidate the figures do not rule out
# A candidate's weight is its likelihood, exp(-cost / 2), normalised over the candidates (the
# cost is a sum of squared standardised errors); below this share it draws nothing.
LEAST_WEIGHT = 0.01


def choices(spec: ExperimentSpec) -> list[tuple[str, list[Any]]]:
    """The `[[choose]]` entries: (parameter, candidate values); sim.studies.spec checked them
    (only on an imported table, a non-empty list of candidates)."""
    return [(entry.parameter, list(entry.values)) for entry in spec.choose]


def residuals(
    fit, spec: ExperimentSpec, records: list[dict[str, str]], source: Path
) -> list[tuple[float, float]]:
    """Each fitted figure's (relative error, sd) as the fit weighs it: the sd of the
    measurement error and the simulation's noise together."""
    measured = {f.label: f.measurement_sd for f in published_figures(spec, records, source)}
    out = []
    for target in fit.targets:
        half = (target["ci_high"] - target["ci_low"]) / 2
        noise = half / 1.959963984540054 / abs(target["published"])
        out.append(
            (float(target["rel_error"]), math.hypot(measured.get(target["figure"], 0.0), noise))
        )
    return out


def score(errors: list[tuple[float, float]], model_sd: float = 0.0) -> float:
    """The fit's cost: the sum of the squared relative errors over their sds (and `model_sd`,
    a relative model error, when candidates are weighed against each other)."""
    return float(sum((error / max(math.hypot(sd, model_sd), 1e-9)) ** 2 for error, sd in errors))


Progress = Callable[[int, float, Any], None]


def calibrate_choosing(
    name: str | Experiment,
    calibrate: Callable[..., Any],
    progress_for: Callable[[tuple[str, ...]], Progress | None] | None = None,
    **options,
) -> tuple[Any, list[dict]]:
    """`calibrate(experiment, **options)` once per candidate of the experiment's `[[choose]]`
    entries (the experiment with the candidate's settings, `with_candidate`); the best
    candidate's calibration and every candidate's score (`[]` without `[[choose]]`).
    Withheld figures of a table experiment get their prediction intervals here.  Given an
    `executor` of more than one slot, the candidates are fitted side by side (one thread each
    here, their runs on the executor): each fit is the one it is alone, so the choice is too.
    `name` is the experiment's name or the experiment already read; its files are read once
    for all of it.  `progress_for(candidate)`, when given, is each fit's progress callback (the
    candidate's settings, `()` without `[[choose]]`: a line can say whose evaluation it is),
    in place of `options["progress"]`."""
    experiment = experiment_of(name)
    spec = experiment.spec
    if options.get("draws") is None:
        options["draws"] = default_draws(spec)
    sampled = (options["draws"], options.get("draw_replications", 2))
    entries = choices(spec)
    executor = options.get("executor")
    map_ = map if executor is None else executor.map
    if not entries:
        fit = calibrate(experiment, **_with_progress(options, progress_for, ()))
        withheld_intervals(fit, experiment, options.get("replications"), *sampled, map_)
        return fit, []
    if options.get("draws") is None:
        options["draws"] = default_draws(spec)
    sampled = (options["draws"], options.get("draw_replications", 2))
    entries = choices(spec)
    executor = options.get("executor")
    map_ = map if executor is None else executor.map
    parameters = [p for p, _ in entries]
    candidates = [
        tuple(f"{p}={v}" for p, v in zip(parameters, combination))
        for combination in itertools.product(*(values for _, values in entries))
    ]
    runs = [
        (with_candidate(experiment, overrides), _with_progress(options, progress_for, overrides))
        for overrides in candidates
    ]
    if executor is not None and executor.slots > 1 and len(candidates) > 1:
        found = side_by_side(calibrate, runs)
    else:
        found = [candidate(each, calibrate, run) for each, run in runs]
    best = min(range(len(found)), key=lambda i: found[i][0])
    if found[best][1] is None:
        raise CalibrationError(
            f"{experiment.source}: no [[choose]] candidate could be calibrated: "
            + "; ".join(s["error"] for _, _, s in found)
        )
    # Weighed against each other, the candidates' errors are standardised by the model's own
    # error as well (the chosen fit's): a residual the model makes anyway is no evidence
    # against a candidate, and without it a few hundredths of a millisecond of measurement
    # error would make any two structures look decidable.
    model_sd = _model_error(found[best][1])
    weighed = [
        score(summary["residuals"], model_sd) if fit is not None else math.inf
        for _, fit, summary in found
    ]
    weights = candidate_weights(weighed)
    withheld_intervals(found[best][1], runs[best][0], options.get("replications"), *sampled, map_)
    for i, (_, fit, _) in enumerate(found):
        if i == best or weights[i] == 0.0:
            continue
        # an open alternative's withheld rows, predicted as the chosen one's are, so that its
        # weight enters those intervals too
        withheld_intervals(fit, runs[i][0], options.get("replications"), *sampled, map_)
    open_fits = [(weights[i], fit) for i, (_, fit, _) in enumerate(found) if weights[i] > 0]
    if len(open_fits) > 1:
        mix_rows(found[best][1], open_fits)
    summaries = []
    for i, (cost, fit, summary) in enumerate(found):
        # within 2 of the best cost (a likelihood ratio under e): the figures hardly tell the two
        # candidates apart
        close = i != best and cost - found[best][0] < CLOSE
        extra: dict = {"weight": weights[i]}
        posterior = (getattr(fit, "uncertainty", None) or {}).get("posterior")
        if weights[i] > 0 and posterior is not None:
            extra["posterior"] = {
                key: posterior[key] for key in ("mean", "cov", "conditioned") if key in posterior
            }
        summaries.append({**summary, "chosen": i == best, "close": close, **extra})
    return found[best][1], summaries


def _model_error(fit) -> float:
    model = (getattr(fit, "uncertainty", None) or {}).get("model_error") or {}
    return float(model.get("sd", 0.0)) if model.get("estimated") or model.get("declared") else 0.0


def candidate_weights(costs: list[float]) -> list[float]:
    """Each candidate's share, exp(-(cost - best) / 2) normalised; a share under LEAST_WEIGHT
    (or a candidate that could not be calibrated) is 0, and the others are normalised again."""
    finite = [c for c in costs if math.isfinite(c)]
    if not finite:
        return [0.0] * len(costs)
    best = min(finite)
    raw = [math.exp(-(c - best) / 2) if math.isfinite(c) else 0.0 for c in costs]
    total = sum(raw)
    kept = [w / total if w / total >= LEAST_WEIGHT else 0.0 for w in raw]
    total = sum(kept)
    return [w / total for w in kept]


def mix_rows(best, fits: list[tuple[float, Any]]) -> None:
    """The chosen fit's prediction intervals widened to the weighted mixture of the open
    candidates' predictive distributions: each candidate's row is a two-piece normal (its
    predicted value, its interval's lower and upper half-widths as 90 % spreads), and the
    mixture's 5 % and 95 % points are the row's interval.  The predicted value stays the chosen
    candidate's; `covered` is judged again on the wider interval."""
    from scipy import optimize, stats

    z = float(stats.norm.ppf(0.95))
    for j, row in enumerate(best.rows):
        parts = []
        for weight, fit in fits:
            other = fit.rows[j]
            if other.pi_low is None or other.pi_high is None or other.figure != row.figure:
                break
            centre = other.simulated
            parts.append(
                (
                    weight,
                    centre,
                    max(centre - other.pi_low, 1e-12) / z,
                    max(other.pi_high - centre, 1e-12) / z,
                )
            )
        else:

            def cdf(x: float, parts=parts) -> float:
                return sum(
                    w * stats.norm.cdf((x - c) / (below if x < c else above))
                    for w, c, below, above in parts
                )

            low = min(c - 4 * b for _, c, b, _ in parts)
            high = max(c + 4 * a for _, c, _, a in parts)
            row.pi_low = float(optimize.brentq(lambda x: cdf(x) - 0.05, low, high))
            row.pi_high = float(optimize.brentq(lambda x: cdf(x) - 0.95, low, high))
            if row.published is not None:
                row.covered = row.pi_low <= row.published <= row.pi_high


def _with_progress(
    options: dict,
    progress_for: Callable[[tuple[str, ...]], Progress | None] | None,
    overrides: tuple[str, ...],
) -> dict:
    """A fit's options: `progress_for(overrides)` as its progress callback, when given."""
    return options if progress_for is None else {**options, "progress": progress_for(overrides)}


def candidate(
    experiment: Experiment, calibrate: Callable[..., Any], options: dict
) -> tuple[float, Any, dict]:
    """One candidate's calibration (`experiment` carries its settings, `with_candidate`):
    (its cost, the fit or None, its summary)."""
    overrides = experiment.candidate
    try:
        fit = calibrate(experiment, **options)
    except CalibrationError as exc:
        return math.inf, None, {"set": list(overrides), "cost": None, "error": str(exc)}
    errors = residuals(fit, experiment.spec, experiment.records, experiment.source)
    cost = score(errors)
    summary = {
        "set": list(overrides),
        "cost": cost,
        "residuals": errors,  # (relative error, sd) of each fitted figure: for the weights
        "parameters": {p["parameter"]: p["value"] for p in fit.parameters},
        "converged": fit.converged,
    }
    return cost, fit, summary


def side_by_side(
    calibrate: Callable[..., Any], runs: list[tuple[Experiment, dict]]
) -> list[tuple[float, Any, dict]]:
    """Every candidate's calibration at once, in candidate order.  A fit is light here (the
    optimiser's steps); its runs go to the executor, which the candidates share, so a cluster
    wider than one evaluation's rows is kept busy.  On an error or Ctrl-C this returns at once:
    the caller closes the executor, and the other candidates' threads end at their next run."""
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    pool = ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="candidate")
    futures = [pool.submit(candidate, each, calibrate, run) for each, run in runs]
    try:
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in done:  # the first error at once, not after the candidates before it
            if future.exception() is not None:
                future.result()
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def render(summaries: list[dict], console) -> None:
    from rich.markup import escape
    from rich.table import Table

    from sim.present.tables import plain

    table = Table(header_style="bold", title=escape("[[choose]]: one calibration per candidate"))
    for column in ("candidate", "cost", "weight", "fitted values", "chosen"):
        table.add_column(column, justify="right" if column in ("cost", "weight") else "left")
    for s in summaries:
        values = ", ".join(f"{k} = {plain(v, 4)}" for k, v in s.get("parameters", {}).items())
        table.add_row(
            " ".join(s["set"]),
            "" if s["cost"] is None else f"{s['cost']:.3g}",
            f"{s.get('weight', 0.0):.0%}",
            values or s.get("error", ""),
            "chosen" if s["chosen"] else "close: not ruled out" if s.get("close") else "",
        )
    console.print(table)
    chosen = next(s for s in summaries if s["chosen"])
    console.print("chosen: " + " ".join(f"--set {setting}" for setting in chosen["set"]))
    open_ = [s for s in summaries if s.get("weight") and not s["chosen"]]
    if open_:
        console.print(
            "not ruled out by the fitted figures: "
            + "; ".join(f"{' '.join(s['set'])} (weight {s['weight']:.0%})" for s in open_)
            + f" beside the chosen one ({chosen['weight']:.0%}): the prediction intervals, "
            "`run --calibration` and `capacity --calibration` carry each by its weight (a load "
            "level past the knee would decide between them)",
            markup=False,
        )
