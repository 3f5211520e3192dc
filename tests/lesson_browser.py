"""Drive the notebooks as a lecturer does, in a real browser: the pages `make lessons` serves
(Voilà, `notebooks/serve.py`) opened in Debian's headless Chromium by Playwright.

`open_notebook` loads a page and waits until its last cell has executed; `check_page` finds
what a reader would trip on (error output, a script error, a blank dropdown, a cut control
label, a figure not drawn or with its legend over an axis); `drive_panel` moves one control
of a lesson's Run panel, presses Run and checks that the figure's data changed within the
lesson's budget and that the panel did not fail.  Each raises `LessonProblem` naming the
notebook and what is wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Playwright's own browser download is not used: Debian's Chromium, no network, a fresh profile
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # two pages at a time: neither is a background tab whose frames the browser may hold back
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
]
ERROR_OUTPUT = '[data-mime-type="application/vnd.jupyter.stderr"]'
PLOT = ".js-plotly-plot"
# a figure of a page's output, as JupyterLab's Plotly renderer holds it: once drawn it swaps
# itself for a PNG snapshot and draws again when the mouse enters it
FIGURE = ".jp-RenderedPlotly"


class LessonProblem(AssertionError):
    """What a lecturer would see go wrong on a page."""


@dataclass(frozen=True)
class Panel:
    """One Run panel of a lesson and the control to move: `title` is the panel's bold title,
    `control` a control's label, `value` what to type, select or (a bool) tick.  `reference`
    is the index, among the page's figures, of the figure the panel draws at its defaults
    (the lesson's ordinary cell); None: press Run once at the defaults first to get it."""

    title: str
    control: str
    value: str | bool
    budget_s: float
    reference: int | None = None


@dataclass
class Visit:
    """What one page did, with its timings [s from the request]."""

    path: str
    executed_s: float = 0.0
    first_figure_s: float | None = None
    figures: int = 0
    run_s: float | None = None
    page_errors: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def voila(directory: Path, log: Path) -> Iterator[str]:
    """`notebooks/serve.py DIRECTORY` on a free loopback port; yields its base URL."""
    sys.path.insert(0, str(ROOT / "notebooks"))
    try:
        import serve
    finally:
        sys.path.pop(0)
    port = free_port()
    with log.open("w") as sink:
        server = subprocess.Popen(
            serve.command(directory, port, browser=False),
            cwd=directory,
            env=serve.environment(),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.5).close()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise LessonProblem(
                            f"Voilà did not start: {log.read_text()[-2000:]}"
                        ) from None
                    time.sleep(0.2)
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()


async def launch(playwright):
    return await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


async def open_notebook(context, base_url: str, path: str, timeout_s: float):
    """A new page of notebooks/<path>, returned once its last cell has executed."""
    page = await context.new_page()
    visit = Visit(path)
    page.on("pageerror", lambda error: visit.page_errors.append(str(error)))
    # no network but the server's: a page that needs a CDN would not render in a classroom
    await page.route(
        lambda url: not url.startswith(base_url), lambda route: asyncio.ensure_future(route.abort())
    )
    finished = asyncio.get_running_loop().create_future()

    def on_frame(payload) -> None:  # Voilà's progressive rendering reports each cell
        try:
            message = json.loads(payload)
        except (TypeError, ValueError):
            return
        if isinstance(message, dict) and message.get("action") == "execution_result":
            cell = message["payload"]
            if cell["cell_index"] == cell["total_cell"] - 1 and not finished.done():
                finished.set_result(time.monotonic())

    page.on("websocket", lambda socket_: socket_.on("framereceived", on_frame))
    started = time.monotonic()
    await page.goto(f"{base_url}/voila/render/{path}", timeout=timeout_s * 1000)
    try:
        visit.executed_s = await asyncio.wait_for(finished, timeout_s) - started
    except TimeoutError:
        raise LessonProblem(f"{path}: not executed within {timeout_s:.0f} s") from None
    # the last outputs and the widgets render after the last cell's message
    previous = None
    for _ in range(40):
        counts = await page.evaluate(
            "() => [document.querySelectorAll('.jp-RenderedPlotly').length,"
            " document.querySelectorAll('.jupyter-widgets').length]"
        )
        if counts == previous:
            break
        previous = counts
        await page.wait_for_timeout(500)
    visit.first_figure_s = await first_seen(page, started)
    visit.figures = await page.locator(FIGURE).count()
    return page, visit


async def first_seen(page, started: float) -> float | None:
    """When the first figure appeared (FIRST_PLOT_WATCH), on the request's clock."""
    age_ms = await page.evaluate(
        "() => window.__firstPlot === undefined ? null : performance.now() - window.__firstPlot"
    )
    return None if age_ms is None else max(0.0, time.monotonic() - started - age_ms / 1000)


FIRST_PLOT_WATCH = """
new MutationObserver((_, observer) => {
  if (document.querySelector('.js-plotly-plot')) {
    window.__firstPlot = performance.now();
    observer.disconnect();
  }
}).observe(document, {childList: true, subtree: true});
"""


async def check_page(page, visit: Visit) -> None:
    """Error output anywhere, script errors, blank or tuple-showing dropdowns, cut labels."""
    path = visit.path
    errors = await page.locator(ERROR_OUTPUT).all_inner_texts()
    if errors:
        raise LessonProblem(f"{path}: error output on the page:\n" + "\n---\n".join(errors)[-3000:])
    if visit.page_errors:
        raise LessonProblem(f"{path}: script errors: {visit.page_errors}")
    dropdowns = await page.evaluate(
        """() => [...document.querySelectorAll('.widget-dropdown')].map(d => {
             const s = d.querySelector('select');
             const label = d.querySelector('.widget-label')?.textContent ?? '';
             const shown = s.selectedOptions.length ? s.selectedOptions[0].text.trim() : '';
             const tuples = [...s.options].map(o => o.text).filter(t => t.startsWith('('));
             return {label, shown, tuples};
           }).filter(d => !d.shown || d.tuples.length)"""
    )
    if dropdowns:
        raise LessonProblem(f"{path}: dropdowns blank or showing tuples: {dropdowns}")
    covered = []
    for k, figure in enumerate(await page.locator(FIGURE).all()):
        await draw(figure, path)
        covered += [f"figure {k}: {label}" for label in await figure.evaluate(LEGEND_COVERS)]
    if covered:
        raise LessonProblem(f"{path}: a legend lies over an axis's labels: {covered}")
    cut = await page.evaluate(
        """() => [...document.querySelectorAll('.widget-inline-hbox > .widget-label')]
             .filter(l => l.textContent && l.scrollWidth > l.clientWidth + 1)
             .map(l => l.textContent)"""
    )
    if cut:
        raise LessonProblem(f"{path}: control labels cut: {cut}")


# A legend's box against every axis title and tick label of its figure (a legend on the right
# of a figure with a right-hand axis hides that axis).
LEGEND_COVERS = """plot => {
  const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const legend = plot.querySelector('.legend .bg');
  if (!legend) return [];
  const box = legend.getBoundingClientRect();
  const labels = plot.querySelectorAll('.xtick text, .ytick text, [class$="tick"] text,'
      + ' .g-xtitle text, .g-ytitle text, [class^="g-y"][class$="title"] text,'
      + ' [class^="g-x"][class$="title"] text');
  return [...new Set([...labels]
    .filter(label => label.textContent && meets(box, label.getBoundingClientRect()))
    .map(label => label.textContent))];
}"""


async def draw(figure, path: str) -> str:
    """Bring a figure into view and under the mouse, as a reader does, until Plotly has drawn
    it; its traces' data (SIGNATURE).  The renderer replaces its element when it swaps in its
    snapshot: a locator resolves again, so an element gone mid-way is tried once more."""
    problem: Exception | None = None
    for _attempt in range(3):
        try:
            await figure.scroll_into_view_if_needed(timeout=10_000)
            await figure.hover(timeout=10_000)
            await figure.locator(".main-svg").first.wait_for(state="visible", timeout=20_000)
            return await figure.evaluate(SIGNATURE)
        except Exception as error:
            problem = error
            await asyncio.sleep(0.5)
    raise LessonProblem(f"{path}: a figure not drawn: {problem}")


SIGNATURE = """el => JSON.stringify((el._fullData || []).map(t => ({
    name: t.name, type: t.type,
    x: Array.from(t.x ?? []), y: Array.from(t.y ?? []), z: Array.from(t.z ?? [])})))"""


async def drive_panel(page, visit: Visit, panel: Panel) -> None:
    """Move `panel.control` to `panel.value`, press Run, and require a changed figure within
    the budget, and no failure."""
    path = visit.path
    title = page.get_by_text(panel.title, exact=True)
    box = page.locator(".widget-vbox", has=title).last
    if not await box.count():
        raise LessonProblem(f"{path}: no panel titled {panel.title!r}")
    if panel.reference is None:
        await press_run(page, box, visit, panel)
        before = await draw(box.locator(FIGURE).first, path)
    else:
        before = await draw(page.locator(FIGURE).nth(panel.reference), path)
    await move(page, box, visit, panel)
    visit.run_s = await press_run(page, box, visit, panel)
    after = await draw(box.locator(FIGURE).first, path)
    names = {trace["name"] for trace in json.loads(after)}
    if not names & {trace["name"] for trace in json.loads(before)}:
        raise LessonProblem(f"{path}: the panel drew another figure than its reference ({names})")
    if after == before:
        raise LessonProblem(
            f"{path}: {panel.control!r} set to {panel.value!r} and Run pressed: the figure did "
            "not change (the control does nothing)"
        )


async def move(page, box, visit: Visit, panel: Panel) -> None:
    exactly = re.compile(rf"^\s*{re.escape(panel.control)}\s*$")
    label = page.locator(".widget-label", has_text=exactly)
    control = box.locator(".widget-inline-hbox", has=label).first
    if not await control.count():
        raise LessonProblem(f"{visit.path}: panel {panel.title!r} has no control {panel.control!r}")
    if await control.locator("select").count():
        await control.locator("select").select_option(label=str(panel.value))
    elif await control.locator(".widget-readout").count():
        readout = control.locator(".widget-readout")
        await readout.click()
        await page.keyboard.press("Control+A")
        await page.keyboard.type(str(panel.value))
        await page.keyboard.press("Enter")
        shown = (await readout.inner_text()).strip()
        if float(shown) != float(panel.value):
            raise LessonProblem(f"{visit.path}: {panel.control!r} shows {shown}, not {panel.value}")
    else:
        await control.locator("input[type=checkbox]").set_checked(bool(panel.value))
    await page.wait_for_timeout(300)  # the new value reaches the kernel before Run does


async def press_run(page, box, visit: Visit, panel: Panel) -> float:
    """Press Run and wait for this run's outcome: every text the status shows is recorded (a
    previous run's "done in" must not pass for this one's)."""
    status = box.locator(".widget-hbox", has=page.locator("button")).locator(".widget-label")
    await status.evaluate(
        """el => { el.__seen = [];
                   new MutationObserver(() => el.__seen.push(el.textContent.trim()))
                     .observe(el, {childList: true, subtree: true, characterData: true}); }"""
    )
    await box.scroll_into_view_if_needed()  # as a reader does; a figure out of view may wait
    started = time.monotonic()
    await box.locator("button", has_text="Run").click()
    deadline = started + panel.budget_s
    text = ""
    while time.monotonic() < deadline:
        seen = await status.evaluate("el => el.__seen")
        running = [k for k, t in enumerate(seen) if t.startswith("simulating")]
        ends = (
            [t for t in seen[running[0] :] if t.startswith(("done in", "failed"))]
            if running
            else []
        )
        if ends:
            text = ends[0]
            break
        await page.wait_for_timeout(200)
    else:
        raise LessonProblem(
            f"{visit.path}: Run in {panel.title!r} not done within {panel.budget_s:.0f} s "
            f"(status: {(await status.inner_text()).strip()!r})"
        )
    elapsed = time.monotonic() - started
    errors = await box.locator(ERROR_OUTPUT).all_inner_texts()
    if text.startswith("failed") or errors:
        raise LessonProblem(
            f"{visit.path}: Run in {panel.title!r} failed: {text}\n" + "\n".join(errors)[-2000:]
        )
    await box.locator(FIGURE).first.wait_for(state="attached", timeout=30_000)
    return elapsed


async def visit_notebook(
    browser, base_url: str, path: str, panel: Panel | None, timeout_s: float, shots: Path | None
) -> Visit:
    """Open, let run, check, and drive the panel: the whole of a lecturer's visit, in a
    browser context of its own."""
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    await context.add_init_script(FIRST_PLOT_WATCH)
    page, visit = await open_notebook(context, base_url, path, timeout_s)
    try:
        await check_page(page, visit)
        if panel is not None:
            await drive_panel(page, visit, panel)
            await check_page(page, visit)
    except Exception as problem:  # what the page looked like, for whoever reads the failure
        folder = shots or Path(tempfile.mkdtemp(prefix="tiersim-lesson-"))
        with contextlib.suppress(Exception):  # a page past drawing keeps its first problem
            await screenshots(page, folder / Path(path).stem)
        raise LessonProblem(f"{problem}\n(the page: {folder / Path(path).stem}.png)") from problem
    else:
        if shots is not None:
            await screenshots(page, shots / Path(path).stem)
    finally:
        await context.close()
    return visit


async def screenshots(page, stem: Path) -> None:
    """The page (Voilà scrolls inside it: a viewport as tall as its content), then each
    figure and each panel on its own, for a reader to look at the labels."""
    height = await page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('body *')].map(e => e.scrollHeight))"
    )
    await page.set_viewport_size({"width": 1300, "height": min(max(height, 900), 16000)})
    await page.screenshot(path=f"{stem}.png")
    for k, plot in enumerate(await page.locator(PLOT).all()):
        await plot.screenshot(path=f"{stem}-figure{k}.png")
    for k, panel in enumerate(await page.locator(".widget-vbox").all()):
        await panel.screenshot(path=f"{stem}-panel{k}.png")
