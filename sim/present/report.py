"""`tiersim report`: one self-contained HTML file of Plotly figures.

From a sweep's results directory: each kept metric against its factor with the confidence
band (one factor), a heatmap plus one line per value of the second factor (two factors on a
grid), or the metric against each factor with interval bars (space-filling designs); failed
points are listed.  A latency is measured on the answered requests only, so every figure and
table of one shows the share of requests that failed beside it (`sim.present.failures`), and
the summary gives each point's replications, window and warm-up, and the runs' warnings.
From a `tiersim reproduce NAME --json` file (or `tiersim calibrate NAME --json`, with its
fitted values): published against simulated.

plotly.js is embedded once, so the file opens anywhere without a network.  A `window.onerror`
hook records any script error on the page (`data-js-error` on <html>), for the test that
renders the report in a headless browser.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from sim.present.failures import (
    FAILED_SHARE,
    budget_percent,
    is_latency,
    percent,
    within_budget,
)

BAND = "rgba(31, 119, 180, 0.2)"
FAILED_COLOUR = "rgb(214, 39, 40)"
# what a results directory of a tiersim before the failed share was recorded lacks
NOT_RECORDED = "failed share not recorded in this results directory: rerun the sweep to see it"


class ReportError(ValueError):
    """An input that cannot be reported; the message says what was expected."""


# (manifest, results frame) of a sweep's results directory: `sim.studies.sweep.store.
# read_sweep`, handed in by the caller so that presenting stays below the studies it presents
SweepReader = Callable[[Path], tuple[dict, Any]]


def build_report(
    source: str | Path, read_sweep: SweepReader | None = None
) -> tuple[str, list[go.Figure], str]:
    """(title, figures, HTML summary) of a results directory (read by `read_sweep`) or a
    reproduce JSON file."""
    source = Path(source)
    if source.is_dir():
        if read_sweep is None:
            raise ReportError(f"{source}: a results directory needs the sweep store's reader")
        return _sweep_report(source, read_sweep)
    if source.suffix == ".json" and source.is_file():
        return _reproduce_report(source)
    raise ReportError(
        f"{source}: expected a results directory of `tiersim sweep` or a JSON file of "
        "`tiersim reproduce NAME --json`"
    )


def write_html(path: str | Path, title: str, figures: list[go.Figure], summary: str = "") -> None:
    parts = []
    for number, figure in enumerate(figures):
        div = figure.to_html(
            full_html=False,
            include_plotlyjs=number == 0,
            div_id=f"figure-{number}",
            config={"displaylogo": False},
        )
        parts.append(f'<section class="figure">{div}</section>')
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<script>
window.onerror = function (message) {{
  document.documentElement.setAttribute("data-js-error", String(message));
}};
</script>
<style>body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 2px 8px; text-align: left; }}</style>
</head><body>
<h1>{html.escape(title)}</h1>
{summary}
{"".join(parts)}
</body></html>
"""
    Path(path).write_text(page, encoding="utf-8")


# --------------------------------------------------------------------------- sweeps
def _sweep_report(root: Path, read_sweep: SweepReader):
    manifest, frame = read_sweep(root)  # raises ReportError with the store's message
    factors, metrics = manifest.get("factors"), manifest.get("metrics")
    if not isinstance(factors, list) or not isinstance(metrics, list):
        raise ReportError(
            f"{root}: its manifest names no factors and metrics; not a results directory of "
            "`tiersim sweep`"
        )
    ok = frame[frame["status"] == "ok"] if not frame.empty else frame
    figures: list[go.Figure] = []
    for metric in metrics:
        if ok.empty or metric not in ok or ok[metric].isna().all():
            continue
        latency = _is_latency(metric, ok)
        if len(factors) == 1:
            figures.append(_band_figure(ok, factors[0], metric, failed=latency))
        elif len(factors) == 2 and manifest.get("design") == "grid":
            figures.append(_heatmap(ok, factors[0], factors[1], metric, failed=latency))
            figures.append(_lines(ok, factors[0], factors[1], metric, failed=latency))
        else:
            figures.extend(
                _band_figure(ok, factor, metric, markers_only=True, failed=latency)
                for factor in factors
            )
    summary = _sweep_summary(manifest, frame)
    return manifest.get("name", str(root)), figures, summary


def _band_figure(
    frame, factor: str, metric: str, markers_only: bool = False, failed: bool = False
) -> go.Figure:
    data = frame.sort_values(factor)
    x = data[factor].tolist()
    figure = go.Figure()
    if markers_only:
        figure.add_trace(
            go.Scatter(
                x=x, y=data[metric], mode="markers", name=metric, error_y=_error_bars(data, metric)
            )
        )
    else:
        figure.add_trace(
            go.Scatter(
                x=x + x[::-1],
                y=data[f"{metric}.ci_high"].tolist() + data[f"{metric}.ci_low"].tolist()[::-1],
                fill="toself",
                fillcolor=BAND,
                line={"width": 0},
                hoverinfo="skip",
                name="confidence interval",
            )
        )
        figure.add_trace(go.Scatter(x=x, y=data[metric], mode="lines+markers", name=metric))
    figure.update_layout(
        title=f"{metric} against {factor}"
        + (" and the share of requests that failed" if failed else ""),
        xaxis_title=factor,
        yaxis_title=_axis(metric, frame),
    )
    if failed and _failed_axis(figure, frame):
        figure.add_trace(_share_trace(data, x, "failed share", FAILED_COLOUR))
    return figure


def _is_latency(metric: str, frame) -> bool:
    return is_latency(metric, _unit_of(metric, frame))


def _share_trace(data, x, name: str, colour: str | None = None) -> go.Scatter:
    """The failed share at the same points as a latency's trace, on the figure's second axis:
    a latency of the answered requests read without it flatters whatever refuses its load."""
    return go.Scatter(
        x=x,
        y=data[FAILED_SHARE],
        mode="lines+markers",
        name=name,
        yaxis="y2",
        line={"dash": "dot", "color": colour},
        marker={"symbol": "x"},
        error_y=_error_bars(data, FAILED_SHARE),
        hovertemplate="%{x}: %{y:.2%} of requests failed<extra></extra>",
    )


def _failed_axis(figure: go.Figure, frame) -> bool:
    """Give a latency's figure the failed share's axis; False (and a note on the figure) when
    the results directory did not record the share."""
    recorded = FAILED_SHARE in frame and not frame[FAILED_SHARE].isna().all()
    if not recorded:
        figure.add_annotation(
            text=NOT_RECORDED, xref="paper", yref="paper", x=0, y=1.08, showarrow=False
        )
    figure.update_layout(
        yaxis2={
            "title": f"{FAILED_SHARE}: requests failed (refused, errors, timeouts)",
            "overlaying": "y",
            "side": "right",
            "tickformat": ".0%",
            "rangemode": "tozero",
        },
        legend={"x": 1.1},
    )
    return recorded


def _heatmap(frame, x_factor: str, y_factor: str, metric: str, failed: bool = False) -> go.Figure:
    table = frame.pivot_table(index=y_factor, columns=x_factor, values=metric, aggfunc="first")
    low = frame.pivot_table(
        index=y_factor, columns=x_factor, values=f"{metric}.ci_low", aggfunc="first"
    )
    high = frame.pivot_table(
        index=y_factor, columns=x_factor, values=f"{metric}.ci_high", aggfunc="first"
    )
    text = [
        [f"[{lo:.4g}, {hi:.4g}]" for lo, hi in zip(row_lo, row_hi)]
        for row_lo, row_hi in zip(low.values, high.values)
    ]
    shares = None
    if failed:
        if FAILED_SHARE in frame and not frame[FAILED_SHARE].isna().all():
            shares = frame.pivot_table(
                index=y_factor, columns=x_factor, values=FAILED_SHARE, aggfunc="first"
            ).reindex(index=table.index, columns=table.columns)
            text = [
                [f"{cell}, {percent(share)} failed" for cell, share in zip(row, row_shares)]
                for row, row_shares in zip(text, shares.values)
            ]
        else:
            text = [[f"{cell}, {NOT_RECORDED}" for cell in row] for row in text]
    figure = go.Figure(
        go.Heatmap(
            z=table.values,
            x=[str(v) for v in table.columns],
            y=[str(v) for v in table.index],
            text=text,
            texttemplate="%{z:.3g}<br>%{text}" if failed else None,
            colorbar={"title": _axis(metric, frame)},
            hovertemplate=f"{x_factor}=%{{x}}<br>{y_factor}=%{{y}}<br>{metric}=%{{z:.4g}} %{{text}}<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"{metric}: {x_factor} × {y_factor}"
        + (" (each cell: the interval and the share of requests that failed)" if failed else ""),
        xaxis_title=x_factor,
        yaxis_title=y_factor,
        xaxis_type="category",
        yaxis_type="category",
    )
    return figure


def _lines(frame, x_factor: str, group_factor: str, metric: str, failed: bool = False) -> go.Figure:
    figure = go.Figure()
    recorded = failed and _failed_axis(figure, frame)
    for value, group in frame.groupby(group_factor, sort=True):
        data = group.sort_values(x_factor)
        figure.add_trace(
            go.Scatter(
                x=data[x_factor],
                y=data[metric],
                mode="lines+markers",
                name=f"{group_factor}={value}",
                error_y=_error_bars(data, metric),
            )
        )
        if recorded:
            figure.add_trace(
                _share_trace(data, data[x_factor], f"failed share, {group_factor}={value}")
            )
    figure.update_layout(
        title=f"{metric} against {x_factor}, one line per {group_factor}"
        + (" (dotted: the share of requests that failed)" if failed else ""),
        xaxis_title=x_factor,
        yaxis_title=_axis(metric, frame),
    )
    return figure


def _error_bars(data, metric: str) -> dict:
    return {
        "type": "data",
        "symmetric": False,
        "array": (data[f"{metric}.ci_high"] - data[metric]).tolist(),
        "arrayminus": (data[metric] - data[f"{metric}.ci_low"]).tolist(),
    }


def _unit_of(metric: str, frame) -> str | None:
    """The unit its run declared for the metric (stored with each point)."""
    if "units" in frame:
        for cell in frame["units"].dropna():
            unit = json.loads(cell).get(metric)
            if unit:
                return str(unit)
    return None


def _axis(metric: str, frame) -> str:
    """The axis label: the metric with the unit its run declared (stored with each point)."""
    unit = _unit_of(metric, frame)
    return f"{metric} [{unit}]" if unit else metric


def _not_run(points: Any, stored: int) -> Any:
    """Points of the design not in the store (a sweep interrupted, or still running)."""
    return points - stored if isinstance(points, int) else "?"


def _sweep_summary(manifest: dict, frame) -> str:
    failed = frame[frame["status"] != "ok"] if not frame.empty else frame
    ok = frame[frame["status"] == "ok"] if not frame.empty else frame
    facts = {
        "sweep file": manifest.get("source"),
        "base model": manifest.get("base"),
        "design": manifest.get("design"),
        "factors": ", ".join(manifest["factors"]),
        "points finished": f"{len(frame) - len(failed)} of {manifest.get('points')}",
        "failed": len(failed),
        "not run yet": _not_run(manifest.get("points"), len(frame)),
        "replications per point": _spread(ok, "replications", "{:.0f}"),
        "window per replication (after the warm-up)": _spread(ok, "window_s", "{:.4g} s"),
        "warm-up removed": _spread(ok, "warmup_s", "{:.4g} s"),
        "seed": manifest.get("seed"),
        "tiersim": manifest.get("tiersim_version"),
    }
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in facts.items()
    )
    out = f"<table>{rows}</table>"
    out += _points_table(manifest, ok)
    out += _warnings(ok)
    if len(failed):
        lines = "".join(
            f"<tr><td>{r.point_index}</td><td>{html.escape(' '.join(r.overrides))}</td>"
            f"<td>{html.escape(str(r.error_kind))}</td><td>{html.escape(str(r.error))}</td></tr>"
            for r in failed.itertuples()
        )
        header = "<tr><th>point</th><th>overrides</th><th>kind</th><th>error</th></tr>"
        out += f"<h2>Failed points</h2><table>{header}{lines}</table>"
    return out


def _spread(frame, column: str, form: str) -> str:
    """A column's value over the points: one value, or its range; "not recorded" when the
    results directory predates it."""
    if frame.empty or column not in frame or frame[column].isna().all():
        return "not recorded (a results directory of an older tiersim: rerun the sweep)"
    low, high = frame[column].min(), frame[column].max()
    return form.format(low) if low == high else f"{form.format(low)} to {form.format(high)}"


def _points_table(manifest: dict, ok) -> str:
    """Every finished point: its factors, each kept metric and, beside any latency, the share
    of its requests that failed, with its replications, window and warm-up."""
    if ok.empty:
        return ""
    factors, metrics = manifest["factors"], manifest["metrics"]
    latency = any(_is_latency(metric, ok) for metric in metrics)
    columns = [(factor, factor) for factor in factors]
    columns += [(metric, metric) for metric in metrics if metric in ok]
    budget = manifest.get("error_budget")
    if latency:
        columns.append((f"{FAILED_SHARE} (requests failed)", FAILED_SHARE))
        columns.append(("failed / replication", "count.failed"))
        if isinstance(budget, (int, float)):
            columns.append((f"within the error budget ({budget_percent(budget)})", "_budget"))
    columns += [
        ("replications", "replications"),
        ("window [s]", "window_s"),
        ("warm-up [s]", "warmup_s"),
    ]
    header = "".join(f"<th>{html.escape(label)}</th>" for label, _ in columns)
    body = ""
    for row in ok.to_dict("records"):
        if isinstance(budget, (int, float)):
            high = row.get(f"{FAILED_SHARE}.ci_high")
            row["_budget"] = (
                "yes"
                if within_budget(high, budget)
                else "not recorded"
                if not isinstance(high, float) or high != high
                else "NO: too many of its requests failed for its latencies to stand"
            )
        cells = "".join(f"<td>{html.escape(_cell(row, name))}</td>" for _, name in columns)
        body += f"<tr>{cells}</tr>"
    return f"<h2>Points</h2><table><tr>{header}</tr>{body}</table>"


def _cell(row: dict, name: str) -> str:
    value = row.get(name)
    if name == FAILED_SHARE:
        if value is None or value != value:  # NaN: not recorded
            return "not recorded"
        return (
            f"{percent(value)} [{percent(row.get(f'{name}.ci_low'))}, "
            f"{percent(row.get(f'{name}.ci_high'))}]"
        )
    if isinstance(value, float):
        if value != value:
            return "-"
        low, high = row.get(f"{name}.ci_low"), row.get(f"{name}.ci_high")
        if isinstance(low, float) and isinstance(high, float) and low == low and high == high:
            return f"{value:.4g} [{low:.4g}, {high:.4g}]"
        return f"{value:.4g}"
    return "-" if value is None else str(value)


def _warnings(ok) -> str:
    """The runs' warnings (steady state not reached, too few replications ...), by point."""
    if ok.empty or "warnings" not in ok:
        return ""
    lines = ""
    for row in ok.itertuples():
        try:
            warnings = json.loads(row.warnings) if isinstance(row.warnings, str) else []
        except ValueError:
            warnings = [str(row.warnings)]
        for warning in warnings:
            lines += (
                f"<tr><td>{row.point_index}</td><td>{html.escape(' '.join(row.overrides))}</td>"
                f"<td>{html.escape(str(warning))}</td></tr>"
            )
    if not lines:
        return ""
    header = "<tr><th>point</th><th>overrides</th><th>warning</th></tr>"
    return f"<h2>Warnings of the runs</h2><table>{header}{lines}</table>"


# --------------------------------------------------------------------------- reproductions
def _reproduce_report(path: Path):
    from sim.files import FileProblem, read_text

    try:
        document = json.loads(read_text(path, "reproduce JSON file", max_bytes=2**28))
        rows, calibration = _rows_of(document)
    except (FileProblem, ValueError, RecursionError) as exc:
        detail = (
            "nested too deeply"
            if isinstance(exc, RecursionError)
            else str(exc).removeprefix(f"{path}: ")
        )
        raise ReportError(
            f"{path}: not a `tiersim reproduce NAME --json` or `tiersim calibrate NAME --json` file "
            f"({detail}); make one with `tiersim reproduce NAME --json > FILE.json`"
        ) from None
    if not rows:
        raise ReportError(f"{path}: no rows")
    experiment = rows[0].get("experiment", path.stem)
    shown = [r for r in rows if r.get("published") is not None]
    figures = []
    # one axis per unit: req/s beside request counts would flatten one of them to nothing
    for unit in dict.fromkeys(_unit(r) for r in rows):
        for fitted in (False, True):
            part = [r for r in shown if bool(r.get("fitted")) == fitted and _unit(r) == unit]
            if part:
                label = "fitted rows (not predictions)" if fitted else "predicted rows"
                figures.append(_published_vs_simulated(part, label, unit))
        figures.append(_rows_panel([r for r in rows if _unit(r) == unit], unit))
    summary = (
        f"<p>{len(rows)} rows of experiment {html.escape(str(experiment))}; "
        f"{sum(bool(r.get('fitted')) for r in rows)} used to fit a parameter.</p>"
    )
    if calibration is not None:
        parameters = "".join(
            f"<li><code>{html.escape(p['parameter'])}</code> = {p['value']:.6g} "
            f"(bounds {p['low']:g} to {p['high']:g}{'; at a bound' if p.get('at_bound') else ''})</li>"
            for p in calibration["parameters"]
        )
        summary += (
            f"<p>Calibrated ({'converged' if calibration.get('converged') else 'not converged'}: "
            f"{html.escape(str(calibration.get('message', '')))}):</p><ul>{parameters}</ul>"
        )
    return f"{experiment}: published against simulated", figures, summary


def _rows_of(document: Any) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The rows of a reproduce (a list) or calibrate (an object with `rows`) document, each
    checked for the fields the figures read."""
    calibration = document if isinstance(document, dict) and "parameters" in document else None
    rows = calibration.get("rows", []) if calibration is not None else document
    if not isinstance(rows, list):
        raise ValueError(
            "expected a list of rows with figure, published, simulated, ci_low, ci_high"
        )
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not {"figure", "simulated", "ci_low", "ci_high"} <= set(
            row
        ):
            raise ValueError(
                f"row {i} is not a row with figure, published, simulated, ci_low, ci_high"
            )
        for key in ("published", "simulated", "ci_low", "ci_high"):
            value = row.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                raise ValueError(f"row {i}: {key} = {value!r} is not a number")
        if row["simulated"] is None:
            raise ValueError(f"row {i}: simulated is null")
    if calibration is not None:
        parameters = calibration.get("parameters")
        if not isinstance(parameters, list) or not all(
            isinstance(p, dict)
            and isinstance(p.get("parameter"), str)
            and all(
                isinstance(p.get(k), (int, float)) and not isinstance(p.get(k), bool)
                for k in ("value", "low", "high")
            )
            for p in parameters
        ):
            raise ValueError("parameters must be a list of {parameter, value, low, high}")
    return rows, calibration


def _unit(row: dict) -> str:
    """A row's unit (rows of files written before rows carried one: none)."""
    return str(row.get("unit") or "")


def _in(unit: str) -> str:
    return f" [{unit}]" if unit else ""


def _published_vs_simulated(rows: list[dict], label: str, unit: str = "") -> go.Figure:
    published = [r["published"] for r in rows]
    simulated = [r["simulated"] for r in rows]
    top = max(
        published + [r["ci_high"] if r["ci_high"] is not None else r["simulated"] for r in rows]
    )
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=[0, top * 1.05],
            y=[0, top * 1.05],
            mode="lines",
            name="simulated = published",
            line={"dash": "dot", "color": "grey"},
        )
    )
    figure.add_trace(
        go.Scatter(
            x=published,
            y=simulated,
            mode="markers",
            name=label,
            text=[f"{r['figure']}{_failed_of(r)}" for r in rows],
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [_gap(r["ci_high"], r["simulated"]) for r in rows],
                "arrayminus": [_gap(r["simulated"], r["ci_low"]) for r in rows],
            },
            hovertemplate="%{text}<br>published %{x:.4g}<br>simulated %{y:.4g}<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"published against simulated: {label}{_in(unit)}",
        xaxis_title=f"published{_in(unit)}",
        yaxis_title=f"simulated{_in(unit)} (95 % interval)",
        xaxis_automargin=True,
        yaxis_automargin=True,
    )
    return figure


LABEL_CHARS = 40  # a row name is wrapped at spaces to lines of about this many characters
PX_PER_CHAR = 7  # the width of a character of the 12 px tick font, with room to spare


def _wrap(name: str, width: int = LABEL_CHARS) -> list[str]:
    lines: list[str] = []
    for word in str(name).split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _rows_panel(rows: list[dict], unit: str = "") -> go.Figure:
    """Horizontal bars: the rows' names are long (every factor of the published table), so
    each is wrapped onto lines of about 40 characters and the left margin is as wide as the
    longest line (plotly's automargin alone gives up on names this long and cuts them)."""
    wrapped = [_wrap(r["figure"]) for r in rows]
    names = ["<br>".join(lines) for lines in wrapped]
    figure = go.Figure()
    figure.add_trace(
        go.Bar(y=names, x=[r.get("published") for r in rows], name="published", orientation="h")
    )
    figure.add_trace(
        go.Bar(
            y=names,
            x=[r["simulated"] for r in rows],
            name="simulated",
            orientation="h",
            # a latency's bar: the share of the simulated requests that failed, beside it
            text=[_failed_of(r).removeprefix(", ") for r in rows],
            textposition="outside",
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [_gap(r["ci_high"], r["simulated"]) for r in rows],
                "arrayminus": [_gap(r["simulated"], r["ci_low"]) for r in rows],
            },
        )
    )
    longest = max((len(line) for lines in wrapped for line in lines), default=0)
    lines = max((len(lines) for lines in wrapped), default=1)
    figure.update_layout(
        title=f"each row: published and simulated{_in(unit)}",
        barmode="group",
        yaxis_autorange="reversed",
        xaxis_title=f"published and simulated value{_in(unit)}",
        height=200 + max(60, 18 * lines + 24) * len(rows),
        margin={"l": 30 + PX_PER_CHAR * longest, "r": 40},
        yaxis_automargin=True,
        xaxis_automargin=True,
    )
    return figure


def _failed_of(row: dict) -> str:
    """`, 3.1 % failed` for a latency's row (its simulated requests that failed), `, failed
    share not recorded` for a latency's row of a file written before rows carried it."""
    share = row.get("failed_share")
    if isinstance(share, (int, float)) and not isinstance(share, bool):
        return f", {percent(float(share))} failed"
    if is_latency(str(row.get("metric") or ""), _unit(row)):
        return ", failed share not recorded (rerun to see it)"
    return ""


def _gap(a, b) -> float:
    return 0.0 if a is None or b is None else max(0.0, a - b)
