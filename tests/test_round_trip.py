"""Round trips on hostile text: box → store → unbox → tool, byte for byte (hypothesis)."""

from __future__ import annotations

import hashlib
import json
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devtools.bench import round_trip_tools
from helpers.context.policies import BoxPolicy
from helpers.context.resolve_tools import internal_resource_read_slice
from helpers.loop.dispatch import dispatch
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.registry import ToolContext

# Any Unicode text but lone surrogates (not encodable as UTF-8), weighted towards the awkward:
# NUL, CR/LF, combining marks, astral-plane characters.
AWKWARD = st.sampled_from(
    ["\x00", "\r\n", "\r", "\u0301", "\u200d", "𝔘", "🧪", "\ufeff", "\\", '"']
)
TEXT = st.lists(st.one_of(AWKWARD, st.characters(exclude_categories=("Cs",))), max_size=400).map(
    "".join
)


def _round_trip(store: ToolOutputStore, value: str, thread: str, call: str) -> str:
    produced, received = {"v": value}, []
    policy = BoxPolicy(threshold=0)  # box everything longer than 0 characters
    tools = round_trip_tools(produced, received).merged(policy.internal_tools())
    ctx = ToolContext(store=store, thread_id=thread)
    boxed = dispatch(f"{call}_p", "produce", '{"key": "v"}', tools, policy, ctx)
    if value:
        assert boxed.result_kind == "boxed"
    consumed = dispatch(
        f"{call}_c", "consume", json.dumps({"text": boxed.result}), tools, policy, ctx
    )
    assert consumed.ran and consumed.result_kind != "error", consumed.result
    return received[0]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=TEXT, data=st.data())
def test_hostile_text_round_trips_byte_exact(store, value, data) -> None:
    call = "call_" + uuid.uuid4().hex
    got = _round_trip(store, value, "thread_rt", call)
    assert got == value
    assert got.encode("utf-8") == value.encode("utf-8")
    if value:  # and any slice of it, through the resolve tool, is Python's slice
        row = store.get("thread_rt", f"{call}_p")
        start = data.draw(st.integers(-len(value) - 3, len(value) + 3))
        length = data.draw(st.integers(0, len(value) + 3))
        ctx = ToolContext(store=store, thread_id="thread_rt")
        expected = value[max(len(value) + start, 0) if start < 0 else start :][:length]
        assert (
            internal_resource_read_slice(ctx, f"internal://{row.ref_id}", start, length) == expected
        )


def test_fifty_megabytes_round_trip(store) -> None:
    line = "0123456789 ünïcödé 🧪 CRLF\r\n"
    value = line * (50_000_000 // len(line.encode("utf-8")))
    assert len(value.encode("utf-8")) > 49_000_000
    got = _round_trip(store, value, "thread_big", "call_big")
    assert hashlib.sha256(got.encode()).digest() == hashlib.sha256(value.encode()).digest()
