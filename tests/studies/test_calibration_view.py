"""What `tiersim calibrate` prints reads whole: the experiment's `[[calibrate]]` in a message
is not eaten by terminal markup, and a parameter's dotted path is not cut."""

from __future__ import annotations

from rich.console import Console

from sim.studies.calibration.fit import Calibration
from sim.studies.calibration.view import render, render_intervals
from sim.studies.rows import Row

PATH = "backends.0.io_wait.mean"


def row(figure: str) -> Row:
    return Row(
        experiment="planning",
        figure=figure,
        published=10.0,
        simulated=10.5,
        ci_low=10.1,
        ci_high=10.9,
        rel_error=0.05,
        fitted=False,
        pi_low=9.0,
        pi_high=12.0,
        covered=True,
        sd_parameters=0.04,
        sd_noise=0.01,
        sd_model=0.02,
        most_sensitive=PATH,
    )


def test_a_message_naming_calibrate_entries_is_printed_as_written():
    message = (
        "stopped; but the fit stopped short of users16 throughput: a parameter may have no "
        "effect where it stopped (give [[calibrate]] starts from the operational laws)"
    )
    calibration = Calibration(
        experiment="planning",
        parameters=[
            {
                "parameter": PATH,
                "value": 0.01,
                "at_bound": True,
                "kind": "free",
                "when": None,
                "start": 0.02,
                "low": 0.01,
                "high": 0.1,
                "fitted_to": ["users16 throughput"],
            }
        ],
        targets=[],
        rows=[row("users16 throughput")],
        converged=False,
        message=message,
        evaluations=3,
        cached=0,
    )
    console = Console(record=True, width=120)
    render(calibration, console)
    text = console.export_text()
    assert "give [[calibrate]] starts" in text
    assert "widen its [[calibrate]] bounds" in text


def test_the_most_sensitive_parameter_is_shown_whole_on_a_narrow_terminal():
    console = Console(record=True, width=120)
    rows = [row("users16 throughput, 8 threads, think 0.5 s exponential"), row("users32 p95")]
    render_intervals(rows, console, "predictions")
    text = console.export_text()
    assert "…" not in text
    # the last column's cells, read down the table: each row's path is whole, if folded
    cells = [line.split("│")[-2].strip() for line in text.splitlines() if line.count("│") > 2]
    assert "".join(cells) == PATH * 2
