"""What the lesson notebooks (`notebooks/lessons/`) share: a panel of controls with a Run
button that reruns a lesson's experiment, intervals as table columns and error bars, and the
Plotly set-up that lets an executed notebook be exported to a static HTML page.

A lesson runs its experiment once at the controls' defaults in an ordinary cell (so the
figures are ordinary outputs, in the saved notebook and in an exported page), then offers
the panel: the simulations take seconds, so they run when the user presses Run, not at every
step of a slider.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable

from sim.present.failures import FAILED_SHARE


def use_plotly_everywhere(compiles: bool = True) -> None:
    """A lesson's set-up.  Every figure carries plotly.js HTML as well as Plotly's MIME bundle:
    JupyterLab draws the bundle, `jupyter nbconvert --to html` (which cannot) keeps the HTML,
    with plotly.js embedded once instead of fetched from a CDN, so the page renders offline.
    (On a Voilà page, which draws the bundle and is never exported, the bundle alone.)

    And where the compiled engine has not been compiled on this machine yet, the lesson says
    so before its first simulation pauses for it (`engine_notice`).  `compiles=False`: every
    run of the lesson is on the reference engine (a feature the compiled engine does not
    implement, such as an autoscaled group), which compiles nothing: no notice."""
    import os

    import plotly.io as pio

    # a Voilà page (`make lessons`) draws the bundle and is never exported: no plotly.js copy
    voila = os.environ.get("SERVER_SOFTWARE", "").startswith("voila/")
    pio.renderers.default = "plotly_mimetype" if voila else "plotly_mimetype+notebook"
    notice = engine_notice() if compiles else ""
    if notice:
        print(notice)


COMPILING = "compiling the engine once"


def compiling() -> str:
    """`compiling the engine once, 3–6 min here (2 cores at load 3.1; ...)`: the first compile's
    estimate for this machine and its load (`sim.engines.compile_estimate`), not a promise."""
    from sim.engines.compile_estimate import estimate

    expected = estimate()
    return f"{COMPILING}, {expected.phrase() if expected else 'minutes of one core'}"


def engine_compiled() -> bool:
    """Whether numba's on-disk cache holds the compiled engine's event loop for the kernel's
    source as it is now (`sim.engines.compiled.kernel.is_warm`): if not, the first simulation
    of this machine compiles it (minutes of one core: `compiling()` says how long here)."""
    import importlib.util

    if importlib.util.find_spec("numba") is None:
        return True  # no compiled engine: the reference engine compiles nothing
    from sim.engines.compiled.kernel import is_warm

    return is_warm()


def engine_notice() -> str:
    """What to tell a user before the first simulation: nothing, or that it compiles."""
    if engine_compiled():
        return ""
    return (
        f"The first simulation on this machine starts with {compiling()} (numba); "
        "later ones, and every later session, take seconds."
    )


def interval_columns(name: str, interval, scale: float = 1.0) -> dict[str, float]:
    """`{name: mean, name_low: low, name_high: high}` of a run's Interval, times `scale`."""
    return {
        name: interval.mean * scale,
        f"{name}_low": interval.low * scale,
        f"{name}_high": interval.high * scale,
    }


def error_bars(frame, name: str) -> dict:
    """Plotly `error_y` for the columns `interval_columns` made (intervals need not be symmetric)."""
    return {
        "type": "data",
        "symmetric": False,
        "array": (frame[f"{name}_high"] - frame[name]).tolist(),
        "arrayminus": (frame[name] - frame[f"{name}_low"]).tolist(),
    }


def failed_columns(summary: dict) -> dict[str, float]:
    """The run's share of requests that failed, `share.failed` (`Simulation.summary`), as
    `interval_columns`: what a lesson's table shows beside its latencies, which are of the
    answered requests only."""
    return interval_columns(FAILED_SHARE, summary[FAILED_SHARE])


def show_failed(figure, table, x, *, group: str | None = None, row=None, col=None) -> None:
    """Beside a latency figure drawn from `table` (with `failed_columns`, or a time series with
    each interval's `share.failed`), at `x` (a column's name, or the values the figure drew,
    one per row of `table`): where any point's failed share reaches above 0, it on a second y
    axis of the same plot (per `group`); where every one is 0, a line under the title says so,
    counted from the table (a load that refuses its requests looks fast, so no latency is drawn
    alone).  Call it last: it reads the figure's title."""
    import pandas as pd
    import plotly.graph_objects as go

    # a table of intervals (`failed_columns`) is judged on their upper ends; a time series of
    # each interval's own share on the share itself (an interval no request ended in: NaN)
    interval = f"{FAILED_SHARE}_high" in table.columns
    high = table[f"{FAILED_SHARE}_high" if interval else FAILED_SHARE].dropna()
    if (high == 0).all():
        whole = ", the whole 95 % interval" if interval else ""
        note = f"{FAILED_SHARE} 0 at every point ({len(high)} points{whole})"
        title = figure.layout.title.text or ""
        if note not in title:
            figure.update_layout(title_text=f"{title}<br><sup>{note}</sup>" if title else note)
        return
    xaxis, yaxis = "x", "y"
    if row is not None:
        plot = figure.get_subplot(row, col)
        xaxis = plot.xaxis.plotly_name.replace("axis", "")
        yaxis = plot.yaxis.plotly_name.replace("axis", "")
    taken = [key for key in figure.layout.to_plotly_json() if key.startswith("yaxis")]
    number = 1 + max((int(key[5:] or 1) for key in taken), default=1)
    at = table[x] if isinstance(x, str) else pd.Series(list(x), index=table.index)
    parts = [("", table)] if group is None else [(f"{g}: ", p) for g, p in table.groupby(group)]
    for label, part in parts:
        figure.add_trace(
            go.Scatter(
                x=at.loc[part.index],
                y=part[FAILED_SHARE],
                xaxis=xaxis,
                yaxis=f"y{number}",
                mode="lines+markers",
                line={"dash": "dot"},
                marker={"symbol": "x"},
                name=f"{label}{FAILED_SHARE} (right axis)",
                error_y=error_bars(part, FAILED_SHARE) if interval else None,
            )
        )
    figure.update_layout(
        {
            f"yaxis{number}": {
                "title": {"text": f"{FAILED_SHARE}: requests failed"},
                "overlaying": yaxis,
                "anchor": xaxis,
                "side": "right",
                "tickformat": ".1%",
                "rangemode": "tozero",
                "showgrid": False,
            }
        }
    )


def defaults(controls: dict) -> dict:
    """The controls' current values, by parameter name."""
    return {name: control.value for name, control in controls.items()}


def run_panel(
    controls: dict,
    redraw: Callable[..., Iterable],
    title: str = "",
    columns: int = 2,
    compiles: bool = True,
):
    """The controls, a Run button and an output area: Run calls `redraw(**values)` and shows
    what it returns (figures, tables), with the time the simulations took (`compiles=False`:
    the runs are on the reference engine, so never "compiling the engine").

    An exception in `redraw` is shown as one: the status turns red and names it, and the
    output area holds its traceback instead of a figure (no stale figure stays under it)."""
    import ipywidgets as widgets
    from IPython.display import display

    button = widgets.Button(description="Run", button_style="primary", icon="play")
    status = widgets.Label("Move the controls, then press Run.")
    output = widgets.Output()
    for control in controls.values():
        # the labels carry the units ("think Z [s]"): never cut them to the default 80 px
        if hasattr(control.style, "description_width"):
            control.style.description_width = "initial"
        control.layout.width = "max-content"
        control.layout.min_width = "320px"

    def on_click(_button) -> None:
        button.disabled = True
        status.style.text_color = None
        pending = compiles and not engine_compiled()
        status.value = "simulating..." + (f" ({compiling()})" if pending else "")
        output.clear_output()
        started = time.perf_counter()
        try:
            items = list(redraw(**defaults(controls)))
        except Exception as error:  # shown to the user, who can change the controls and retry
            status.style.text_color = "#c62828"
            status.value = f"failed: {type(error).__name__}: {error}"
            output.append_stderr("".join(traceback.format_exception(error)))
        else:
            with output:
                for item in items:
                    display(item)
            status.value = f"done in {time.perf_counter() - started:.1f} s"
        finally:
            button.disabled = False

    button.on_click(on_click)
    items = list(controls.values())
    rows = [widgets.HBox(items[i : i + columns]) for i in range(0, len(items), columns)]
    header = [widgets.HTML(f"<b>{title}</b>")] if title else []
    return widgets.VBox([*header, *rows, widgets.HBox([button, status]), output])
