"""Every notebook as a lecturer meets it: served as a page by `notebooks/serve.py` (what
`make lessons` runs, Voilà), opened in headless Chromium, executed top to bottom with no error
output, and, in each lesson, one control moved and Run pressed: the figure changes within the
lesson's budget.  The checker itself is tested on broken copies of a lesson: a control that
does nothing, a panel that raises, a cell that raises; each must fail it.

Two pages at a time (a kernel each): the run takes what the slowest pair of notebooks takes.
Screenshots of every page go to $TIERSIM_SCREENSHOTS when it is set.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from tests.lesson_browser import (
    CHROMIUM,
    LEGEND_COVERS,
    PLOT,
    ROOT,
    LessonProblem,
    Panel,
    launch,
    visit_notebook,
    voila,
)

pytestmark = [
    pytest.mark.notebooks,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="headless Chromium is not installed (Debian: apt-get install -y chromium)",
    ),
]

NOTEBOOKS = ROOT / "notebooks"
# One control per lesson, chosen to change the figure and keep the rerun short.
PANELS: dict[str, Panel | None] = {
    "lessons/01-knee.ipynb": Panel("Rerun the sweep", "app threads", "4", 60, reference=0),
    "lessons/02-utilisation.ipynb": Panel(
        "Rerun at another utilisation", "utilisation ρ", "0.5", 30, reference=1
    ),
    "lessons/03-keepalive.ipynb": Panel("Rerun the comparison", "users", "100", 40, reference=1),
    "lessons/04-pool-mismatch.ipynb": Panel(
        "Rerun the stall", "Jetty threads", "200", 20, reference=0
    ),
    "lessons/05-retry-storm.ipynb": Panel(
        "Your clients against the same trigger", "max_retries", "0", 20
    ),
    "lessons/06-stale-balancing.ipynb": Panel(
        "Rerun the sweep", "utilisation ρ", "0.7", 40, reference=0
    ),
    "lessons/07-replication.ipynb": Panel(
        "Rerun with another session", "session [KiB]", "16", 30, reference=0
    ),
    "lessons/08-gc-collapse.ipynb": Panel("Rerun one container", "-Xmx [MiB]", "128", 20),
    "lessons/09-cold-start-storm.ipynb": Panel(
        "Your group against the same spike", "slow start [s]", "150", 60
    ),
    "calibrate.ipynb": None,
    "capacity_planning.ipynb": None,
    "capacity_planning_pool.ipynb": None,
    "capacity_planning_cluster.ipynb": None,
}
TIMEOUT_S = 150  # a lesson, opened to executed
# a planning notebook (no panel): calibrations and capacity searches, two to five minutes alone
# on two cores (the cluster's: 4.6 min, its draws conditioned, screened and replaced), here
# beside another page; a guard against a hang, not a lesson's budget
PLANNING_TIMEOUT_S = 600
PAGES_AT_ONCE = 2


def test_every_notebook_has_a_browser_visit():
    assert sorted(PANELS) == sorted(
        str(p.relative_to(NOTEBOOKS)) for p in NOTEBOOKS.rglob("*.ipynb")
    )


async def visit_all(base_url: str, visits: dict[str, Panel | None], shots: Path | None) -> dict:
    from playwright.async_api import async_playwright

    slots = asyncio.Semaphore(PAGES_AT_ONCE)
    async with async_playwright() as playwright:
        browser = await launch(playwright)

        async def one(path: str, panel: Panel | None):
            async with slots:
                try:
                    timeout_s = TIMEOUT_S if panel is not None else PLANNING_TIMEOUT_S
                    return await visit_notebook(browser, base_url, path, panel, timeout_s, shots)
                except Exception as problem:  # reported by the notebook's own test
                    return problem

        results = await asyncio.gather(*(one(path, panel) for path, panel in visits.items()))
        await browser.close()
    return dict(zip(visits, results))


def shots_folder() -> Path | None:
    folder = os.environ.get("TIERSIM_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder) if folder else None


@pytest.fixture(scope="module")
def visits(tmp_path_factory):
    started = time.monotonic()
    with voila(NOTEBOOKS, tmp_path_factory.mktemp("voila") / "voila.log") as base_url:
        results = asyncio.run(visit_all(base_url, PANELS, shots_folder()))
    print(f"\nbrowser visits: {time.monotonic() - started:.0f} s for {len(results)} notebooks")
    for path, result in results.items():
        print(f"  {path}: {result}")
    return results


@pytest.mark.parametrize("path", sorted(PANELS))
def test_notebook_in_the_browser(visits, path):
    result = visits[path]
    if isinstance(result, BaseException):
        raise result
    assert result.figures >= 1, f"{path}: no figure on the page"
    if PANELS[path] is not None:
        assert result.run_s is not None and result.run_s <= PANELS[path].budget_s


def test_first_lesson_shows_its_first_figure_within_30_s(visits):
    """The lecturer's first lesson on a set-up machine (the engine compiled by the set-up)."""
    result = visits["lessons/01-knee.ipynb"]
    if isinstance(result, BaseException):
        raise result
    assert result.first_figure_s is not None and result.first_figure_s < 30, result


# --------------------------------------------------------------------------- the checker's own test
BROKEN = {
    # the redraw ignores the controls: it redraws the defaults' run, already on the page
    "control-does-nothing": (
        "lambda **v: [stall_figure(*simulate(**v), **v)]",
        "lambda **v: [stall_figure(series, outcome, workers=150, threads=30,"
        " connector='blocking', disable_reuse=False)]",
        "the figure did not change",
    ),
    # the redraw raises (a real error of the lesson's code, not a planted exception)
    "panel-raises": (
        "lambda **v: [stall_figure(*simulate(**v), **v)]",
        'lambda **v: [stall_figure(*simulate(**v), **{**v, "workers": None})]',
        "failed: TypeError",
    ),
    # an ordinary cell raises while the page executes
    "cell-raises": (
        "pd.DataFrame([outcome]).round(2)",
        "pd.DataFrame([outcome]).round('two')",
        "error output on the page",
    ),
}


def test_the_browser_check_fails_on_a_broken_lesson(tmp_path):
    """Copies of lesson 4 (the quickest), each broken one way, in a folder that resolves the
    lesson's `../../models`: the check must fail on every one, for the right reason."""
    source = NOTEBOOKS / "lessons" / "04-pool-mismatch.ipynb"
    folder = tmp_path / "notebooks" / "lessons"
    folder.mkdir(parents=True)
    (tmp_path / "models").symlink_to(ROOT / "models")
    notebook = source.read_text(encoding="utf-8")
    for name, (good, bad, _) in BROKEN.items():
        cells = json.loads(notebook)
        hits = 0
        for cell in cells["cells"]:
            text = "".join(cell["source"])
            if good in text:
                cell["source"] = text.replace(good, bad)
                hits += 1
        assert hits == 1, f"{name}: {good!r} is no longer in lesson 4; update BROKEN"
        (folder / f"{name}.ipynb").write_text(json.dumps(cells), encoding="utf-8")
    panel = PANELS["lessons/04-pool-mismatch.ipynb"]
    with voila(tmp_path / "notebooks", tmp_path / "voila.log") as base_url:
        results = asyncio.run(
            visit_all(base_url, {f"lessons/{name}.ipynb": panel for name in BROKEN}, shots_folder())
        )
    for name, (_, _, reason) in BROKEN.items():
        result = results[f"lessons/{name}.ipynb"]
        assert isinstance(result, LessonProblem), f"{name}: the check passed ({result})"
        assert reason in str(result), f"{name}: failed for another reason: {result}"


# --------------------------------------------------------------------------- the HTML reports
# Every figure of a page: its traces' colours, its axes' titles (numeric axes only: an axis of
# names is labelled by its ticks) and the axis labels its legend covers.
FIGURE_FACTS = (
    """() => [...document.querySelectorAll('.js-plotly-plot')].map(plot => ({
  colours: plot._fullData.map(t => t.line?.color ?? t.marker?.color),
  axes: Object.entries(plot._fullLayout)
    .filter(([name, axis]) => /^[xy]axis\\d*$/.test(name) && axis.type !== 'category')
    .map(([name, axis]) => [name, axis.title?.text ?? '']),
  covered: ("""
    + LEGEND_COVERS
    + """)(plot),
}))"""
)


async def figure_facts(browser, page_file: Path) -> list[dict]:
    """FIGURE_FACTS of a standalone HTML file (`tiersim plot`, `tiersim report`), offline."""
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.route(
        lambda url: not url.startswith("file:"), lambda route: asyncio.ensure_future(route.abort())
    )
    await page.goto(page_file.as_uri())
    await page.locator(f"{PLOT} .main-svg").first.wait_for(timeout=30_000)
    facts = await page.evaluate(FIGURE_FACTS)
    await context.close()
    if errors:
        raise LessonProblem(f"{page_file.name}: script errors: {errors}")
    return facts


def test_plot_and_report_pages_read_in_the_browser(tmp_path):
    """`tiersim plot` of a two-node run (13 traces) and `tiersim report` of a reproduction, as
    Chromium draws them: a colour per trace, every numeric axis titled with its unit, no
    legend over an axis."""
    from click.testing import CliRunner
    from playwright.async_api import async_playwright

    from sim.cli import main

    def tiersim(*args) -> None:
        result = CliRunner().invoke(main, [str(a) for a in args])
        assert result.exit_code == 0, result.output

    series = tmp_path / "series.csv"
    model = ROOT / "models" / "apache24-prefork-modjk-tomcat10.toml"
    tiersim(
        "run", model, "--replications", "1", "--set", "run.duration_s=10", "--timeseries", series
    )
    tiersim("plot", series, "-o", tmp_path / "plot.html")
    rows = [
        {
            "experiment": "seed001",
            "figure": f"jetty max_clients={m} response",
            "unit": "s",
            "published": p,
            "simulated": p * 1.05,
            "ci_low": p,
            "ci_high": p * 1.1,
            "fitted": m == 150,
            "overrides": [],
        }
        for m, p in ((150, 2.0), (250, 1.5), (500, 1.2))
    ]
    (tmp_path / "rows.json").write_text(json.dumps(rows), encoding="utf-8")
    tiersim("report", tmp_path / "rows.json", "-o", tmp_path / "report.html")

    async def read(*pages):
        async with async_playwright() as playwright:
            browser = await launch(playwright)
            facts = [await figure_facts(browser, page) for page in pages]
            await browser.close()
        return facts

    plot, report = asyncio.run(read(tmp_path / "plot.html", tmp_path / "report.html"))
    ((traces,),) = [plot]
    assert len(traces["colours"]) >= 12
    assert len(set(traces["colours"])) == len(traces["colours"]), traces["colours"]
    for figure in [*plot, *report]:
        assert not figure["covered"], figure
        for name, title in figure["axes"]:
            assert "[" in title and title.split("[")[0].strip(), (name, title, figure)
