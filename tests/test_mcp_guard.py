"""The stdio guard between the agent's MCP client and a server's process, on its own: each
message passed on whole, a line that is not JSON noted and dropped, an answer over the limit
replaced by an error for its request (wherever its ``id`` stands), and no server outliving its
client. The server here is a small Python program that writes what each test needs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hang import HANG_GUARD_S
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.mcp import stdio_guard
from helpers.mcp.stdio_guard import MessageScanner

GUARD = [sys.executable, "-I", str(Path(stdio_guard.__file__))]


def guarded(script: str, *, max_bytes: int = 1 << 20) -> subprocess.Popen[bytes]:
    """The guard running ``python -c script`` as its server."""
    return subprocess.Popen(
        [*GUARD, f"--max-message-bytes={max_bytes}", "--", sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finished(guard: subprocess.Popen[bytes]) -> tuple[list[Any], str]:
    out, err = guard.communicate(timeout=HANG_GUARD_S)
    return [json.loads(line) for line in out.splitlines()], err.decode()


def test_an_answer_over_the_limit_is_answered_for_wherever_its_id_stands():
    """The id last (valid JSON, as some servers write it), and an ``id`` key deeper in the
    result before it (``structuredContent``): the error goes to the request's own id."""
    script = """
import json, sys
big = "x" * (2 << 20)
print(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}))
print("this is not json at all")
print("")
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "result": {"structuredContent": {"id": 777},
    "content": [{"type": "text", "text": big}]}, "id": 42}) + "\\n")
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": 'ab"c', "result": big}) + "\\n")
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
    "params": {"id": 5, "data": big}}) + "\\n")
print(json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"ok": True}}))
"""
    messages, err = finished(guarded(script))
    assert [m["id"] for m in messages] == [1, 42, 'ab"c', 2]
    assert messages[1]["error"]["code"] == -32603
    assert "over 1,048,576 bytes" in messages[1]["error"]["message"]
    assert "a line that is not a JSON object: 'this is not json at all'" in err
    assert "a request or notification over 1,048,576 bytes dropped" in err


def test_every_readable_id_is_answered_for_and_nothing_stops_the_server():
    """Ids as JSON allows them (``null``, ``3.0``, the key written ``\\u0069d``, a second ``id``
    key, which JSON readers take): each answered for; a message over the limit whose id is not
    one (``true``, none at all, a bare list) is dropped, and the server goes on."""
    script = """
import json, sys
big = "x" * (2 << 20)
def out(text): sys.stdout.write(text + "\\n")
out('{"jsonrpc": "2.0", "id": null, "result": "' + big + '"}')
out('{"jsonrpc": "2.0", "id": 3.0, "result": "' + big + '"}')
out('{"jsonrpc": "2.0", "\\\\u0069d": 4, "result": "' + big + '"}')
out('{"jsonrpc": "2.0", "id": 1, "result": "' + big + '", "id": 5}')
out('{"jsonrpc": "2.0", "id": true, "result": "' + big + '"}')
out('{"jsonrpc": "2.0", "result": "' + big + '"}')
out('[' + '1,' * (1 << 20) + '1]')
out(json.dumps({"jsonrpc": "2.0", "id": 6, "result": {"ok": True}}))
"""
    messages, err = finished(guarded(script))
    assert [m["id"] for m in messages] == [None, 3, 4, 5, 6]
    assert all(m["error"]["code"] == -32603 for m in messages[:4])
    assert err.count("whose id cannot be read dropped") == 3
    assert "exited" not in err  # never stopped for what it sent


def test_the_limit_counts_the_message_not_its_line_break():
    def line_of(size: int, end: str) -> str:
        head = '{"jsonrpc":"2.0","id":1,"result":{"t":"'
        return head + "x" * (size - len(head) - 3) + '"}}' + end

    for end in ("\n", "\r\n"):
        at_limit, over = line_of(1000, end), line_of(1001, end)
        script = f"import sys; sys.stdout.write({at_limit!r} + {over!r})"
        messages, err = finished(guarded(script, max_bytes=1000))
        assert ["result" if "result" in m else "error" for m in messages] == [
            "result", "error",
        ], end  # fmt: skip
        assert "an answer over 1,000 bytes dropped" in err


def test_lines_that_are_not_json_objects_are_dropped_and_quoted():
    script = """
import json, sys
for line in ['\\ufeff{"jsonrpc": "2.0", "id": 1, "result": {}}', 'NaN', '123', '"hello"',
             '{"jsonrpc": "2.0", "id": 2, "result": NaN}']:
    sys.stdout.write(line + "\\n")
print(json.dumps({"jsonrpc": "2.0", "id": 3, "result": {}}))
"""
    messages, err = finished(guarded(script))
    assert [m["id"] for m in messages] == [3]
    assert err.count("a line that is not a JSON object") == 5


def test_a_server_that_closes_its_stdout_and_goes_on_is_said_to():
    script = "import os, time; os.close(1); time.sleep(60)"
    messages, err = finished(guarded(script))
    assert messages == []
    assert "closed its stdout and goes on running" in err


def test_a_server_never_outlives_its_client():
    """A server that ignores both the end of its stdin and SIGTERM: once the client has closed
    the guard's stdin (it is done, or it died), the guard stops it."""
    script = (
        "import json, os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print(json.dumps({'pid': os.getpid()}), flush=True)\n"
        "while True: time.sleep(1)\n"
    )
    guard = guarded(script)
    assert guard.stdout is not None and guard.stdin is not None
    pid = json.loads(guard.stdout.readline())["pid"]
    guard.stdin.close()
    assert guard.wait(timeout=HANG_GUARD_S) == 128 + signal.SIGKILL
    with pytest.raises(ProcessLookupError):
        for _ in range(100):  # reaped by the guard: gone at once, or within moments
            os.kill(pid, 0)
            time.sleep(0.05)


# -- the scanner, on generated messages cut anywhere -------------------------------------------

_ids = st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=12))
_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["id", "x", "method"]), inner)
    ),
    max_leaves=8,
)


@st.composite
def _messages(draw: Any) -> tuple[bytes, bytes | None]:
    """A JSON-RPC message in any key order (an ``id`` also deep in its values), cut into pieces
    at any bytes; and the id text the scanner must find (``None`` for a request)."""
    fields: dict[str, Any] = {"jsonrpc": "2.0", "result": draw(_values)}
    request_id = draw(_ids)
    fields["id"] = request_id
    is_request = draw(st.booleans())
    if is_request:
        fields["method"] = draw(st.text(max_size=10))
    order = draw(st.permutations(list(fields)))
    text = json.dumps({key: fields[key] for key in order}, ensure_ascii=draw(st.booleans()))
    return text.encode(), None if is_request else json.dumps(request_id).encode()


@settings(derandomize=True, max_examples=300, deadline=None)
@given(_messages(), st.lists(st.integers(1, 40), max_size=30))
def test_the_scanner_finds_the_top_level_id_however_the_message_is_cut(message, cuts):
    data, expected = message
    scanner = MessageScanner()
    at = 0
    for size in cuts:
        scanner.feed(data[at : at + size])
        at += size
    scanner.feed(data[at:])
    assert scanner.response_id() == expected


def test_the_error_for_an_answer_it_dropped_is_a_json_rpc_error_for_that_id():
    message = json.loads(stdio_guard.over_limit_error(b"7", 100))
    assert message["id"] == 7 and message["error"]["code"] == -32603
    assert "over 100 bytes" in message["error"]["message"]
