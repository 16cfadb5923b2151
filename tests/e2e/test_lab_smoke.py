"""The workbook as a person sees it: JupyterLab on loopback, notebook 05 in headless Chromium.

Run by ``make e2e`` (which ``.ci/run`` calls). Needs Debian's ``chromium`` at /usr/bin/chromium,
driven by Playwright (no browser download). Starts JupyterLab on a free loopback port, opens
``notebooks/05_truncation_vs_boxing.ipynb``, runs all cells, checks that no cell shows an error and
that the widget controls rendered, and saves a screenshot under ``build/``.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from helpers.course.student_notebooks import pairs, student_text
from helpers.theme import MIN_CONTRAST

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NOTEBOOK = "05_truncation_vs_boxing.ipynb"
#: Every wait in the browser: a hang guard, never a speed goal (that is make bench). Idle, the
#: whole of notebook 05 runs in about 50 s and each wait is a few seconds; 10 minutes is over ten
#: times that, for a slow or busy CI machine, and still fails a hang long before CI's limit.
WAIT_MS = 600_000
#: A Mermaid diagram JupyterLab drew (an SVG, inline or as an image); a syntax error is drawn as
#: a warning (``jp-mod-warning``) instead.
DRAWN_DIAGRAM = (
    ".jp-RenderedMermaid:not(.jp-mod-warning) img, .jp-RenderedMermaid:not(.jp-mod-warning) svg"
)
#: How long a stopped JupyterLab may take to exit before it is killed.
STOP_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_lab(
    workdir: Path, profile_env: dict[str, str], notebooks: tuple[str, ...] = (NOTEBOOK,)
):
    """JupyterLab on a free loopback port serving a copy of ``notebooks`` (attendee notebooks'
    file names; notebook 05 unless told), its kernels run with ``profile_env``; yields
    ``(base URL, token)`` and stops the server after."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install chromium` (make e2e does it)")
    port, token = _free_port(), secrets.token_hex(16)
    for name in notebooks:  # generated afresh: neither the committed ones nor yours are touched
        (workdir / name).write_text(student_text(ROOT / "solutions" / name), encoding="utf-8")
    # every cell in the page (JupyterLab 4 renders only the cells in view by default), so the
    # checks read the whole notebook's outputs, far down it too
    settings = workdir / "config" / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    env = {
        **os.environ,
        **profile_env,
        "JUPYTER_CONFIG_DIR": str(workdir / "config"),
        "PYTHONPATH": str(ROOT),
    }
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        f"--ServerApp.port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={workdir}",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    # the server's log goes to a file: a pipe nobody reads fills up (64 KiB) and then blocks
    # JupyterLab in the middle of a test, with the kernel idle and the page waiting
    log = workdir / "jupyterlab.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(command, env=env, stdout=sink, stderr=sink, cwd=workdir)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT_MS / 1_000
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)
            break
        except OSError:
            time.sleep(0.5)
    else:
        server.kill()
        server.wait()
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        pytest.fail("JupyterLab did not start: " + tail)
    yield base, token
    server.terminate()
    try:
        server.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@contextlib.contextmanager
def _evidence(page, name: str):
    """On a failure, keep what the browser showed: ``build/e2e-<name>-failure.png`` and the
    page's text, so a wait that ran out says why."""
    try:
        yield
    except BaseException:
        folder = ROOT / "build"
        folder.mkdir(exist_ok=True)
        with contextlib.suppress(Exception):
            page.screenshot(path=str(folder / f"e2e-{name}-failure.png"), full_page=True)
            text = page.evaluate("() => document.body.innerText")
            (folder / f"e2e-{name}-failure.txt").write_text(text, encoding="utf-8")
        raise


def _open_notebook(playwright, base: str, token: str, name: str = NOTEBOOK):
    """Chromium on the Lab's copy of notebook ``name`` (05 unless told), its kernel idle:
    ``(browser, page)``. Each notebook opens in a workspace of its own, so the Lab does not
    restore the notebooks opened before it beside it."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
    page = browser.new_page(viewport={"width": 1600, "height": 1200})
    workspace = "nb-" + re.sub(r"\W", "-", name)
    page.goto(f"{base}/lab/workspaces/{workspace}/tree/{name}?token={token}", timeout=WAIT_MS)
    page.wait_for_selector(".jp-Notebook", timeout=WAIT_MS)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=WAIT_MS)
    return browser, page


#: How long Run All may take to start its first cell before it is asked again, in milliseconds:
#: on a busy machine a command sent while the notebook panel is still settling can be lost (a
#: CI run once waited ten minutes on a page whose cells had never started).
RUN_ALL_START_MS = 60_000
_A_CELL_STARTED = (
    "() => [...document.querySelectorAll('.jp-InputPrompt')]"
    ".some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))"
)


def _run_all_cells(page) -> None:
    """Run All Cells, as a person does (it stops at a cell that fails); asked again, up to three
    times, until a cell has started."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(3):
        page.locator(".jp-Notebook").first.click()
        page.keyboard.press("Escape")
        page.evaluate(
            "window.jupyterapp && window.jupyterapp.commands.execute('notebook:run-all-cells')"
        )
        if not page.evaluate("!!window.jupyterapp"):
            page.get_by_text("Run", exact=True).first.click()
            page.get_by_text("Run All Cells", exact=True).first.click()
        try:
            page.wait_for_function(_A_CELL_STARTED, timeout=RUN_ALL_START_MS)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"Run All started no cell in 3 tries of {RUN_ALL_START_MS:,} ms")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from _start_lab(tmp_path_factory.mktemp("lab"), {"WORKBOOK_PROFILE": "offline"})


def test_notebook_05_runs_in_a_real_browser(lab) -> None:
    from playwright.sync_api import sync_playwright

    base, token = lab
    shots = ROOT / "build"
    shots.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser, page = _open_notebook(p, base, token)
        with _evidence(page, "run-all"):
            _run_all_cells(page)
            # all cells done: every code cell has an execution count and the kernel is idle again
            page.wait_for_function(
                """() => {
                    const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
                    return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
                }""",
                timeout=WAIT_MS,
            )
            page.wait_for_selector(
                ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=WAIT_MS
            )
            page.wait_for_selector(
                ".widget-dropdown select, .jupyter-widgets select", timeout=WAIT_MS
            )
            # the diagram: JupyterLab draws a Mermaid block of a Markdown cell as an SVG image
            page.wait_for_selector(DRAWN_DIAGRAM, timeout=WAIT_MS)
            diagrams = page.locator(DRAWN_DIAGRAM).count()
            # the long cells' progress bars ran to their end (a finished bar turns "success")
            bars = page.locator(".widget-hprogress .progress-bar-success").count()
            progress_labels = page.evaluate(
                "() => [...document.querySelectorAll('.widget-html-content')]"
                ".map(e => e.textContent).filter(t => / runs in [\\d.]+ s$/.test(t))"
            )
            # the charts are drawn for a room: 1280 pixels wide
            chart_widths = page.evaluate(
                "() => [...document.querySelectorAll('.jp-OutputArea img')].map(i => i.naturalWidth)"
            )
            errors = page.locator(
                ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'], .jp-RenderedText[data-mime-type='application/vnd.jupyter.error']"
            )
            error_text = [errors.nth(i).inner_text() for i in range(errors.count())]
            widget = page.locator(".widget-dropdown, .jupyter-widgets.widget-inline-hbox").first
            widget.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "e2e_notebook05.png"), full_page=False)
            sliders = page.locator(".widget-slider, .jupyter-widgets .widget-hslider").count()
            tables = page.locator("table").count()
            # JupyterLab typesets $…$ in Markdown and HTML outputs: dollar amounts must stay text
            tex = [
                t.inner_text()[:80]
                for t in page.locator(".jp-OutputArea mjx-container, .jp-OutputArea .MathJax").all()
            ]
            dollars = page.evaluate(
                "() => [...document.querySelectorAll('.jp-OutputArea')].map(e => e.innerText)"
                ".join(' ').match(/\\$\\d/g)?.length ?? 0"
            )
            looks = {theme: _look_in_theme(page, theme, shots) for theme in ("light", "dark")}
            browser.close()
    assert not [t for t in error_text if re.search(r"Error|Traceback", t)], error_text
    assert sliders >= 2, "the threshold and limit sliders did not render"
    assert tables >= 2, "the comparison table and the side-by-side view did not render"
    assert not tex, f"dollar amounts were typeset as TeX math: {tex}"
    assert dollars >= 10, f"only {dollars} dollar amounts shown as text"
    assert diagrams >= 1, "the Mermaid diagram did not render"
    for theme, look in looks.items():
        assert look["theme_light"] == (theme == "light"), (theme, look)
        assert look["texts"] >= 20, (theme, look)  # the message view was measured
        worst = look["worst"]
        assert worst["ratio"] >= MIN_CONTRAST, (
            f"{theme} theme: {worst['text']!r} has contrast {worst['ratio']:.2f} "
            f"(colour {worst['fg']} on {worst['bg']}); WCAG AA wants {MIN_CONTRAST}"
        )
        assert not look["cut"], f"{theme} theme at 1280x720: cut off at the right: {look['cut']}"
    assert bars >= 2 and len(progress_labels) >= 2, f"progress bars: {progress_labels}"
    assert chart_widths and all(w == 1280 for w in chart_widths), chart_widths


#: WCAG 2.x contrast of text on its background, composited over the ancestors' backgrounds
#: (translucent tints included): the lowest ratio in the message views, and what overflows.
_MEASURE_VIEWS = """() => {
  const rgba = c => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return [0, 0, 0, 0];
    const p = m[1].split(',').map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const background = el => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    if (!layers.length || layers[layers.length - 1][3] < 1) layers.push([255, 255, 255, 1]);
    let [r, g, b] = layers.pop();
    while (layers.length) { const [lr, lg, lb, la] = layers.pop();
      r = lr * la + r * (1 - la); g = lg * la + g * (1 - la); b = lb * la + b * (1 - la); }
    return [r, g, b];
  };
  const over = (fg, bg) => fg[3] >= 1 ? fg.slice(0, 3)
    : fg.slice(0, 3).map((v, i) => v * fg[3] + bg[i] * (1 - fg[3]));
  const lum = rgb => rgb.map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05); };
  let worst = {ratio: 99}, texts = 0;
  for (const el of document.querySelectorAll('.crw-messages td, .crw-messages b, .crw-messages i')) {
    if (!el.innerText.trim()) continue;
    const style = getComputedStyle(el);
    const bg = background(el), fg = over(rgba(style.color), bg), r = ratio(fg, bg);
    texts++;
    if (r < worst.ratio) worst = {ratio: r, text: el.innerText.slice(0, 40),
      fg: fg.map(Math.round).join(','), bg: bg.map(Math.round).join(',')};
  }
  const cut = [...document.querySelectorAll('.crw-side-by-side')].filter(el => {
    const box = el.getBoundingClientRect();
    return box.right > window.innerWidth + 1 || el.scrollWidth > el.clientWidth + 1;
  }).map(el => Math.round(el.getBoundingClientRect().right) + 'px of ' + window.innerWidth);
  return {worst, texts, cut, theme_light: document.body.dataset.jpThemeLight === 'true'};
}"""


def _look_in_theme(page, theme: str, shots: Path) -> dict:
    """Notebook 05 at 1280x720 in JupyterLab's ``light`` or ``dark`` theme, chosen from the
    Settings menu as a person does: a screenshot of the side-by-side message view
    (``build/e2e_notebook05_<theme>.png``) and its measurements (:data:`_MEASURE_VIEWS`)."""
    wanted = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}[theme]
    page.set_viewport_size({"width": 1280, "height": 720})
    if page.evaluate("document.body.dataset.jpThemeLight") != str(theme == "light").lower():
        page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
        page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
        page.locator(".lm-Menu-itemLabel", has_text=wanted).first.click()
        page.wait_for_function(
            f"document.body.dataset.jpThemeLight === '{str(theme == 'light').lower()}'",
            timeout=WAIT_MS,
        )
        page.wait_for_timeout(1_000)  # the theme's stylesheet applied
    view = page.locator(".crw-side-by-side").first
    view.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / f"e2e_notebook05_{theme}.png"), full_page=False)
    return page.evaluate(_MEASURE_VIEWS)


# -- every notebook's diagram -----------------------------------------------------------------

ALL_NOTEBOOKS = tuple(solution.name for solution, _ in pairs())


@pytest.fixture(scope="module")
def every_notebook_lab(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("every-notebook-lab")
    yield from _start_lab(workdir, {"WORKBOOK_PROFILE": "offline"}, ALL_NOTEBOOKS)


def test_every_notebooks_diagram_is_drawn(every_notebook_lab) -> None:
    """Each notebook's Mermaid block is drawn when the notebook opens (no cell run): a syntax
    error would show Mermaid's warning instead of the diagram."""
    from playwright.sync_api import sync_playwright

    base, token = every_notebook_lab
    drawn: dict[str, tuple[int, int]] = {}
    with sync_playwright() as p:
        for name in ALL_NOTEBOOKS:
            browser, page = _open_notebook(p, base, token, name)
            with _evidence(page, f"diagram-{name[:2]}"):
                page.wait_for_selector(
                    f"{DRAWN_DIAGRAM}, .jp-RenderedMermaid.jp-mod-warning", timeout=WAIT_MS
                )
                drawn[name] = (
                    page.locator(DRAWN_DIAGRAM).count(),
                    page.locator(".jp-RenderedMermaid.jp-mod-warning").count(),
                )
            browser.close()
    broken = {name: counts for name, counts in drawn.items() if counts[0] < 1 or counts[1]}
    assert not broken, f"(diagrams drawn, diagrams failed) per notebook: {broken}"


# -- a hostile model: its text is shown, never run ---------------------------------------------


@pytest.fixture(scope="module")
def hostile_lab(tmp_path_factory):
    from provider import ScriptedProvider, hostile_replies

    workdir = tmp_path_factory.mktemp("hostile-lab")
    with ScriptedProvider([hostile_replies()]) as provider:
        yield from _start_lab(
            workdir,
            {
                "WORKBOOK_PROFILE": "hostile",
                "HOSTILE_BASE_URL": provider.base_url,
                "HOSTILE_API_KEY": "hostile-endpoint-key",
                "HOSTILE_MODEL": "hostile-model",
                "WORKBOOK_APPROVE_SPEND": "1",
            },
        )


def test_a_hostile_models_text_never_runs_in_notebook_05(hostile_lab) -> None:
    """Refusals, answers, reasoning and error bodies carrying script and event-handler HTML,
    Markdown images and links, ANSI and bidi characters: notebook 05 shows them as text, and no
    script of theirs runs in the Lab's page."""
    from playwright.sync_api import sync_playwright

    base, token = hostile_lab
    with sync_playwright() as p:
        browser, page = _open_notebook(p, base, token)
        with _evidence(page, "hostile"):
            # Run All: the runs and their headline (HTML), then the report as Markdown; the checks
            # after them stop the run, as they should against a model that never answers
            _run_all_cells(page)
            page.wait_for_function(
                "() => document.body.innerText.includes('onerror=\"window.__pwned=1\"')",
                timeout=WAIT_MS,
            )
            page.wait_for_selector(
                ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=WAIT_MS
            )
            ran = page.evaluate("() => window.__pwned === 1")
            planted = page.evaluate(
                """() => document.querySelectorAll(
                    '.jp-OutputArea img[src="x"], .jp-OutputArea script, a[href^="javascript"]').length"""
            )
            shown = page.evaluate("() => document.body.innerText")
            typeset = page.locator(".jp-OutputArea mjx-container").count()
            page.screenshot(
                path=str(ROOT / "build" / "e2e_notebook05_hostile.png"), full_page=False
            )
            browser.close()
    assert not ran, "a model's HTML ran as script in JupyterLab"
    assert planted == 0, "a model's HTML became elements of the page"
    assert typeset == 0, "a model's $…$ was typeset as TeX (MathJax links and sizes)"
    assert "<img src=x" in shown and "<script>" in shown  # shown as text
    assert "\x1b" not in shown and "\u202e" not in shown and "\\x1b[2J" in shown
