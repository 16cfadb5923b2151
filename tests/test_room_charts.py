"""The charts notebook 05 shows a room: 1280×720 pixels, no text smaller than MIN_FONT_PT, and a
strategy that failed a case never drawn like one that passed them all; and the progress bar of a
long cell."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.text import Text
from PIL import Image

from helpers.course.progress import progress
from helpers.evaluation.room_charts import (
    MIN_FONT_PT,
    ROOM_PIXELS,
    plot_scaling_room,
    plot_totals,
    scaling_figure,
    totals_figure,
)

COMPARISON = {
    "model": "gpt-4o",
    "totals": {
        "inline": {"prompt_tokens": 292_266, "passed": 13, "cases": 13},
        "box": {"prompt_tokens": 56_149, "passed": 13, "cases": 13},
        "middle": {"prompt_tokens": 5_276, "passed": 2, "cases": 13},
        "floor": {"prompt_tokens": 26_261, "cases": 13},
    },
}
SCALING = {
    "sizes_bytes": [1_000, 10_000, 100_000, 1_000_000],
    "context_window_tokens": 128_000,
    "runs": {
        "inline": [
            {"size_bytes": s, "prompt_tokens": t, "passed": p}
            for s, t, p in [
                (1e3, 4_799, True),
                (1e4, 17_130, True),
                (1e5, 139_988, True),
                (1e6, 497_216, False),
            ]
        ],
        "box": [
            {"size_bytes": s, "prompt_tokens": 5_000, "passed": True} for s in (1e3, 1e4, 1e5, 1e6)
        ],
        "middle": [
            {"size_bytes": s, "prompt_tokens": 4_000, "passed": False} for s in (1e3, 1e4, 1e5, 1e6)
        ],
    },
}


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
