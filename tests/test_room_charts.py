"""The charts notebook 05 shows a room: 1280×720 pixels, no text smaller than MIN_FONT_PT, and a
strategy that failed a case never drawn like one that passed them all, in JupyterLab's light and
dark themes; every chart drawn in both themes, on the theme's background; and the progress bar
of a long cell."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from matplotlib.text import Text
from PIL import Image

from helpers.course.progress import progress
from helpers.display.charts import CHART_CLASS, DARK_CLASS, LIGHT_CLASS, themed_chart
from helpers.display.theme import (
    CHART_THEMES,
    DARK_CHART,
    LIGHT_CHART,
    MIN_CONTRAST,
    ChartTheme,
    contrast_ratio,
)
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


def _totals(prompt_tokens: int, passed: int, cases: int = 13, ratio: float = 1.0) -> StrategyTotals:
    return StrategyTotals(
        prompt_tokens=prompt_tokens,
        completion_tokens=0,
        passed=passed,
        cases=cases,
        context_overflows=0,
        ratio_to_inline=None,
        ratio_to_floor=ratio,
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
        "inline": _totals(292_266, 13, ratio=11.129),
        "box": _totals(56_149, 13, ratio=2.138),
        "middle": _totals(5_276, 2, ratio=2.502),
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


@pytest.mark.parametrize("theme", CHART_THEMES, ids=lambda t: t.name)
@pytest.mark.parametrize(
    "build", [lambda t: totals_figure(COMPARISON, t), lambda t: scaling_figure(SCALING, t)]
)
def test_room_charts_are_readable_on_a_projector(build, theme: ChartTheme) -> None:
    figure = build(theme)
    small = [
        (t.get_text(), t.get_fontsize()) for t in _texts(figure) if t.get_fontsize() < MIN_FONT_PT
    ]
    assert not small, f"text under {MIN_FONT_PT} pt: {small}"


def _corner(png: bytes) -> tuple[int, int, int]:
    with Image.open(io.BytesIO(png)) as image:
        return image.convert("RGB").getpixel((2, 2))


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def test_room_charts_are_drawn_at_the_room_size_in_both_themes(tmp_path: Path) -> None:
    for chart in (plot_totals(COMPARISON), plot_scaling_room(SCALING)):
        for theme in CHART_THEMES:
            png = chart.png(theme.name)
            with Image.open(io.BytesIO(png)) as image:
                assert image.size == ROOM_PIXELS
            assert _hex(_corner(png)) == theme.background, theme.name
    saved = plot_totals(COMPARISON).save(tmp_path / "t.png")
    assert saved.read_bytes()[:4] == b"\x89PNG" and (tmp_path / "t-dark.png").exists()


def test_a_themed_chart_shows_the_image_of_the_pages_theme() -> None:
    def draw(fig, theme):
        fig.subplots().plot([1, 2, 3], label="growth")

    chart = themed_chart(draw, size=(300, 150), alt="a <b>test</b> chart")
    assert chart.light_png != chart.dark_png
    html = chart._repr_html_()
    # both images, the light one by default, the dark one where JupyterLab says its theme is
    # dark (what a person sees is make e2e's business: it samples the pixels in both themes)
    assert html.count("<img") == 2 and f'class="{LIGHT_CLASS}"' in html
    assert (
        f'body[data-jp-theme-light="false"] .{CHART_CLASS} .{LIGHT_CLASS}{{display:none}}' in html
    )
    assert f".{CHART_CLASS} .{DARK_CLASS}{{display:none}}" in html
    assert 'alt="a &lt;b&gt;test&lt;/b&gt; chart"' in html
    parts = chart.as_mcp_content()
    assert [p["_meta"]["theme"] for p in parts] == ["light", "dark"]
    assert all(p["mimeType"] == "image/png" for p in parts)
    with pytest.raises(ValueError, match="'light' or 'dark'"):
        chart.png("solarized")


@pytest.mark.parametrize("theme", CHART_THEMES, ids=lambda t: t.name)
def test_chart_colours_read_on_their_theme(theme: ChartTheme) -> None:
    """Every text colour of a chart, a series' colour included (a line's label is written in
    it), has WCAG AA contrast with the theme's background; the series are all different."""
    for colour in (theme.text, theme.muted, theme.error, *theme.series):
        assert re.fullmatch(r"#[0-9a-f]{6}", colour), colour
        assert contrast_ratio(colour, theme.background) >= MIN_CONTRAST, (theme.name, colour)
    assert len(set(theme.series)) == len(theme.series) == 10
    assert contrast_ratio(LIGHT_CHART.background, DARK_CHART.background) > 15


def test_a_strategy_that_failed_says_so_on_its_bar() -> None:
    texts = [t.get_text() for t in _texts(totals_figure(COMPARISON, DARK_CHART))]
    assert any("only 2/13 passed" in t for t in texts), texts
    assert any("(13/13 passed)" in t for t in texts), texts


def test_the_totals_chart_shows_the_cards_figure_x_the_floor() -> None:
    """The chart, the cards and the table give one figure (issue 35: the cards said 7.07× and
    the chart, drawn against the floor of every case, 6.25×): each bar is the strategy's
    ratio_to_floor, printed as the cards print it."""
    from helpers.evaluation.report import headline_html, times

    texts = [t.get_text() for t in _texts(totals_figure(COMPARISON))]
    cards = headline_html(COMPARISON)
    for name, entry in COMPARISON.totals.items():
        assert any(t.startswith(times(entry.ratio_to_floor)) for t in texts), (name, texts)
        assert f">{times(entry.ratio_to_floor)}<" in cards, name
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
