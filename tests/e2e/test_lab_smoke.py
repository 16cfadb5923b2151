"""The workbook as a person sees it: JupyterLab on loopback, in headless Chromium, at 1280×720 in
the light and dark themes, on a machine with no emoji font.

Run by ``make e2e`` (which ``.ci/run`` calls). Needs Debian's ``chromium`` at /usr/bin/chromium,
driven by Playwright (no browser download), and fontconfig's ``fc-list``. Starts JupyterLab on a
free loopback port; every Chromium runs under a fontconfig file that hides each font with a glyph
for ✅ or ❌ (:func:`_fontconfig_without_emoji`: ``fc-list`` finds none under it), as on a fresh
Debian without fonts-noto-color-emoji. Then:

- notebook 05 runs all its cells: no cell shows an error, the widget controls render, no dollar
  amount is typeset as TeX, each pass/fail mark reads as a word beside it (the table, its legend,
  the widget's verdicts), and in each theme its charts show the image drawn for that theme;
- every notebook's Mermaid diagram is drawn, its text at least :data:`MIN_DIAGRAM_TEXT_PX` high,
  its lines' contrast with the page at least WCAG's 3 for graphics, in both themes, drawn in the
  theme shown or left from the other (JupyterLab does not redraw a diagram when the theme
  changes);
- notebooks 01 and 07 (the solutions, answers in) run, and their charts follow the theme;
- an attendee's notebook 04, untouched: no line of a TODO or checkpoint cell runs off the right
  of its cell, the install cell shows collapsed, and the widest line that fits is measured;
- a hostile model's text is shown in notebook 05, never run.

Screenshots go to ``build/`` (``e2e_*.png``), light and dark.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from xml.sax.saxutils import escape

import nbformat
import pytest

from helpers.course.install_cell import INSTALL_CELL_TAG
from helpers.course.student_notebooks import pairs, student_text
from helpers.display.charts import CHART_CLASS, DARK_CLASS, LIGHT_CLASS
from helpers.display.theme import MIN_CONTRAST, MIN_GRAPHICS_CONTRAST, contrast_ratio
from helpers.evaluation.validation import FAILED, PASS, PASSED

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
#: The screen a room's laptops and projectors have: what every look below is measured at.
VIEW = {"width": 1280, "height": 720}
#: The smallest text of a diagram, in CSS pixels, at :data:`VIEW` (a line box: about 1.2× the
#: font size; JupyterLab's own smallest UI text is 11 px).
MIN_DIAGRAM_TEXT_PX = 10
#: The verdict marks, as fontconfig code points: a font with a glyph for either is hidden.
EMOJI_MARKS = ("2705", "274c")
SHOTS = ROOT / "build"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_lab(
    workdir: Path,
    profile_env: dict[str, str],
    notebooks: tuple[str, ...] = (NOTEBOOK,),
    *,
    solutions: bool = False,
):
    """JupyterLab on a free loopback port serving a copy of ``notebooks`` (attendee notebooks'
    file names; notebook 05 unless told; with ``solutions``, the solution notebooks, answers in,
    as ``make lab-instructor`` opens them), its kernels run with ``profile_env``; yields
    ``(base URL, token)`` and stops the server after."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install chromium` (make e2e does it)")
    port, token = _free_port(), secrets.token_hex(16)
    for name in notebooks:  # generated afresh: neither the committed ones nor yours are touched
        solution = ROOT / "solutions" / name
        text = solution.read_text(encoding="utf-8") if solutions else student_text(solution)
        (workdir / name).write_text(text, encoding="utf-8")
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


def _fontconfig_without_emoji(folder: Path) -> dict[str, str]:
    """The environment of a Chromium that has no font with a glyph for ✅ or ❌, as on a fresh
    Debian without fonts-noto-color-emoji (Chromium on Linux finds its fonts, fallbacks
    included, through fontconfig): a fontconfig file that includes the system's
    (``/etc/fonts/fonts.conf``) and rejects every font file ``fc-list`` says covers U+2705 or
    U+274C; under it, ``fc-list`` must find none. Returns ``{"FONTCONFIG_FILE": …}``."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        pytest.fail("fc-list is missing: `apt-get install fontconfig` (make e2e does it)")

    def covering(env: dict[str, str]) -> set[str]:
        files: set[str] = set()
        for mark in EMOJI_MARKS:
            listed = subprocess.run(
                [fc_list, f":charset={mark}", "file"],
                capture_output=True,
                text=True,
                env=env,
                check=True,
                timeout=STOP_S,
            ).stdout
            files |= {line.strip().rstrip(":") for line in listed.splitlines() if line.strip()}
        return files

    rejected = "".join(f"<glob>{escape(path)}</glob>" for path in sorted(covering(os.environ)))
    conf = folder / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">\n'
        '<fontconfig><include ignore_missing="yes">/etc/fonts/fonts.conf</include>'
        + (f"<selectfont><rejectfont>{rejected}</rejectfont></selectfont>" if rejected else "")
        + "</fontconfig>\n",
        encoding="utf-8",
    )
    env = {"FONTCONFIG_FILE": str(conf)}
    left = covering({**os.environ, **env})
    assert not left, f"fonts with a glyph for ✅ or ❌ still reach Chromium: {sorted(left)}"
    return env


@pytest.fixture(scope="session")
def browser_env(tmp_path_factory) -> dict[str, str]:
    """What every Chromium of these tests runs with: no emoji font."""
    return _fontconfig_without_emoji(tmp_path_factory.mktemp("fontconfig"))


def _open_notebook(
    playwright,
    base: str,
    token: str,
    name: str = NOTEBOOK,
    *,
    env: dict[str, str],
    viewport: dict[str, int] | None = None,
):
    """Chromium (its environment ``env``, e.g. :func:`browser_env`) on the Lab's copy of notebook
    ``name`` (05 unless told), at ``viewport`` (1600×1200 unless told), its kernel idle:
    ``(browser, page)``. Each notebook opens in a workspace of its own, so the Lab does not
    restore the notebooks opened before it beside it."""
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM, args=CHROMIUM_FLAGS, env={**os.environ, **env}
    )
    page = browser.new_page(viewport=viewport or {"width": 1600, "height": 1200})
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


def _run_to_the_end(page) -> None:
    """Run All, and wait until every code cell shown has an execution count and the kernel is
    idle (a collapsed cell, the install cell, shows a placeholder and no prompt that counts)."""
    _run_all_cells(page)
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea .jp-InputPrompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""",
        timeout=WAIT_MS,
    )
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=WAIT_MS)


#: Every ✓ or ✗ of the outputs with the text after it; how the marks are drawn (a mark drawn as
#: the missing-glyph box is as wide as a code point no font has, U+10FFFD); the verdict titles of
#: the widget's side-by-side view (the first one); the legend of the comparison table and its
#: cells that carry a verdict.
_READ_VERDICTS = """() => {
  const text = [...document.querySelectorAll('.jp-OutputArea')].map(e => e.innerText).join('\\n');
  const marks = [...text.matchAll(/[\\u2713\\u2717][^\\n]{0,12}/g)].map(m => m[0]);
  const cell = document.querySelector('.jp-OutputArea td');
  const context = document.createElement('canvas').getContext('2d');
  context.font = cell ? getComputedStyle(cell).font : '14px sans-serif';
  const width = s => context.measureText(s).width;
  const table = [...document.querySelectorAll('.jp-OutputArea table')]
    .find(t => /box goal/.test(t.innerText));
  return {
    marks,
    tofu: [width('\\u2713'), width('\\u2717'), width('\\u{10FFFD}')],
    titles: [...(document.querySelector('.crw-side-by-side')?.querySelectorAll('h4') ?? [])]
      .map(h => h.innerText),
    legend: [...document.querySelectorAll('.jp-OutputArea p')].map(p => p.innerText)
      .find(t => /the run passed the case/.test(t)) || '',
    cells: table ? [...table.querySelectorAll('td')].map(td => td.innerText)
      .filter(t => /[\\u2713\\u2717]/.test(t)) : [],
  };
}"""


def test_notebook_05_runs_in_a_real_browser(lab, browser_env) -> None:
    from playwright.sync_api import sync_playwright

    base, token = lab
    SHOTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser, page = _open_notebook(p, base, token, env=browser_env)
        with _evidence(page, "run-all"):
            _run_to_the_end(page)
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
            # the charts are drawn for a room: 1280 pixels wide, in each theme
            chart_widths = page.evaluate(
                f"() => [...document.querySelectorAll('.{CHART_CLASS} img')]"
                ".map(i => i.naturalWidth)"
            )
            errors = page.locator(
                ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'], .jp-RenderedText[data-mime-type='application/vnd.jupyter.error']"
            )
            error_text = [errors.nth(i).inner_text() for i in range(errors.count())]
            widget = page.locator(".widget-dropdown, .jupyter-widgets.widget-inline-hbox").first
            widget.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "e2e_notebook05.png"), full_page=False)
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
            verdicts = page.evaluate(_READ_VERDICTS)
            looks = {theme: _look_in_theme(page, theme) for theme in ("light", "dark")}
            browser.close()
    assert not [t for t in error_text if re.search(r"Error|Traceback", t)], error_text
    assert sliders >= 2, "the threshold and limit sliders did not render"
    assert tables >= 2, "the comparison table and the side-by-side view did not render"
    assert not tex, f"dollar amounts were typeset as TeX math: {tex}"
    assert dollars >= 10, f"only {dollars} dollar amounts shown as text"
    assert diagrams >= 1, "the Mermaid diagram did not render"
    # without an emoji font the marks are still drawn (every desktop font has ✓ and ✗), and the
    # words beside them carry the verdict
    check, cross, missing = verdicts["tofu"]
    assert missing not in (check, cross), f"✓/✗ drawn as empty boxes: {verdicts['tofu']}"
    bare = [m for m in verdicts["marks"] if not re.match(r".\s(pass|fail|met|missed|TODO)", m)]
    assert verdicts["marks"] and not bare, f"a mark without its word: {bare}"
    assert f"{PASS}: the run passed" in verdicts["legend"], verdicts["legend"]
    assert len(verdicts["cells"]) >= 20, verdicts["cells"]
    assert all(re.search(r"pass|fail|met|missed", c) for c in verdicts["cells"])
    titles = verdicts["titles"]
    assert len(titles) == 2 and all(f": {PASSED}" in t or f": {FAILED}" in t for t in titles)
    for theme, look in looks.items():
        assert look["theme_light"] == (theme == "light"), (theme, look)
        assert look["texts"] >= 20, (theme, look)  # the message view was measured
        worst = look["worst"]
        assert worst["ratio"] >= MIN_CONTRAST, (
            f"{theme} theme: {worst['text']!r} has contrast {worst['ratio']:.2f} "
            f"(colour {worst['fg']} on {worst['bg']}); WCAG AA wants {MIN_CONTRAST}"
        )
        assert not look["cut"], f"{theme} theme at 1280x720: cut off at the right: {look['cut']}"
        assert look["table_cut"] <= 1, f"the comparison table runs {look['table_cut']} px out"
        _assert_charts_follow(look["charts"], theme, at_least=2, where=NOTEBOOK)
    assert bars >= 2 and len(progress_labels) >= 2, f"progress bars: {progress_labels}"
    assert chart_widths and all(w == 1280 for w in chart_widths), chart_widths


#: WCAG 2.x contrast of text on its background, composited over the ancestors' backgrounds
#: (translucent tints included): the lowest ratio in the message views, and what overflows.
_BACKGROUND_JS = """
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
"""
_MEASURE_VIEWS = (
    "() => {"
    + _BACKGROUND_JS
    + """
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
)


def _choose_theme(page, theme: str) -> None:
    """JupyterLab's ``light`` or ``dark`` theme, chosen from the Settings menu as a person does."""
    light = str(theme == "light").lower()
    if page.evaluate("document.body.dataset.jpThemeLight") == light:
        return
    wanted = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}[theme]
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
    page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
    page.locator(".lm-Menu-itemLabel", has_text=wanted).first.click()
    page.wait_for_function(f"document.body.dataset.jpThemeLight === '{light}'", timeout=WAIT_MS)
    page.wait_for_timeout(1_000)  # the theme's stylesheet applied


def _screen(page, path: Path | None = None):
    """What the page shows now, as a PIL image (and saved at ``path``)."""
    from PIL import Image

    png = page.screenshot(full_page=False)
    if path is not None:
        path.write_bytes(png)
    return Image.open(io.BytesIO(png)).convert("RGB")


def _hex(rgb) -> str:
    return "#{:02x}{:02x}{:02x}".format(*(round(v) for v in rgb[:3]))


#: Each themed chart of the page: its image that shows (the other is ``display: none``), where it
#: is, and the theme's page background behind it.
_FIND_CHARTS = (
    "() => {"
    + _BACKGROUND_JS
    + f"""
  return [...document.querySelectorAll('.{CHART_CLASS}')].map(chart => {{
    const shown = [...chart.querySelectorAll('img')].filter(i => getComputedStyle(i).display !== 'none');
    const box = shown.length === 1 ? shown[0].getBoundingClientRect() : null;
    return {{shown: shown.map(i => i.className), page: background(chart),
      box: box && {{x: box.x, y: box.y, width: box.width, height: box.height}}}};
  }});
}}"""
)


def _look_at_charts(page, theme: str, name: str) -> list[dict]:
    """Each themed chart of the page, scrolled into view: which image shows, and the colour of
    its top corners (the figure's background, in the screenshot) against the page's;
    screenshots ``build/e2e_<name>_chart<N>_<theme>.png``."""
    looks = []
    for index in range(page.locator(f".{CHART_CLASS}").count()):
        page.locator(f".{CHART_CLASS}").nth(index).scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        chart = page.evaluate(_FIND_CHARTS)[index]
        screen = _screen(page, SHOTS / f"e2e_{name}_chart{index + 1}_{theme}.png")
        look = {"shown": chart["shown"], "page": _hex(chart["page"]), "corners": []}
        box = chart["box"]
        if box:
            for x in (box["x"] + 4, box["x"] + box["width"] - 5):
                y = box["y"] + 4
                if 0 <= x < screen.width and 0 <= y < screen.height:
                    look["corners"].append(_hex(screen.getpixel((int(x), int(y)))))
        looks.append(look)
    return looks


def _assert_charts_follow(looks: list[dict], theme: str, *, at_least: int, where: str) -> None:
    """Each chart of notebook ``where`` shows the image drawn for ``theme``, whose background is
    the page's own."""
    assert len(looks) >= at_least, f"{where} {theme}: {len(looks)} charts, {at_least} wanted"
    wanted = LIGHT_CLASS if theme == "light" else DARK_CLASS
    for look in looks:
        assert look["shown"] == [wanted], (where, theme, look)
        assert look["corners"], (where, theme, look)
        for corner in look["corners"]:
            # the same colour as the page (a ratio of 1), and dark in the dark theme
            assert contrast_ratio(corner, look["page"]) < 1.1, (where, theme, look)
            assert (contrast_ratio(corner, "#000000") < contrast_ratio(corner, "#ffffff")) == (
                theme == "dark"
            ), (where, theme, look)


def _look_in_theme(page, theme: str) -> dict:
    """Notebook 05 at 1280x720 in JupyterLab's ``light`` or ``dark`` theme: screenshots of the
    comparison table with its verdicts (``build/e2e_notebook05_verdicts_<theme>.png``), of the
    side-by-side message view (``build/e2e_notebook05_<theme>.png``) and of each chart, and
    their measurements (:data:`_MEASURE_VIEWS`, :func:`_look_at_charts`)."""
    page.set_viewport_size(VIEW)
    _choose_theme(page, theme)
    table = page.locator(".jp-OutputArea table", has_text="box goal").first
    table.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"e2e_notebook05_verdicts_{theme}.png"), full_page=False)
    # the table, every verdict in it, within the output's width (none scrolled out of sight)
    table_cut = table.evaluate(
        "t => Math.round(t.getBoundingClientRect().right - "
        "t.closest('.jp-OutputArea-output').getBoundingClientRect().right)"
    )
    charts = _look_at_charts(page, theme, "notebook05")
    view = page.locator(".crw-side-by-side").first
    view.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"e2e_notebook05_{theme}.png"), full_page=False)
    return {**page.evaluate(_MEASURE_VIEWS), "charts": charts, "table_cut": table_cut}


# -- the charts of notebooks 01 and 07 -----------------------------------------------------------

CHART_NOTEBOOKS = ("01_inline_tool_results.ipynb", "07_modes_and_dual_stream.ipynb")


@pytest.fixture(scope="module")
def solutions_lab(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("solutions-lab")
    yield from _start_lab(workdir, {"WORKBOOK_PROFILE": "offline"}, CHART_NOTEBOOKS, solutions=True)


def test_every_chart_follows_the_theme(solutions_lab, browser_env) -> None:
    """Notebook 01's context growth and notebook 07's chart tool (its result shown by the dual
    stream's widget), run with their answers: in each theme, each chart shows the image drawn
    for it, on the page's own background."""
    from playwright.sync_api import sync_playwright

    base, token = solutions_lab
    SHOTS.mkdir(exist_ok=True)
    looks: dict[str, dict[str, list[dict]]] = {}
    with sync_playwright() as p:
        for name in CHART_NOTEBOOKS:
            browser, page = _open_notebook(p, base, token, name, env=browser_env, viewport=VIEW)
            with _evidence(page, f"charts-{name[:2]}"):
                _run_to_the_end(page)
                # attached: one of each chart's two images shows, in either theme
                page.wait_for_selector(f".{CHART_CLASS} img", state="attached", timeout=WAIT_MS)
                looks[name] = {
                    theme: (_choose_theme(page, theme), _look_at_charts(page, theme, name[:2]))[1]
                    for theme in ("light", "dark")
                }
            browser.close()
    for name, by_theme in looks.items():
        for theme, charts in by_theme.items():
            _assert_charts_follow(charts, theme, at_least=1, where=name)


# -- every notebook's diagram ---------------------------------------------------------------------

ALL_NOTEBOOKS = tuple(solution.name for solution, _ in pairs())


@pytest.fixture(scope="module")
def every_notebook_lab(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("every-notebook-lab")
    yield from _start_lab(workdir, {"WORKBOOK_PROFILE": "offline"}, ALL_NOTEBOOKS)


#: Each diagram as drawn now: where its image is and its scale; its smallest line of text (a line
#: box, measured on a copy of the SVG laid out at the image's size: the image's own text is out
#: of the page's reach); where each line (edge, message) can be sampled on the screen, away from
#: the labels and nodes that cover it; the page's background behind it; the visible part of the
#: notebook.
_MEASURE_DIAGRAMS = (
    "() => {"
    + _BACKGROUND_JS
    + """
  const out = [];
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer')
    || document.querySelector('.jp-Notebook');
  const seen = panel.getBoundingClientRect();
  for (const img of document.querySelectorAll('.jp-RenderedMermaid:not(.jp-mod-warning) img')) {
    const box = img.getBoundingClientRect();
    if (!box.width) continue;
    const source = decodeURIComponent(img.src.slice(img.src.indexOf(',') + 1));
    const parsed = new DOMParser().parseFromString(source, 'image/svg+xml').documentElement;
    const svg = document.importNode(parsed, true);
    const holder = document.createElement('div');
    holder.style.cssText = 'position:absolute;left:0;top:0;visibility:hidden';
    svg.removeAttribute('style');
    svg.setAttribute('width', box.width);
    svg.setAttribute('height', box.height);
    holder.appendChild(svg);
    document.body.appendChild(holder);
    const origin = svg.getBoundingClientRect();
    let smallest = {height: 1e9, text: ''}, lines = 0;
    const walker = document.createTreeWalker(svg, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.textContent.trim() || node.parentElement.closest('style, title, desc')) continue;
      const parent = node.parentElement;
      let heights;
      if (parent.namespaceURI === 'http://www.w3.org/2000/svg') {
        heights = [parent.getBoundingClientRect().height];
      } else {
        const range = document.createRange();
        range.selectNodeContents(node);
        heights = [...range.getClientRects()].map(r => r.height).filter(h => h > 0);
      }
      for (const h of heights) {
        lines++;
        if (h < smallest.height) smallest = {height: h, text: node.textContent.trim().slice(0, 40)};
      }
    }
    const covers = [...svg.querySelectorAll('.edgeLabel, .node, rect.actor, .note, .labelBox')]
      .map(e => e.getBoundingClientRect()).filter(r => r.width && r.height);
    const covered = (x, y) => covers.some(r =>
      x > r.left - 3 && x < r.right + 3 && y > r.top - 3 && y < r.bottom + 3);
    const edges = [];
    const paths = [...svg.querySelectorAll('.flowchart-link, .messageLine0, .messageLine1')];
    for (const [n, path] of paths.entries()) {
      if (typeof path.getTotalLength !== 'function') continue;
      if (getComputedStyle(path).strokeWidth === '0px') continue;  // an invisible link (~~~)
      const length = path.getTotalLength();
      if (!length) continue;
      const matrix = path.getScreenCTM();
      const points = [];
      for (let f = 0.05; f < 1; f += 0.1) {
        const p = path.getPointAtLength(length * f).matrixTransform(matrix);
        if (!covered(p.x, p.y)) points.push([box.x + p.x - origin.x, box.y + p.y - origin.y]);
      }
      if (points.length) edges.push({id: path.id || `${path.getAttribute('class')} #${n + 1}`, points});
    }
    holder.remove();
    const width = parseFloat(parsed.getAttribute('viewBox').split(/[ ,]+/)[2]);
    out.push({box: {x: box.x, y: box.y, width: box.width, height: box.height},
      scale: box.width / width, smallest, lines, edges, background: background(img)});
  }
  return {diagrams: out, seen: {top: Math.max(seen.top, 0), bottom: Math.min(seen.bottom, innerHeight),
    left: Math.max(seen.left, 0), right: Math.min(seen.right, innerWidth)},
    theme_light: document.body.dataset.jpThemeLight === 'true'};
}"""
)


def _measure_diagrams(page, shot: Path) -> list[dict]:
    """Each diagram of the page as a person sees it now: its scale, its smallest line of text
    (CSS pixels), and its lines' WCAG contrast with the page, sampled on the screen (each line
    the median of its samples, each sample the strongest pixel within 2 px of the line: a line
    drawn thin and scaled down blurs into the background, and this sees it). A diagram taller
    than the notebook's visible part is looked at twice, scrolled to its top and to its bottom.
    The first look's screenshot is saved at ``shot``."""
    looks: dict[int, dict] = {}
    diagrams = page.locator(".jp-RenderedMermaid:not(.jp-mod-warning) img")
    for index in range(diagrams.count()):
        for block in ("start", "end"):
            diagrams.nth(index).evaluate(f"e => e.scrollIntoView({{block: '{block}'}})")
            page.wait_for_timeout(300)
            measured = page.evaluate(_MEASURE_DIAGRAMS)
            screen = _screen(page, shot if index == 0 and block == "start" else None)
            seen, diagram = measured["seen"], measured["diagrams"][index]
            look = looks.setdefault(
                index,
                {
                    "scale": round(diagram["scale"], 2),
                    "smallest": diagram["smallest"],
                    "lines": diagram["lines"],
                    "edges": {},
                    "height": round(diagram["box"]["height"]),
                    "visible": round(seen["bottom"] - seen["top"]),
                },
            )
            page_colour = _hex(diagram["background"])
            for edge in diagram["edges"]:
                samples = []
                for x, y in edge["points"]:
                    x, y = round(x), round(y)
                    if not (seen["left"] + 2 <= x < seen["right"] - 2):
                        continue
                    if not (seen["top"] + 2 <= y < seen["bottom"] - 2):
                        continue
                    samples.append(
                        max(
                            contrast_ratio(_hex(screen.getpixel((i, j))), page_colour)
                            for i in range(x - 2, x + 3)
                            for j in range(y - 2, y + 3)
                        )
                    )
                if samples:
                    samples.sort()
                    look["edges"].setdefault(edge["id"], round(samples[len(samples) // 2], 2))
            box = diagram["box"]
            if box["y"] >= seen["top"] and box["y"] + box["height"] <= seen["bottom"]:
                break  # all of it was in view
    return list(looks.values())


def test_every_notebooks_diagram_is_drawn_and_reads_in_both_themes(
    every_notebook_lab, browser_env
) -> None:
    """Each notebook's Mermaid block is drawn when the notebook opens (no cell run; a syntax
    error would show Mermaid's warning instead), and at 1280×720, in the light and dark themes,
    its text is at least MIN_DIAGRAM_TEXT_PX high and its lines have a contrast of at least
    WCAG's 3 with the page, and it fits in the notebook's visible part (seen whole, without
    scrolling): drawn in the theme shown (the notebook opened in it), and left from
    the other (the theme switched with the notebook open: JupyterLab does not redraw it).
    Screenshots: ``build/e2e_diagram_NN_<theme>.png`` and ``…_<theme>_switched.png``."""
    from playwright.sync_api import sync_playwright

    base, token = every_notebook_lab
    SHOTS.mkdir(exist_ok=True)
    drawn: dict[str, tuple[int, int]] = {}
    looks: dict[str, list[dict]] = {}
    first = "light"
    with sync_playwright() as p:
        for name in ALL_NOTEBOOKS:
            browser, page = _open_notebook(p, base, token, name, env=browser_env, viewport=VIEW)
            with _evidence(page, f"diagram-{name[:2]}"):
                page.wait_for_selector(
                    f"{DRAWN_DIAGRAM}, .jp-RenderedMermaid.jp-mod-warning", timeout=WAIT_MS
                )
                drawn[name] = (
                    page.locator(DRAWN_DIAGRAM).count(),
                    page.locator(".jp-RenderedMermaid.jp-mod-warning").count(),
                )
                # the theme the last notebook left, then the other: switched, then reopened
                first = (
                    "light"
                    if page.evaluate("document.body.dataset.jpThemeLight") == "true"
                    else "dark"
                )
                other = "dark" if first == "light" else "light"
                stem = f"e2e_diagram_{name[:2]}"
                looks[f"{name[:2]} {first}"] = _measure_diagrams(
                    page, SHOTS / f"{stem}_{first}.png"
                )
                _choose_theme(page, other)
                looks[f"{name[:2]} {other}, switched from {first}"] = _measure_diagrams(
                    page, SHOTS / f"{stem}_{other}_switched.png"
                )
                page.reload(timeout=WAIT_MS)
                page.wait_for_selector(DRAWN_DIAGRAM, timeout=WAIT_MS)
                page.wait_for_timeout(500)
                looks[f"{name[:2]} {other}"] = _measure_diagrams(
                    page, SHOTS / f"{stem}_{other}.png"
                )
            browser.close()
    (SHOTS / "e2e_diagrams.json").write_text(json.dumps(looks, indent=1), encoding="utf-8")
    broken = {name: counts for name, counts in drawn.items() if counts[0] < 1 or counts[1]}
    assert not broken, f"(diagrams drawn, diagrams failed) per notebook: {broken}"
    small = {
        where: (d["smallest"], d["scale"])
        for where, diagrams in looks.items()
        for d in diagrams
        if d["smallest"]["height"] < MIN_DIAGRAM_TEXT_PX
    }
    assert not small, f"diagram text under {MIN_DIAGRAM_TEXT_PX} px at 1280x720: {small}"
    tall = {
        where: (d["height"], d["visible"])
        for where, diagrams in looks.items()
        for d in diagrams
        if d["height"] > d["visible"]
    }
    assert not tall, f"diagrams taller than the notebook's visible part (height, visible): {tall}"
    unmeasured = [
        where for where, diagrams in looks.items() if not all(d["edges"] for d in diagrams)
    ]
    assert not unmeasured, f"no line of these diagrams could be sampled: {unmeasured}"
    faint = {
        where: {edge: ratio for edge, ratio in d["edges"].items() if ratio < MIN_GRAPHICS_CONTRAST}
        for where, diagrams in looks.items()
        for d in diagrams
    }
    faint = {where: edges for where, edges in faint.items() if edges}
    assert not faint, (
        f"diagram lines under WCAG's {MIN_GRAPHICS_CONTRAST} for graphics (build/e2e_diagrams.json): {faint}"
    )


# -- an attendee's notebook at 1280×720 ------------------------------------------------------------

ATTENDEE_NOTEBOOK = "04_opaque_reference_boxing.ipynb"


@pytest.fixture(scope="module")
def attendee_lab(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("attendee-lab")
    yield from _start_lab(workdir, {"WORKBOOK_PROFILE": "offline"}, (ATTENDEE_NOTEBOOK,))


#: The code cells as JupyterLab shows them: the first one's collapsed placeholder; for each cell,
#: its first line, its longest line (characters), and whether its editor scrolls sideways; the
#: widest line that fits (the editor's width less the line's padding, over the width of one
#: character of the code font: the font is monospaced); the file browser's width.
_MEASURE_CELLS = """(index) => {
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')];
  const cell = cells[index];
  cell.scrollIntoView({block: 'start'});
  const scroller = cell.querySelector('.cm-scroller');
  const lines = [...cell.querySelectorAll('.cm-line')];
  const line = lines.find(l => l.textContent.length > 0);
  let fit = null, font = null;
  if (scroller && line && scroller.offsetParent) {
    const style = getComputedStyle(line);
    const range = document.createRange();
    range.selectNodeContents(line);
    const glyphs = range.getBoundingClientRect().width / line.textContent.length;
    const room = scroller.clientWidth - (line.getBoundingClientRect().left - scroller.getBoundingClientRect().left)
      - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    fit = Math.floor(room / glyphs);
    font = style.fontSize + ' ' + style.fontFamily;
  }
  return {
    count: cells.length,
    placeholder: cell.querySelector('.jp-InputPlaceholder')?.innerText ?? null,
    editorShown: !!(scroller && scroller.offsetParent),
    first: line ? line.textContent : '',
    longest: Math.max(0, ...lines.map(l => l.textContent.length)),
    overflows: scroller ? scroller.scrollWidth > scroller.clientWidth + 1 : false,
    fit, font,
    browser: document.querySelector('#filebrowser')?.getBoundingClientRect().width ?? 0,
  };
}"""


def test_an_attendees_todo_cells_fit_at_1280x720(attendee_lab, browser_env) -> None:
    """An attendee's notebook 04, as ``make student`` writes it, at 1280×720 with the file
    browser open: the install cell shows collapsed (its first line as JupyterLab's placeholder,
    its code hidden); no line of a TODO cell or of a checkpoint cell runs off the right of its
    cell. Writes what it measured (the widest line that fits, in characters of the code font)
    to ``build/e2e_notebook04_lines.json``; screenshots ``build/e2e_notebook04_<theme>.png``."""
    from playwright.sync_api import sync_playwright

    base, token = attendee_lab
    SHOTS.mkdir(exist_ok=True)
    notebook = nbformat.reads(student_text(ROOT / "solutions" / ATTENDEE_NOTEBOOK), as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    install = code[0]
    assert INSTALL_CELL_TAG in install.metadata.get("tags", []), install.metadata
    assert install.metadata.get("jupyter", {}).get("source_hidden") is True, install.metadata
    watched = [
        i for i, c in enumerate(code) if c.source.startswith(("# TODO", "# Hard-stop checkpoint"))
    ]
    with sync_playwright() as p:
        browser, page = _open_notebook(
            p, base, token, ATTENDEE_NOTEBOOK, env=browser_env, viewport=VIEW
        )
        with _evidence(page, "attendee-04"):
            page.wait_for_function(
                "n => document.querySelectorAll('.jp-Notebook .jp-CodeCell').length >= n",
                arg=len(code),
                timeout=WAIT_MS,
            )
            first = page.evaluate(_MEASURE_CELLS, 0)
            cells = {i: page.evaluate(_MEASURE_CELLS, i) for i in watched}
            todo = next(i for i in watched if code[i].source.startswith("# TODO"))
            for theme in ("light", "dark"):
                _choose_theme(page, theme)
                page.evaluate(_MEASURE_CELLS, todo)
                page.screenshot(path=str(SHOTS / f"e2e_notebook04_{theme}.png"), full_page=False)
            browser.close()
    fits = [c["fit"] for c in cells.values() if c["fit"]]
    report = {
        "viewport": VIEW,
        "file_browser_px": first["browser"],
        "install_cell_placeholder": first["placeholder"],
        "code_font": next(c["font"] for c in cells.values() if c["font"]),
        "widest_line_that_fits_chars": min(fits),
        "longest_line_of_a_todo_or_checkpoint_cell_chars": max(
            c["longest"] for c in cells.values()
        ),
        "cells": {
            code[i].source.splitlines()[0][:60]: {k: cells[i][k] for k in ("longest", "overflows")}
            for i in watched
        },
    }
    (SHOTS / "e2e_notebook04_lines.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    assert first["count"] == len(code), (first["count"], len(code))
    assert first["browser"] > 0, "the file browser is not open"
    assert not first["editorShown"], "the install cell's code is shown, not collapsed"
    assert first["placeholder"] == install.source.splitlines()[0], first["placeholder"]
    assert len(watched) >= 8, f"{len(watched)} TODO and checkpoint cells: the notebook changed?"
    over = {k: v for k, v in report["cells"].items() if v["overflows"]}
    assert not over, (
        f"lines run off the right at 1280x720 (build/e2e_notebook04_lines.json): {over}"
    )


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


def test_a_hostile_models_text_never_runs_in_notebook_05(hostile_lab, browser_env) -> None:
    """Refusals, answers, reasoning and error bodies carrying script and event-handler HTML,
    Markdown images and links, ANSI and bidi characters: notebook 05 shows them as text, and no
    script of theirs runs in the Lab's page."""
    from playwright.sync_api import sync_playwright

    base, token = hostile_lab
    with sync_playwright() as p:
        browser, page = _open_notebook(p, base, token, env=browser_env)
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
