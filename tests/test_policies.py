"""Previews, boxing, unboxing and the resolve tools, through the real dispatch path."""

from __future__ import annotations

import json

import pytest

from helpers.context.boxing import ReferenceRefused, find_references, reference_id, unbox_arguments
from helpers.context.policies import BoxPolicy, InlinePolicy, TruncatePolicy
from helpers.context.preview import make_preview, parse_preview
from helpers.context.strategies import build_policy
from helpers.loop.dispatch import dispatch
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.registry import ToolContext, ToolRegistry
from helpers.tooling.tools import default_registry, yt_transcribe

LONG = yt_transcribe("123")


def _ctx(store: ToolOutputStore, thread: str = "thread_a") -> ToolContext:
    return ToolContext(store=store, thread_id=thread)


def _tools(policy) -> ToolRegistry:
    return default_registry().merged(policy.internal_tools())


def _run(policy, ctx, call_id, name, args):
    return dispatch(call_id, name, json.dumps(args), _tools(policy), policy, ctx)


# -- truncate -----------------------------------------------------------------------------------


def test_preview_marker_counts_hidden_characters() -> None:
    preview = make_preview("é" * 1000, "call_X7Y", 600)
    assert (
        preview
        == "é" * 600 + " ...[+400 chars. full output: fetch_tool_output(tool_call_id='call_X7Y')]"
    )
    parsed = parse_preview(preview)
    assert (parsed.hidden_chars, parsed.tool_call_id, parsed.text) == (400, "call_X7Y", "é" * 600)
    assert make_preview("short", "c", 600) == "short"
    assert parse_preview("short") is None


def test_truncate_logs_every_dispatch_and_fetch_is_never_cut(store) -> None:
    policy, ctx = TruncatePolicy(limit=600), _ctx(store)
    short = _run(policy, ctx, "call_s", "yt_transcribe", {"video_id": "999"})
    assert short.result_kind == "inline" and store.get(ctx.thread_id, "call_s") is not None
    long = _run(policy, ctx, "call_l", "yt_transcribe", {"video_id": "123"})
    assert long.result_kind == "truncated"
    assert long.result.startswith(LONG[:600])
    assert (
        f"[+{len(LONG) - 600} chars. full output: fetch_tool_output(tool_call_id='call_l')]"
        in long.result
    )
    fetched = _run(policy, ctx, "call_f", "fetch_tool_output", {"tool_call_id": "call_l"})
    data = json.loads(fetched.result)
    assert fetched.result_kind == "inline" and len(fetched.result) > 600
    assert data == {
        "tool_name": "yt_transcribe",
        "tool_args": {"video_id": "123"},
        "tool_output": LONG,
    }
    missing = _run(policy, ctx, "call_m", "fetch_tool_output", {"tool_call_id": "call_nope"})
    assert "no tool call with id" in json.loads(missing.result)["error"]
    other_thread = _run(
        policy, _ctx(store, "thread_b"), "call_o", "fetch_tool_output", {"tool_call_id": "call_l"}
    )
    assert "error" in json.loads(other_thread.result)


# -- box ----------------------------------------------------------------------------------------


def test_box_above_threshold_and_inline_below(store) -> None:
    policy, ctx = BoxPolicy(threshold=256), _ctx(store)
    short = _run(policy, ctx, "c1", "yt_transcribe", {"video_id": "999"})
    assert short.result_kind == "inline" and short.result == yt_transcribe("999")
    boxed = _run(policy, ctx, "c2", "yt_transcribe", {"video_id": "123"})
    assert boxed.result_kind == "boxed" and boxed.result.startswith("internal://")
    assert len(boxed.result) < 40


def test_json_boxing_is_an_mcp_resource_link(store) -> None:
    policy, ctx = BoxPolicy(boxing="json"), _ctx(store)
    boxed = _run(
        policy, ctx, "c1", "get_page", {"url": "https://docs.python.org/3/library/json.html"}
    )
    link = json.loads(boxed.result)
    assert link["type"] == "resource_link" and link["uri"].startswith("internal://")
    assert link["name"] and link["mimeType"] == "text/html" and link["size"] > 10_000


def test_unboxing_gives_real_tools_the_byte_exact_value(store) -> None:
    policy, ctx = BoxPolicy(), _ctx(store)
    ref = _run(policy, ctx, "c1", "yt_transcribe", {"video_id": "123"}).result
    checked = _run(policy, ctx, "c2", "deep_check", {"text": ref})
    assert f"received {len(LONG)} chars" in checked.result
    import hashlib

    assert hashlib.sha256(LONG.encode()).hexdigest()[:16] in checked.result
    # the store keeps the arguments as the model sent them: the reference, not the value
    assert json.loads(store.get(ctx.thread_id, "c2").tool_args) == {"text": ref}


def test_unboxing_walks_nested_arguments_but_not_substrings() -> None:
    values = {"abcdefgh12": "VALUE"}
    args = {
        "a": "internal://abcdefgh12",
        "b": ["x", {"c": "internal://abcdefgh12"}],
        "d": "see internal://abcdefgh12",
    }
    out = unbox_arguments(args, values.__getitem__)
    assert out == {"a": "VALUE", "b": ["x", {"c": "VALUE"}], "d": "see internal://abcdefgh12"}
    assert find_references(args) == ["abcdefgh12", "abcdefgh12"]
    assert (
        reference_id({"type": "resource_link", "uri": "internal://abcdefgh12", "name": "n"})
        == "abcdefgh12"
    )
    assert (
        reference_id("INTERNAL://abcdefgh12") is None
        and reference_id("internal:/abcdefgh12") is None
    )


@pytest.mark.parametrize(
    ("make_ref", "reason"),
    [
        (lambda other: other, "belongs to another thread"),
        (lambda other: "internal://AAAAAAAAAAAAAAAA", "unknown opaque reference"),
        (lambda other: "internal://not a ref!", "malformed opaque reference"),
        (lambda other: other[:-16] + "x", "malformed opaque reference"),
    ],
)
def test_bad_references_are_refused_and_the_tool_does_not_run(store, make_ref, reason) -> None:
    policy = BoxPolicy()
    other = _run(
        policy, _ctx(store, "thread_other"), "c0", "yt_transcribe", {"video_id": "123"}
    ).result
    ctx = _ctx(store, "thread_mine")
    rec = _run(
        policy,
        ctx,
        "c1",
        "google_drive_write_file",
        {"file_name": "leak.txt", "file_content": make_ref(other)},
    )
    assert rec.result_kind == "error" and not rec.ran
    assert reason in json.loads(rec.result)["error"]
    assert store.get(ctx.thread_id, "c1") is None
    from helpers.base.paths import outbox_dir

    assert not (outbox_dir() / "leak.txt").exists()


def test_references_survive_a_restart_of_the_store(db_url) -> None:
    policy = BoxPolicy()
    first = ToolOutputStore(db_url)
    ref = _run(policy, _ctx(first, "thread_r"), "c1", "yt_transcribe", {"video_id": "123"}).result
    first.close()
    again = ToolOutputStore(db_url)
    rec = _run(policy, _ctx(again, "thread_r"), "c2", "deep_check", {"text": ref})
    assert f"received {len(LONG)} chars" in rec.result


# -- resolve tools ------------------------------------------------------------------------------

TEXT = "\n".join(f"line {i}: {'img' if i % 10 == 3 else 'text'}" for i in range(40))


@pytest.fixture
def ref(store):
    row = store.log_tool("thread_a", "c_text", "x", {}, TEXT)
    return f"internal://{row.ref_id}"


def _resolve(store, name, **args):
    policy = BoxPolicy()
    rec = _run(policy, _ctx(store), f"r_{name}_{len(args)}_{hash(str(args))}", name, args)
    assert rec.result_kind in ("inline", "error")
    return rec.result


def test_length_and_slices(store, ref) -> None:
    assert json.loads(_resolve(store, "internal_resource_length", opaque_reference=ref)) == {
        "length_chars": len(TEXT)
    }
    assert (
        _resolve(
            store, "internal_resource_read_slice", opaque_reference=ref, start_index=0, length=6
        )
        == "line 0"
    )
    assert (
        _resolve(
            store, "internal_resource_read_slice", opaque_reference=ref, start_index=-7, length=7
        )
        == TEXT[-7:]
    )
    assert (
        _resolve(
            store,
            "internal_resource_read_slice",
            opaque_reference=ref,
            start_index=-10_000,
            length=4,
        )
        == "line"
    )
    assert (
        _resolve(
            store,
            "internal_resource_read_slice",
            opaque_reference=ref,
            start_index=10_000,
            length=4,
        )
        == ""
    )
    assert (
        _resolve(
            store, "internal_resource_read_slice", opaque_reference=ref, start_index=5, length=0
        )
        == ""
    )
    err = _resolve(
        store, "internal_resource_read_slice", opaque_reference=ref, start_index=0, length=-1
    )
    assert "length must be between" in json.loads(err)["error"]


def test_read_lines(store, ref) -> None:
    assert (
        _resolve(
            store, "internal_resource_read_lines", opaque_reference=ref, start_line=0, line_count=2
        )
        == "line 0: text\nline 1: text"
    )
    assert (
        _resolve(
            store, "internal_resource_read_lines", opaque_reference=ref, start_line=-1, line_count=5
        )
        == "line 39: text"
    )
    assert (
        _resolve(
            store,
            "internal_resource_read_lines",
            opaque_reference=ref,
            start_line=100,
            line_count=5,
        )
        == ""
    )
    assert (
        _resolve(
            store,
            "internal_resource_read_lines",
            opaque_reference=ref,
            start_line=-100,
            line_count=1,
        )
        == "line 0: text"
    )
    assert "line_count must be" in _resolve(
        store, "internal_resource_read_lines", opaque_reference=ref, start_line=0, line_count=-1
    )


def test_grep_windows_merge_and_number_lines_from_one(store, ref) -> None:
    out = _resolve(store, "internal_resource_grep", opaque_reference=ref, pattern=r"img", window=1)
    assert out.startswith("Lines 3-5:\n3: line 2: text\n4: line 3: img\n5: line 4: text")
    assert out.count("Lines ") == 4
    merged = _resolve(
        store, "internal_resource_grep", opaque_reference=ref, pattern=r"line (3|5):", window=1
    )
    assert (
        merged
        == "Lines 3-7:\n3: line 2: text\n4: line 3: img\n5: line 4: text\n6: line 5: text\n7: line 6: text"
    )
    assert (
        _resolve(store, "internal_resource_grep", opaque_reference=ref, pattern="zzz", window=0)
        == "No matches found."
    )
    assert "invalid regular expression" in _resolve(
        store, "internal_resource_grep", opaque_reference=ref, pattern="(", window=0
    )
    assert "window must be" in _resolve(
        store, "internal_resource_grep", opaque_reference=ref, pattern="x", window=-1
    )


def test_read_and_resolve_errors(store, ref) -> None:
    assert _resolve(store, "internal_resource_read", opaque_reference=ref) == TEXT
    assert "is not an opaque reference" in _resolve(
        store, "internal_resource_read", opaque_reference="hello"
    )
    assert "unknown opaque reference" in _resolve(
        store, "internal_resource_read", opaque_reference="internal://ZZZZZZZZZZZZZZZZ"
    )


def test_resolve_results_are_never_boxed(store, ref) -> None:
    policy = BoxPolicy(threshold=10)
    rec = _run(policy, _ctx(store), "c_read", "internal_resource_read", {"opaque_reference": ref})
    assert rec.result == TEXT and rec.result_kind == "inline"


def test_make_policy_switch() -> None:
    assert isinstance(build_policy("inline"), InlinePolicy)
    assert build_policy("truncate", limit_chars=100).limit == 100
    assert build_policy("box", threshold=10, boxing="json").boxing == "json"
    with pytest.raises(ValueError, match="strategy must be one of"):
        build_policy("zip")
    with pytest.raises(ValueError):
        BoxPolicy(boxing="xml")
    with pytest.raises(ReferenceRefused):
        reference_id("internal://bad id")
