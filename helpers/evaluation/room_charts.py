"""Charts for a room: the comparison drawn to be read on a projector at 1280×720 pixels.

``workbook compare`` writes detailed charts (:func:`helpers.evaluation.comparison_plots.plot`, every case
× every strategy; :func:`helpers.evaluation.scaling.plot_scaling`, three panels) for a reader at a
desk. On a projector those are unreadable: 130 bars and 9-point text shrunk to the width of a
slide. The charts here show one idea each, at :data:`ROOM_PIXELS`, with text no smaller than
:data:`MIN_FONT_PT` points and labels on the data instead of in a legend.

Each ``*_figure`` function builds the :class:`matplotlib.figure.Figure` (tests read its text
sizes); each ``plot_*`` function saves it as a PNG and returns the path.
"""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.figure import Figure

from helpers.evaluation.metrics import ComparisonMetrics, ScalingResult

#: The size of every room chart in pixels (width, height): a 720p projector or a laptop screen
#: sharing one; saved at :data:`ROOM_DPI`.
ROOM_PIXELS = (1280, 720)
ROOM_DPI = 100
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


def _new_figure() -> Figure:
    # a Figure without pyplot: no global state, no GUI backend, nothing left open
    return Figure(
        figsize=(ROOM_PIXELS[0] / ROOM_DPI, ROOM_PIXELS[1] / ROOM_DPI),
        dpi=ROOM_DPI,
        layout="constrained",
    )


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=ROOM_DPI)
    return path


def totals_figure(metrics: ComparisonMetrics) -> Figure:
    """Every strategy's prompt tokens over all cases, one horizontal bar each, cheapest on top.

    Args:
        metrics: a comparison (``Comparison.metrics()``): each strategy's totals
            (``prompt_tokens`` summed over the cases it passed, ``passed`` and ``cases``
            counts) and the floor's ``prompt_tokens``.

    Returns:
        The figure. A strategy that failed any case is drawn hatched and pale, and its label
        says how many it passed: its total counts only those, so a short bar there means
        "cheap and wrong", not "cheap".
    """
    import matplotlib

    totals = metrics.totals
    order = sorted(totals, key=lambda k: totals[k].prompt_tokens, reverse=True)
    floor = metrics.floor.prompt_tokens
    with matplotlib.rc_context(_STYLE):
        fig = _new_figure()
        axes = fig.add_subplot()
        peak = max(totals[k].prompt_tokens for k in order)
        for row, name in enumerate(order):
            entry = totals[name]
            whole = entry.passed_all()
            axes.barh(
                row,
                entry.prompt_tokens,
                color="C0" if whole else "0.85",
                edgecolor="C0" if whole else "C3",
                hatch=None if whole else "//",
            )
            note = (
                f"{entry.prompt_tokens:,}  ({entry.passed}/{entry.cases} passed)"
                if whole
                else f"{entry.prompt_tokens:,}  only {entry.passed}/{entry.cases} passed"
            )
            axes.text(
                entry.prompt_tokens + peak * 0.01,
                row,
                note,
                va="center",
                color="black" if whole else "C3",
            )
        axes.axvline(floor, color="0.3", linestyle="--", linewidth=2)
        axes.text(floor, len(order) - 0.4, f" floor {floor:,}", color="0.3", va="bottom")
        axes.set_yticks(range(len(order)), order)
        axes.set_xlim(0, peak * 1.45)
        axes.set_ylim(-0.6, len(order) + 0.2)
        axes.set_xlabel("prompt tokens, all cases (o200k_base; fewer is better)")
        axes.set_title(f"{metrics.model}: the same tasks under every strategy")
        axes.ticklabel_format(axis="x", style="plain")
        axes.xaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
    return fig


def plot_totals(metrics: ComparisonMetrics, path: Path) -> Path:
    """Save :func:`totals_figure` as a PNG of :data:`ROOM_PIXELS`; returns ``path``."""
    return _save(totals_figure(metrics), path)


def scaling_figure(scaling: ScalingResult) -> Figure:
    """Prompt tokens against the size of one result, one line per strategy, log-log.

    Args:
        scaling: a scaling run (:func:`helpers.evaluation.scaling.run_scaling`): its sizes in
            bytes, the context window in tokens, and each strategy's points.

    Returns:
        The figure: each line ends at its last passed size, labelled there; a failed run is a
        red cross (an overflow is drawn at the size of the refused request); the context window
        is a dashed line.
    """
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        fig = _new_figure()
        axes = fig.add_subplot()
        ends: list[tuple[float, float, str, str]] = []
        for index, (strategy, points) in enumerate(scaling.runs.items()):
            colour = f"C{index % 10}"
            good = [(p.size_bytes, p.prompt_tokens) for p in points if p.passed]
            bad = [(p.size_bytes, p.prompt_tokens) for p in points if not p.passed]
            if good:
                axes.plot(*zip(*good, strict=True), color=colour, marker="o", linewidth=2.5)
                ends.append((good[-1][0], good[-1][1], strategy, colour))
            if bad:
                axes.scatter(*zip(*bad, strict=True), marker="x", s=90, color="C3", zorder=3)
                if not good:  # it never passed: name it at its first failure
                    ends.append((bad[0][0], bad[0][1], f"{strategy} ×", "C3"))
        window = scaling.context_window_tokens
        axes.axhline(window, color="C3", linestyle="--", linewidth=1.5)
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
        axes.grid(alpha=0.3, which="major")
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
    return fig


def plot_scaling_room(scaling: ScalingResult, path: Path) -> Path:
    """Save :func:`scaling_figure` as a PNG of :data:`ROOM_PIXELS`; returns ``path``."""
    return _save(scaling_figure(scaling), path)
