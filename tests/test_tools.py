"""The real tools on real data, the schema registry and the token counts."""

from __future__ import annotations

import json
from typing import Literal

import pytest

from helpers.text.tokens import count_chat_tokens, count_tokens, encoding
from helpers.tooling.outbox import read_outbox
from helpers.tooling.registry import (
    ToolArgumentError,
    ToolContext,
    ToolRegistry,
    tool_from_function,
)
from helpers.tooling.tools import (
    deep_check,
    get_page,
    google_drive_write_file,
    registry,
    run_sql,
    yt_transcribe,
)


def test_transcripts() -> None:
    long, short = yt_transcribe("123"), yt_transcribe("999")
    assert len(short) < 256 and len(long) > 8_000
    assert long == yt_transcribe("123") and long != yt_transcribe("124")
    assert long.split()[-1].isdigit()


def test_deep_check_proves_what_it_got() -> None:
    assert "received 5 chars (6 bytes UTF-8)" in deep_check("héllo")


def test_drive_writes_byte_exact_files_and_refuses_paths() -> None:
    text = "line\r\nzwei 🧪\n"
    assert "13 chars, 16 bytes" in google_drive_write_file("t.txt", text)
    assert read_outbox("t.txt") == text
    for bad in ("../escape.txt", "/etc/passwd", "a/b.txt", ""):
        with pytest.raises(ValueError, match="plain file name"):
            google_drive_write_file(bad, "x")


def test_pages_are_real_offline_html() -> None:
    idle = get_page("https://docs.python.org/3/library/idle.html")
    assert len(idle) > 50_000 and idle.count("<img") == 3
    page = get_page("https://docs.python.org/3/library/sqlite3.html")
    assert "Python: package sqlite3" in page or "Python: module sqlite3" in page
    assert len(get_page("https://example.com/")) < 256
    with pytest.raises(LookupError, match="404"):
        get_page("https://example.org/missing")


def test_run_sql_reads_real_rows_and_refuses_writes() -> None:
    data = json.loads(run_sql("SELECT alpha_3, name FROM countries WHERE alpha_2 = 'NO'"))
    assert data == {
        "columns": ["alpha_3", "name"],
        "rows": [["NOR", "Norway"]],
        "row_count": 1,
        "truncated": False,
    }
    assert json.loads(run_sql("SELECT count(*) FROM countries"))["rows"][0][0] >= 249
    capped = json.loads(run_sql("SELECT code FROM subdivisions", max_rows=7))
    assert capped["row_count"] == 7 and capped["truncated"] is True
    for bad in (
        "DELETE FROM countries",
        "INSERT INTO meta VALUES ('a','b')",
        "DROP TABLE countries",
        "PRAGMA journal_mode=DELETE",
        "ATTACH DATABASE 'x.db' AS x",
        "SELECT 1; SELECT 2",
        "SELEC nonsense",
    ):
        assert "error" in json.loads(run_sql(bad)), bad
    assert "error" in json.loads(run_sql("SELECT 1", max_rows=0))
    assert (
        json.loads(run_sql("SELECT count(*) FROM countries"))["rows"][0][0] >= 249
    )  # nothing was deleted


def test_schemas_come_from_hints_and_docstrings() -> None:
    schema = {t["function"]["name"]: t["function"] for t in registry.schemas()}
    sql = schema["run_sql"]["parameters"]
    assert sql["required"] == ["query"] and sql["properties"]["max_rows"] == {
        "type": "integer",
        "description": "the most rows to return (1-10000).",
        "default": 50,
    }
    assert schema["deep_check"]["description"].startswith("Run a deep analysis")


def test_argument_checks() -> None:
    def add(a: int, b: float = 1.0, tags: list[str] | None = None) -> int:
        """Add.

        Args:
            a: first.
        """
        return a

    tool = tool_from_function(add)
    assert tool.parameters["properties"]["tags"]["type"] == "array"
    assert tool.call({"a": 2}) == "2"
    assert tool.call({"a": 2, "b": 3, "tags": None}) == "2"  # an int is a float; None optional
    with pytest.raises(ToolArgumentError, match="must be integer, got bool"):
        tool.call({"a": True})
    with pytest.raises(ToolArgumentError, match="missing required"):
        tool.call({})
    with pytest.raises(TypeError, match="needs a type hint"):
        tool_from_function(lambda x: x)
    assert "add" in ToolRegistry([tool])


def test_a_bad_call_is_named_in_the_words_of_the_schema() -> None:
    """pydantic checks a Python tool's arguments (strict: no coercion); each problem is said in
    the schema's terms, all of them at once, missing and unexpected first."""

    def pick(a: int, mode: Literal["length", "slice"] = "length", tags: list[str] | None = None):
        """Pick."""
        return a

    tool = tool_from_function(pick)

    def refusal(arguments: object) -> str:
        with pytest.raises(ToolArgumentError) as refused:
            tool.check_arguments(arguments)
        return str(refused.value)

    assert refusal({"a": 1.0}) == "pick: argument 'a' must be integer, got float"
    assert refusal({"mode": "all", "tags": "x", "b": 1}) == (
        "pick: missing required argument(s): a; unexpected argument(s): b (accepted: a, mode, "
        "tags); argument 'mode' must be one of 'length', 'slice', got 'all'; argument 'tags' "
        "must be array, got str"
    )
    assert refusal({"a": 1, "tags": ["x", 2]}) == (
        "pick: argument 'tags'[1]: Input should be a valid string"
    )
    assert refusal([1]) == "pick takes a JSON object of arguments, got list"
    assert refusal({"a": 1, "mode": "x" * 1_000}).endswith("got '" + "x" * 78 + "…")


def _made_per_turn(default: object, doc: str | None = None):
    """A tool function as a policy makes one for each turn: a closure, its default and
    docstring the turn's."""

    def look(ref: str, count: int = default) -> str:  # type: ignore[assignment]
        """Look.

        Args:
            ref: the reference.
        """
        return ref

    if doc is not None:
        look.__doc__ = doc
    return look


def test_a_function_is_described_as_afresh_whatever_was_described_before() -> None:
    """tool_from_function remembers what a shape of function gives (a policy's closures are
    made again each turn); each thing it reads still counts: the default and its type (1 and
    True are equal keys, not equal defaults), the docstring (tool_search writes its own), the
    annotations, and a tool's schema is its own to edit."""
    from helpers.tooling.registry import _describe

    first, again = tool_from_function(_made_per_turn(5)), tool_from_function(_made_per_turn(5))
    assert first.parameters == again.parameters and first.parameters is not again.parameters
    first.parameters["properties"]["count"]["default"] = 99  # a caller edits its copy
    assert tool_from_function(_made_per_turn(5)).parameters["properties"]["count"]["default"] == 5
    for default in (1, True, 1.0, "1", None):
        fn = _made_per_turn(default)
        tool = tool_from_function(fn)
        fresh = _describe(fn)
        assert tool.parameters == fresh.parameters and tool.description == fresh.description
        assert type(tool.parameters["properties"]["count"]["default"]) is type(default)
    renamed = _made_per_turn(5, doc="Find.\n\nArgs:\n    ref: what to find.")
    assert tool_from_function(renamed).description == "Find."
    assert tool_from_function(renamed).parameters["properties"]["ref"]["description"] == (
        "what to find."
    )
    retyped = _made_per_turn(5)
    retyped.__annotations__ = {**retyped.__annotations__, "count": "float"}
    assert tool_from_function(retyped).parameters["properties"]["count"]["type"] == "number"
    unhashable = _made_per_turn([1])  # a default that cannot be a key: described afresh
    assert tool_from_function(unhashable).parameters["properties"]["count"]["default"] == [1]
    for first, then in (((1,), (True,)), (0.0, -0.0), (frozenset({1}), frozenset({True}))):
        tool_from_function(_made_per_turn(first))
        default = tool_from_function(_made_per_turn(then)).parameters["properties"]["count"]
        assert repr(default["default"]) == repr(then)


NOTEBOOK_CELL = '''
from __future__ import annotations
from pydantic import BaseModel
class Q(BaseModel):
    a: int
def make():
    def find(q: Q) -> str:
        """Find."""
        return ""
    return find
'''


def test_what_a_namespace_can_rebind_or_a_method_hides_is_described_afresh() -> None:
    """A function of a notebook's namespace (its annotations' text names a class a cell can
    define again) and a bound method (whose signature drops its first parameter) are never
    taken for another shape of the same code."""
    import types

    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(NOTEBOOK_CELL, namespace)
    before = tool_from_function(namespace["make"]())  # type: ignore[operator]
    exec("class Q(BaseModel):\n    b: str\n", namespace)  # the cell run again
    after = tool_from_function(namespace["make"]())  # type: ignore[operator]
    assert '"a"' in json.dumps(before.parameters) and '"b"' in json.dumps(after.parameters)

    def look(ctx: ToolContext, query: str) -> str:
        """Look."""
        return query

    assert tool_from_function(look).takes_context
    bound = tool_from_function(types.MethodType(look, "a context"))
    assert not bound.takes_context and list(bound.parameters["properties"]) == ["query"]
    assert bound.call({"query": "q"}) == "q"


def test_schemas_are_pydantics_in_the_shape_the_model_has_always_read() -> None:
    """The JSON Schema is pydantic's for the parameters, with no ``title``, keys in the order
    they always had (every byte is in each request's prompt), ``X | None`` offered as ``X``, a
    ``Literal`` as ``type`` and ``enum``; a parameter may have any name; a type pydantic cannot
    describe is refused when the tool is made."""

    def shape(
        json: str,
        schema: Literal["x"] = "x",
        model_config: dict | None = None,
        many: list[int] | None = None,
    ) -> str:
        """Shape.

        Args:
            json: a text.
        """
        return json

    assert tool_from_function(shape).parameters == {
        "type": "object",
        "properties": {
            "json": {"type": "string", "description": "a text."},
            "schema": {"type": "string", "enum": ["x"], "default": "x"},
            "model_config": {"type": "object", "default": None},
            "many": {"type": "array", "items": {"type": "integer"}, "default": None},
        },
        "required": ["json"],
        "additionalProperties": False,
    }
    internal = [json.dumps(t["function"]["parameters"]) for t in registry.schemas()]
    assert not any('"title"' in text for text in internal)
    sql = registry.get("run_sql").parameters["properties"]["max_rows"]
    assert list(sql) == ["type", "description", "default"]

    class Opaque:
        pass

    def odd(thing: object) -> str:
        """Odd."""
        return ""

    odd.__annotations__["thing"] = Opaque  # a class of this test (the module's are strings)
    with pytest.raises(TypeError, match="odd: "):
        tool_from_function(odd)


def test_token_counts_are_real_o200k() -> None:
    assert encoding().name == "o200k_base"
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
    one = count_chat_tokens([{"role": "user", "content": "hello world"}])
    assert one == 3 + 1 + 2 + 3  # framing + role + content + reply priming


def test_a_calls_arguments_are_checked_once_of_each_kind(store, monkeypatch) -> None:
    """One call through the turn (:func:`helpers.loop.dispatch.dispatch`), of a Python tool
    (pydantic) and of a server's tool (jsonschema). Before any policy reads the store, its
    shape is checked (a reference counted as the string it stands for: a server's schema's
    names and JSON types, a Python tool's pydantic check); after the policy, the values the
    tool gets are checked in full, once (a policy may have rewritten them, even in place). The
    tool's own run checks nothing more (it used to check again, after the turn had)."""
    from helpers.context.strategies import build_policy
    from helpers.loop.dispatch import dispatch
    from helpers.tooling import argument_checks
    from helpers.tooling import registry as registry_module
    from helpers.tooling.argument_checks import shape_of
    from helpers.tooling.registry import Tool, ToolContext

    def echo(text: str) -> str:
        """Echo."""
        return f"got {len(text)}"

    seen: list[object] = []  # each value pydantic checked
    real_problems = registry_module.function_problems

    def counting_problems(model, arguments, parameters):  # type: ignore[no-untyped-def]
        seen.append(arguments.get("text"))
        return real_problems(model, arguments, parameters)

    schemas: list[object] = []  # each schema jsonschema checked against
    real_run = argument_checks._run

    def counting_run(validator, instance, steps):  # type: ignore[no-untyped-def]
        schemas.append(validator.schema)
        return real_run(validator, instance, steps)

    monkeypatch.setattr(registry_module, "function_problems", counting_problems)
    monkeypatch.setattr(argument_checks, "_run", counting_run)
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "minLength": 1}},
        "required": ["text"],
    }
    value = "v" * 3_000
    ref = "internal://" + store.log_tool("t-once", "call_src", "src", "{}", value).ref_id
    ctx = ToolContext(store=store, thread_id="t-once")

    def checked(tool: Tool, strategy: str, text: str) -> None:
        seen.clear()
        schemas.clear()
        policy = build_policy(strategy)
        tools = ToolRegistry([tool]).merged(policy.internal_tools())
        raw = json.dumps({"text": text})
        record = dispatch(f"call_{tool.name}_{strategy}", tool.name, raw, tools, policy, ctx)
        assert record.ran and record.result == "got 3000", record.result

    python_tool = tool_from_function(echo)
    server_tool = Tool("srv_echo", "a server's tool", schema, fn=echo, server="srv")
    checked(python_tool, "inline", value)
    assert seen == [value, value] and schemas == []  # before the policy, and after it
    checked(server_tool, "inline", value)
    assert seen == [] and schemas == [shape_of(schema), schema]  # two checks, each once
    # box: the reference's shape before anything is unboxed, then the value, once
    checked(python_tool, "box", ref)
    assert seen == [ref, value]
    checked(server_tool, "box", ref)
    assert schemas == [shape_of(schema), schema]


def test_a_policy_that_rewrites_arguments_in_place_cannot_skip_the_check(store) -> None:
    """A policy (an attendee's, say) that changes the arguments dict in place and hands back
    the same object: the tool does not run on what the model never sent in that type; the call
    is refused with the check's words."""
    from helpers.context.policies import Prepared, ResultPolicy
    from helpers.loop.dispatch import dispatch
    from helpers.tooling.registry import ToolContext

    ran: list[object] = []

    def shout(text: str) -> str:
        """Shout."""
        ran.append(text)
        return text.upper()

    class InPlace(ResultPolicy):
        def prepare_arguments(self, ctx, tool, arguments, turn=None):  # type: ignore[no-untyped-def]
            arguments["text"] = 12345
            return Prepared(arguments)

    tools = ToolRegistry([tool_from_function(shout)])
    ctx = ToolContext(store=store, thread_id="t-in-place")
    record = dispatch("call_in_place", "shout", '{"text": "hi"}', tools, InPlace(), ctx)
    assert not record.ran and ran == []
    assert "text" in record.result and "string" in record.result, record.result
