"""Charts for a room: the comparison drawn to be read on a projector at 1280×720 pixels.

``workbook compare`` writes detailed charts (:func:`helpers.evaluation.comparison_plots.plot`, every case
× every strategy; :func:`helpers.evaluation.scaling.plot_scaling`, three panels) for a reader at a
desk. On a projector those are unreadable: 130 bars and 9-point text shrunk to the width of a
slide. The charts here show one idea each, at :data:`ROOM_PIXELS`, with text no smaller than
:data:`MIN_FONT_PT` points and labels on the data instead of in a legend.

Each ``*_figure`` function builds the :class:`matplotlib.figure.Figure` in one theme's colours
(tests read its text sizes); each ``plot_*`` function draws it in JupyterLab's light and dark
themes (:func:`helpers.display.charts.themed_chart`) and returns the
:class:`~helpers.display.charts.ThemedChart` a notebook displays.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from helpers.display.charts import DPI, ThemedChart, draw_figure, themed_chart
from helpers.display.theme import LIGHT_CHART, ChartTheme
from helpers.evaluation.metrics import ComparisonMetrics, ScalingResult
from helpers.evaluation.report import times

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The size of every room chart in pixels (width, height): a 720p projector or a laptop screen
#: sharing one; saved at :data:`ROOM_DPI`.
ROOM_PIXELS = (1280, 720)
ROOM_DPI = DPI
#: The smallest text on a room chart, in points (at 100 dpi, about 17 pixels tall).
MIN_FONT_PT = 13
#: The least vertical distance between two line labels on a log axis, in decades.
LABEL_GAP_DECADES = 0.09
_STYLE = {
    "font.size": 16,
    "axes.titlesize": 18,
    "axes.labelsize": 16,
    "xtick.labelsize": 14,
    "ytick.labelsize": 15,
    "legend.fontsize": 14,
}


def totals_figure(metrics: ComparisonMetrics, theme: ChartTheme = LIGHT_CHART) -> Figure:
    """Every strategy's prompt tokens against the floor, one horizontal bar each, nearest to
    the floor on top, in ``theme``'s colours, :data:`ROOM_PIXELS` in size.

    A bar is the strategy's ``ratio_to_floor`` (:class:`~helpers.evaluation.metrics.
    StrategyTotals`): its prompt tokens on the cases it passed, divided by the floor of those
    same cases. It is the figure notebook 05's cards and the table show, so the three agree;
    the line at 1× is the floor itself.

    Args:
        metrics: a comparison (``Comparison.metrics()``): each strategy's totals
            (``ratio_to_floor``, ``prompt_tokens`` summed over the cases it passed, ``passed``
            and ``cases`` counts).
        theme: the JupyterLab theme whose colours it is drawn in.

    Returns:
        The figure. A strategy that failed any case is drawn hatched and pale, and its label
        says how many it passed: its ratio counts only those, so a short bar there means
        "cheap and wrong", not "cheap". A strategy with no ratio (no case passed) is left out.
    """
    return draw_figure(
        lambda fig, t: _draw_totals(fig, t, metrics), theme, size=ROOM_PIXELS, style=_STYLE
    )


def _draw_totals(fig: Figure, theme: ChartTheme, metrics: ComparisonMetrics) -> None:
    ratios = {k: t.ratio_to_floor for k, t in metrics.totals.items() if t.ratio_to_floor}
    order = sorted(ratios, key=lambda k: ratios[k], reverse=True)
    axes = fig.add_subplot()
    peak = max(ratios.values(), default=1.0)
    bar_colour = theme.series[0]
    for row, name in enumerate(order):
        entry = metrics.totals[name]
        whole = entry.passed_all()
        axes.barh(
            row,
            ratios[name],
            color=bar_colour if whole else theme.pale,
            edgecolor=bar_colour if whole else theme.error,
            hatch=None if whole else "//",
        )
        note = (
            f"{times(ratios[name])}  ({entry.passed}/{entry.cases} passed)"
            if whole
            else f"{times(ratios[name])}  only {entry.passed}/{entry.cases} passed"
        )
        axes.text(
            ratios[name] + peak * 0.01,
            row,
            note,
            va="center",
            color=theme.text if whole else theme.error,
        )
    axes.axvline(1.0, color=theme.muted, linestyle="--", linewidth=2)
    axes.text(1.0, len(order) - 0.4, " the floor, 1×", color=theme.muted, va="bottom")
    axes.set_yticks(range(len(order)), order)
    axes.set_xlim(0, peak * 1.45)
    axes.set_ylim(-0.6, len(order) + 0.2)
    axes.set_xlabel(
        "× the floor: prompt tokens on the cases passed ÷ their floor (o200k_base; fewer is better)"
    )
    axes.set_title(f"{metrics.model}: the same tasks under every strategy")
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def plot_totals(metrics: ComparisonMetrics) -> ThemedChart:
    """:func:`totals_figure` in JupyterLab's light and dark themes, each a PNG of
    :data:`ROOM_PIXELS` (``.save(path)`` writes them)."""
    return themed_chart(
        lambda fig, theme: _draw_totals(fig, theme, metrics),
        alt=f"{metrics.model}: every strategy's prompt tokens, × the floor",
        size=ROOM_PIXELS,
        style=_STYLE,
    )


def scaling_figure(scaling: ScalingResult, theme: ChartTheme = LIGHT_CHART) -> Figure:
    """Prompt tokens against the size of one result, one line per strategy, log-log, in
    ``theme``'s colours, :data:`ROOM_PIXELS` in size.

    Args:
        scaling: a scaling run (:func:`helpers.evaluation.scaling.run_scaling`): its sizes in
            bytes, the context window in tokens, and each strategy's points.
        theme: the JupyterLab theme whose colours it is drawn in.

    Returns:
        The figure: each line ends at its last passed size, labelled there in its colour; a
        failed run is a cross in the theme's error colour (an overflow is drawn at the size of
        the refused request); the context window is a dashed line.
    """
    return draw_figure(
        lambda fig, t: _draw_scaling(fig, t, scaling), theme, size=ROOM_PIXELS, style=_STYLE
    )


def _draw_scaling(fig: Figure, theme: ChartTheme, scaling: ScalingResult) -> None:
    axes = fig.add_subplot()
    ends: list[tuple[float, float, str, str]] = []
    for index, (strategy, points) in enumerate(scaling.runs.items()):
        colour = theme.series[index % len(theme.series)]
        good = [(p.size_bytes, p.prompt_tokens) for p in points if p.passed]
        bad = [(p.size_bytes, p.prompt_tokens) for p in points if not p.passed]
        if good:
            axes.plot(*zip(*good, strict=True), color=colour, marker="o", linewidth=2.5)
            ends.append((good[-1][0], good[-1][1], strategy, colour))
        if bad:
            axes.scatter(*zip(*bad, strict=True), marker="x", s=90, color=theme.error, zorder=3)
            if not good:  # it never passed: name it at its first failure
                ends.append((bad[0][0], bad[0][1], f"{strategy} ×", theme.error))
    window = scaling.context_window_tokens
    axes.axhline(window, color=theme.error, linestyle="--", linewidth=1.5)
    axes.text(scaling.sizes_bytes[0], window * 1.08, f"context window {window:,} tokens")
    axes.set_xscale("log")
    axes.set_yscale("log")
    # labels at the lines' ends, pushed apart (in decades of the log axis) so that lines
    # ending close together stay readable
    placed: dict[float, list[float]] = {}
    for x, y, strategy, colour in sorted(ends, key=lambda e: (e[0], e[1])):
        label_y = math.log10(max(y, 1))
        while any(abs(label_y - other) < LABEL_GAP_DECADES for other in placed.get(x, [])):
            label_y += LABEL_GAP_DECADES / 4
        placed.setdefault(x, []).append(label_y)
        axes.annotate(f" {strategy}", (x, 10**label_y), color=colour, va="center")
    sizes = scaling.sizes_bytes
    axes.set_xlim(sizes[0] * 0.7, sizes[-1] * 6)
    axes.set_xlabel("size of the one long result (bytes, log scale)")
    axes.set_ylabel("prompt tokens per turn (log scale)")
    axes.set_title("Where each strategy stops: × = the run failed")
    axes.grid(which="major")
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def plot_scaling_room(scaling: ScalingResult) -> ThemedChart:
    """:func:`scaling_figure` in JupyterLab's light and dark themes, each a PNG of
    :data:`ROOM_PIXELS` (``.save(path)`` writes them)."""
    return themed_chart(
        lambda fig, theme: _draw_scaling(fig, theme, scaling),
        alt="prompt tokens per turn against the size of one result, per strategy",
        size=ROOM_PIXELS,
        style=_STYLE,
    )
