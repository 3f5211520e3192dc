"""Plotly figures of `tiersim run --timeseries` output, e.g. the stall of seed 001: Apache
workers, pooled backend connections and backend threads (serving / pinned idle) over time."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from sim.present.failures import FAILED_SHARE, is_latency, replication_failed_share


def read_timeseries(path: str | Path, replication: int = 0) -> dict[str, list[float]]:
    """Columns of one replication's rows; empty cells (undefined metrics) become None.
    A file that is not a `--timeseries` file is a ValueError naming the file, row and column."""
    from sim.files import FileProblem, read_text

    try:
        text = read_text(path, "--timeseries file", max_bytes=2**30)
    except FileProblem as exc:
        raise ValueError(str(exc).removeprefix(f"{path}: ")) from None
    remake = "make one with `tiersim run MODEL --timeseries FILE.csv`"
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
        if not header or "replication" not in header or "time" not in header:
            header = header or []
            shown = ", ".join(header[:8]) + (", ..." if len(header) > 8 else "")
            missing = [c for c in ("replication", "time") if c not in header]
            raise ValueError(
                f"not a `tiersim run --timeseries` file: no column {' or '.join(missing)} "
                f"(its columns: {shown or 'none'}); {remake}"
            )
        columns: dict[str, list] = {name: [] for name in header}
        seen: set[int] = set()
        for number, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise ValueError(
                    f"row {number} has {len(row)} cells, the header {len(header)}: the file is "
                    f"cut or edited; {remake}"
                )
            cells = dict(zip(header, row))
            try:
                which = int(cells["replication"])
            except ValueError:
                raise ValueError(
                    f"row {number}: replication = {cells['replication']!r} is not a whole number"
                ) from None
            seen.add(which)
            if which != replication:
                continue
            for key, cell in cells.items():
                columns[key].append(_number(cell, number, key))
    except csv.Error as exc:
        raise ValueError(f"not a CSV file ({exc}); {remake}") from None
    if not columns["time"]:
        present = f"it holds replications {min(seen)}..{max(seen)}" if seen else "it has no rows"
        raise ValueError(f"no rows for --replication {replication} ({present})")
    return columns


def _number(cell: str, row: int, column: str) -> float | None:
    if cell.strip() == "":
        return None
    try:
        return float(cell)
    except ValueError:
        raise ValueError(f"row {row}: {column} = {cell!r} is not a number") from None


def timeseries_figure(columns: dict[str, list], names: list[str] | None = None, title: str = ""):
    """A step plot of the chosen columns (default: every instantaneous `*_now` column)."""
    import plotly.graph_objects as go

    chosen = names or sorted(name for name in columns if name.endswith("_now"))
    unknown = [name for name in chosen if name not in columns or name in ("replication", "time")]
    plottable = ", ".join(sorted(set(columns) - {"replication", "time"})) or "none"
    if unknown:
        raise ValueError(
            f"--column: no column {', '.join(unknown)} in the file; give one of: {plottable}"
        )
    if not chosen:
        raise ValueError(f"no *_now column to plot by default; choose with --column ({plottable})")
    figure = go.Figure()
    colours = trace_colours(chosen)
    within: dict[str, int] = {}  # the rank of a trace inside its tier: its dash
    for name in chosen:
        tier = name.split(".", 1)[0]
        within[tier] = within.get(tier, -1) + 1
        figure.add_trace(
            go.Scatter(
                x=columns["time"],
                y=columns[name],
                mode="lines",
                line_shape="hv",
                line={"color": colours[name], "dash": DASHES[within[tier] % len(DASHES)]},
                name=name.removesuffix("_now"),
                legendgroup=tier,
                legendgrouptitle_text=tier,
            )
        )
    latency = any(is_latency(name) for name in chosen)
    figure.update_layout(
        title=title,
        xaxis_title="simulated time [s]",
        yaxis_title="number at the sampling instant [count]"
        if all(name.endswith("_now") for name in chosen)
        else "value over each interval",
        legend_title="sampled at each interval",
        legend_groupclick="toggleitem",
    )
    if latency:
        _failed_share_over_time(figure, columns)
    return figure


def _failed_share_over_time(figure, columns: dict[str, list]) -> None:
    """Beside a latency (of the answered requests only), the share of the interval's requests
    that failed, on a second axis; a file without the counts says so on the figure."""
    import plotly.graph_objects as go

    completed, failed = columns.get("count.completed"), columns.get("count.failed")
    if completed is None or failed is None:
        figure.add_annotation(
            text="no count.completed / count.failed in this file: the share of requests that "
            "failed cannot be shown beside the latency",
            xref="paper",
            yref="paper",
            x=0,
            y=1.08,
            showarrow=False,
        )
        return
    shares = [
        replication_failed_share({"count.completed": c, "count.failed": f})
        if c is not None and f is not None
        else None
        for c, f in zip(completed, failed)
    ]
    figure.add_trace(
        go.Scatter(
            x=columns["time"],
            y=[None if share is None or share != share else share for share in shares],
            mode="lines",
            line_shape="hv",
            line={"color": "rgb(214, 39, 40)", "dash": "dot"},
            name="failed share (of the requests ended in the interval)",
            yaxis="y2",
        )
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


# One colour family per tier (the part of a metric's name before its first dot), distinct
# shades within it: Plotly's default cycle has 10 colours, and a run has more traces than that.
TIER_SCALES = ("Blues", "Reds", "Greens", "Purples", "Oranges", "Greys", "YlOrBr", "PuRd")
# neighbouring shades of one hue are close: the traces of a tier take turns of dash as well
DASHES = ("solid", "dash", "dot", "dashdot")


def trace_colours(names: list[str]) -> dict[str, str]:
    """A colour per name, distinct across all of them: the names of one tier share a hue, from
    darker to lighter; tiers take hues in order of first appearance."""
    from plotly.colors import sample_colorscale

    tiers: dict[str, list[str]] = {}
    for name in names:
        tiers.setdefault(name.split(".", 1)[0], []).append(name)
    colours: dict[str, str] = {}
    for k, (_, members) in enumerate(tiers.items()):
        scale = TIER_SCALES[k % len(TIER_SCALES)]
        # from 1 (darkest) to 0.4: the pale end of a scale is invisible on white
        points = [1.0 - 0.6 * i / max(1, len(members) - 1) for i in range(len(members))]
        if len(members) == 1:
            points = [0.8]
        for name, colour in zip(members, sample_colorscale(scale, points)):
            colours[name] = colour
    return colours


def replicas_figure(columns: dict[str, list], group: str, title: str = ""):
    """An autoscaled group over time: the replicas its autoscaler asked for and the nodes
    ready (`<group>.autoscale.replicas_now`, `ready_now`, at each sampling instant) beside the
    load offered (requests arrived per second over each interval, on a second axis), from a
    `tiersim run --timeseries` file."""
    import plotly.graph_objects as go

    wanted = [f"{group}.autoscale.replicas_now", f"{group}.autoscale.ready_now"]
    missing = [name for name in [*wanted, "count.arrived"] if name not in columns]
    if missing:
        groups = sorted(
            name.removesuffix(".autoscale.replicas_now")
            for name in columns
            if name.endswith(".autoscale.replicas_now")
        )
        raise ValueError(
            f"no column {', '.join(missing)} in the file; autoscaled groups in it: "
            f"{', '.join(groups) or 'none'}"
        )
    times = columns["time"]
    starts = [0.0, *times[:-1]]
    load = [
        None if n is None or t <= s else n / (t - s)
        for n, t, s in zip(columns["count.arrived"], times, starts)
    ]
    figure = go.Figure()
    for name, dash in zip(wanted, ("solid", "dash")):
        figure.add_trace(
            go.Scatter(
                x=times,
                y=columns[name],
                mode="lines",
                line_shape="hv",
                line={"color": "rgb(31, 119, 180)", "dash": dash},
                name=name.removesuffix("_now"),
            )
        )
    figure.add_trace(
        go.Scatter(
            x=times,
            y=load,
            mode="lines",
            line_shape="hv",
            line={"color": "rgb(127, 127, 127)", "dash": "dot"},
            name="load: requests arrived per second",
            yaxis="y2",
        )
    )
    figure.update_layout(
        title=title,
        xaxis_title="simulated time [s]",
        yaxis={"title": "nodes [count]", "rangemode": "tozero"},
        yaxis2={
            "title": "requests arrived [1/s]",
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
        },
        legend={"x": 1.1},
    )
    return figure
