"""No report or sweep table shows a latency without its failure share.

A latency is measured on the answered requests only: 4 threads looked better than 200 at 600
users (2.2 s with 3,848 errors against 5.2 s with none) in a sweep report that showed no
errors.  These tests scan every output that shows a latency -- the sweep report's figures and
tables, `tiersim run`'s tables and JSON, `tiersim capacity`'s table -- for a latency shown
without the share of requests that failed beside it, on a sweep whose points refuse requests.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import plotly.graph_objects as go
import pytest
from click.testing import CliRunner
from rich.console import Console

from sim.cli import main
from sim.present.failures import FAILED_SHARE, is_latency
from sim.present.report import build_report
from sim.studies.sweep.store import load_results, read_sweep

# One thread and no accept queue: with 1 user nothing is refused, with 6 most requests are
# (the client gives up on a SYN the full queue dropped), yet the answered ones stay fast.
REFUSING = """
[clients]
kind = "closed"
users = 1
think = { dist = "exponential", mean = 0.2 }
tcp = { syn_retries = 0 }
[[backends]]
name = "app"
threads = 1
accept_queue = 0
cores = 1
demand = { dist = "exponential", mean = 0.05 }
[run]
duration_s = 60
warmup = 5.0
replications = 2
seed = 3
"""

SWEEPS = {
    "one factor": '"clients.users" = [1, 6]',
    "grid of two": '"clients.users" = [1, 6]\n"backends.0.demand.mean" = [0.05, 0.1]',
    "space-filling": '"clients.users" = { low = 1, high = 6, integer = true }\n'
    '"backends.0.demand.mean" = { low = 0.05, high = 0.1 }',
}


def run_sweep(tmp_path, design: str):
    (tmp_path / "refusing.toml").write_text(REFUSING, encoding="utf-8")
    header = '[sweep]\nname = "refusals"\nbase = "refusing.toml"\nreplications = 2\n'
    header += 'metrics = ["throughput", "mean", "p95", "app1.wait"]\n'
    if design == "space-filling":
        header += 'design = "lhs"\npoints = 3\n'
    path = tmp_path / "sweep.toml"
    path.write_text(f"{header}[factors]\n{SWEEPS[design]}\n", encoding="utf-8")
    results = tmp_path / "results"
    outcome = CliRunner().invoke(main, ["sweep", str(path), "--results", str(results), "--serial"])
    assert outcome.exit_code == 0, outcome.output
    return results


class Tables(HTMLParser):
    """The header cells of every <table> of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "th":
            self._cell = []

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag == "th" and self._cell is not None:
            self.tables[-1].append("".join(self._cell))
            self._cell = None


def latency_named(text: str) -> bool:
    return any(is_latency(word) for word in text.replace("[", " ").split())


def figure_shows_latency(figure: go.Figure) -> bool:
    title = figure.layout.yaxis.title.text or ""
    colour = getattr(getattr(figure.data[0], "colorbar", None), "title", None)
    return latency_named(title) or (colour is not None and latency_named(colour.text or ""))


def figure_shows_failed_share(figure: go.Figure) -> bool:
    on_axis = any(
        trace.yaxis == "y2" and "failed share" in (trace.name or "") and len(trace.y) > 0
        for trace in figure.data
        if isinstance(trace, go.Scatter)
    )
    in_cells = all(
        all("failed" in cell for row in trace.text for cell in row) and trace.texttemplate
        for trace in figure.data
        if isinstance(trace, go.Heatmap)
    ) and any(isinstance(trace, go.Heatmap) for trace in figure.data)
    return on_axis or in_cells


@pytest.mark.parametrize("design", list(SWEEPS))
def test_no_sweep_figure_or_table_shows_a_latency_without_its_failed_share(tmp_path, design):
    results = run_sweep(tmp_path, design)
    frame = load_results(results)
    # the scan is of a sweep that flatters if it can: a point whose answered requests are fast
    # while most of its requests failed
    assert frame[FAILED_SHARE].max() > 0.2
    _, figures, summary = build_report(results, read_sweep)
    latency_figures = [figure for figure in figures if figure_shows_latency(figure)]
    assert latency_figures  # mean, p95 and the station's wait
    for figure in latency_figures:
        assert figure_shows_failed_share(figure), figure.layout.title.text
    page = Tables()
    page.feed(summary)
    shown = [headers for headers in page.tables if any(latency_named(h) for h in headers)]
    assert shown  # the points table
    for headers in shown:
        assert any(FAILED_SHARE in h for h in headers), headers
    for fact in ("replications per point", "window per replication", "warm-up removed"):
        assert fact in summary
    assert "not recorded" not in summary


def test_the_runs_warnings_are_kept_and_shown(tmp_path):
    results = run_sweep(tmp_path, "one factor")
    frame = load_results(results)
    warnings = [w for cell in frame["warnings"] for w in json.loads(cell)]
    assert warnings  # two replications of a minute: the run warns, and the store keeps it
    _, _, summary = build_report(results, read_sweep)
    assert "Warnings of the runs" in summary
    assert all(warning.split(":")[0] in summary for warning in warnings)


def test_run_tables_and_json_show_the_failed_share_beside_the_latencies(tmp_path):
    from sim.model.load import load_model
    from sim.present.tables import render, result_document
    from sim.run.replications import run

    path = tmp_path / "refusing.toml"
    path.write_text(REFUSING.replace("users = 1", "users = 6"), encoding="utf-8")
    result = run(load_model(path))
    console = Console(record=True, width=200)
    render(result, console, str(path))
    text = console.export_text()
    requests = text[text.index("Requests") : text.index("Counts")]
    assert "response p95" in requests and "requests failed (share)" in requests
    assert "a window of" in text  # the run length beside the replications and warm-up
    document = result_document(result, str(path), [])
    share = document["metrics"][FAILED_SHARE]
    assert share["unit"] is None or share["unit"] == "fraction"
    assert 0.2 < share["mean"] < 1.0


def test_an_older_results_directory_says_the_share_was_not_recorded(tmp_path):
    import pyarrow.parquet as pq

    results = run_sweep(tmp_path, "one factor")
    for point in (results / "points").glob("*.parquet"):
        table = pq.read_table(point)
        keep = [c for c in table.column_names if not c.startswith(FAILED_SHARE)]
        pq.write_table(table.select(keep), point)
    _, figures, summary = build_report(results, read_sweep)
    assert "not recorded" in summary
    for figure in figures:
        if figure_shows_latency(figure):
            notes = [a.text for a in figure.layout.annotations]
            assert any("not recorded" in note for note in notes)


def test_a_timeseries_figure_of_a_latency_shows_the_failed_share(tmp_path):
    from sim.present.plots import read_timeseries, timeseries_figure

    path = tmp_path / "refusing.toml"
    path.write_text(REFUSING.replace("users = 1", "users = 6"), encoding="utf-8")
    series = tmp_path / "series.csv"
    outcome = CliRunner().invoke(main, ["run", str(path), "--timeseries", str(series)])
    assert outcome.exit_code == 0, outcome.output
    columns = read_timeseries(series)
    figure = timeseries_figure(columns, ["response.p95"])
    assert figure_shows_failed_share(figure)
    share = next(trace for trace in figure.data if trace.yaxis == "y2")
    assert max(value for value in share.y if value is not None) > 0.2
    counts = timeseries_figure(columns)  # the *_now counts: no latency, no share needed
    assert not any(trace.yaxis == "y2" for trace in counts.data)


def test_the_points_beyond_the_sweep_s_error_budget_are_marked(tmp_path):
    results = run_sweep(tmp_path, "one factor")  # the default budget: 1 %
    frame = load_results(results).set_index("clients.users")
    assert frame.loc[1, f"{FAILED_SHARE}.ci_high"] <= 0.01 < frame.loc[6, FAILED_SHARE]
    _, _, summary = build_report(results, read_sweep)
    assert "within the error budget (1 %)" in summary
    points = summary[summary.index("<h2>Points</h2>") :].split("<tr>")[2:4]
    assert "<td>yes</td>" in points[0] and "NO: too many of its requests failed" in points[1]
    # and `tiersim sweep` says how many (a rerun resumes: it reads them from the store)
    again = ["sweep", str(tmp_path / "sweep.toml"), "--results", str(results), "--serial"]
    said = CliRunner().invoke(main, again).output
    assert "1 of 2 points had more than 1 % of their requests fail" in said


def test_reproduction_rows_carry_the_failed_share_beside_a_latency(tmp_path):
    from sim.studies.records import run_row

    path = tmp_path / "refusing.toml"
    path.write_text(REFUSING.replace("users = 1", "users = 6"), encoding="utf-8")
    summary = run_row((str(path), (), 2, "test row"))
    mean, low, high, unit = summary[FAILED_SHARE]
    assert 0.2 < mean < 1.0 and low <= mean <= high and unit == "fraction"
    rows = [
        {
            "experiment": "x",
            "figure": "users=6 p95",
            "metric": "response.p95",
            "unit": "s",
            "published": 0.3,
            "simulated": 0.31,
            "ci_low": 0.3,
            "ci_high": 0.32,
            "failed_share": mean,
        },
        {  # a file written before rows carried the share
            "experiment": "x",
            "figure": "users=1 p95",
            "metric": "response.p95",
            "unit": "s",
            "published": 0.3,
            "simulated": 0.3,
            "ci_low": 0.29,
            "ci_high": 0.31,
        },
    ]
    document = tmp_path / "reproduce.json"
    document.write_text(json.dumps(rows), encoding="utf-8")
    _, figures, _ = build_report(document, read_sweep)
    for figure in figures:
        texts = [t for trace in figure.data for t in (trace.text or ())]
        assert any("% failed" in t for t in texts), figure.layout.title.text
        assert any("failed share not recorded" in t for t in texts)


def test_every_run_table_with_a_latency_has_the_failed_share(tmp_path):
    """`tiersim run`'s tables, each read apart: the time at each tier (a station's wait and
    service) showed its latencies with no failed share in that table, while most of the
    requests were refused; every table that shows a latency now has one."""
    from sim.model.load import load_model
    from sim.present.tables import render
    from sim.run.replications import run

    path = tmp_path / "refusing.toml"
    path.write_text(REFUSING.replace("users = 1", "users = 6"), encoding="utf-8")
    console = Console(record=True, width=200)
    render(run(load_model(path)), console, str(path))
    lines = console.export_text().splitlines()
    # a table: its header (`metric ┃ ...`), its rule, then its rows (`label │ ...`)
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith("metric ")]
    tables = [
        [line.split("│")[0].strip() for line in lines[start + 2 : end] if "│" in line]
        for start, end in zip(starts, [*starts[1:], len(lines)])
    ]
    latency_tables = [
        labels
        for labels in tables
        if any(label.endswith((" wait", " service")) or "response" in label for label in labels)
    ]
    assert any("response p95" in labels for labels in latency_tables)  # Requests
    assert any("app1 wait" in labels for labels in latency_tables)  # Time at each tier
    for labels in latency_tables:
        assert "requests failed (share)" in labels, labels
