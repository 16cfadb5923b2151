"""The dual stream's summariser on text, JSON and binary-ish results, and the policy in a turn."""

from __future__ import annotations

import base64
import json

from helpers.context.dual_stream import MAX_SUMMARY_CHARS, DualStreamPolicy, summarize_for_model
from helpers.loop.agent import Agent, run_turn
from helpers.tooling.tools import run_sql, yt_transcribe


def test_plain_text_is_bounded() -> None:
    assert (
        summarize_for_model("Wrote drive://a.txt: 5 chars, 5 bytes.")
        == "Wrote drive://a.txt: 5 chars, 5 bytes."
    )
    long = yt_transcribe("123")
    summary = summarize_for_model(long)
    assert len(summary) <= MAX_SUMMARY_CHARS and summary.startswith(long[:200])
    assert "more chars]" in summary


def test_json_becomes_one_line_of_the_first_fields() -> None:
    rows = run_sql("SELECT code, name FROM subdivisions WHERE country_alpha_2 = 'NO'")
    summary = summarize_for_model(rows)
    assert summary.startswith("Result: columns=[2 items], rows=[") and "row_count=" in summary
    assert "Oslo" not in summary  # the rows are for the user's table, not the model
    assert (
        summarize_for_model({"balance": 100, "symbol": "ETH"}) == "Result: balance=100, symbol=ETH"
    )
    wide = summarize_for_model({f"k{i}": i for i in range(9)})
    assert wide == "Result: k0=0, k1=1, k2=2, k3=3, … (5 more fields)"
    assert summarize_for_model([1, 2, 3]) == "Result: list of 3 items, first: 1"


def test_explicit_text_parts_win_and_binary_never_enters() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 5_000_000).decode()
    result = {
        "content": [
            {"type": "text", "text": "Image generated successfully."},
            {"type": "image", "data": png, "mimeType": "image/png"},
        ]
    }
    summary = summarize_for_model(json.dumps(result))
    assert (
        summary == "Image generated successfully.\n[image/png, 5,000,008 bytes, shown to the user]"
    )
    assert (
        summarize_for_model({"type": "image", "data": png, "mimeType": "image/png"})
        == "[image/png, 5,000,008 bytes, shown to the user]"
    )
    assert summarize_for_model(b"\x00\x01" * 10) == "[binary, 20 bytes, shown to the user]"
    assert summarize_for_model("{not json") == "{not json"


def test_the_model_gets_the_summary_and_the_store_keeps_everything(client, registry, store) -> None:
    prompt = "Using run_sql, fetch all ISO 3166-2 subdivisions of France (code, name, type; up to 200 rows). Then tell me the code of the subdivision named 'Bretagne'."
    record = run_turn(prompt, Agent(client, "m", DualStreamPolicy(), registry, store))
    sql = record.tool_calls[0]
    assert sql.result.startswith("Result: columns=") and len(sql.result) <= MAX_SUMMARY_CHARS
    assert all(
        "Bretagne" not in str(m.get("content")) for m in record.messages if m["role"] == "tool"
    )
    full = store.get(record.thread_id, sql.id, with_content=True).content
    assert '"FR-BRE", "Bretagne"' in full  # the interface's copy holds every row
