"""A calibration and its predictions as terminal tables."""

from __future__ import annotations

import math

from sim.studies.calibration.analysis import LEVEL
from sim.studies.calibration.fit import Calibration
from sim.studies.rows import Row


def render(calibration: Calibration, console, chosen: tuple[str, ...] = ()) -> None:
    """The fit, its predictions and the `--set` line that runs a model at it: `chosen` are
    [[choose]]'s settings the values were fitted with (`backends.0.cores=1`), which the line
    must carry too, or the values run on another structure."""
    from rich.table import Table

    from sim.model.docs import parameter_unit
    from sim.present.tables import plain
    from sim.studies.rows import render_rows

    table = Table(header_style="bold", title="fitted parameters")
    for column in ("parameter", "value", "unit", "95% interval", "start", "range", "fitted to"):
        table.add_column(
            column, justify="left" if column in ("parameter", "unit", "fitted to") else "right"
        )
    for p in calibration.parameters:
        value = plain(p["value"], 6) + (" (at a bound)" if p["at_bound"] else "")
        interval = ""
        if "interval" in p:
            low, high = p["interval"]
            interval = f"[{plain(low)}, {plain(high)}]" + ("" if p["pinned"] else " not pinned")
        table.add_row(
            ("unknown " if p["kind"] == "unknown" else "")
            + p["parameter"]
            + (f" when {p['when']}" if p["when"] else ""),
            value,
            parameter_unit(p["parameter"]),
            interval,
            plain(p["start"], 6),
            f"[{plain(p['low'])}, {plain(p['high'])}]",
            "; ".join(p["fitted_to"]) or "none (carried as its range)",
        )
    console.print(table)
    state = "converged" if calibration.converged else "NOT converged"
    # plain text: a message names `[[calibrate]]`, which terminal markup would take for a tag
    console.print(
        f"{state}: {calibration.message} ({calibration.evaluations} evaluations simulated, "
        f"{calibration.cached} from the cache)",
        markup=False,
    )
    if any(p["at_bound"] for p in calibration.parameters):
        console.print(
            "a parameter ended at a bound: widen its [[calibrate]] bounds, or the figures cannot be met "
            "by this parameter alone",
            markup=False,
        )
    found = calibration.uncertainty
    if found is not None:
        for sentence in found["not_identified"]:
            console.print(f"not identified: {sentence}", markup=False)
        model = found["model_error"]
        if model["estimated"]:
            text = (
                f"model error beyond noise: {model['sd']:.1%} (relative sd, from the fitted "
                f"figures' residuals, {model['degrees_of_freedom']:.1f} degrees of freedom)"
            )
        elif model.get("declared"):
            text = (
                f"model error beyond noise: {model['sd']:.1%} as declared by the experiment "
                "([experiment] model_error; the fit leaves no degrees of freedom to estimate it)"
            )
        else:
            text = (
                "model error beyond noise: unknown (no degrees of freedom left by the fit; "
                "the intervals below hold parameters, noise and measurement error only)"
            )
        console.print(text)
        render_intervals(calibration.rows, console, f"predictions ({found['method']})")
    else:
        render_rows(calibration.rows, console)
    import shlex

    sets = " ".join(
        [f"--set {shlex.quote(setting)}" for setting in [*calibration.settings, *chosen]]
        + [
            f"--set {p['parameter']}={plain(p['value'], 6)}"
            for p in calibration.parameters
            if not p["when"]
        ]
    )
    if sets:
        console.print(
            f"to run a model with these values: tiersim run MODEL {sets} (or: tiersim run "
            "MODEL --calibration FILE, after calibrate --save FILE: the same settings, and the "
            "fit's uncertainty with --draws)",
            markup=False,
            soft_wrap=True,
        )


def render_intervals(rows: list[Row], console, title: str) -> None:
    """Rows with their simulation interval and, separately, the prediction interval."""
    from rich.table import Table

    from sim.present.failures import percent

    table = Table(header_style="bold", title=title)
    for column in (
        "figure",
        "published",
        "predicted",
        "95% sim. CI",
        f"{LEVEL:.0%} pred. interval",
        "error",
        "in",
        "failed",
        "sd: param / noise / model",
        "most sensitive to",
    ):
        table.add_column(
            column,
            justify="left" if column in ("figure", "most sensitive to") else "right",
            # a narrow terminal folds a parameter's dotted path onto the next line instead of
            # cutting it (`backends.0.i…` names no parameter)
            overflow="fold",
        )
    for r in rows:
        pi = "" if r.pi_low is None else f"[{r.pi_low:.4g}, {r.pi_high:.4g}]"
        inside = "" if r.covered is None else ("yes" if r.covered else "NO")
        if r.excluded:
            inside = "excl."
        parts = (
            ""
            if r.sd_parameters is None
            else f"{r.sd_parameters:.1%} / {r.sd_noise:.1%} / {r.sd_model:.1%}"
        )
        table.add_row(
            r.figure + (" (fit)" if r.fitted else ""),
            "withheld" if r.published is None else f"{r.published:g}",
            f"{r.simulated:.4g}",
            "" if math.isnan(r.ci_low) else f"[{r.ci_low:.4g}, {r.ci_high:.4g}]",
            pi,
            "" if r.rel_error is None else f"{r.rel_error:+.1%}",
            inside,
            "" if r.failed_share is None else percent(r.failed_share),
            parts,
            r.most_sensitive or "",
        )
    console.print(table)
    for r in rows:
        if r.excluded:
            console.print(f"excluded: {r.figure}: {r.excluded}", markup=False)
