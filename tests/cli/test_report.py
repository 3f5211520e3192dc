"""`tiersim report` renders in a real browser: every figure draws its SVG and no script fails.

The page is opened by headless Chromium (`--dump-dom` after the scripts ran); a figure has
rendered when its <div id="figure-N"> holds Plotly's `main-svg`; a script error is caught by
the page's `window.onerror`, which marks <html data-js-error=...>.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.studies.sweep.execute import SerialExecutor, run_sweep
from sim.studies.sweep.spec import load_sweep
from sim.studies.sweep.store import ResultStore
from tests.studies.test_sweep import GRID, write_sweep

CHROMIUM = next(
    (
        shutil.which(name)
        for name in ("chromium", "chromium-browser", "google-chrome")
        if shutil.which(name)
    ),
    None,
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium)",
)


VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}


class FigureCensus(HTMLParser):
    """Counts Plotly SVG roots inside each figure-N div; notes the page's error sentinel."""

    def __init__(self) -> None:
        super().__init__()
        self.svgs: dict[str, int] = {}
        self.error: str | None = None
        self.stack: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "html" and "data-js-error" in attrs:
            self.error = attrs["data-js-error"]
        figure = (
            attrs.get("id")
            if tag == "div" and str(attrs.get("id", "")).startswith("figure-")
            else None
        )
        if figure:
            self.svgs[figure] = 0
        if tag == "svg" and "main-svg" in (attrs.get("class") or "").split():
            for open_figure in self.stack:
                if open_figure:
                    self.svgs[open_figure] += 1
        if tag not in VOID:
            self.stack.append(figure)

    def handle_endtag(self, tag):
        if self.stack and tag not in VOID:
            self.stack.pop()


def render(page: Path) -> FigureCensus:
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    census = FigureCensus()
    census.feed(dom)
    return census


def assert_every_figure_rendered(page: Path, expected: int) -> None:
    census = render(page)
    assert census.error is None, f"JavaScript error on the page: {census.error}"
    assert len(census.svgs) == expected, census.svgs
    assert all(count >= 1 for count in census.svgs.values()), census.svgs


def sweep_results(tmp_path, text: str) -> Path:
    plan = load_sweep(write_sweep(tmp_path, text))
    run_sweep(plan, ResultStore(tmp_path / "r"), SerialExecutor())
    return tmp_path / "r"


@needs_chromium
def test_two_factor_sweep_report_renders_heatmaps_and_lines(tmp_path):
    results = sweep_results(tmp_path, GRID)
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(results), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (
        "wrote" in result.stdout and "6 figures" in result.stdout
    )  # 3 metrics x (heatmap + lines)
    assert_every_figure_rendered(out, 6)


@needs_chromium
def test_one_factor_sweep_report_with_a_failed_point(tmp_path):
    text = GRID.replace('"backends.0.threads" = [1, 4]\n', "").replace("[2, 5, 8]", "[2, 5, 0]")
    results = sweep_results(tmp_path, text)
    out = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["report", str(results), "-o", str(out)]).exit_code == 0
    page = out.read_text(encoding="utf-8")
    assert "Failed points" in page and "clients.users=0" in page
    assert_every_figure_rendered(out, 3)


@needs_chromium
def test_space_filling_sweep_report_plots_each_metric_against_each_factor(tmp_path):
    text = """
[sweep]
base = "tiny.toml"
design = "lhs"
points = 5
replications = 2
metrics = ["throughput", "mean"]
[factors]
"clients.users" = { low = 2, high = 9, integer = true }
"backends.0.demand.mean" = { low = 0.01, high = 0.1 }
"""
    results = sweep_results(tmp_path, text)
    out = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["report", str(results), "-o", str(out)]).exit_code == 0
    assert_every_figure_rendered(out, 4)  # 2 metrics x 2 factors


@needs_chromium
def test_reproduction_report_sets_published_beside_simulated(tmp_path):
    rows = [
        {
            "experiment": "seed001",
            "figure": f"jetty max_clients={m}",
            "published": p,
            "simulated": s,
            "ci_low": s * 0.9,
            "ci_high": s * 1.1,
            "rel_error": (s - p) / p if p else None,
            "fitted": m == 150,
            "published_flag": "no",
            "simulated_flag": "no",
            "overrides": [],
        }
        for m, p, s in ((150, 10.0, 10.5), (250, 7.0, 8.1), (500, 5.0, 4.2))
    ] + [
        {
            "experiment": "seed001",
            "figure": "withheld row",
            "published": None,
            "simulated": 3.0,
            "ci_low": 2.5,
            "ci_high": 3.5,
            "rel_error": None,
            "fitted": False,
            "overrides": [],
        }
    ]
    source = tmp_path / "seed001.json"
    source.write_text(json.dumps(rows), encoding="utf-8")
    out = tmp_path / "reproduce.html"
    result = CliRunner().invoke(main, ["report", str(source), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert_every_figure_rendered(out, 3)  # predicted, fitted, every row


@needs_chromium
def test_calibration_report_shows_the_fitted_values_and_rows(tmp_path):
    from tests.studies.test_calibrate import one_figure

    (tmp_path / "exp").mkdir()
    fitted = CliRunner().invoke(
        main, ["calibrate", one_figure(tmp_path / "exp"), "--json", "--no-cache"]
    )
    assert fitted.exit_code == 0, fitted.output
    source = tmp_path / "calibration.json"
    source.write_text(fitted.output, encoding="utf-8")
    out = tmp_path / "calibration.html"
    result = CliRunner().invoke(main, ["report", str(source), "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    value = json.loads(fitted.stdout)["parameters"][0]["value"]
    assert f"<code>backends.0.demand.mean</code> = {value:.6g}" in page
    assert_every_figure_rendered(out, 2)  # the fitted row, every row


@needs_chromium
def test_the_browser_check_catches_a_script_error(tmp_path):
    """The harness itself: a page whose script throws must not pass."""
    results = sweep_results(tmp_path, GRID.replace("[2, 5, 8]", "[2]"))
    out = tmp_path / "report.html"
    CliRunner().invoke(main, ["report", str(results), "-o", str(out)])
    page = out.read_text(encoding="utf-8")
    out.write_text(
        page.replace("</body>", "<script>undefinedFunction();</script></body>"), encoding="utf-8"
    )
    assert "undefinedFunction" in (render(out).error or "")


def test_report_refuses_what_it_cannot_read(tmp_path):
    bad = tmp_path / "rows.json"
    bad.write_text('{"not": "rows"}', encoding="utf-8")
    for source, needle in (
        (bad, "not a `tiersim reproduce"),
        (tmp_path, "not a tiersim results directory"),
    ):
        result = CliRunner().invoke(main, ["report", str(source), "-o", str(tmp_path / "x.html")])
        assert result.exit_code == 3 and needle in result.stderr, result.output
