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
from collections.abc import Callable, Iterable


def use_plotly_everywhere() -> None:
    """Every figure carries plotly.js HTML as well as Plotly's MIME bundle: JupyterLab draws the
    bundle, `jupyter nbconvert --to html` (which cannot) keeps the HTML, with plotly.js embedded
    once instead of fetched from a CDN, so the page renders offline."""
    import plotly.io as pio

    pio.renderers.default = "plotly_mimetype+notebook"


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


def defaults(controls: dict) -> dict:
    """The controls' current values, by parameter name."""
    return {name: control.value for name, control in controls.items()}


def run_panel(controls: dict, redraw: Callable[..., Iterable], title: str = "", columns: int = 2):
    """The controls, a Run button and an output area: Run calls `redraw(**values)` and shows
    what it returns (figures, tables), with the time the simulations took."""
    import ipywidgets as widgets
    from IPython.display import display

    button = widgets.Button(description="Run", button_style="primary", icon="play")
    status = widgets.Label("Move the controls, then press Run.")
    output = widgets.Output()

    def on_click(_button) -> None:
        button.disabled = True
        status.value = "simulating..."
        started = time.perf_counter()
        try:
            with output:
                output.clear_output(wait=True)
                for item in redraw(**defaults(controls)):
                    display(item)
            status.value = f"done in {time.perf_counter() - started:.1f} s"
        except Exception as error:  # shown to the user, who can change the controls and retry
            status.value = f"{type(error).__name__}: {error}"
        finally:
            button.disabled = False

    button.on_click(on_click)
    items = list(controls.values())
    rows = [widgets.HBox(items[i : i + columns]) for i in range(0, len(items), columns)]
    header = [widgets.HTML(f"<b>{title}</b>")] if title else []
    return widgets.VBox([*header, *rows, widgets.HBox([button, status]), output])
