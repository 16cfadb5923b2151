"""Charts that follow the notebook's theme: each drawn twice, and the page shows the one it needs.

A PNG has its colours baked in: a chart drawn on white stays a white block in JupyterLab's dark
theme, and the kernel cannot know which theme the page uses (the same output may be opened in
either, and the theme can change after the cell ran). So :func:`themed_chart` draws the chart
once per :data:`helpers.display.theme.CHART_THEMES` (background, text, axes and series colours from the
JupyterLab theme's own variables) and returns both images in one HTML output with a CSS rule that
shows the dark one only where JupyterLab says its theme is dark: JupyterLab sets
``data-jp-theme-light="true|false"`` on ``<body>`` when it applies a theme
(``@jupyterlab/apputils-extension``'s ``themes`` plugin). Where nothing sets it (a page outside
JupyterLab, nbconvert's HTML export for one) the light one shows. ``make e2e`` samples the
charts' pixels in both themes.

Every chart of the notebooks is drawn here: notebook 01's context growth, notebook 05's room
charts (:mod:`helpers.evaluation.room_charts`) and notebook 07's chart tool.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers.display.theme import CHART_THEMES, DARK_CHART, LIGHT_CHART, ChartTheme
from helpers.text.escaping import for_html, for_notebook_html

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The class of a themed chart's element, and of its light and dark images (the e2e test finds
#: them).
CHART_CLASS = "crw-chart"
LIGHT_CLASS = "crw-chart-light"
DARK_CLASS = "crw-chart-dark"
#: Shows the image of the page's theme: the light one unless JupyterLab's ``<body>`` says dark.
_SWITCH_CSS = (
    f".{CHART_CLASS} .{DARK_CLASS}{{display:none}}"
    f'body[data-jp-theme-light="false"] .{CHART_CLASS} .{LIGHT_CLASS}{{display:none}}'
    f'body[data-jp-theme-light="false"] .{CHART_CLASS} .{DARK_CLASS}{{display:inline}}'
)
#: Pixels per inch of a chart's PNG: sizes are given in pixels, at one pixel per CSS pixel.
DPI = 100


def chart_style(theme: ChartTheme) -> dict[str, Any]:
    """matplotlib ``rcParams`` for ``theme``: the figure and axes on the theme's background, text
    in its text colour, axes and ticks in its muted colour, grid lines and the legend's frame in
    its border colour, and ``theme.series`` as the colour cycle (``C0``, ``C1``… in a chart drawn
    under this style are the theme's series colours)."""
    from cycler import cycler

    return {
        "figure.facecolor": theme.background,
        "figure.edgecolor": theme.background,
        "savefig.facecolor": theme.background,
        "savefig.edgecolor": theme.background,
        "axes.facecolor": theme.background,
        "axes.edgecolor": theme.muted,
        "axes.labelcolor": theme.text,
        "axes.titlecolor": theme.text,
        "axes.prop_cycle": cycler(color=list(theme.series)),
        "text.color": theme.text,
        "xtick.color": theme.muted,
        "ytick.color": theme.muted,
        "xtick.labelcolor": theme.text,
        "ytick.labelcolor": theme.text,
        "grid.color": theme.grid,
        "legend.facecolor": theme.background,
        "legend.edgecolor": theme.grid,
        "legend.labelcolor": theme.text,
        "patch.edgecolor": theme.muted,
    }


def draw_figure(
    draw: Callable[[Figure, ChartTheme], None],
    theme: ChartTheme = LIGHT_CHART,
    *,
    size: tuple[int, int] = (700, 350),
    style: dict[str, Any] | None = None,
) -> Figure:
    """One :class:`matplotlib.figure.Figure` of ``size`` pixels (width, height), drawn by
    ``draw(figure, theme)`` under :func:`chart_style` (and ``style``, more ``rcParams``, on top),
    with constrained layout. No pyplot: no global state, no GUI backend, nothing left open."""
    return _drawn(draw, theme, size, style)[0]


def _drawn(
    draw: Callable[[Figure, ChartTheme], None],
    theme: ChartTheme,
    size: tuple[int, int],
    style: dict[str, Any] | None,
) -> tuple[Figure, bytes]:
    """The figure and its PNG, both made under the theme's style: matplotlib makes some artists
    (ticks) only when the figure is drawn, from the ``rcParams`` of that moment."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context({**chart_style(theme), **(style or {})}):
        figure = Figure(figsize=(size[0] / DPI, size[1] / DPI), dpi=DPI, layout="constrained")
        draw(figure, theme)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=DPI)
    return figure, buffer.getvalue()


@dataclass(frozen=True)
class ThemedChart:
    """A chart drawn in JupyterLab's light and dark themes: two PNGs of the same size.

    Displayed in a notebook (its ``_repr_html_``) it is one HTML output holding both images,
    showing the one of the page's theme (see :mod:`helpers.display.charts`)."""

    light_png: bytes
    dark_png: bytes
    #: The text alternative of both images (what a screen reader says).
    alt: str = "chart"

    def png(self, theme: str) -> bytes:
        """The PNG for ``theme``, ``"light"`` or ``"dark"``.

        Raises:
            ValueError: another theme name.
        """
        if theme not in ("light", "dark"):
            raise ValueError(f"theme is 'light' or 'dark', got {theme!r}")
        return self.light_png if theme == "light" else self.dark_png

    def save(self, path: Path) -> Path:
        """Write the light PNG to ``path`` and the dark one beside it (``name-dark.png``);
        returns ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.light_png)
        path.with_name(f"{path.stem}-dark{path.suffix}").write_bytes(self.dark_png)
        return path

    def html(self, *, width: int | None = None) -> str:
        """Both images and the rule that shows one, as HTML for a notebook output (inside
        :func:`helpers.text.escaping.for_notebook_html`); ``width`` in CSS pixels, else each image's
        own width, never wider than the output."""
        size = f"width:{width}px;" if width else ""
        style = f"{size}max-width:100%;height:auto"
        alt = for_html(self.alt)
        images = "".join(
            f'<img class="{cls}" alt="{alt}" style="{style}" '
            f'src="data:image/png;base64,{base64.b64encode(png).decode()}">'
            for cls, png in ((LIGHT_CLASS, self.light_png), (DARK_CLASS, self.dark_png))
        )
        return for_notebook_html(
            f'<div class="{CHART_CLASS}"><style>{_SWITCH_CSS}</style>{images}</div>'
        )

    def _repr_html_(self) -> str:
        return self.html()

    def as_mcp_content(self) -> list[dict[str, Any]]:
        """Both images as MCP image content parts (base64 PNG), each naming its theme in
        ``_meta`` (MCP's field for metadata on a content block), for a tool whose result an
        interface renders: :func:`helpers.course.views.full_result_widget` shows them as one
        themed chart."""
        return [
            {
                "type": "image",
                "data": base64.b64encode(self.png(theme.name)).decode(),
                "mimeType": "image/png",
                "_meta": {"theme": theme.name},
            }
            for theme in CHART_THEMES
        ]


def themed_chart(
    draw: Callable[[Figure, ChartTheme], None],
    *,
    size: tuple[int, int] = (700, 350),
    alt: str = "chart",
    style: dict[str, Any] | None = None,
) -> ThemedChart:
    """Draw a chart in JupyterLab's light and dark themes.

    Args:
        draw: draws the chart on an empty figure: ``draw(figure, theme)``, called once per
            theme under its :func:`chart_style` (plain ``plot``/``bar`` calls take the theme's
            colours; ``theme`` names them for anything drawn in a colour of its own, e.g.
            ``theme.error``).
        size: the PNGs' width and height in pixels.
        alt: the images' text alternative.
        style: more matplotlib ``rcParams`` (font sizes…), the same in both themes.

    Returns:
        A :class:`ThemedChart`; a notebook cell displays it (``display(chart)``, or as the cell's
        last expression).
    """
    light, dark = (_drawn(draw, theme, size, style)[1] for theme in (LIGHT_CHART, DARK_CHART))
    return ThemedChart(light_png=light, dark_png=dark, alt=alt)
