"""Bad input gets a clear error and loses nothing: tool calls, references, resolve tools, SQL."""

from __future__ import annotations

import json

import pytest

from helpers.context.policies import BoxPolicy
from helpers.context.resolve_tools import MAX_GREP_OUTPUT_LINES
from helpers.loop.dispatch import MAX_ARGUMENTS_CHARS, dispatch
from helpers.tooling.registry import ToolContext
from helpers.tooling.tools import default_registry, run_sql

POLICY = BoxPolicy()
TOOLS = default_registry().merged(POLICY.internal_tools())


def _call(store, name, arguments, thread="thread_h", call_id="call_h"):
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return dispatch(call_id, name, raw, TOOLS, POLICY, ToolContext(store=store, thread_id=thread))


def _error(record) -> str:
    assert record.result_kind == "error", record.result
    return json.loads(record.result)["error"]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("deep_check", '{"text": ', "malformed JSON arguments"),
        ("deep_check", '"just a string"', "JSON object of arguments"),
        ("deep_check", {"text": 42}, "argument 'text' must be string, got int"),
        ("deep_check", {}, "missing required argument(s): text"),
        ("deep_check", {"text": "x", "extra": 1}, "unexpected argument(s): extra"),
        ("run_sql", {"query": "SELECT 1", "max_rows": "ten"}, "must be integer"),
        ("no_such_tool", {}, "unknown tool 'no_such_tool'"),
    ],
)
def test_bad_tool_calls_name_the_problem(store, name, arguments, message) -> None:
    assert message in _error(_call(store, name, arguments))


def test_huge_arguments_are_refused_before_parsing(store) -> None:
    record = _call(store, "deep_check", {"text": "x" * 10_000_000})
    assert f"over the limit of {MAX_ARGUMENTS_CHARS:,}" in _error(record) and not record.ran


@pytest.fixture
def ref(store):
    value = "\n".join(f"line {i} " + ("a" * 60) for i in range(20_000))
    row = store.log_tool("thread_h", "call_value", "x", {}, value)
    return f"internal://{row.ref_id}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("internal://short", "malformed opaque reference"),
        ("internal://" + "A" * 65, "malformed opaque reference"),
        ("internal://AAAAAAAAAAAAAAAAAAAA", "unknown opaque reference"),
        (" internal://AAAAAAAAAAAAAAAA\n", "unknown opaque reference"),  # wrapped in whitespace
        ('{"type": "resource_link", "uri": "internal://bad id!", "name": "n"}', "malformed"),
    ],
)
def test_bad_references_refuse_with_a_reason(store, text, message) -> None:
    record = _call(store, "deep_check", {"text": text})
    assert message in _error(record) and not record.ran


@pytest.mark.parametrize(
    "text",
    [
        "INTERNAL://AAAAAAAAAAAAAAAA",
        "internal:/AAAAAAAAAAAAAAAA",
        "internal//AAAAAAAAAAAAAAAA",
        "see internal://AAAAAAAAAAAAAAAA",  # inside text, and not a reference of this thread
    ],
)
def test_look_alike_schemes_are_plain_text(store, text) -> None:
    record = _call(store, "deep_check", {"text": text})
    assert record.result_kind == "inline" and f"received {len(text)} chars" in record.result


def test_a_truncated_reference_is_refused(store, ref) -> None:
    assert "unknown opaque reference" in _error(_call(store, "deep_check", {"text": ref[:-1]}))


def test_resolve_tool_edge_cases(store, ref) -> None:
    def slice_(start, length):
        return _call(
            store,
            "internal_resource_read_slice",
            {"opaque_reference": ref, "start_index": start, "length": length},
        )

    assert slice_(0, 0).result == "" and slice_(10**12, 5).result == ""
    assert "length must be between" in _error(slice_(0, -1))
    assert "length must be between" in _error(slice_(0, 10**9))
    lines = _call(
        store,
        "internal_resource_read_lines",
        {"opaque_reference": ref, "start_line": -2, "line_count": 10**9},
    )
    assert lines.result.startswith("line 19998 ")
    assert "line_count must be" in _error(
        _call(
            store,
            "internal_resource_read_lines",
            {"opaque_reference": ref, "start_line": 0, "line_count": -5},
        )
    )


def test_empty_values_resolve_to_empty(store) -> None:
    row = store.log_tool("thread_h", "call_empty", "x", {}, "")
    ref = f"internal://{row.ref_id}"
    assert _call(store, "internal_resource_read", {"opaque_reference": ref}).result == ""
    assert (
        _call(
            store, "internal_resource_grep", {"opaque_reference": ref, "pattern": "x", "window": 0}
        ).result
        == "No matches found."
    )


def test_grep_rejects_what_re2_cannot_run_and_says_why(store, ref) -> None:
    for pattern in ("(", r"(a)\1", "(?=a)"):
        message = _error(
            _call(
                store,
                "internal_resource_grep",
                {"opaque_reference": ref, "pattern": pattern, "window": 0},
            )
        )
        assert "invalid regular expression" in message and "RE2" in message


def test_catastrophic_pattern_finishes_on_a_large_value(store, ref) -> None:
    # (a+)+$ backtracks exponentially in Python's re; RE2 runs it in linear time
    record = _call(
        store,
        "internal_resource_grep",
        {"opaque_reference": ref, "pattern": "(a+)+b$", "window": 0},
    )
    assert record.result == "No matches found."


def test_grep_output_is_capped_and_says_so(store, ref) -> None:
    out = _call(
        store, "internal_resource_grep", {"opaque_reference": ref, "pattern": "line", "window": 0}
    ).result
    assert f"stopped after {MAX_GREP_OUTPUT_LINES} lines of output" in out
    assert out.count("\n") < MAX_GREP_OUTPUT_LINES + 20


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM countries",
        "UPDATE countries SET name = 'x'",
        "INSERT INTO meta VALUES ('a', 'b')",
        "DROP TABLE countries",
        "CREATE TABLE t (x)",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA query_only = 0",
        "ATTACH DATABASE ':memory:' AS other",
        "SELECT 1; DELETE FROM countries",
        "VACUUM",
    ],
)
def test_run_sql_refuses_anything_but_reading(query) -> None:
    assert "error" in json.loads(run_sql(query))
    assert json.loads(run_sql("SELECT count(*) FROM countries"))["rows"][0][0] >= 249


def test_run_sql_enforces_max_rows() -> None:
    for bad in (0, -1, 10_001):
        assert "max_rows must be between" in json.loads(run_sql("SELECT 1", max_rows=bad))["error"]
    data = json.loads(run_sql("SELECT code FROM subdivisions", max_rows=1000))
    assert data["row_count"] == 1000 and data["truncated"] is True
