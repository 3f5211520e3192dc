"""Plotly figures of `tiersim run --timeseries` output, e.g. the stall of seed 001: Apache
workers, pooled backend connections and backend threads (serving / pinned idle) over time."""

from __future__ import annotations

import csv
from pathlib import Path


def read_timeseries(path: str | Path, replication: int = 0) -> dict[str, list[float]]:
    """Columns of one replication's rows; empty cells (undefined metrics) become None."""
    columns: dict[str, list] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if int(row["replication"]) != replication:
                continue
            for key, text in row.items():
                columns.setdefault(key, []).append(float(text) if text not in ("", None) else None)
    if not columns:
        raise ValueError(f"{path}: no rows for replication {replication}")
    return columns


def timeseries_figure(columns: dict[str, list], names: list[str] | None = None, title: str = ""):
    """A step plot of the chosen columns (default: every instantaneous `*_now` column)."""
    import plotly.graph_objects as go

    chosen = names or sorted(name for name in columns if name.endswith("_now"))
    unknown = [name for name in chosen if name not in columns]
    if unknown:
        raise ValueError(f"no column {', '.join(unknown)}; columns: {', '.join(sorted(columns))}")
    figure = go.Figure()
    for name in chosen:
        figure.add_trace(
            go.Scatter(
                x=columns["time"],
                y=columns[name],
                mode="lines",
                line_shape="hv",
                name=name.removesuffix("_now"),
            )
        )
    figure.update_layout(
        title=title,
        xaxis_title="simulated time [s]",
        yaxis_title="count",
        legend_title="sampled at each interval",
    )
    return figure
