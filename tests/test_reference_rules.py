"""The unboxing rules for references as models write them (helpers/context/boxing.py), on a real store:
wrapped references resolve, references inside text are refused, look-alikes stay text."""

from __future__ import annotations

import json

import pytest

from helpers.context.boxing import (
    EmbeddedReference,
    MalformedReference,
    canonical_reference,
    embedded_reference_ids,
    reference_id,
    unwrap_reference,
)
from helpers.context.policies import BoxPolicy, TruncatePolicy
from helpers.context.preview import make_preview
from helpers.loop.dispatch import dispatch
from helpers.tooling.registry import ToolContext
from helpers.tooling.tools import default_registry

REF = "internal://AbCdEfGh12345678"


@pytest.mark.parametrize(
    "text",
    [
        REF,
        f"`{REF}`",
        f"``{REF}``",
        f"```\n{REF}\n```",
        f'"{REF}"',
        f"'{REF}'",
        f"<{REF}>",
        f"\u201c{REF}\u201d",
        f"  {REF}\n",
        f'"`{REF}`"',
        f"{REF}.",
        f"`{REF}`.",
    ],
)
def test_wrappers_are_stripped(text) -> None:
    assert unwrap_reference(text) == REF and reference_id(text) == "AbCdEfGh12345678"
    assert canonical_reference(text) == REF


@pytest.mark.parametrize(
    "text",
    [f"see {REF}", f"{REF} and more", f"`{REF}", f"[{REF}]({REF})", "internal:/AbCdEfGh12345678"],
)
def test_text_around_a_reference_is_not_a_whole_reference(text) -> None:
    assert unwrap_reference(text) is None and reference_id(text) is None
    assert embedded_reference_ids(text)[0] == "AbCdEfGh12345678"


def test_malformed_and_resource_links() -> None:
    with pytest.raises(MalformedReference):
        reference_id("internal://short")
    with pytest.raises(MalformedReference):
        reference_id("internal://not a ref!")
    link = {"type": "resource_link", "uri": f" `{REF}` ", "name": "n"}
    assert reference_id(link) == "AbCdEfGh12345678" and canonical_reference(link) == REF
    assert reference_id(json.dumps(link)) == "AbCdEfGh12345678"
    assert canonical_reference({"type": "text", "text": REF}) == {"type": "text", "text": REF}
    assert embedded_reference_ids("INTERNAL:///AbCdEfGh12345678 x") == ["AbCdEfGh12345678"]


@pytest.fixture
def box(store):
    policy = BoxPolicy()
    tools = default_registry().merged(policy.internal_tools())
    value = "line\n" * 100
    mine = store.log_tool("thread_r", "call_src", "x", {}, value)
    theirs = store.log_tool("thread_other", "call_src", "x", {}, "other value " * 40)

    def call(name: str, arguments: dict, call_id: str = "call_x"):
        ctx = ToolContext(store=store, thread_id="thread_r")
        return dispatch(call_id, name, json.dumps(arguments), tools, policy, ctx)

    return call, f"internal://{mine.ref_id}", f"internal://{theirs.ref_id}", value


def test_embedded_references_of_this_thread_are_refused_anywhere(box) -> None:
    call, ref, their_ref, _ = box
    for arguments in (
        {"text": f"Please analyse {ref}"},
        {"text": ref.replace("internal://", "Internal://")},
        {"text": ref.replace("internal://", "internal:/")},
    ):
        record = call("deep_check", arguments)
        error = json.loads(record.result)["error"]
        assert not record.ran and record.guards == ["refused_embedded_reference"]
        assert f'pass "{ref}" alone' in error
    nested = call("google_drive_write_file", {"file_name": "a.txt", "file_content": f"[{ref}]"})
    assert not nested.ran and "file_content" in json.loads(nested.result)["error"]
    # another thread's reference inside text is text: it reveals nothing and resolves nothing
    text = f"compare with {their_ref}"
    other = call("deep_check", {"text": text})
    assert other.ran and f"received {len(text)} chars" in other.result


def test_the_refusal_is_an_exception_the_policy_raises(store) -> None:
    row = store.log_tool("thread_e", "call_1", "x", {}, "v" * 300)
    ctx = ToolContext(store=store, thread_id="thread_e")
    tool = default_registry().get("deep_check")
    with pytest.raises(EmbeddedReference):
        BoxPolicy().prepare_arguments(ctx, tool, {"text": f"x internal://{row.ref_id} y"})


def test_wrapped_and_linked_references_in_resolve_tools(box) -> None:
    call, ref, their_ref, value = box
    for given in (f'"{ref}"', {"type": "resource_link", "uri": ref, "name": "n"}):
        record = call("internal_resource_length", {"opaque_reference": given})
        assert json.loads(record.result) == {"length_chars": len(value)}
        assert record.guards == ["reference_unwrapped"]
    foreign = call(
        "internal_resource_read_slice",
        {"opaque_reference": their_ref, "start_index": 0, "length": 5},
    )
    assert not foreign.ran and foreign.guards == ["refused_foreign_reference"]
    plain = call("internal_resource_read", {"opaque_reference": "the transcript"})
    assert not plain.ran and "not an opaque reference" in plain.result


def test_a_preview_is_refused_only_with_a_marker_of_this_thread(store) -> None:
    policy = TruncatePolicy(limit=50)
    tools = default_registry().merged(policy.internal_tools())
    ctx = ToolContext(store=store, thread_id="thread_t")
    store.log_tool("thread_t", "call_long", "x", {}, "y" * 500)
    preview = make_preview("y" * 500, "call_long", 50)

    def run(text: str):
        return dispatch("call_n", "deep_check", json.dumps({"text": text}), tools, policy, ctx)

    refused = run(preview)
    assert not refused.ran and refused.guards == ["refused_preview_as_value"]
    assert "fetch_tool_output(tool_call_id='call_long')" in json.loads(refused.result)["error"]
    assert not run(f"Summary of: {preview} (end)").ran  # a marker inside more text, too
    elsewhere = make_preview("z" * 500, "call_of_another_thread", 50)
    assert run(elsewhere).ran  # a marker naming no call of this thread is only text
    fetched = dispatch(
        "call_f",
        "fetch_tool_output",
        json.dumps({"tool_call_id": "'call_long'"}),  # quoted as a model might
        tools,
        policy,
        ctx,
    )
    assert json.loads(fetched.result)["tool_output"] == "y" * 500
    invented = dispatch(
        "call_g", "fetch_tool_output", json.dumps({"tool_call_id": "call_1"}), tools, policy, ctx
    )
    assert not invented.ran and invented.guards == ["refused_unknown_tool_call_id"]
