"""``workbook mcp-server`` with the official SDK's client on the other end.

Most tests start the real command over stdio (``python -m helpers.cli mcp-server``) and
talk to it with :class:`mcp.Client`, as any MCP client would: the tools listed, a long result as
a resource link read back byte for byte, another session's uri refused, hostile arguments
answered with tool execution errors and the server still serving. A property test runs the
server in-process (the SDK's in-memory transport) on generated outputs.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hang import HANG_GUARD_S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from memory import peak_bytes

from helpers.base import ids
from helpers.context.resolve_tools import resolve_tools
from helpers.mcp.server import WorkbookMcpServer, server_policy
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.registry import ToolRegistry, tool_from_function
from helpers.tooling.tools import default_registry, yt_transcribe

ROOT = Path(__file__).resolve().parent.parent
CASE1 = (
    "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep "
    "Check for analysis."
)
URI_RE = re.compile(r"internal://[A-Za-z0-9_-]{8,64}")


def server_params(
    db_url: str, *extra: str, script: list[str] | None = None
) -> StdioServerParameters:
    """How a client starts the server: the workbook command, this test's store, this session's
    run-time folder (the SDK passes only HOME, PATH and a few others on)."""
    args = script or ["-m", "helpers.cli", "mcp-server", "--db", db_url, *extra]
    return StdioServerParameters(
        command=sys.executable,
        args=args,
        cwd=str(ROOT),
        env={"WORKBOOK_VAR_DIR": os.environ["WORKBOOK_VAR_DIR"]},
    )


def with_client(params: StdioServerParameters, work: Callable[[Client], Awaitable[Any]]) -> Any:
    """``work(client)`` in one session of the server, on a fresh event loop."""

    async def main() -> Any:
        with anyio.fail_after(HANG_GUARD_S):
            async with Client(params) as client:
                return await work(client)

    return anyio.run(main)


def only_block(result: types.CallToolResult) -> Any:
    assert len(result.content) == 1, result.content
    return result.content[0]


def test_it_lists_the_registrys_tools_with_their_schemas_then_the_resolve_tools(db_url):
    listed = with_client(server_params(db_url), lambda c: c.list_tools())
    registry = default_registry()
    resolve = resolve_tools("five")
    assert [t.name for t in listed.tools] == [*registry.names(), *(t.name for t in resolve)]
    for tool in listed.tools:
        ours = registry.get(tool.name) if tool.name in registry else None
        expected = ours or next(t for t in resolve if t.name == tool.name)
        assert tool.input_schema == expected.parameters
        assert tool.description == expected.description
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (expected.read_only or expected.internal)
    assert listed.ttl_ms > 0  # the registry does not change while the server runs (SEP-2549)


def test_a_long_result_is_a_resource_link_that_resources_read_returns_byte_for_byte(db_url):
    async def work(client: Client) -> tuple[Any, types.ReadResourceResult]:
        link = only_block(await client.call_tool("yt_transcribe", {"video_id": "123"}))
        return link, await client.read_resource(link.uri)

    link, read = with_client(server_params(db_url), work)
    transcript = yt_transcribe("123")
    assert isinstance(link, types.ResourceLink)
    assert URI_RE.fullmatch(link.uri)
    assert link.name == "yt_transcribe result"
    assert link.mime_type == "text/plain"
    assert link.size == len(transcript.encode("utf-8"))
    (contents,) = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert contents.uri == link.uri
    assert contents.text == transcript
    assert len(contents.text) == 10_244
    assert read.cache_scope == "private"


def test_the_resource_holds_the_characters_workbook_ask_shows(db_url, tmp_path):
    """The acceptance's words: the 10,244 characters `workbook ask` shows for that transcript."""
    ask = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "ask", "--json", "--db", db_url, CASE1],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=HANG_GUARD_S,
        check=False,
    )
    shown = json.loads(ask.stdout)
    transcribed = next(c for c in shown["tool_calls"] if c["name"] == "yt_transcribe")

    async def work(client: Client) -> str:
        link = only_block(await client.call_tool("yt_transcribe", {"video_id": "123"}))
        return (await client.read_resource(link.uri)).contents[0].text

    text = with_client(server_params(f"sqlite:///{tmp_path / 'server.sqlite'}"), work)
    assert transcribed["output_chars"] == len(text) == 10_244
    assert transcribed["output_sha256"] == ids.content_sha256(text)


def test_a_short_result_is_its_text(db_url):
    block = with_client(
        server_params(db_url),
        lambda c: c.call_tool("yt_transcribe", {"video_id": "999"}),
    )
    text = only_block(block)
    assert isinstance(text, types.TextContent)
    assert text.text == yt_transcribe("999")


def test_another_sessions_uri_is_refused_and_its_own_is_read(db_url):
    params = server_params(db_url)

    async def make(client: Client) -> str:
        return only_block(await client.call_tool("yt_transcribe", {"video_id": "123"})).uri

    uri = with_client(params, make)

    async def other(client: Client) -> tuple[MCPError, types.CallToolResult, types.CallToolResult]:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
        as_argument = await client.call_tool("deep_check", {"text": uri})
        looked_inside = await client.call_tool(
            "internal_resource_length", {"opaque_reference": uri}
        )
        return refused.value, as_argument, looked_inside

    refused, as_argument, looked_inside = with_client(params, other)
    assert refused.code == types.INVALID_PARAMS
    assert "another session" in refused.message and uri in refused.message
    assert refused.data == {"uri": uri}
    for result in (as_argument, looked_inside):
        assert result.is_error
        assert "another thread" in only_block(result).text


#: URIs that name none of the server's resources.
NOT_ITS_RESOURCES = [
    "internal://AAAAAAAAAAAAAAAAAAAAAA",  # well formed, never made
    "internal://../../etc/passwd",
    "internal://",
    "file:///etc/passwd",
    "relay://report/3",
    "INTERNAL://AAAAAAAAAAAAAAAAAAAAAA",
    " internal://AAAAAAAAAAAAAAAAAAAAAA",
    "x" * 5000,
]


def test_a_uri_that_is_not_one_of_its_resources_is_refused_as_invalid_params(db_url):
    """Each of :data:`NOT_ITS_RESOURCES` in turn, in one session that goes on after each."""

    async def work(client: Client) -> list[MCPError]:
        refusals = []
        for uri in NOT_ITS_RESOURCES:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            refusals.append(refused.value)
        return refusals

    refusals = with_client(server_params(db_url), work)
    for uri, refused in zip(NOT_ITS_RESOURCES, refusals, strict=True):
        assert refused.code == types.INVALID_PARAMS, uri[:60]
        assert len(refused.message) < 300, uri[:60]  # the uri is shown cut, never echoed whole


def test_a_reference_passed_whole_reaches_the_tool_byte_for_byte(db_url):
    async def work(client: Client) -> tuple[str, str]:
        link = only_block(await client.call_tool("yt_transcribe", {"video_id": "123"}))
        checked = only_block(await client.call_tool("deep_check", {"text": link.uri}))
        length = only_block(
            await client.call_tool("internal_resource_length", {"opaque_reference": link.uri})
        )
        return checked.text, length.text

    checked, length = with_client(server_params(db_url), work)
    transcript = yt_transcribe("123")
    assert f"received {len(transcript)} chars" in checked
    assert f"sha256 {ids.content_sha256(transcript)[:16]}" in checked
    assert json.loads(length) == {"length_chars": len(transcript)}


def test_resources_list_names_the_sessions_outputs(db_url):
    async def work(client: Client) -> tuple[str, types.ListResourcesResult]:
        link = only_block(await client.call_tool("yt_transcribe", {"video_id": "123"}))
        return link.uri, await client.list_resources()

    uri, listed = with_client(server_params(db_url), work)
    assert [(r.uri, r.name, r.size) for r in listed.resources] == [
        (uri, "yt_transcribe result", len(yt_transcribe("123").encode()))
    ]


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


#: (tool, arguments, what the error says); ``{uri}`` is a resource link of this session.
HOSTILE: list[tuple[str, dict[str, Any], str]] = [
    ("deep_check", {"text": 5}, "argument 'text' must be string"),
    ("deep_check", {}, "missing required argument(s): text"),
    ("deep_check", {"text": "x", "extra": 1}, "unexpected argument(s): extra"),
    ("no_such_tool", {}, "unknown tool 'no_such_tool'"),
    ("deep_check", {"text": _deep(40)}, "nested more than 32 levels deep"),
    ("deep_check", {"text": "a" * 1_000_001}, "over the limit of 1,000,000"),
    ("deep_check", {"text": "see {uri} please"}, "inside longer text"),
    ("deep_check", {"text": "internal://AAAAAAAAAAAAAAAAAAAAAA"}, "unknown opaque reference"),
    ("get_page", {"url": "file:///etc/passwd"}, "is not available offline"),
    (
        "google_drive_write_file",
        {"file_name": "../../.bashrc", "file_content": "x"},
        "google_drive_write_file failed",
    ),
    (
        "internal_resource_read_slice",
        {"opaque_reference": "{uri}", "start_index": 0, "length": 10**9},
        "length must be between 0 and 100000",
    ),
    ("internal_resource_grep", {"opaque_reference": "{uri}", "pattern": "(", "window": 1}, "grep"),
]


def test_hostile_arguments_get_tool_execution_errors_and_the_server_goes_on(db_url):
    async def work(client: Client) -> list[types.CallToolResult]:
        uri = only_block(await client.call_tool("yt_transcribe", {"video_id": "123"})).uri
        results = []
        for name, arguments, _ in HOSTILE:
            filled = json.loads(json.dumps(arguments).replace("{uri}", uri))
            results.append(await client.call_tool(name, filled))
        results.append(await client.call_tool("yt_transcribe", {"video_id": "999"}))
        return results

    *refused, after = with_client(server_params(db_url), work)
    for (name, _, says), result in zip(HOSTILE, refused, strict=True):
        assert result.is_error, (name, result)
        assert says in only_block(result).text, (name, only_block(result).text)
    assert not after.is_error and only_block(after).text == yt_transcribe("999")


def test_arguments_that_are_not_valid_unicode_are_refused_before_the_tool_runs(echo_server):
    """A JSON escape can carry half an emoji (``"\\ud83d"``), which the SDK's client will not
    send; the handler refuses what a raw client could."""
    result = echo_server.call_tool("echo", {"text": "half an emoji \ud83d"})
    assert result.is_error
    assert "not valid Unicode" in only_block(result).text


def test_nothing_but_the_protocol_reaches_stdout_even_when_a_tool_prints(tmp_path):
    """A tool that prints (or writes to fd 1 itself) cannot corrupt the wire: the SDK points fd 1
    at stderr while it serves."""
    script = tmp_path / "noisy_server.py"
    store_url = f"sqlite:///{tmp_path / 'noisy.sqlite'}"
    script.write_text(
        "import os, sys, anyio\n"
        "from helpers.mcp.server import WorkbookMcpServer\n"
        "from helpers.tooling.registry import ToolRegistry, tool_from_function\n"
        "from helpers.store.tool_outputs import ToolOutputStore\n"
        "def noisy(text: str) -> str:\n"
        "    '''Print, then answer.\n\n    Args:\n        text: what to say.\n    '''\n"
        '    print(\'{"jsonrpc": "2.0", "id": 1, "result": {}}\')\n'
        "    os.write(1, b'garbage on fd 1\\n')\n"
        "    return text.upper()\n"
        f"store = ToolOutputStore({store_url!r})\n"
        "server = WorkbookMcpServer(store, registry=ToolRegistry([tool_from_function(noisy)]))\n"
        "anyio.run(server.serve_stdio)\n",
        encoding="utf-8",
    )
    params = server_params("", script=[str(script)])

    async def work(client: Client) -> list[str]:
        said = []
        for word in ("one", "two"):
            said.append(only_block(await client.call_tool("noisy", {"text": word})).text)
        return said

    assert with_client(params, work) == ["ONE", "TWO"]


# -- the rule, on generated outputs (in-process) --------------------------------------------------


def _echo(text: str) -> str:
    """Say the text back.

    Args:
        text: any text.
    """
    return text


@pytest.fixture(scope="module")
def echo_server(tmp_path_factory) -> WorkbookMcpServer:
    url = f"sqlite:///{tmp_path_factory.mktemp('echo') / 'echo.sqlite'}"
    registry = ToolRegistry([tool_from_function(_echo, name="echo")])
    return WorkbookMcpServer(ToolOutputStore(url), registry=registry, threshold_tokens=8)


@settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    text=st.one_of(
        st.just(""),
        st.text(max_size=20),
        st.text(min_size=20, max_size=400),
        st.text(alphabet=st.characters(codec="utf-8"), min_size=40, max_size=300),
    )
)
def test_every_output_comes_back_whole_as_text_or_behind_a_link(echo_server, text):
    """Property: the text a tool returns is what a client gets, as a text block when the
    threshold keeps it, else through ``resources/read`` of the link (whose ``size`` is its UTF-8
    bytes); which of the two is the policy's rule."""

    async def work() -> tuple[types.CallToolResult, types.ReadResourceResult | None]:
        async with Client(echo_server.server) as client:
            result = await client.call_tool("echo", {"text": text})
            block = only_block(result)
            read = None
            if isinstance(block, types.ResourceLink):
                read = await client.read_resource(block.uri)
            return result, read

    result, read = anyio.run(work)
    assert not result.is_error, result
    block = only_block(result)
    long = server_policy(8).is_long(text)
    if long:
        assert isinstance(block, types.ResourceLink) and read is not None
        assert read.contents[0].text == text
        assert block.size == len(text.encode("utf-8"))
    else:
        assert isinstance(block, types.TextContent) and block.text == text


class RawClient:
    """The server over its stdin and stdout with JSON-RPC written by hand, as a client of any
    version (or a broken one) writes it."""

    def __init__(self, db_url: str):
        params = server_params(db_url)
        self.server = subprocess.Popen(
            [params.command, *params.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=params.cwd,
            env={**os.environ, **(params.env or {})},
        )

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.server.stdin is not None
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.server.stdin.write(line + b"\n")
        self.server.stdin.flush()

    def next_message(self) -> dict[str, Any]:
        """The next line the server writes, read as JSON."""
        assert self.server.stdout is not None
        return json.loads(self.server.stdout.readline())

    def answer(self, request_id: int | None) -> dict[str, Any]:
        """The next message of this id (those before it are left unread)."""
        while True:
            message = self.next_message()
            if message.get("id") == request_id:
                return message

    def initialize(self, version: str) -> dict[str, Any]:
        info = {"name": "raw-client", "version": "1"}
        params = {"protocolVersion": version, "capabilities": {}, "clientInfo": info}
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        answered = self.answer(1)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answered

    def close(self) -> None:
        assert self.server.stdin is not None
        self.server.stdin.close()
        self.server.wait(timeout=HANG_GUARD_S)


def test_the_server_serves_without_the_openai_client(db_url) -> None:
    """``workbook mcp-server`` runs tools and no model, so it does not import the ``openai``
    package (0.5 s of CPU at every start: the settings live apart from the client)."""
    probe = (
        "import sys\n"
        "from helpers.cli import main\n"
        f"code = main(['mcp-server', '--db', {db_url!r}])\n"
        "print(code, 'mcp' in sys.modules, 'openai' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.stdout.split() == ["0", "True", "False"], done.stdout + done.stderr


def test_a_client_of_a_version_without_resource_links_gets_the_link_as_text(db_url):
    """``resource_link`` came with MCP 2025-06-18: a 2024-11-05 client gets the link's JSON
    text, and reads it."""
    raw = RawClient(db_url)
    try:
        assert raw.initialize("2024-11-05")["result"]["protocolVersion"] == "2024-11-05"
        call = {"name": "yt_transcribe", "arguments": {"video_id": "123"}}
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        (block,) = raw.answer(2)["result"]["content"]
        assert block["type"] == "text"
        link = json.loads(block["text"])
        assert link["type"] == "resource_link" and URI_RE.fullmatch(link["uri"])
        read = {"uri": link["uri"]}
        raw.send({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": read})
        assert raw.answer(3)["result"]["contents"][0]["text"] == yt_transcribe("123")
    finally:
        raw.close()


#: Lines a server cannot read, and the JSON-RPC error code each gets (``None``: no answer).
UNREADABLE_LINES = [
    (b"{not json", -32700),
    (b"\x00garbage", -32700),
    (b"\xff\xfe", -32700),
    (b"[1, 2]", -32600),
    (b'{"jsonrpc": "2.0", "id": 5}', -32600),
    (b"   ", None),
    (b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', -32600),
    (b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', -32600),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', -32600),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', -32600),
]


def test_a_line_it_cannot_read_gets_json_rpcs_answer_and_the_server_goes_on(db_url):
    """Not JSON: -32700; JSON that is not a message (a request whose id is not a string or an
    integer, which the SDK takes for a notification) -32600; a blank line: nothing at all. Each
    of :data:`UNREADABLE_LINES` in turn, on one server: the next line it writes after each
    refusal (after a blank line, the first) answers a ping, and a session starts after them all."""
    raw = RawClient(db_url)
    try:
        for ping, (line, code) in enumerate(UNREADABLE_LINES, start=100):
            raw.send(line)
            raw.send({"jsonrpc": "2.0", "id": ping, "method": "ping"})
            if code is not None:
                refused = raw.next_message()
                assert refused["id"] is None and refused["error"]["code"] == code, line
                assert refused["error"]["message"].startswith("a line this server cannot read")
            assert raw.next_message()["id"] == ping, line
        assert raw.initialize("2025-11-25")["result"]["protocolVersion"] == "2025-11-25"
    finally:
        raw.close()


# -- what a client can make the server hold --------------------------------------------------------

#: The most the server process may grow to under any flood below, in bytes of peak resident
#: memory (VmHWM): a fresh server is about 120 MB; the floods once took it to 1 GB and more.
FLOOD_PEAK_BYTES = 300 * 2**20


def _flood(raw: RawClient, lines: list[bytes]) -> None:
    """Write ``lines`` at once from a thread of their own (the server answers while they go)."""
    import threading

    def write() -> None:
        assert raw.server.stdin is not None
        for line in lines:
            raw.server.stdin.write(line + b"\n")
        raw.server.stdin.flush()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


class StoreLock:
    """The store's write lock, taken by the test (``BEGIN IMMEDIATE`` on its SQLite file) and
    held until :meth:`release`: the server's first call waits for it (its busy timeout, 120 s,
    only a hang guard), so that call and every call queued behind it stay in flight however
    fast or busy the machine is. What a slow call does to a server, without a clock."""

    def __init__(self, db_url: str):
        self.connection: sqlite3.Connection | None = sqlite3.connect(
            db_url.removeprefix("sqlite:///"), isolation_level=None
        )
        self.connection.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        """Let the lock go (again: nothing)."""
        if self.connection is not None:
            self.connection.execute("ROLLBACK")
            self.connection.close()
            self.connection = None


def _flood_answers(
    raw: RawClient, lines: list[bytes], lock: StoreLock | None = None, answered_held: int = 0
) -> dict[Any, dict[str, Any]]:
    """Write ``lines`` at once (:func:`_flood`) and read one answer for each, by id; with a
    ``lock``, the first ``answered_held`` answers are read while it is held, then it is let go."""
    writer = _flood(raw, lines)
    answers: dict[Any, dict[str, Any]] = {}
    assert raw.server.stdout is not None
    while len(answers) < len(lines):
        if lock is not None and len(answers) == answered_held:
            lock.release()
        message = json.loads(raw.server.stdout.readline())
        answers[message["id"]] = message
    writer.join(timeout=HANG_GUARD_S)
    return answers


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_thousand_requests_at_once_are_each_answered_and_held_within_bounds(db_url):
    """1,000 small tools/call written at once while the first waits for the store: the first
    :data:`MAX_REQUESTS_IN_FLIGHT` are held in flight and then answered with their results,
    each of the others is answered at once that the server has its most in flight, and the
    server's memory stays bounded."""
    from helpers.mcp.stdio_transport import MAX_REQUESTS_IN_FLIGHT, SERVER_BUSY

    raw = RawClient(db_url)
    try:
        raw.initialize("2025-11-25")
        call = {"name": "get_page", "arguments": {"url": "file:///nowhere"}}
        lines = [
            json.dumps({"jsonrpc": "2.0", "id": 100 + n, "method": "tools/call", "params": call})
            .encode()
            for n in range(1_000)
        ]  # fmt: skip
        lock = StoreLock(db_url)
        try:
            answers = _flood_answers(raw, lines, lock, answered_held=1_000 - MAX_REQUESTS_IN_FLIGHT)
        finally:
            lock.release()
        busy = {i for i, a in answers.items() if a.get("error", {}).get("code") == SERVER_BUSY}
        done = {i for i, a in answers.items() if "result" in a}
        assert done == set(range(100, 100 + MAX_REQUESTS_IN_FLIGHT)), sorted(done)[:20]
        assert busy == set(range(100 + MAX_REQUESTS_IN_FLIGHT, 1_100)), len(busy)
        refusal = answers[1_099]["error"]["message"]
        assert f"{MAX_REQUESTS_IN_FLIGHT} requests in flight" in refusal, refusal
        peak = peak_bytes(raw.server.pid)
        assert peak < FLOOD_PEAK_BYTES, f"{peak:,} bytes"
        assert raw.initialize("2025-11-25")["result"]  # and it goes on
    finally:
        raw.close()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize("megabytes", [100, 300])
def test_a_line_of_hundreds_of_megabytes_is_refused_without_being_held(db_url, megabytes):
    """One JSON-RPC line far past the 8 MiB a line may hold: read and dropped as it comes,
    answered -32700, the server's memory bounded, and the next request served."""
    from helpers.mcp.stdio_transport import MAX_LINE_BYTES

    raw = RawClient(db_url)
    try:
        raw.initialize("2025-11-25")
        huge = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"x": "'
        chunk = b"x" * (1 << 20)
        assert raw.server.stdin is not None

        def write() -> None:
            raw.server.stdin.write(huge)
            for _ in range(megabytes):
                raw.server.stdin.write(chunk)
            raw.server.stdin.write(b'"}}\n')
            raw.server.stdin.flush()

        import threading

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        refused = raw.answer(None)
        writer.join(timeout=HANG_GUARD_S)
        assert refused["error"]["code"] == -32700
        assert f"longer than {MAX_LINE_BYTES:,} bytes" in refused["error"]["message"]
        assert peak_bytes(raw.server.pid) < FLOOD_PEAK_BYTES
        raw.send({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
        assert raw.answer(8)["result"]["tools"]
    finally:
        raw.close()


#: The server's bound while 64 reads of a 6.4 MB output are asked at once: 16 answers in
#: flight (an answer waiting to be written still counts), each a few copies of the output.
READS_PEAK_BYTES = 600 * 2**20


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_reads_of_a_large_output_asked_at_once_are_held_within_bounds(db_url):
    """64 ``resources/read`` of one 6.4 MB output written at once: each is answered (the
    output, or at once that the server has its most in flight), and the server's memory stays
    within :data:`READS_PEAK_BYTES` (16 answers at most: 64 would be 1.3 GB)."""
    import unicodedata

    from helpers.mcp.stdio_transport import SERVER_BUSY

    url = f"https://www.unicode.org/Public/{unicodedata.unidata_version}/ucd/UnicodeData.txt"
    raw = RawClient(db_url)
    try:
        raw.initialize("2025-11-25")
        call = {"name": "get_page", "arguments": {"url": url}}
        raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        link = raw.answer(3)["result"]["content"][0]
        lines = [
            json.dumps({"jsonrpc": "2.0", "id": 100 + n, "method": "resources/read",
                        "params": {"uri": link["uri"]}}).encode()
            for n in range(64)
        ]  # fmt: skip
        sizes = {}
        for request_id, message in _flood_answers(raw, lines).items():
            if "error" in message:
                assert message["error"]["code"] == SERVER_BUSY, message
                sizes[request_id] = None
            else:
                sizes[request_id] = len(message["result"]["contents"][0]["text"].encode())
        assert set(sizes.values()) <= {None, link["size"]} and link["size"] in sizes.values()
        peak = peak_bytes(raw.server.pid)
        assert peak < READS_PEAK_BYTES, f"{peak:,} bytes"
    finally:
        raw.close()


def test_arguments_nested_at_any_depth_get_an_answer(db_url):
    """Past the turn's 32 levels a tool execution error; past the JSON parser's own depth,
    -32700 for the request's id, read from its top level without parsing it; never silence.
    Each depth in turn, in one session, which goes on listing its tools after each."""
    raw = RawClient(db_url)
    try:
        raw.initialize("2025-11-25")
        for call, depth in enumerate([60, 250, 5_000, 200_000], start=100):
            nested = "[" * depth + "]" * depth
            raw.send(
                b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": '
                b'{"name": "get_page", "arguments": {"url": %s}}}' % (call, nested.encode())
            )
            answer = raw.answer(call)
            if depth <= 60:
                text = answer["result"]["content"][0]["text"]
                assert answer["result"]["isError"] and "32 levels" in text, depth
            else:
                assert answer["error"]["code"] == -32700, (depth, answer)
            raw.send({"jsonrpc": "2.0", "id": -call, "method": "tools/list"})
            assert raw.answer(-call)["result"]["tools"], depth
    finally:
        raw.close()


def test_the_docs_state_the_transports_own_bounds():
    """docs/mcp.md and the threat model say the transport's constants."""
    from helpers.mcp.stdio_transport import (
        MAX_BYTES_IN_FLIGHT,
        MAX_LINE_BYTES,
        MAX_REQUEST_VALUES,
        MAX_REQUESTS_IN_FLIGHT,
        SERVER_BUSY,
    )

    docs = " ".join((ROOT / "docs" / "mcp.md").read_text(encoding="utf-8").split())
    for phrase in (
        f"never held past {MAX_LINE_BYTES >> 20} MiB",
        f"at most {MAX_REQUESTS_IN_FLIGHT} requests are in flight",
        f"answered at once with error `{SERVER_BUSY}`",
        f"of at most {MAX_BYTES_IN_FLIGHT:,} bytes and {MAX_REQUEST_VALUES:,} JSON values together",
        f"more than {MAX_REQUEST_VALUES:,} JSON values",
    ):
        assert phrase in docs, phrase
    threats = (ROOT / "docs" / "threat-model.md").read_text(encoding="utf-8")
    assert f"holds at most {MAX_LINE_BYTES:,} bytes of it" in threats
    assert f"passes at most {MAX_REQUESTS_IN_FLIGHT} requests in flight" in threats
    assert f"answered at once with `{SERVER_BUSY}`" in threats
    assert f"stays under {FLOOD_PEAK_BYTES >> 20} MiB" in threats
    assert f"under {READS_PEAK_BYTES >> 20} MiB" in threats


def test_a_cancel_frees_only_the_request_it_names_once_its_handler_ends():
    """``notifications/cancelled`` naming an id that is not a request's (a list: unhashable; the
    float 2.0 and ``True``, which the SDK reads as no request's; an id never sent) changes
    nothing; one naming ``"2"`` names the request ``2`` (the SDK's ``coerce_request_id``, as in
    the TypeScript SDK); a cancelled request holds its place (and its bytes) until its handler
    ends, since the SDK answers it with nothing while its thread runs on; an answered one frees
    it once written."""
    from helpers.mcp.stdio_transport import _InFlight

    flight = _InFlight()
    for request_id in (1, 2, "a"):
        flight.start(request_id, 10, 3)
    for stranger in ([1], {"a": 1}, 2.0, True, None, 99, "b"):
        flight.done(stranger)
        flight.cancel(stranger)
        flight.handler_ended(stranger)
    assert (flight.count(), flight.bytes(), flight.values()) == (3, 30, 9)
    flight.cancel("2")
    flight.handler_ended(1)  # answered requests are done when written, not before
    assert (flight.count(), flight.bytes()) == (3, 30)
    flight.handler_ended(2)
    flight.handler_ended(2)  # once only
    flight.done(1)
    assert (flight.count(), flight.bytes()) == (1, 10) and flight.sizes == {("str", "a"): [(10, 3)]}


def test_cancels_of_every_request_leave_the_server_serving(db_url):
    """16 calls each cancelled at once, their ids sent as integers and cancelled as strings
    (one id to the SDK): once their handlers end the server takes requests again."""
    raw = RawClient(db_url)
    try:
        raw.initialize("2025-11-25")
        call = {"name": "get_page", "arguments": {"url": "https://example.com/"}}
        for n in range(16):
            raw.send({"jsonrpc": "2.0", "id": 300 + n, "method": "tools/call", "params": call})
            cancel = {"requestId": str(300 + n), "reason": "changed my mind"}
            raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        for attempt in range(200):  # the handlers end within moments; then a ping is served
            raw.send({"jsonrpc": "2.0", "id": 900 + attempt, "method": "ping"})
            if "result" in raw.answer(900 + attempt):
                break
        else:
            raise AssertionError("the server stayed busy after its requests were cancelled")
    finally:
        raw.close()


def test_a_request_id_is_read_from_the_edges_only_when_they_can_tell():
    """The id a refusal names is the request's own (JSON takes the last of two), or none."""
    from helpers.mcp.stdio_transport import _request_id

    assert _request_id(b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": []}}') == 1
    assert _request_id(b'{"params": {"a": []}, "method": "x", "jsonrpc": "2.0", "id": "b"}') == "b"
    for unsure in (
        b'{"jsonrpc": "2.0", "id": 1, "p": [0], "id": 2, "q": {}, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"id": 2}}',
        b'{"jsonrpc": "2.0", "\\u0069d": 1, "method": "x", "params": {}}',
    ):
        assert _request_id(unsure) is None, unsure


def test_the_bytes_of_requests_in_flight_are_bounded():
    from helpers.mcp.stdio_transport import _busy, _InFlight

    flight = _InFlight()
    flight.start(1, 20 << 20)
    assert _busy(flight, 12 << 20, 0, most=16, max_bytes=32 << 20) == ""
    said = _busy(flight, 13 << 20, 0, most=16, max_bytes=32 << 20)
    assert "20,971,520 bytes of requests in flight and takes at most 33,554,432" in said
    flight.done(1)
    assert _busy(flight, 16 << 20, 0, most=16, max_bytes=32 << 20) == ""
    flight.start(2, 10, 400_000)
    said = _busy(flight, 10, 100_001, most=16, max_bytes=32 << 20)
    assert "400,000 JSON values of requests in flight and takes at most 250,000" in said


def test_each_handler_says_when_it_ends_however_it_ends(store):
    """The transport learns that a handler in a worker thread has ended, whether it returned
    or raised: a cancelled request is held to the cap until then."""
    server = WorkbookMcpServer(store)
    ended: list[object] = []
    server._handler_ended = ended.append

    class Context:
        request_id = 7
        protocol_version = "2025-11-25"

    call = types.CallToolRequestParams(name="get_page", arguments={"url": "file:///nowhere"})
    anyio.run(server._on_call_tool, Context(), call)
    anyio.run(server._on_list_resources, Context(), None)
    with pytest.raises(Exception, match="internal://nothing"):
        anyio.run(
            server._on_read_resource,
            Context(),
            types.ReadResourceRequestParams(uri="internal://nothing"),
        )
    assert ended == [7, 7, 7]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize("kind", ["request", "notification"])
def test_a_line_of_too_many_values_is_refused_unparsed(db_url, kind):
    """16 MiB of ``{}`` within one line (5.6 million objects, 1.2 GB once parsed) is refused
    before it is parsed: a request with -32600 for its id, a notification with id null; the
    server stays within its bound and goes on."""
    from helpers.mcp.stdio_transport import MAX_LINE_BYTES, MAX_REQUEST_VALUES

    raw = RawClient(db_url)
    try:
        raw.initialize("2025-11-25")
        head = b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "get_page", '
        many = b"{}," * ((MAX_LINE_BYTES - 200) // 3)
        tail = (
            b'"arguments": {"url": ['
            + many
            + b"{}]}}"
            + (b', "id": 11}' if kind == "request" else b"}")
        )
        raw.send(head + tail)
        answer = raw.answer(11 if kind == "request" else None)
        assert answer["error"]["code"] == -32600, answer
        assert f"more than {MAX_REQUEST_VALUES:,} JSON values" in answer["error"]["message"]
        assert peak_bytes(raw.server.pid) < FLOOD_PEAK_BYTES
        raw.send({"jsonrpc": "2.0", "id": 12, "method": "tools/list"})
        assert raw.answer(12)["result"]["tools"]
    finally:
        raw.close()


#: One nested one-key object, 16 levels deep: 32 values and keys, 16 dicts (a review's shape,
#: which costs the parser more per value than ``{}``).
NESTED = b'{"a":' * 16 + b"0" + b"}" * 16


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_requests_of_the_most_values_are_held_within_bounds(db_url):
    """Two calls written at once while the first waits for the store, each of nearly the most
    values and keys as nested one-key objects (the shape that costs most per value counted):
    the second is refused at once and unparsed (the values in flight together), the first is
    served, and the server stays within its bound (940,000 such objects in one line took it
    past 500 MiB)."""
    from helpers.mcp.stdio_transport import MAX_REQUEST_VALUES, SERVER_BUSY

    many = b",".join([NESTED] * ((MAX_REQUEST_VALUES - 100) // 33))
    raw = RawClient(db_url)
    try:
        raw.initialize("2025-11-25")
        lines = [
            b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": '
            b'"yt_transcribe", "arguments": {"video_id": "1"}, "x": [%s]}}' % (400 + n, many)
            for n in range(2)
        ]
        lock = StoreLock(db_url)
        try:
            answers = _flood_answers(raw, lines, lock, answered_held=1)
        finally:
            lock.release()
        assert "result" in answers[400], answers[400]
        assert answers[401]["error"]["code"] == SERVER_BUSY, answers[401]
        assert "JSON values of requests in flight" in answers[401]["error"]["message"]
        peak = peak_bytes(raw.server.pid)
        assert peak < FLOOD_PEAK_BYTES, f"{peak:,} bytes"
    finally:
        raw.close()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_requests_of_nearly_the_most_bytes_written_at_once_are_held_within_bounds(db_url):
    """8 calls of 6 MiB each written at once while the first waits for the store (calls run
    one at a time, so the others would wait in flight behind it: 850 MB held when the cap
    counted requests only): the 7 past the bytes in flight are answered at once that they are,
    the first is served, and the server stays within its bound."""
    from helpers.mcp.stdio_transport import MAX_BYTES_IN_FLIGHT, SERVER_BUSY

    raw = RawClient(db_url)
    try:
        raw.initialize("2025-11-25")
        big = {"name": "get_page", "arguments": {"url": "x" * (6 << 20)}}
        lines = [
            json.dumps({"jsonrpc": "2.0", "id": 200 + n, "method": "tools/call", "params": big})
            .encode()
            for n in range(8)
        ]  # fmt: skip
        del big
        assert 2 * len(lines[0]) > MAX_BYTES_IN_FLIGHT >= len(lines[0])  # one in flight at most
        lock = StoreLock(db_url)
        try:
            answers = _flood_answers(raw, lines, lock, answered_held=7)
        finally:
            lock.release()
        busy = {i for i, a in answers.items() if a.get("error", {}).get("code") == SERVER_BUSY}
        assert busy == set(range(201, 208)), sorted(busy)
        assert all("bytes of requests in flight" in answers[i]["error"]["message"] for i in busy)
        assert "result" in answers[200], answers[200]
        peak = peak_bytes(raw.server.pid)
        assert peak < FLOOD_PEAK_BYTES, f"{peak:,} bytes"
    finally:
        raw.close()


def test_a_cancel_with_an_unhashable_id_leaves_the_server_serving(db_url):
    raw = RawClient(db_url)
    try:
        raw.initialize("2025-11-25")
        for request_id in ([1], {"a": 1}, 2.0):
            cancel = {"requestId": request_id, "reason": "x"}
            raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        raw.send({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
        assert raw.answer(5)["result"]["tools"]
    finally:
        raw.close()
