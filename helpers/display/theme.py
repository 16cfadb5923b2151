"""The colours of the HTML the notebooks render, readable in every JupyterLab theme.

A colour written into a view is one of two things:

- a JupyterLab theme variable (``var(--jp-…)``, defined by each theme: the light theme's in
  jupyterlab/jupyterlab ``packages/theme-light-extension/style/variables.css``, the dark theme's
  beside it), whose fallback, for a page outside JupyterLab (VS Code's notebooks define no
  ``--jp-`` variables: microsoft/vscode-jupyter#7161), never fixes a colour: text falls back to
  ``inherit`` (the host's own text colour), a border or a surface to translucent grey;
- a translucent *tint* laid over whatever background the theme has, so the text on it keeps the
  theme's own text colour (near black on white, white on near black). A role or a badge is told
  apart by the tint's hue; its text never depends on it.

No view hard-codes a text colour against a background of its own: that is how the side-by-side
view became unreadable in the dark theme (light backgrounds behind the dark theme's white text).
The e2e test measures the contrast of the message view in the light and dark themes
(WCAG 2.x contrast ratio, at least :data:`MIN_CONTRAST`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The theme's main text colour (elsewhere: the host's).
TEXT = "var(--jp-content-font-color1, inherit)"
#: Secondary text (labels), on the theme's own background only (elsewhere: the host's).
MUTED = "var(--jp-content-font-color2, inherit)"
#: Lines between cells and around cards.
BORDER = "var(--jp-border-color2, rgba(128, 128, 128, 0.35))"
#: A surface one step off the page (the system message's row): a grey tint over any background.
SURFACE_ALT = "rgba(128, 128, 128, 0.16)"
#: WCAG 2.x's minimum contrast ratio for normal text (success criterion 1.4.3, level AA).
MIN_CONTRAST = 4.5

#: Hues of the tints, as RGB (Material Design 500s: blue, green, amber, purple, orange, red).
HUES: dict[str, tuple[int, int, int]] = {
    "blue": (33, 150, 243),
    "green": (76, 175, 80),
    "amber": (255, 193, 7),
    "purple": (156, 39, 176),
    "orange": (255, 152, 0),
    "red": (244, 67, 54),
}


def tint(hue: str, alpha: float = 0.16) -> str:
    """A translucent CSS colour of ``hue`` (a key of :data:`HUES`), ``alpha`` from 0 to 1: a
    background that shows the theme's own beneath it.

    Raises:
        KeyError: an unknown hue.
        ValueError: ``alpha`` outside 0-1.
    """
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha is a fraction from 0 to 1, got {alpha}")
    red, green, blue = HUES[hue]
    return f"rgba({red}, {green}, {blue}, {alpha})"


#: The background of each message role's row in the message view.
ROLE_BACKGROUNDS = {
    "system": SURFACE_ALT,
    "user": tint("blue"),
    "assistant": tint("green"),
    "tool": tint("amber", 0.18),
}
#: The tint of each result-kind badge (``[boxed]``, ``[truncated]``…).
KIND_TINTS = {
    "boxed": tint("purple", 0.28),
    "truncated": tint("orange", 0.3),
    "saved": tint("blue", 0.3),
    "middle": tint("red", 0.3),
    "error": tint("red", 0.3),
    "compacted": tint("purple", 0.28),
}
#: The tint behind a strategy's pass count: all passed, or not.
VERDICT_TINTS = {True: tint("green", 0.28), False: tint("red", 0.3)}


def badge(html: str, background: str) -> str:
    """``html`` (already escaped) as a bold badge on ``background``, in the theme's text colour."""
    return (
        f"<b style='color:{TEXT};background:{background};border-radius:3px;padding:0 4px'>"
        f"{html}</b>"
    )


def contrast_ratio(first: str, second: str) -> float:
    """The WCAG 2.x contrast ratio of two opaque colours given as ``#rrggbb``: from 1 (the same
    luminance) to 21 (black on white). WCAG 2.2's definition of *contrast ratio* and *relative
    luminance*; text wants :data:`MIN_CONTRAST`, graphics :data:`MIN_GRAPHICS_CONTRAST`.

    Raises:
        ValueError: a colour that is not ``#rrggbb``.
    """

    def luminance(colour: str) -> float:
        if len(colour) != 7 or not colour.startswith("#"):
            raise ValueError(f"a colour is #rrggbb, got {colour!r}")
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


#: WCAG 2.x's minimum contrast of graphics (lines, bars, an arrow) against what is beside them
#: (success criterion 1.4.11 Non-text Contrast, level AA).
MIN_GRAPHICS_CONTRAST = 3.0


@dataclass(frozen=True)
class ChartTheme:
    """The colours a chart is drawn in for one JupyterLab theme, as opaque ``#rrggbb``.

    Each comes from the theme's ``variables.css`` (jupyterlab/jupyterlab
    ``packages/theme-light-extension/style/variables.css`` and
    ``packages/theme-dark-extension/style/variables.css``); a translucent variable is given
    composited over the theme's background. ``series`` has no variable of its own: ten hues
    (blue, green, purple, orange, cyan, pink, brown, grey, lime, and red last, the hue of
    ``error``) from the Material palette the themes are built on (their ``--md-*`` variables),
    the same hue in both themes, each in a shade whose contrast with ``background`` is at least
    :data:`MIN_CONTRAST`, so a label written in a line's colour reads as text (a test checks it).
    """

    #: ``"light"`` or ``"dark"``: JupyterLab's ``data-jp-theme-light`` is ``true`` or ``false``.
    name: str
    #: ``--jp-layout-color0``: the notebook's background.
    background: str
    #: ``--jp-content-font-color1``: text.
    text: str
    #: ``--jp-content-font-color2``: labels, axes and ticks.
    muted: str
    #: ``--jp-border-color2``: grid lines.
    grid: str
    #: ``--jp-layout-color2``: the fill of a bar that means "did not count" (a failed strategy).
    pale: str
    #: ``--jp-error-color1``: a failure.
    error: str
    #: The colours of the data series, in order (matplotlib's ``C0``, ``C1``…).
    series: tuple[str, ...]


#: JupyterLab Light.
LIGHT_CHART = ChartTheme(
    name="light",
    background="#ffffff",  # white
    text="#212121",  # rgba(0, 0, 0, 0.87) over white
    muted="#757575",  # rgba(0, 0, 0, 0.54) over white
    grid="#e0e0e0",  # --md-grey-300
    pale="#eeeeee",  # --md-grey-200
    error="#d32f2f",  # --md-red-700
    # Material blue 800, green 800, purple 700, deep orange 900, cyan 900, pink 800, brown 500,
    # grey 700, lime 900, red 800
    series=(
        "#1565c0",
        "#2e7d32",
        "#7b1fa2",
        "#bf360c",
        "#006064",
        "#ad1457",
        "#795548",
        "#616161",
        "#827717",
        "#c62828",
    ),
)
#: JupyterLab Dark.
DARK_CHART = ChartTheme(
    name="dark",
    background="#111111",  # #111
    text="#ffffff",  # #fff
    muted="#b8b8b8",  # rgba(255, 255, 255, 0.7) over #111
    grid="#424242",  # --md-grey-800
    pale="#424242",  # --md-grey-800
    error="#f44336",  # --md-red-500
    # Material blue 300, green 300, purple 200, orange 300, cyan 300, pink 200, brown 200,
    # grey 400, lime 300, red 300
    series=(
        "#64b5f6",
        "#81c784",
        "#ce93d8",
        "#ffb74d",
        "#4dd0e1",
        "#f48fb1",
        "#bcaaa4",
        "#bdbdbd",
        "#dce775",
        "#e57373",
    ),
)
#: Both, light first: the one a page without JupyterLab's theme attribute shows.
CHART_THEMES = (LIGHT_CHART, DARK_CHART)


#: The front matter every Mermaid diagram of the notebooks starts with (a test checks it). What it
#: fixes: JupyterLab draws a diagram once, in Mermaid's ``default`` or ``dark`` theme as its own
#: theme is light or dark (``@jupyterlab/mermaid``'s ``MermaidManager``), into an ``<img>``, and
#: does not redraw it when the theme changes, so after a switch the dark theme showed ``#333``
#: lines and labels on ``#111`` (and the light theme light grey on white). An SVG in an ``<img>``
#: cannot see the page's CSS variables, but it does see the ``color-scheme`` of the element that
#: embeds it as its ``prefers-color-scheme`` (Media Queries Level 5; JupyterLab sets
#: ``color-scheme`` on ``<body>`` from its theme): so the lines, arrowheads and message text, the
#: edge labels and the subgraphs (what is drawn on the page's own background) take the CSS system
#: colours ``CanvasText``, ``Canvas`` and ``GrayText`` under ``color-scheme: light dark``, which
#: resolve to the colours of the theme shown now, not the one it was drawn in. Nodes and notes
#: keep the Mermaid theme's own fill and text, readable on either background. Lines are 2 px: a
#: 1 px line scaled down to fit the notebook blurs into the background. ``make e2e`` measures the
#: lines' contrast and the text's size at 1280×720 in both themes, drawn in either.
MERMAID_FRONTMATTER = """---
# colours that follow JupyterLab's light or dark theme: helpers/display/theme.py, MERMAID_FRONTMATTER
config:
  themeCSS: |
    * { color-scheme: light dark; }
    .flowchart-link, .messageLine0, .messageLine1 { stroke: CanvasText; stroke-width: 2px; }
    .marker, [id$="-arrowhead"] path { fill: CanvasText; stroke: CanvasText; }
    .messageText { fill: CanvasText; }
    .actor-line { stroke: GrayText; }
    .cluster rect { fill: Canvas; stroke: GrayText; }
    .cluster-label span, .cluster-label text { color: CanvasText; fill: CanvasText; }
    .edgeLabel, .edgeLabel p, .edgeLabel span, .labelBkg { background-color: Canvas; color: CanvasText; }
---
"""
