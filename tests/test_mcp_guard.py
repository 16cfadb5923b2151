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
from memory import peak_bytes

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
    """The messages the guard passes on and what it says on stderr, read while the client
    stays connected, as a client waiting for its answers does, until the server's stdout ends;
    then the client closes stdin and the guard is waited for. Closing stdin first would race
    the server's writing against the guard's grace period for a server whose client has gone
    (``stdio_guard.STOP_GRACE_S``, of wall clock), which a busy machine can use up. A guard
    still running after :data:`HANG_GUARD_S` is killed and the test fails."""
    import threading

    assert guard.stdin is not None and guard.stdout is not None and guard.stderr is not None
    said: list[bytes] = []
    reading = threading.Thread(target=lambda: said.append(guard.stderr.read()), daemon=True)
    reading.start()
    hung: list[bool] = []
    hang_guard = threading.Timer(HANG_GUARD_S, lambda: (hung.append(True), guard.kill()))
    hang_guard.start()
    try:
        out = guard.stdout.read()  # until the server's stdout ends
        guard.stdin.close()
        guard.wait()
        reading.join()
    finally:
        hang_guard.cancel()
    if hung:
        pytest.fail(f"the guard was still running after {HANG_GUARD_S} s")
    return [json.loads(line) for line in out.splitlines()], b"".join(said).decode()


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
    assert "a line dropped: it was not JSON (" in err and "'this is not json at all'" in err
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
    guard = guarded(script)
    messages, err = finished(guard)
    assert [m["id"] for m in messages] == [None, 3, 4, 5, 6]
    assert all(m["error"]["code"] == -32603 for m in messages[:4])
    assert err.count("whose id cannot be read dropped") == 3
    assert guard.returncode == 0, err  # never stopped for what it sent


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


def test_lines_the_client_would_not_read_are_answered_for_or_dropped_and_quoted():
    """A byte-order mark, ``NaN``, a lone surrogate, an id such as ``1.0``: the SDK's reader
    drops such a line without a word (the call then waits out its timeout), so an answer with a
    readable id is answered for at once (the last id, as JSON reads it, wherever it stands), as
    is a response whose ``method`` is not a string; a
    bare value, which has none, is dropped and quoted, and so is a line cut short (its last
    brace a nested object's, whose id is not the message's). A pair of surrogates is one
    character, passed on."""
    script = r"""
import json, sys
for line in ['\ufeff{"jsonrpc": "2.0", "id": 1, "result": {}}', 'NaN', '123', '"hello"',
             '{"jsonrpc": "2.0", "id": 2, "result": NaN}',
             '{"jsonrpc": "2.0", "id": 4.0, "result": {}}',
             '{"jsonrpc": "2.0", "result": {"t": "\\ud800"}, "id": "s"}',
             '{"jsonrpc": "2.0", "id": 5, "result": {"t": "\\ud83d\\ude00"}}',
             '{"jsonrpc": "2.0", "id": 6, "result": 5, "method": null}',
             '{"jsonrpc": "2.0", "id": 7, "result": {"content": [], "id": 8}',
             '{"jsonrpc": "2.0", "result": {"x": ' + '[' * 300 + ']' * 300 + '}, "id": 9, "z": []}',
             '{"id": 10, "a": {}, "id": 11, "b": {}, "jsonrpc": "2.0", "result": 5}',
             '{"jsonrpc": "2.0", "id": 12, "result": {"s": {"id": 13}}, "error": {}}']:
    sys.stdout.write(line + "\n")
print(json.dumps({"jsonrpc": "2.0", "id": 3, "result": {}}))
"""
    messages, err = finished(guarded(script))
    assert [m["id"] for m in messages] == [1, 2, 4, "s", 5, 6, 9, 11, 12, 3]
    said = {m["id"]: m["error"]["message"] for m in messages if "error" in m}
    assert "was not JSON (Unexpected UTF-8 BOM" in said[1]
    assert "was not JSON (NaN is not JSON)" in said[2]
    assert "was not a JSON-RPC 2.0 response" in said[4]
    assert "lone surrogate" in said["s"]
    assert messages[4]["result"] == {"t": "\U0001f600"}
    assert err.count("a line dropped: it was not a JSON object: ") == 2
    assert "was not a JSON-RPC 2.0 response" in said[6]  # a method, but not a string
    assert "nested deeper than 200 levels" in said[9]  # its id between two nested values
    # a second "id" between nested values, or one nested: the edges cannot tell, the scanner can
    assert "not a JSON-RPC 2.0 response" in said[11] and "not a JSON-RPC 2.0 response" in said[12]
    # cut short (its last brace a nested object's): no id read, rather than the nested one
    assert err.count("a line dropped: it was not JSON (") == 2


def test_a_server_that_closes_its_stdout_and_goes_on_is_said_to():
    script = "import os, time; os.close(1); time.sleep(60)"
    out, err = guarded(script).communicate(timeout=HANG_GUARD_S)  # the client leaves at once
    assert out == b""
    err = err.decode()
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


@st.composite
def _edged_messages(draw: Any) -> tuple[bytes, bytes, bool]:
    """A message with nested values (``result``, ``meta``) and its scalar members in any order;
    its own id's text; and whether every scalar member stands at an edge (before the first
    nested value or after the last), where :func:`stdio_guard.edge_response_id` reads."""
    nested = {"result": draw(st.dictionaries(st.text(max_size=4), _values, max_size=3))}
    if draw(st.booleans()):
        nested["meta"] = draw(st.lists(_values, max_size=3))
    flat: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(_ids)}
    if draw(st.booleans()):
        flat["method"] = draw(st.text(max_size=10))
    order = draw(st.permutations([*flat, *nested]))
    fields = {**flat, **nested}
    text = json.dumps({key: fields[key] for key in order}, ensure_ascii=draw(st.booleans()))
    places = [order.index(key) for key in nested]
    at_edges = all(not min(places) < order.index(key) < max(places) for key in flat)
    return text.encode(), json.dumps(flat["id"]).encode(), at_edges


@settings(derandomize=True, max_examples=300, deadline=None)
@given(_edged_messages())
def test_the_edge_reader_finds_the_id_the_scanner_finds(message):
    """However the values nest (strings holding brackets, quotes and escapes included), the
    edge reader names no id but the message's own, and reads what the scanner reads when the
    id and the method stand at the edges and no nested value has an "id" (a method between two
    nested values it does not see: the documented cost of never stepping through them)."""
    data, own_id, at_edges = message
    scanner = MessageScanner()
    scanner.feed(data)
    found = stdio_guard.edge_response_id(data)
    assert found in (None, own_id)
    if at_edges and data.count(b'"id"') == 1:  # a nested "id" too: the edges cannot tell
        assert found == scanner.response_id()


#: What the guard may hold while it reads a line of 16 MiB: the line, a copy or two of it, and a
#: million values at most (16 MiB of ``{}`` parsed is about 1 GB).
GUARD_PEAK_BYTES = 200 * 2**20


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize("shape", ["{}", "[]", '"a"', "0"])
def test_an_answer_of_too_many_values_is_answered_for_unparsed(shape: str):
    """An answer holding more values than the client reads (16 MiB of ``{}`` and the like,
    within the bytes a message may have) is answered for its id at once and never parsed: the
    guard stays within :data:`GUARD_PEAK_BYTES`; an answer of the most values is passed on."""
    from helpers.mcp.stdio_guard import DEFAULT_MAX_MESSAGE_BYTES, MAX_MESSAGE_VALUES

    many = (DEFAULT_MAX_MESSAGE_BYTES - 200) // (len(shape) + 1)
    script = f"""
import sys
def out(value, items, request_id):
    sys.stdout.write('{{"jsonrpc":"2.0","id":' + request_id + ',"result":{{"structuredContent":'
                     '{{"x":[' + ",".join([value] * items) + ']}}}}}}\\n')
    sys.stdout.flush()
out({shape!r}, {many}, '"many"')
out("0", {MAX_MESSAGE_VALUES} - 11, "2")  # the most, counted as the guard counts
sys.stdin.read()
"""
    guard = guarded(script, max_bytes=DEFAULT_MAX_MESSAGE_BYTES)
    assert guard.stdout is not None and guard.stdin is not None
    refused, passed = (json.loads(guard.stdout.readline()) for _ in range(2))
    assert refused["id"] == "many" and refused["error"]["code"] == -32603
    assert (
        f"held more than {MAX_MESSAGE_VALUES:,} JSON values and keys" in refused["error"]["message"]
    )
    assert passed["id"] == 2 and "result" in passed
    peak = peak_bytes(guard.pid)
    guard.stdin.close()
    guard.wait(timeout=HANG_GUARD_S)
    assert peak < GUARD_PEAK_BYTES or shape == "0", f"{peak:,} bytes"


def test_reading_a_lines_edges_is_linear_however_its_strings_are_written():
    """A string of escaped quotes (closed or never closed) once made every quote in it start a
    new match that read to the end (a 64 KiB line held the guard 12 s; 16 MiB would be days).
    Read in a process of its own, the hang guard its only limit: 4 MiB of each, and its id."""
    program = """
from helpers.mcp.stdio_guard import edge_members, refusal_reason
n = 2 << 20
for line in (b'{"' + b'\\\\"' * n + b'"}', b'{"' + b'\\\\"' * n + b'}',
             b'{"id": 4, "' + b'\\\\"' * n + b'": 1, "x": []}'):
    refusal_reason(line)
    print(edge_members(line))
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=HANG_GUARD_S,
        cwd=Path(stdio_guard.__file__).parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["(None, False)", "(None, False)", "(b'4', False)"]
