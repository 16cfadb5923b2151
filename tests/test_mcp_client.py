"""The agent as an MCP client, against servers written with the official SDK.

``tests/mcp/relay_server.py`` is a small server of the kind an agent meets: a report behind a
resource link, a fingerprint of the exact text received, binary and structured content, an
error, and the ways a server fails (it dies, hangs, answers with too much). The workbook's own
``workbook mcp-server`` serves case1's tools. Each runs as a real subprocess over stdio, behind
the client's guard; the model is the offline reference model through the real ``openai``
client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from forked_cli import run_workbook
from hang import HANG_GUARD_S
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import Agent, build_policy, default_registry, offline_client, run_turn
from helpers.base.paths import CASES_DIR
from helpers.cases.case_files import load_cases
from helpers.context.modes import for_mode
from helpers.evaluation.runs import run_case
from helpers.mcp.client import RESERVED_TOOL_NAMES, McpServer, McpServerError, McpServers
from helpers.mcp.content import (
    MAX_LINKS_PER_RESULT,
    McpResultTooLarge,
    McpToolError,
    mcp_result_text,
)
from helpers.mcp.settings import McpConfigError, McpServerSpec, mcp_servers_from_env
from helpers.models.offline import OfflineModel
from helpers.text.redaction import REDACTED, configured_secrets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "mcp"))
from relay_server import fingerprint_of, report_text  # noqa: E402

RELAY = str(ROOT / "tests" / "mcp" / "relay_server.py")
REPORT_PROMPT = "Write a report of 400 lines with make_report, then give it to fingerprint."
REPORT_PLAN = [
    {"call": "make_report", "args": {"lines": 400}},
    {"call": "fingerprint", "args": {"text": {"result": 1}}},
    {"answer": "{result2}"},
]


def relay(**options: Any) -> McpServerSpec:
    return McpServerSpec("relay", sys.executable, (RELAY,), **options)


def workbook_server(db_url: str) -> McpServerSpec:
    """``workbook mcp-server`` as ``.env`` would name it, on this test's store."""
    return McpServerSpec(
        "workbook",
        sys.executable,
        ("-m", "helpers.cli", "mcp-server", "--db", db_url),
        env={"WORKBOOK_VAR_DIR": os.environ["WORKBOOK_VAR_DIR"]},
        cwd=str(ROOT),
        tools=("yt_transcribe", "deep_check"),
    )


@pytest.fixture(scope="module")
def relay_server():
    with McpServer(relay(timeout_s=20)) as server:
        yield server


def tools_of(server: McpServer) -> dict[str, Any]:
    return {tool.name: tool for tool in server.tools}


def turn(server_tools: list[Any], prompt: str, plan: list[dict[str, Any]], store, strategy="box"):
    model = OfflineModel()
    model.add_plan(prompt, plan)
    registry = default_registry().merged(server_tools)
    agent = Agent(
        offline_client(model), "offline-reference", build_policy(strategy), registry, store
    )
    return run_turn(prompt, agent)


# -- which tools join ------------------------------------------------------------------------------


def test_its_tools_join_with_their_own_schemas_and_names_a_function_can_have(relay_server):
    tools = tools_of(relay_server)
    assert {"make_report", "fingerprint", "relay_echo", "picture", "crash"} <= set(tools)
    assert "relay.echo" not in tools  # a dot: offered with _ instead, and said so
    assert any("'relay.echo' is offered as 'relay_echo'" in n for n in relay_server.notes)
    assert "internal_resource_grep" not in tools  # the client's own name: left out, said so
    assert any("'internal_resource_grep' is left out" in n for n in relay_server.notes)
    report = tools["make_report"]
    assert report.server == "relay"
    assert report.parameters["properties"]["lines"]["type"] == "integer"
    assert report.parameters["required"] == ["lines"]
    assert not report.read_only and not report.internal


def test_a_tool_list_and_a_prefix_choose_and_rename_them():
    with McpServer(relay(tools=("fingerprint", "nope"), prefix="r_")) as server:
        assert [t.name for t in server.tools] == ["r_fingerprint"]
        assert any("MCP_RELAY_TOOLS names 'nope'" in n for n in server.notes)
        assert server.tools[0].call({"text": "abc"}) == fingerprint_of("abc")


def test_two_servers_offering_one_name_is_a_setting_to_fix():
    twin = McpServerSpec("twin", sys.executable, (RELAY,), tools=("fingerprint",))
    with pytest.raises(McpConfigError, match="MCP_TWIN_PREFIX"):
        McpServers([relay(tools=("fingerprint",)), twin]).start()


def test_a_servers_tool_is_never_offered_by_a_modes_name_list(relay_server):
    """explore admits the workbook's deep_check by name; a server's tool is not read-only."""
    renamed = [t for t in relay_server.tools if t.name == "fingerprint"]
    as_deep_check = [type(renamed[0])(**{**vars(renamed[0]), "name": "deep_check"})]
    registry = for_mode(default_registry().merged(as_deep_check), "explore")
    assert "deep_check" not in registry.names()
    assert "yt_transcribe" in registry.names()


#: The classic backtracking pattern, and a text that makes Python's ``re`` try every way to
#: split its a's (2**40 of them) before it fails.
HOSTILE_PATTERN = "^(a+)+$"
EVIL_TEXT = "a" * 40 + "b"


def test_a_pattern_in_a_servers_schema_runs_on_re2_and_ends_at_once():
    """A server's backtracking pattern runs on RE2 (linear time): 40 a's and a mark are refused
    in a handful of steps, where jsonschema's own check (Python's ``re``) would not end in a
    lifetime (the hang guard would stop the test); inside a subschema naming its own
    ``$schema`` too (jsonschema switches to its stock validator there) and as a
    ``patternProperties`` key. Types, ``required`` and closed objects are checked as before."""
    from helpers.tooling.argument_checks import check_schema_arguments
    from helpers.tooling.registry import Tool, ToolArgumentError

    hostile = {"type": "string", "pattern": HOSTILE_PATTERN}
    schema = {
        "type": "object",
        "properties": {
            "text": hostile,
            "n": {"type": "integer"},
            "own": {"$schema": "https://json-schema.org/draft/2020-12/schema", **hostile},
            "named": {
                "type": "object",
                "patternProperties": {HOSTILE_PATTERN: {"type": "integer"}},
                "additionalProperties": False,
            },
        },
        "required": ["text"],
    }
    for arguments in ({"text": EVIL_TEXT}, {"text": "a", "own": EVIL_TEXT}):
        check = check_schema_arguments(schema, arguments)
        assert check.finished and check.steps < 50, check  # the work, counted
        assert check.problems[0].endswith("does not match the pattern '^(a+)+$'"), check
    named = check_schema_arguments(schema, {"text": "a", "named": {EVIL_TEXT: 1, "aaa": "x"}})
    assert named.finished and named.steps < 50, named
    assert named.problems == [
        "argument 'named'['aaa']: 'x' is not of type 'integer'",
        f"argument 'named': unexpected properties: {EVIL_TEXT}",
    ]
    tool = Tool("hostile", "a server's tool", schema, fn=lambda **_: "", server="evil")
    with pytest.raises(ToolArgumentError, match=r"hostile: argument 'text': 'a+b' does not match"):
        tool.check_arguments({"text": EVIL_TEXT})
    assert tool.check_arguments({"text": "a" * 5_000, "extra": 1})  # extra: not closed
    with pytest.raises(ToolArgumentError, match="argument 'n' must be integer, got bool"):
        tool.check_arguments({"text": "a", "n": True})
    with pytest.raises(ToolArgumentError, match="missing required argument"):
        tool.check_arguments({"n": 1})


def test_a_servers_schema_that_multiplies_the_work_is_checked_within_its_steps():
    """``anyOf`` of two references to the next level, 40 levels deep (2**40 paths), and an
    ``allOf`` of 16,000 empty schemas under every item of a long array: each check ends at
    :data:`MAX_SCHEMA_STEPS` steps, and the call goes to the server (which must validate its
    inputs) with nothing found, not refused."""
    from helpers.tooling.argument_checks import MAX_SCHEMA_STEPS, check_schema_arguments
    from helpers.tooling.registry import Tool

    levels = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(40)}
    doubling = {
        "type": "object",
        "$defs": {**levels, "d40": {"type": "string"}},
        "properties": {"x": {"$ref": "#/$defs/d0"}},
    }
    empties = {
        "type": "object",
        "properties": {"xs": {"type": "array", "items": {"allOf": [{}] * 16_000}}},
    }
    for schema, arguments in ((doubling, {"x": 1}), (empties, {"xs": [1] * 20_000})):
        check = check_schema_arguments(schema, arguments)
        assert check == type(check)([], MAX_SCHEMA_STEPS, False)
        tool = Tool("costly", "a server's tool", schema, fn=lambda **_: "", server="evil")
        assert tool.check_arguments(arguments) == arguments


def test_no_reference_leaves_a_servers_schema(monkeypatch):
    """A ``$ref`` to a URL is never fetched (jsonschema's default registry would): the call is
    refused saying so; a reference inside the schema is followed."""
    import urllib.request

    from helpers.tooling.registry import Tool, ToolArgumentError

    fetched: list[Any] = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: fetched.append(a))
    schema = {
        "type": "object",
        "$defs": {"word": {"type": "string"}},
        "properties": {
            "remote": {"$ref": "http://127.0.0.1:9/evil.json"},
            "local": {"$ref": "#/$defs/word"},
        },
    }
    tool = Tool("referring", "a server's tool", schema, fn=lambda **_: "", server="evil")
    with pytest.raises(ToolArgumentError, match=r"refers to 'http://127\.0\.0\.1:9/evil\.json'"):
        tool.check_arguments({"remote": 1})
    with pytest.raises(ToolArgumentError, match="argument 'local' must be string, got int"):
        tool.check_arguments({"local": 1})
    assert tool.check_arguments({"local": "w"}) and fetched == []


def test_a_call_that_breaks_a_servers_schema_is_an_error_result_and_never_sent(store):
    """The model's call to a server's tool that its schema refuses (a pattern) is an error
    result naming why; the tool is never called, and the turn goes on."""
    from helpers.tooling.registry import Tool

    sent: list[dict[str, Any]] = []
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}$"}},
        "required": ["code"],
    }
    tool = Tool(
        "country", "a country by its code", schema, fn=lambda **a: sent.append(a) or "ok",
        server="evil",
    )  # fmt: skip
    plan = [{"call": "country", "args": {"code": "france"}}, {"answer": "done"}]
    record = turn([tool], "Look up the country france.", plan, store)
    (call,) = record.tool_calls
    assert record.ok and call.result_kind == "error" and not call.ran and sent == []
    assert "argument 'code': 'france' does not match the pattern '^[A-Z]{2}$'" in call.result


def test_the_text_a_servers_patterns_search_is_bounded_by_the_steps():
    """Twenty levels of ``allOf`` of two references to the next (2**20 paths) end in one
    ``pattern``, under a 200,000-character argument: every search counts the characters it reads
    (:data:`SCANNED_CHARS_PER_STEP` a step), so the text searched in one check is at most the
    steps' worth, however many paths lead to the pattern."""
    from helpers.tooling import argument_checks
    from helpers.tooling.argument_checks import (
        MAX_SCHEMA_STEPS,
        SCANNED_CHARS_PER_STEP,
        check_schema_arguments,
    )

    levels = {f"p{i}": {"allOf": [{"$ref": f"#/$defs/p{i + 1}"}] * 2} for i in range(20)}
    schema = {
        "type": "object",
        "$defs": {**levels, "p20": {"pattern": "[bc]"}},
        "properties": {"s": {"$ref": "#/$defs/p0"}},
    }
    searched = []
    real = argument_checks._regex

    class Counting:
        def __init__(self, regex: Any) -> None:
            self.regex = regex

        def search(self, text: str) -> Any:
            searched.append(len(text))
            return self.regex.search(text)

    argument_checks._regex = lambda pattern: Counting(real(pattern))  # type: ignore[assignment]
    try:
        check = check_schema_arguments(schema, {"s": "a" * 200_000 + "b"})
    finally:
        argument_checks._regex = real
    assert not check.finished and check.problems == []
    assert sum(searched) <= (MAX_SCHEMA_STEPS + 1) * SCANNED_CHARS_PER_STEP


def test_a_reference_passed_to_a_constrained_server_argument_is_checked_as_its_value(
    tmp_path,
) -> None:
    """A server's ``pattern`` and ``minLength`` apply to the value a reference stands for, once
    unboxed, never to the reference's own text: a boxed 5,000-character output that fits them
    reaches the tool; one that does not is refused naming the rule."""
    from helpers.context.policies import BoxPolicy
    from helpers.loop.dispatch import dispatch
    from helpers.loop.turn_state import TurnState
    from helpers.store.tool_outputs import ToolOutputStore
    from helpers.tooling.registry import Tool, ToolContext, ToolRegistry

    store = ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    store.ensure_thread("t1")
    row = store.log_tool("t1", "call_src", "src", "{}", "{" + "x" * 5_000 + "}")
    got: list[str] = []
    for rule, kind in (
        ({"minLength": 100, "pattern": "^\\{"}, "inline"),
        ({"pattern": "^y"}, "error"),
    ):
        tool = Tool(
            name="srv_write",
            description="d",
            parameters={
                "type": "object",
                "properties": {"text": {"type": "string", **rule}},
                "required": ["text"],
            },
            fn=lambda text: got.append(text) or "ok",
            server="srv",
        )
        record = dispatch(
            f"call_{kind}",
            tool.name,
            json.dumps({"text": f"internal://{row.ref_id}"}),
            ToolRegistry([tool]),
            BoxPolicy(),
            ToolContext(store=store, thread_id="t1"),
            state=TurnState(),
        )
        assert record.result_kind == kind, record.result
    assert got == ["{" + "x" * 5_000 + "}"]
    assert "pattern" in record.result
    store.close()


def test_a_pattern_in_a_servers_output_schema_never_runs_in_the_agent():
    """The SDK checks structured content against a tool's outputSchema with jsonschema (Python's
    backtracking engine); the client skips that check, so a server's ``^(a+)+$`` over 40 a's
    and a mark cannot hold the agent (it did, beyond every timeout: the hang guard would stop
    this test)."""
    script = str(ROOT / "tests" / "mcp" / "hostile_schema_server.py")
    with McpServer(McpServerSpec("hostile", sys.executable, (script,), timeout_s=60)) as server:
        (word,) = server.tools
        assert word.call({}) == "a" * 40 + "!"


SCHEMA_REFS = str(ROOT / "tests" / "mcp" / "schema_ref_server.py")


@pytest.fixture(scope="module")
def schema_refs_server():
    with McpServer(McpServerSpec("refs", sys.executable, (SCHEMA_REFS,), timeout_s=60)) as server:
        yield server


def test_a_tool_whose_schema_refers_outside_itself_is_left_out_when_listed(schema_refs_server):
    """No ``$ref`` is fetched, so a tool whose schema refers to a URL, or to a pointer or an
    anchor the schema does not have, could never have a call checked: it is left out as it is
    listed, with a note naming the reference (as a tool whose schema is not valid), not offered
    to the model only for each of its calls to be refused. References that resolve within the
    schema join, and their calls are checked through them and reach the server."""
    server = schema_refs_server
    assert [t.name for t in server.tools] == ["local", "costly"]
    fetches_none = "which is not a schema in it: the client fetches no schema from elsewhere"
    refs = {
        "remote": "http://127.0.0.1:9/word.json",
        "pointer": "#/$defs/wrod",
        "anchor": "#no-such-anchor",
        "through": "#/x-data/word/inner",  # through a string: referencing's ValueError
        "value": "#/x-data/word",  # to the number 5
    }
    assert server.notes == [
        f"{name!r} is left out: its input schema refers to {ref!r}, {fetches_none}, so no call "
        "of it could be checked"
        for name, ref in refs.items()
    ]
    local = tools_of(server)["local"]
    said = json.loads(local.call({"word": "w", "again": "v"}))
    assert said == {"tool": "local", "arguments": {"word": "w", "again": "v"}}
    with pytest.raises(ValueError, match="argument 'again' must be string, got int"):
        local.call({"word": "w", "again": 1})


def test_a_call_whose_check_runs_out_of_steps_reaches_the_server_and_its_record_says_so(
    schema_refs_server, store
):
    """A check that runs out of its steps (2**40 paths through ``anyOf``) with nothing found
    lets the call go to the server, which validates its inputs: the call's record names the
    guard ``arguments_check_unfinished`` (under every strategy), and a call whose check got to
    its end names none."""
    from helpers.base.guards import GUARDS

    assert "ran out of its steps" in GUARDS["arguments_check_unfinished"]
    tools = tools_of(schema_refs_server)
    for strategy in ("inline", "box"):
        plan = [
            {"call": "costly", "args": {"x": 1}},
            {"call": "local", "args": {"word": "w"}},
            {"answer": "done"},
        ]
        record = turn(list(tools.values()), f"Call both ({strategy}).", plan, store, strategy)
        costly, local = [c for c in record.tool_calls if c.server]  # box: tool_search too
        assert costly.ran and costly.server == "refs", costly.result
        assert costly.guards == ["arguments_check_unfinished"]
        assert json.loads(costly.result) == {"tool": "costly", "arguments": {"x": 1}}
        assert (
            local.ran
            and local.guards == []
            and record.guard_counts() == {"arguments_check_unfinished": 1}
        )


# -- results under the policy -------------------------------------------------------------------


def test_a_resource_link_is_read_boxed_and_routed_byte_for_byte(relay_server, store):
    """The server's long result behind a link reaches the store whole; the model sees a
    reference; the next tool gets every byte (CRLF, emoji, combining marks)."""
    record = turn(relay_server.tools, REPORT_PROMPT, REPORT_PLAN, store)
    assert record.ok, record.error
    made, checked = record.tool_calls
    report = report_text(400)
    assert made.result_kind == "boxed" and made.output_chars == len(report)
    assert len(made.result) < 400  # a reference and a short preview, not the report
    assert checked.result == fingerprint_of(report)  # what the server received
    assert record.answer == fingerprint_of(report)


@pytest.mark.parametrize("strategy", ["box-json", "truncate", "inline"])
def test_every_strategy_delivers_the_same_bytes(relay_server, store, strategy):
    record = turn(relay_server.tools, REPORT_PROMPT, REPORT_PLAN, store, strategy)
    assert record.ok, record.error
    assert record.tool_calls[-1].result == fingerprint_of(report_text(400))


def test_binary_structured_and_multiple_blocks_become_one_text(relay_server):
    tools = tools_of(relay_server)
    caption, image = tools["picture"].call({}).split("\n")
    assert caption == "a pixel"
    assert json.loads(image)["mimeType"] == "image/png"
    assert json.loads(tools["stats"].call({})) == {"rows": 3, "ok": True}


def test_a_tool_execution_error_is_an_error_result_with_the_servers_reason(relay_server, store):
    prompt = "Ask refuse to say that the account is closed."
    plan = [{"call": "refuse", "args": {"reason": "account <b>closed</b>"}}, {"answer": "done"}]
    record = turn(relay_server.tools, prompt, plan, store)
    (call,) = record.tool_calls
    assert call.result_kind == "error" and call.ran
    assert "McpToolError: account <b>closed</b>" in call.error


def test_its_environment_comes_from_the_setting_and_its_keys_never_reach_the_model(store):
    """``MCP_<NAME>_ENV`` reaches the server; a variable whose name looks secret is redacted
    from everything the server sends back (and from the configured secrets of every turn), an
    ordinary one is not: "definition" is a word of many outputs."""
    secret = "relay-token-0123456789abcdef"
    variables = {"RELAY_TOKEN": secret, "GREETING_STYLE": "definition"}
    env = {"MCP_SERVERS": "relay", "MCP_RELAY_COMMAND": sys.executable, "MCP_RELAY_ARGS": RELAY}
    env["MCP_RELAY_ENV"] = json.dumps(variables)
    (spec,) = mcp_servers_from_env(env)
    assert secret in configured_secrets(env)
    assert "definition" not in configured_secrets(env)
    with McpServer(spec) as server:
        getenv = tools_of(server)["getenv"]
        assert getenv.call({"name": "RELAY_TOKEN"}) == REDACTED  # it was there, and went no further
        assert getenv.call({"name": "GREETING_STYLE"}) == "definition"
        assert getenv.call({"name": "WORKBOOK_VAR_DIR"}) == "(unset)"
        with pytest.raises(McpToolError) as refused:
            tools_of(server)["refuse"].call({"reason": f"bad token {secret}"})
        assert secret not in str(refused.value)
        prompt = "Read RELAY_TOKEN with getenv."
        plan = [{"call": "getenv", "args": {"name": "RELAY_TOKEN"}}, {"answer": "{result1}"}]
        record = turn(server.tools, prompt, plan, store)
    assert record.tool_calls[0].result == REDACTED
    assert secret not in json.dumps(record.messages)


def test_a_key_a_server_prints_as_it_fails_to_start_is_redacted():
    secret = "start-token-0123456789abcdef"
    code = "import os, sys; sys.stderr.write('cannot log in with ' + os.environ['API_TOKEN']); sys.exit(3)"
    spec = McpServerSpec("broken", sys.executable, ("-c", code), env={"API_TOKEN": secret})
    with pytest.raises(McpServerError) as failed:
        McpServer(spec).start()
    assert "cannot log in with [redacted]" in str(failed.value)
    assert secret not in str(failed.value)


# -- a server that fails -------------------------------------------------------------------------


def test_a_server_that_dies_ends_in_error_results_and_the_turn_goes_on(store):
    with McpServer(relay()) as server:
        prompt = "Call crash, then fingerprint the word after."
        plan = [
            {"call": "crash", "args": {}},
            {"call": "fingerprint", "args": {"text": "after"}},
            {"answer": "done"},
        ]
        record = turn(server.tools, prompt, plan, store)
    assert record.status == "ok"
    crashed = record.tool_calls[0]
    assert crashed.result_kind == "error"
    assert "the server stopped" in crashed.error
    assert "relay-test: crashing on purpose" in crashed.error  # its stderr
    assert "exited with code 3" in crashed.error


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (-32000, "custom failure"),
        (-32001, "Unauthorized: token expired"),
        (-32000, "Connection closed"),  # a gateway forwarding its upstream's words
    ],
)
def test_a_servers_own_error_codes_are_its_errors(relay_server, code, message):
    """-32000 and -32001 are also the SDK's own codes for a closed connection and a timeout: a
    server's error with one of them (even in the SDK's own words, from a server that still
    answers a ping) is still the server's, with its message."""
    tools = tools_of(relay_server)
    with pytest.raises(McpServerError) as failed:
        tools["fail_with"].call({"code": code, "message": message})
    assert f"it answered with error {code}: {message}" in str(failed.value)
    assert tools["fingerprint"].call({"text": "z"}) == fingerprint_of("z")


def test_after_it_stopped_a_server_says_so_and_why():
    with McpServer(relay()) as server:
        with pytest.raises(McpServerError, match="the connection closed"):
            tools_of(server)["crash"].call({})
        with pytest.raises(McpServerError) as later:
            tools_of(server)["fingerprint"].call({"text": "x"})
    assert "is not running: it stopped earlier (failed on tools/call crash" in str(later.value)
    assert "exited with code 3" in str(later.value)


#: The timeout of the tests whose server hangs: the start shares it, and a busy machine may take
#: many times the 0.5 s a server's start takes on an idle one (the test waits this long).
HANGING_TIMEOUT_S = 10


def test_a_server_that_hangs_is_given_up_after_its_timeout_and_still_serves():
    with McpServer(relay(timeout_s=HANGING_TIMEOUT_S)) as server:
        with pytest.raises(McpServerError, match=r"no answer within 10 s \(MCP_RELAY_TIMEOUT\)"):
            tools_of(server)["sleepy"].call({"seconds": 600})
        assert tools_of(server)["fingerprint"].call({"text": "x"}) == fingerprint_of("x")


def test_an_answer_over_the_message_limit_is_dropped_and_the_session_goes_on():
    with McpServer(relay(), max_message_bytes=1 << 20) as server:
        with pytest.raises(McpServerError, match="over 1,048,576 bytes"):
            tools_of(server)["huge"].call({"megabytes": 2})
        assert tools_of(server)["fingerprint"].call({"text": "y"}) == fingerprint_of("y")


@pytest.mark.parametrize(
    ("command", "args", "says"),
    [
        # under a file, so no folder of that name can exist
        ("/dev/null/server", (), "cannot start '/dev/null/server'"),
        (
            sys.executable,
            ("-c", "import sys; sys.stderr.write('bad config\\n'); sys.exit(5)"),
            "bad config",
        ),
        (sys.executable, ("-c", "print('not json'); import time; time.sleep(600)"), "within 10 s"),
    ],
)
def test_a_server_that_does_not_start_says_why(command, args, says):
    with pytest.raises(McpServerError) as failed:
        McpServer(McpServerSpec("broken", command, args, timeout_s=HANGING_TIMEOUT_S)).start()
    assert "the MCP server 'broken' did not start" in str(failed.value)
    assert says in str(failed.value)


# -- the acceptance: case1 with its tools served by workbook mcp-server ----------------------------


def test_case1_with_its_tools_served_over_mcp_passes_and_the_transcript_arrives_byte_exact(
    store, tmp_path
):
    (case1,) = load_cases(str(CASES_DIR / "case1.md"))
    spec = workbook_server(f"sqlite:///{tmp_path / 'server.sqlite'}")
    with McpServers([spec]) as servers:
        registry = servers.registry(default_registry())
        assert {registry.get("yt_transcribe").server, registry.get("deep_check").server} == {
            "workbook"
        }
        run = run_case(
            case1,
            "box",
            client=offline_client(),
            model="offline-reference",
            store=store,
            registry=registry,
        )
    assert run.passed, run.validation
    transcribed, checked = run.record.tool_calls
    assert transcribed.result_kind == "boxed"  # the model saw a reference
    assert checked.received_sha256["text"] == transcribed.output_sha256  # the client sent it all
    served = json.loads(transcribed.arguments)
    assert served == {"video_id": "123"}
    from helpers.base import ids
    from helpers.tooling.tools import yt_transcribe

    assert f"sha256 {ids.content_sha256(yt_transcribe('123'))[:16]}" in checked.result


def test_workbook_ask_takes_the_servers_env_names(tmp_path):
    env = {
        **os.environ,
        "MCP_SERVERS": "workbook",
        "MCP_WORKBOOK_COMMAND": sys.executable,
        "MCP_WORKBOOK_ARGS": f"-m helpers.cli mcp-server --db sqlite:///{tmp_path / 's.sqlite'}",
        "MCP_WORKBOOK_TOOLS": "yt_transcribe,deep_check",
        "MCP_WORKBOOK_ENV": json.dumps({"WORKBOOK_VAR_DIR": os.environ["WORKBOOK_VAR_DIR"]}),
    }
    prompt = load_cases(str(CASES_DIR / "case1.md"))[0].prompt

    def ask(*words: str) -> subprocess.CompletedProcess[str]:
        return run_workbook(["ask", "--json", *words], env=env, cwd=ROOT)

    done = ask("--db", f"sqlite:///{tmp_path / 'c.sqlite'}", prompt)
    shown = json.loads(done.stdout)
    assert shown["status"] == "ok", shown
    assert shown["mcp_servers"] == [
        {
            "name": "workbook",
            "tools": ["yt_transcribe", "deep_check"],
            "notes": [
                "its 'yt_transcribe' stands in for the workbook's own",
                "its 'deep_check' stands in for the workbook's own",
            ],
        }
    ]
    env["MCP_WORKBOOK_TIMEOUT"] = "soon"
    done = ask(prompt)
    assert done.returncode == 2
    assert json.loads(done.stdout) == {
        "status": "usage_error",
        "error": "MCP_WORKBOOK_TIMEOUT='soon' must be a number of seconds above 0",
    }


# -- the settings --------------------------------------------------------------------------------


def test_the_settings_describe_each_server():
    env = {
        "MCP_SERVERS": " workbook , github ",
        "MCP_WORKBOOK_COMMAND": "workbook",
        "MCP_WORKBOOK_ARGS": "mcp-server --threshold 500 --db 'sqlite:///my store.sqlite'",
        "MCP_GITHUB_COMMAND": "npx",
        "MCP_GITHUB_TIMEOUT": "5.5",
        "MCP_GITHUB_TOOLS": "search_code, get_file",
        "MCP_GITHUB_PREFIX": "gh_",
        "MCP_GITHUB_CWD": "/tmp",
    }
    workbook, github = mcp_servers_from_env(env)
    assert workbook.args == (
        "mcp-server",
        "--threshold",
        "500",
        "--db",
        "sqlite:///my store.sqlite",
    )
    assert (github.timeout_s, github.tools, github.prefix, github.cwd) == (
        5.5,
        ("search_code", "get_file"),
        "gh_",
        "/tmp",
    )
    assert mcp_servers_from_env({}) == []


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"MCP_SERVERS": "a"}, "MCP_A_COMMAND"),
        ({"MCP_SERVERS": "a,A", "MCP_A_COMMAND": "x"}, "twice"),
        ({"MCP_SERVERS": "my-server"}, "'my-server'"),
        ({"MCP_SERVERS": "a", "MCP_A_COMMAND": "x", "MCP_A_ARGS": "'open"}, "MCP_A_ARGS"),
        ({"MCP_SERVERS": "a", "MCP_A_COMMAND": "x", "MCP_A_TIMEOUT": "0"}, "MCP_A_TIMEOUT"),
        ({"MCP_SERVERS": "a", "MCP_A_COMMAND": "x", "MCP_A_TIMEOUT": "inf"}, "MCP_A_TIMEOUT"),
        ({"MCP_SERVERS": "a", "MCP_A_COMMAND": "x", "MCP_A_ENV": "[1]"}, "MCP_A_ENV"),
        ({"MCP_SERVERS": "a", "MCP_A_COMMAND": "x", "MCP_A_ENV": '{"K": 1}'}, "MCP_A_ENV"),
        ({"MCP_SERVERS": "a", "MCP_A_COMMAND": "x", "MCP_A_PREFIX": "a.b"}, "MCP_A_PREFIX"),
        ({"MCP_SERVERS": "a", "MCP_A_COMMAND": "x", "MCP_A_TOOLS": " , "}, "MCP_A_TOOLS"),
        ({"MCP_SERVERS": "a", "MCP_A_COMMAND": "x", "MCP_A_CWD": "/dev/null/x"}, "MCP_A_CWD"),
    ],
)
def test_a_setting_that_cannot_be_used_is_named(env, names):
    with pytest.raises(McpConfigError, match=names.replace("(", r"\(")):
        mcp_servers_from_env(env)


# -- one text of a result: the rules, on generated results ---------------------------------------

_texts = st.text(max_size=60)


@st.composite
def _results(draw: Any) -> tuple[types.CallToolResult, dict[str, str], str]:
    """A result of text, link, embedded and image blocks; the resources its links name; and
    the text the rules make of it."""
    blocks, resources, expected = [], {}, []
    for i in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["text", "link", "embedded", "image"]))
        text = draw(_texts)
        if kind == "text":
            blocks.append(types.TextContent(type="text", text=text))
            expected.append(text)
        elif kind == "link":
            uri = f"test://r/{i}"
            resources[uri] = text
            blocks.append(types.ResourceLink(type="resource_link", uri=uri, name=f"r{i}"))
            expected.append(text)
        elif kind == "embedded":
            inner = types.TextResourceContents(uri=f"test://e/{i}", text=text)
            blocks.append(types.EmbeddedResource(type="resource", resource=inner))
            expected.append(text)
        else:
            image = types.ImageContent(type="image", data="AAAA", mime_type="image/png")
            blocks.append(image)
            expected.append(json.dumps({"type": "image", "data": "AAAA", "mimeType": "image/png"}))
    return types.CallToolResult(content=blocks), resources, "\n".join(expected)


def _reader(resources: dict[str, str]) -> Any:
    def read(uri: str) -> types.ReadResourceResult:
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=resources[uri])]
        )

    return read


@settings(derandomize=True, max_examples=200, deadline=None)
@given(_results())
def test_one_text_holds_every_block_in_order_with_every_link_read(generated):
    result, resources, expected = generated
    assert mcp_result_text(result, _reader(resources)) == expected


@settings(derandomize=True, max_examples=50, deadline=None)
@given(_texts, st.booleans())
def test_an_error_result_raises_with_its_text(text, with_text):
    blocks = [types.TextContent(type="text", text=text)] if with_text else []
    with pytest.raises(McpToolError) as raised:
        mcp_result_text(types.CallToolResult(content=blocks, is_error=True), _reader({}))
    assert str(raised.value) == (
        text.strip()
        if with_text and text.strip()
        else "the server reported an error and gave no text"
    )


def test_structured_content_alone_is_its_json_and_limits_hold():
    only = types.CallToolResult(content=[], structured_content=[1, {"a": "é"}])
    assert mcp_result_text(only, _reader({})) == '[1, {"a": "é"}]'
    big = types.CallToolResult(content=[types.TextContent(type="text", text="é" * 60)])
    with pytest.raises(McpResultTooLarge, match="over 100 bytes"):
        mcp_result_text(big, _reader({}), max_bytes=100)
    link = types.ResourceLink(type="resource_link", uri="test://x", name="x")
    many = types.CallToolResult(content=[link] * (MAX_LINKS_PER_RESULT + 1))
    with pytest.raises(McpResultTooLarge, match="links to 17 resources"):
        mcp_result_text(many, _reader({"test://x": ""}))


def test_the_reserved_names_are_the_workbooks_model_only_tools():
    assert {
        "fetch_tool_output",
        "internal_resource",
        "internal_resource_grep",
    } <= RESERVED_TOOL_NAMES
    assert {"tool_search", "run_program"} <= RESERVED_TOOL_NAMES
    assert "yt_transcribe" not in RESERVED_TOOL_NAMES


# -- which tools join, on listings made here (no process) ----------------------------------------


def _listed(*names: str, schema: dict[str, Any] | None = None) -> list[types.Tool]:
    return [
        types.Tool(name=n, description=f"{n}'s", input_schema=schema or {"type": "object"})
        for n in names
    ]


def test_the_tool_list_is_applied_before_the_cap():
    server = McpServer(relay(tools=("t200",)))
    taken = server._tools_of(_listed(*(f"t{i}" for i in range(300))))
    assert [t.name for t in taken] == ["t200"] and server.notes == []


def test_a_name_a_function_can_have_comes_before_one_renamed_into_it():
    for order in (("a.b", "a_b"), ("a_b", "a.b")):
        server = McpServer(relay())
        taken = server._tools_of(_listed(*order))
        assert [(t.name, t.fn.__name__) for t in taken] == [("a_b", "a_b")]
        assert any("'a.b' is left out: 'a_b' is taken" in n for n in server.notes)
    server = McpServer(relay())
    (long,) = server._tools_of(_listed("x" * 70))
    assert long.name == "x" * 64 and any("is offered as" in n for n in server.notes)


def test_a_tool_whose_schema_is_not_an_objects_is_left_out():
    server = McpServer(relay())
    assert server._tools_of(_listed("odd", schema={"type": "array"})) == []
    assert server.notes == ["'odd' is left out: its input schema is not an object's"]


def test_a_tool_whose_schema_is_not_valid_json_schema_of_a_known_dialect_is_left_out():
    """The MCP spec's JSON Schema usage: 2020-12 by default, a ``$schema`` may name another
    dialect (draft-07 joins), one the client does not know or a schema its metaschema refuses
    is left out, with a note saying why."""
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
    server = McpServer(relay())
    assert [t.name for t in server._tools_of(_listed("old", schema=draft7))] == ["old"]
    bad = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}
    assert server._tools_of(_listed("bad", schema=bad)) == []
    mine = {"$schema": "https://example.com/my-dialect", "type": "object"}
    assert server._tools_of(_listed("mine", schema=mine)) == []
    assert server.notes == [
        "'bad' is left out: its input schema is not valid JSON Schema (at properties/n/minimum: "
        "'zero' is not of type 'number')",
        "'mine' is left out: its input schema names a dialect the client does not know ($schema "
        "'https://example.com/my-dialect')",
    ]


def test_a_key_in_a_servers_tool_list_never_reaches_the_model():
    """Descriptions and schemas are redacted of the server's keys; a name holding one leaves
    its tool out."""
    key = "gh-key-0123456789abcdef"
    server = McpServer(relay(env={"GITHUB_TOKEN": key, "NODE_ENV": "production"}))
    listing = [
        types.Tool(
            name="search",
            description=f"searches with {key} (production)",
            input_schema={"type": "object", "properties": {"q": {"description": key}}},
        ),
        types.Tool(name=f"t_{key}", input_schema={"type": "object"}),
    ]
    (tool,) = server._tools_of(listing)
    assert key not in json.dumps(tool.schema())
    assert "(production)" in tool.description  # an ordinary variable's value stays
    assert any("its name holds a key" in n for n in server.notes)


def test_the_secrets_of_an_environment_are_found_by_name_and_in_urls():
    from helpers.text.redaction import secrets_of

    found = secrets_of(
        {
            "PGPASSWORD": "pg-secret-123",
            "GH_PAT": "pat-secret-123",
            "DATABASE_URL": "postgresql://me:url-secret-123@db/x",
            "NODE_ENV": "production",
            "PATH": "/usr/bin",
            "TIKTOKEN_CACHE_DIR": "/tmp/t",
        }
    )
    assert found == {"pg-secret-123", "pat-secret-123", "url-secret-123"}


def _fresh_python(code: str) -> str:
    """What ``python -c CODE`` prints, run from the project with no ``MCP_*`` setting: a process
    that has imported nothing yet (this one has, the SDK and jsonschema among them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    run = [sys.executable, "-c", code]
    done = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=HANG_GUARD_S, check=True)  # fmt: skip
    return done.stdout


def test_a_run_without_mcp_servers_never_imports_the_sdk(tmp_path):
    """The SDK costs about half a second to import: ask loads it only when MCP_SERVERS names a
    server (ask --help, and a turn without servers, stay as quick as before)."""
    prompt = load_cases(str(CASES_DIR / "case1.md"))[0].prompt
    db = f"sqlite:///{tmp_path / 's.sqlite'}"
    code = (
        "import contextlib, io, sys\n"
        "from helpers.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['ask', '--help'])\n"
        f"    main(['ask', '--json', '--db', {db!r}, {prompt!r}])\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))\n"
    )
    assert _fresh_python(code).strip() == "[]"


def test_a_schema_check_imports_jsonschema_without_its_iri_grammars():
    """A server's schema checked in a fresh process (an ``ask`` with servers, a notebook's
    kernel) imports jsonschema without ``rfc3987_syntax``, whose parsers took 1.3 s of CPU to
    build; the check is the same (``format`` is an annotation), and the package can still be
    imported afterwards."""
    code = (
        "import sys\n"
        "from helpers.tooling.argument_checks import check_input_schema, schema_problems\n"
        "schema = {'type': 'object', 'properties': {'u': {'type': 'string', 'format': 'iri'}},"
        " 'required': ['u']}\n"
        "print(check_input_schema(schema, 1000).problems)\n"
        "print(schema_problems(schema, {'u': 'not an iri'}), schema_problems(schema, {}))\n"
        "print('rfc3987_syntax' in sys.modules)\n"
        "import rfc3987_syntax\n"
        "print(rfc3987_syntax.is_valid_syntax('iri', 'http://example.org/x'))\n"
    )
    checked, problems, imported, valid = _fresh_python(code).splitlines()
    assert checked == "[]" and imported == "False" and valid == "True"
    assert problems == "[] ['missing required argument(s): u']"


# -- what one server adds to every request ---------------------------------------------------------


def _many(count: int, **options: Any) -> McpServerSpec:
    script = str(ROOT / "tests" / "mcp" / "many_tools_server.py")
    return McpServerSpec("many", sys.executable, (script, str(count)), **options)


def _request_bytes(tools: list[Any]) -> int:
    """What the tools add to a chat-completions request: each as the ``tools`` entry."""
    return sum(
        len(json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters},
                       ensure_ascii=False).encode())
        for t in tools
    )  # fmt: skip


def test_one_servers_tools_add_a_bounded_number_of_bytes_to_every_request():
    """128 tools, each within its own caps, would add megabytes to every request: the client
    takes them in order, each only if it still fits the server's budget, and says which it left out and the
    setting that raises it; the setting does; more tools than the most taken is said too."""
    from helpers.mcp.settings import DEFAULT_MAX_TOOL_BYTES, DEFAULT_MAX_TOOLS

    with McpServer(_many(DEFAULT_MAX_TOOLS)) as server:
        taken = server.tools
        assert 0 < len(taken) < DEFAULT_MAX_TOOLS
        assert _request_bytes(taken) <= DEFAULT_MAX_TOOL_BYTES
        said = " ".join(server.notes)
        assert f"{DEFAULT_MAX_TOOLS - len(taken)} of its tools are left out" in said
        assert "MCP_MANY_MAX_TOOL_BYTES raises it" in said
    with McpServer(_many(DEFAULT_MAX_TOOLS, max_tool_bytes=10**9)) as server:
        assert len(server.tools) == DEFAULT_MAX_TOOLS and not server.notes
        assert _request_bytes(server.tools) > 10 * DEFAULT_MAX_TOOL_BYTES  # what it would add
    with McpServer(_many(DEFAULT_MAX_TOOLS + 20, max_tools=3, max_tool_bytes=10**9)) as server:
        assert [t.name for t in server.tools] == ["tool_000", "tool_001", "tool_002"]
        assert any("only the first 3 are considered (MCP_MANY_MAX_TOOLS" in n for n in server.notes)


def test_the_per_server_budgets_are_settings():
    env = {
        "MCP_SERVERS": "many",
        "MCP_MANY_COMMAND": sys.executable,
        "MCP_MANY_MAX_TOOLS": "12",
        "MCP_MANY_MAX_TOOL_BYTES": "1_000_000",
    }
    (spec,) = mcp_servers_from_env(env)
    assert (spec.max_tools, spec.max_tool_bytes) == (12, 1_000_000)
    for key, value in (("MAX_TOOLS", "0"), ("MAX_TOOLS", "129"), ("MAX_TOOL_BYTES", "lots")):
        with pytest.raises(McpConfigError, match=f"MCP_MANY_{key}|the MCP server 'many'"):
            mcp_servers_from_env({**env, f"MCP_MANY_{key}": value})


@pytest.mark.parametrize("levels", [150, 250, 5_000])
def test_an_answer_nested_too_deep_is_said_at_once(levels: int):
    """The SDK's reader drops a message nested past its parser's depth (the call then waited
    out its whole timeout, "no answer") or fails on it ("the server stopped"): the guard answers
    such a response with an error for its id, at once, and the server goes on."""
    from helpers.mcp.stdio_guard import MAX_MESSAGE_DEPTH

    script = str(ROOT / "tests" / "mcp" / "deep_answer_server.py")
    spec = McpServerSpec("deep", sys.executable, (script, str(levels)), timeout_s=HANG_GUARD_S)
    with McpServer(spec) as server:
        (tool,) = server.tools
        if levels + 3 <= MAX_MESSAGE_DEPTH:  # the message, its result, structuredContent
            assert tool.call({}) is not None
            return
        # the reason itself (a timeout would say "no answer" only after HANG_GUARD_S)
        with pytest.raises(McpServerError, match=f"nested deeper than {MAX_MESSAGE_DEPTH} levels"):
            tool.call({})
        with pytest.raises(McpServerError, match="nested deeper"):
            tool.call({})  # and again: the server and the session go on


def test_an_answer_json_rpc_does_not_allow_is_said_at_once():
    """``"result": 5`` (a result must be an object): the SDK's reader drops it and the call
    waits out its timeout; the guard answers it with an error for its id at once."""
    script = str(ROOT / "tests" / "mcp" / "deep_answer_server.py")
    spec = McpServerSpec("odd", sys.executable, (script, "0"), timeout_s=HANG_GUARD_S)
    with McpServer(spec) as server:
        (tool,) = server.tools
        for _ in range(2):  # and the session goes on
            with pytest.raises(McpServerError, match=r"was not a JSON-RPC 2\.0 response"):
                tool.call({})


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("values", "held more than 500,000 JSON values and keys"),
        ("float-id", r"was not a JSON-RPC 2\.0 response"),
        ("surrogate", "lone surrogate"),
    ],
)
def test_an_answer_the_client_would_not_read_is_said_at_once(mode: str, said: str):
    """16 MiB of ``{}`` (2 GB in the agent once parsed), an id written ``1.0``, a lone
    surrogate: the SDK's reader drops each without a word (the call waited out its timeout) or
    fails on it; the guard answers for its id at once, and the session goes on."""
    script = str(ROOT / "tests" / "mcp" / "deep_answer_server.py")
    spec = McpServerSpec("odd", sys.executable, (script, mode), timeout_s=HANG_GUARD_S)
    with McpServer(spec) as server:
        (tool,) = server.tools
        for _ in range(2):
            with pytest.raises(McpServerError, match=said):
                tool.call({})


def test_a_notification_the_client_cannot_read_prints_nothing():
    """A server's log notification whose level MCP does not have: the SDK logs it with its
    traceback (its logger "client"), which Python's last-resort handler printed on the
    terminal; the workbook's client prints nothing of it, and the call it answers goes on.
    (Run in a process of its own: pytest's log capture would hide what a terminal shows.)"""
    program = f"""
import sys
from helpers.mcp.client import McpServer
from helpers.mcp.settings import McpServerSpec
spec = McpServerSpec("odd", sys.executable, ({str(ROOT / "tests" / "mcp" / "deep_answer_server.py")!r},
                     "bad-notification"), timeout_s=60)
with McpServer(spec) as server:
    print(server.tools[0].call({{}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True,
        timeout=HANG_GUARD_S,
    )  # fmt: skip
    assert done.returncode == 0 and "fine" in done.stdout, done.stderr
    assert "Traceback" not in done.stderr and "Failed to validate" not in done.stderr


def test_the_docs_state_the_schema_checks_bounds():
    from helpers.mcp.client import MAX_SCHEMA_CHECK_STEPS
    from helpers.tooling.argument_checks import MAX_SCHEMA_STEPS

    docs = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    assert f"one check takes at most\n{MAX_SCHEMA_STEPS:,} steps" in docs
    assert f"takes at most {MAX_SCHEMA_CHECK_STEPS:,} steps for a server" in docs
    threats = (ROOT / "docs" / "threat-model.md").read_text(encoding="utf-8")
    assert f"at most {MAX_SCHEMA_STEPS:,} steps a check" in threats


def test_the_docs_state_the_guards_depth():
    from helpers.mcp.stdio_guard import MAX_MESSAGE_DEPTH

    docs = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    assert f"nested deeper than the client reads ({MAX_MESSAGE_DEPTH} levels)" in docs
    assert f"nested deeper than {MAX_MESSAGE_DEPTH} levels … it was dropped" in docs
    threats = (ROOT / "docs" / "threat-model.md").read_text(encoding="utf-8")
    assert f"a response nested deeper than {MAX_MESSAGE_DEPTH} levels" in threats
