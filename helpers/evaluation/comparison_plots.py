"""``compare.png``: the comparison drawn for a reader at a desk, every case × every strategy.

For a projector, one idea per chart, see :mod:`helpers.evaluation.room_charts`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from helpers.context.strategies import strategy_in_role
from helpers.display.charts import chart_style
from helpers.display.theme import LIGHT_CHART
from helpers.evaluation.metrics import ComparisonMetrics, RunMetrics

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: The floor's colour: a grey the strategies' colours (matplotlib's ``C0``…) never are.
FLOOR_COLOUR = "0.55"


def plot(metrics: ComparisonMetrics, path: Path, *, focus_case: str | None = None) -> Path:
    """``compare.png``: tokens per strategy per case (grouped bars, log scale; a failed run is
    hatched and marked ✗), and context growth over model calls for ``focus_case`` (default: the
    case with the most inline tokens), where the floor is a wide grey band under the strategies'
    lines, so a strategy on the floor stays visible. Returns ``path``."""
    import matplotlib
    from matplotlib.figure import Figure

    strategies = metrics.strategies()
    case_ids = list(metrics.cases)

    baseline = strategy_in_role("baseline")

    def inline_tokens(case_id: str) -> int:
        inline = metrics.cases[case_id].runs.get(baseline)
        return inline.prompt_tokens if inline else 0

    focus = focus_case or max(case_ids, key=inline_tokens)
    colours = {v: f"C{i}" for i, v in enumerate(strategies)}
    # a file for a desk: JupyterLab's light theme's colours (helpers.display.charts.chart_style), and a
    # Figure without pyplot: no global state, no GUI backend, nothing left open
    with matplotlib.rc_context(chart_style(LIGHT_CHART)):
        fig = Figure(figsize=(max(15, 1.1 * len(case_ids) + 8), 6.2), layout="tight")
        bars, growth = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2.6, 1]})
        _draw_bars(bars, metrics, case_ids, colours)
        _draw_growth(growth, metrics, focus, colours)
        fig.suptitle(f"Truncation vs boxing ({metrics.model})")
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    return path


def _draw_bars(
    bars: Axes, metrics: ComparisonMetrics, case_ids: list[str], colours: dict[str, str]
) -> None:
    """Grouped bars of prompt tokens per case and strategy, a failed run hatched and marked ✗;
    the floor's bar last, hatched grey."""
    from matplotlib.patches import Patch

    columns: list[tuple[str, list[RunMetrics | None], list[int]]] = []
    for strategy in metrics.strategies():
        runs = [metrics.cases[c].runs.get(strategy) for c in case_ids]
        # an overflow is drawn at the size of the request that was refused
        columns.append((strategy, runs, [r.drawn_tokens() if r else 0 for r in runs]))
    floors = [metrics.cases[c].floor for c in case_ids]
    columns.append(("floor", [None] * len(case_ids), [f.prompt_tokens if f else 0 for f in floors]))
    width = 0.8 / len(columns)
    for i, (name, runs, values) in enumerate(columns):
        offsets = [x + (i - (len(columns) - 1) / 2) * width for x in range(len(case_ids))]
        drawn = bars.bar(
            offsets,
            values,
            width,
            label=name,
            color=colours.get(name, FLOOR_COLOUR),
            hatch="//" if name == "floor" else None,
        )
        for bar, run in zip(drawn, runs, strict=True):
            if run is not None and not run.passed:  # the run failed its checks: cheap means nothing
                bar.set_hatch("xx")
                bar.set_edgecolor(LIGHT_CHART.error)
                bars.annotate(
                    "✗",
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center",
                    va="bottom",
                    color=LIGHT_CHART.error,
                    fontsize=9,
                    fontweight="bold",
                )
    bars.set_yscale("log")
    bars.set_xticks(range(len(case_ids)), case_ids, rotation=30)
    bars.set_ylabel("prompt tokens per turn (o200k_base, log scale)")
    bars.set_title(
        "Total prompt tokens per case and strategy (✗ = the run failed its checks; an overflow "
        "is drawn at the size of the refused request)"
    )
    handles, labels = bars.get_legend_handles_labels()
    handles.append(Patch(facecolor="white", edgecolor=LIGHT_CHART.error, hatch="xx"))
    labels.append("failed its checks")
    bars.legend(handles, labels, ncols=4, fontsize="small")
    bars.grid(axis="y", alpha=0.3)


def _draw_growth(
    growth: Axes, metrics: ComparisonMetrics, focus: str, colours: dict[str, str]
) -> None:
    """The context size of each model call of ``focus``, the floor a wide grey band."""
    from matplotlib.ticker import MaxNLocator

    case = metrics.cases[focus]
    if case.floor is not None:
        per_call = case.floor.prompt_tokens_per_call
        growth.plot(
            range(1, len(per_call) + 1),
            per_call,
            color="0.75",
            linewidth=9,
            alpha=0.6,
            label="floor",
            solid_capstyle="round",
            zorder=1,
        )
    for strategy in metrics.strategies():
        run = case.runs.get(strategy)
        if run is None or not run.prompt_tokens_per_call:
            continue
        growth.plot(
            range(1, len(run.prompt_tokens_per_call) + 1),
            run.prompt_tokens_per_call,
            marker="o",
            color=colours[strategy],
            linestyle="-" if run.passed else ":",
            label=strategy if run.passed else f"{strategy} ✗",
            zorder=2,
        )
    growth.set_yscale("log")
    growth.xaxis.set_major_locator(MaxNLocator(integer=True))
    growth.set_xlabel("model call")
    growth.set_ylabel("prompt tokens of that call (context size, log scale)")
    growth.set_title(f"Context growth over the turn: {focus}")
    growth.legend(fontsize="small")
    growth.grid(alpha=0.3)
