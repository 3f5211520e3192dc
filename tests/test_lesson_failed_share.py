"""The lessons show the share of requests that failed beside every latency they draw: on a
second axis of the latency's own plot where a share is above 0, in a line under the title,
counted from the data, where every one is 0.  Drawn here with the lessons' own figure code
(`tests/test_lesson_figures.py`'s stand-ins) from tables of the shape their runs give, so that
the branch their default runs never take (every share 0) is checked too."""

from __future__ import annotations

import json

import pandas as pd

from tests.test_lesson_figures import LESSONS, lesson


def definition(name: str, cell: int, start: str, end: str, namespace: dict) -> None:
    """Run the lines of a lesson's cell from `start` up to `end` (a function's definition
    that follows the cell's simulation) in `namespace`."""
    notebook = json.loads((LESSONS / name).read_text(encoding="utf-8"))
    source = "".join(notebook["cells"][cell]["source"])
    code = source[source.index(start) : source.index(end)]
    exec(compile(code, f"{name} cell {cell}", "exec"), namespace)


def knee_table(shares: list[float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    users = [25, 50, 75, 100]
    table = pd.DataFrame(
        {
            "users": users,
            **{f"throughput{s}": [20.0, 40.0, 60.0, 80.0] for s in ("", "_low", "_high")},
            **{f"response_ms{s}": [40.0, 45.0, 60.0, 120.0] for s in ("", "_low", "_high")},
            "share.failed": shares,
            "share.failed_low": [max(0.0, s - 0.01) for s in shares],
            "share.failed_high": [s + 0.01 if s else 0.0 for s in shares],
        }
    )
    curve = pd.DataFrame(
        {
            "users": users,
            "mva_throughput": [20.0, 40.0, 60.0, 80.0],
            "mva_response_ms": [40.0, 45.0, 60.0, 120.0],
            "bound_throughput": [100.0] * 4,
            "bound_response_ms": [37.0] * 4,
        }
    )
    return table, curve


def test_a_failed_share_above_zero_is_drawn_on_the_response_plot_s_second_axis(monkeypatch):
    monkeypatch.chdir(LESSONS)
    v = lesson("01-knee.ipynb", (1, 3), "knee_table, knee_curve, knee = ")
    table, curve = knee_table([0.0, 0.0, 0.02, 0.15])
    figure = v["knee_figure"](table, curve, 100.0, 0)
    (share,) = [trace for trace in figure.data if trace.name.startswith("share.failed")]
    assert list(share.y) == [0.0, 0.0, 0.02, 0.15]
    # beside the response time (the second plot), not the throughput
    axis = figure.layout[share.yaxis.replace("y", "yaxis")]
    assert share.xaxis == "x2" and axis.overlaying == "y2" and axis.side == "right"
    assert "share.failed" not in figure.layout.title.text


def test_every_share_zero_is_said_under_the_title_with_the_count_of_points(monkeypatch):
    monkeypatch.chdir(LESSONS)
    v = lesson("01-knee.ipynb", (1, 3), "knee_table, knee_curve, knee = ")
    table, curve = knee_table([0.0] * 4)
    figure = v["knee_figure"](table, curve, 100.0, 0)
    assert not [trace for trace in figure.data if (trace.name or "").startswith("share.failed")]
    assert "share.failed 0 at every point (4 points" in figure.layout.title.text


def test_the_cold_start_storm_draws_each_interval_s_share_beside_its_p95(monkeypatch):
    monkeypatch.chdir(LESSONS)
    v = lesson("09-cold-start-storm.ipynb", (1,), "def simulate(")
    definition("09-cold-start-storm.ipynb", 3, "def storm_figure", "\nstorm_figure(storms)", v)
    frame = pd.DataFrame(
        {
            "time": [0.0, 10.0, 20.0],
            "p95_s": [0.1, 2.0, 0.3],
            "share.failed": [0.0, 0.04, None],  # an interval no request ended in: no share
            "replicas": [2, 3, 4],
            "ready": [2, 2, 4],
            "scale_ups": [0, 1, 0],
            "cpu_percent": [50.0, 90.0, 60.0],
        }
    )
    figure = v["storm_figure"](
        {"cold JVMs": frame, "warm pool": frame.assign(**{"share.failed": 0.0})}
    )
    shares = [trace for trace in figure.data if trace.name.endswith("share.failed (right axis)")]
    assert [trace.name.split(":")[0] for trace in shares] == ["cold JVMs", "warm pool"]
    assert all(trace.xaxis == "x" for trace in shares)  # the p95's plot, the first
