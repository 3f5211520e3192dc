"""The lessons' figures read as they should, tested on the lessons' own code: the cells that
define a lesson's figure are run here (without Jupyter, the controls stubbed), and the figure
is drawn from a small table of the shape the lesson's simulation gives."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pandas as pd

LESSONS = Path(__file__).resolve().parents[1] / "notebooks" / "lessons"


class _Control:
    """A stand-in for an ipywidgets control: the lessons read only its `value`."""

    def __init__(self, value=None, **_):
        self.value = value


_WIDGETS = types.SimpleNamespace(
    IntSlider=_Control, FloatSlider=_Control, Dropdown=_Control, Checkbox=_Control
)


def lesson(name: str, cells: tuple[int, ...], stop_at: str) -> dict:
    """The namespace of a lesson's code cells, each run up to its first line starting with
    `stop_at` (the line that runs the simulation), the controls stubbed."""
    notebook = json.loads((LESSONS / name).read_text(encoding="utf-8"))
    namespace: dict = {}
    for index in cells:
        source = "".join(notebook["cells"][index]["source"])
        lines = source.splitlines()
        kept = []
        for line in lines:
            if line.startswith(stop_at):
                break
            kept.append(line)
        code = "\n".join(kept).replace("import ipywidgets as widgets", "")
        code = code.replace("sim.lessons.use_plotly_everywhere()", "")
        namespace.setdefault("widgets", _WIDGETS)
        exec(compile(code, f"{name} cell {index}", "exec"), namespace)
    return namespace


def test_lesson_4_draws_the_counts_that_coincide_each_in_sight(monkeypatch):
    monkeypatch.chdir(LESSONS)  # the lesson names its model relative to itself
    v = lesson("04-pool-mismatch.ipynb", (1, 3), "series, outcome = ")
    shown = v["SHOWN"]
    # the stall: workers in use, connections waiting for a thread and waiting clients all 60
    series = pd.DataFrame({"time": [1.0, 1.5, 2.0], **{n: [60.0, 60.0, 60.0] for n in shown}})
    series["jetty1.connections.idle_pinned_now"] = 27.0
    outcome = {key: 60.0 for key in ("makespan_s", "makespan_s_low", "makespan_s_high", "errors")}
    figure = v["stall_figure"](
        series, outcome, workers=150, threads=30, connector="blocking", disable_reuse=False
    )
    lines = {trace.name: (trace.line.width, trace.line.dash) for trace in figure.data}
    same = [
        shown[n]
        for n in (
            "proxy.workers.in_use_now",
            "jetty1.connections.awaiting_thread_now",
            "count.in_flight",
        )
    ]
    styles = [lines[name] for name in same]
    assert len(set(styles)) == 3, styles
    widths = [width for width, _ in styles]
    assert widths == sorted(widths, reverse=True)  # the widest underneath


def test_lesson_1_log_axis_labels_only_the_pools_swept():
    v = lesson("01-knee.ipynb", (1, 8), "pool_table = ")
    pools = v["POOLS"]
    table = pd.DataFrame(
        {
            "threads": pools,
            "throughput": [28.0 * t for t in range(1, len(pools) + 1)],
            "throughput_low": [27.0 * t for t in range(1, len(pools) + 1)],
            "throughput_high": [29.0 * t for t in range(1, len(pools) + 1)],
            "pool_bound": [t / 0.035 for t in pools],
            **{
                name: [0.5] * len(pools)
                for name in (
                    "thread pool busy",
                    "app CPU busy",
                    "database CPU busy",
                    "Apache CPU busy",
                )
            },
        }
    )
    figure = v["pool_figure"](table, 10.0)
    for axis in (figure.layout.xaxis, figure.layout.xaxis2):
        assert axis.type == "log"
        assert list(axis.tickvals) == list(pools)
        assert list(axis.ticktext) == [str(p) for p in pools]
