"""The notebook's HTML view of a turn."""

from __future__ import annotations

from helpers.context.strategies import build_policy
from helpers.course.views import messages_html, side_by_side
from helpers.loop.agent import Agent, run_turn

CASE1 = "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep Check for analysis."


def test_view_marks_result_kinds_and_keeps_the_marker_visible(client, registry, store) -> None:
    views = {}
    for strategy in ("truncate", "box"):
        record = run_turn(CASE1, Agent(client, "m", build_policy(strategy), registry, store))
        views[strategy] = messages_html(record, max_chars=300)
        assert f"{record.usage()['prompt_tokens']:,} prompt tokens" in views[strategy]
    assert (
        "[truncated]" in views["truncate"] and "full output: fetch_tool_output" in views["truncate"]
    )
    assert "chars not shown here" in views["truncate"]
    assert "[boxed]" in views["box"] and "internal://" in views["box"]
    both = side_by_side(views["truncate"], views["box"])
    assert both.count("<table") == 2
