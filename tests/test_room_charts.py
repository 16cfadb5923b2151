"""The charts notebook 05 shows a room: 1280×720 pixels, no text smaller than MIN_FONT_PT, and a
strategy that failed a case never drawn like one that passed them all; and the progress bar of a
long cell."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.text import Text
from PIL import Image

from helpers.course.progress import progress
from helpers.evaluation.metrics import (
    Caching,
    ComparisonMetrics,
    FloorTotals,
    Pricing,
    ScalingPoint,
    ScalingResult,
    StrategyTotals,
)
from helpers.evaluation.room_charts import (
    MIN_FONT_PT,
    ROOM_PIXELS,
    plot_scaling_room,
    plot_totals,
    scaling_figure,
    totals_figure,
)


def _totals(prompt_tokens: int, passed: int, cases: int = 13) -> StrategyTotals:
    return StrategyTotals(
        prompt_tokens=prompt_tokens,
        completion_tokens=0,
        passed=passed,
        cases=cases,
        context_overflows=0,
        ratio_to_inline=None,
        ratio_to_floor=None,
        seconds=0.0,
    )


COMPARISON = ComparisonMetrics(
    model="gpt-4o",
    threshold=None,
    limit_chars=600,
    token_unit="o200k_base tokens",
    pricing=Pricing(
        model="gpt-4o",
        checked="2026-11-01",
        input_usd_per_mtok=2.5,
        cached_input_usd_per_mtok=1.25,
        output_usd_per_mtok=10.0,
    ),
    box_goal_ratio=1.05,
    cases={},
    totals={
        "inline": _totals(292_266, 13),
        "box": _totals(56_149, 13),
        "middle": _totals(5_276, 2),
    },
    floor=FloorTotals(prompt_tokens=26_261, prompt_tokens_all_tools=40_000, cases=13),
    design_steps=[],
    other_models={},
    caching=Caching(cached_share={}, cheapest_changes=[]),
    personas={},
)


def _points(rows: list[tuple[int, int, bool]]) -> list[ScalingPoint]:
    return [
        ScalingPoint(
            size_bytes=size,
            prompt_tokens=tokens,
            usd_cached=0.01,
            seconds=0.1,
            passed=passed,
            status="ok" if passed else "failed",
            reason="" if passed else "failed",
            looks_inside=0,
            cut_at_output_tokens=0,
        )
        for size, tokens, passed in rows
    ]


SIZES = [1_000, 10_000, 100_000, 1_000_000]
SCALING = ScalingResult(
    sizes_bytes=SIZES,
    price_model="gpt-4o",
    context_window_tokens=128_000,
    runs={
        "inline": _points(
            [
                (1_000, 4_799, True),
                (10_000, 17_130, True),
                (100_000, 139_988, True),
                (1_000_000, 497_216, False),
            ]
        ),
        "box": _points([(s, 5_000, True) for s in SIZES]),
        "middle": _points([(s, 4_000, False) for s in SIZES]),
    },
    breaks={},
)


def _texts(figure) -> list[Text]:
    return [t for t in figure.findobj(Text) if t.get_text().strip() and t.get_visible()]


@pytest.mark.parametrize(
    "build", [lambda: totals_figure(COMPARISON), lambda: scaling_figure(SCALING)]
)
def test_room_charts_are_readable_on_a_projector(build) -> None:
    figure = build()
    small = [
        (t.get_text(), t.get_fontsize()) for t in _texts(figure) if t.get_fontsize() < MIN_FONT_PT
    ]
    assert not small, f"text under {MIN_FONT_PT} pt: {small}"


def test_room_charts_are_saved_at_the_room_size(tmp_path: Path) -> None:
    for png in (
        plot_totals(COMPARISON, tmp_path / "t.png"),
        plot_scaling_room(SCALING, tmp_path / "s.png"),
    ):
        with Image.open(png) as image:
            assert image.size == ROOM_PIXELS


def test_a_strategy_that_failed_says_so_on_its_bar() -> None:
    texts = [t.get_text() for t in _texts(totals_figure(COMPARISON))]
    assert any("only 2/13 passed" in t for t in texts), texts
    assert any("(13/13 passed)" in t for t in texts), texts
    scaling_texts = [t.get_text() for t in _texts(scaling_figure(SCALING))]
    assert any(t.strip() == "middle ×" for t in scaling_texts), (
        "a strategy that never passed is named"
    )


def test_a_long_cell_shows_its_progress() -> None:
    bar = progress(3, "runs <b>")
    bar(1_000, "box")
    assert bar.bar.value == 1
    assert bar.label.value == "1 / 3 runs &lt;b&gt;: 1000 · box", "escaped, with the step just done"
    bar("case2")
    bar("case3")
    assert bar.bar.value == bar.bar.max == 3 and " in " in bar.label.value
    bar("one too many")
    assert bar.bar.value == 3, "never past the end"
    with pytest.raises(ValueError, match="at least one step"):
        progress(0, "runs")
