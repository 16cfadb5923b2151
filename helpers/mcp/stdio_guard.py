"""What stands between the agent and an MCP server's process: its output bounded in memory.

The SDK's stdio client reads a server's stdout one JSON-RPC message (one line) at a time and
keeps the whole line in memory, however long; MCP sets no size limit on a tool result
(modelcontextprotocol#798 was closed without one), and the field's complaint is results that
bypass the client's limits (QwenLM/qwen-code#2439, charmbracelet/crush#3480). So the client
starts every server through this relay (``python -I …/stdio_guard.py --max-message-bytes N
--max-stderr-bytes M -- COMMAND ARGS…``, run as a file: it needs nothing but the standard
library, so it starts wherever the client runs), which:

- passes the client's stdin to the server unchanged;
- passes the server's stdout to the client one whole message at a time, holding at most ``N``
  bytes (its line break aside). A message over ``N`` is not passed on: it is read to its end
  without being held (:class:`MessageScanner`), and when it is a response (its top level has an
  ``id`` and no ``method``), an error response for that id goes instead (``-32603``, "the
  server's answer was over N bytes"), so that call fails with a reason and the session goes on;
  a request, a notification, or a response whose id cannot be read is dropped, said on stderr.
  A line within ``N`` that the SDK's reader would drop without a word (the call then waited out
  its whole timeout, "no answer") or fail on ("the server stopped") is not passed on either, and
  is answered the same way (:func:`refusal_reason`; the id read by :func:`edge_members`, or by
  :class:`MessageScanner` when it stands between nested values): not a JSON object in UTF-8
  (broken JSON, a bare value, ``NaN``, a byte-order mark, a lone surrogate), nested deeper than
  :data:`MAX_MESSAGE_DEPTH` levels, holding more than :data:`MAX_MESSAGE_VALUES` JSON values
  and keys (counted before it is parsed, so a line of 16 MiB of ``{}`` costs no more memory
  than its bytes), or a response JSON-RPC 2.0 does not allow (a ``result`` that is not an
  object, both or neither of ``result`` and ``error``, an error without its code or message,
  an id such as ``1.0``, a ``method`` that is not a string: :func:`_is_response`); a line that
  has no id to answer, or whose brackets do not balance (cut short, its last brace may be a
  nested object's), is dropped, its start quoted on stderr. The server is never stopped for
  what it sent;
- passes the first ``M`` bytes of the server's stderr on, then one line saying the rest was
  dropped;
- when the client closes stdin (it is done, or it died), gives the server
  :data:`STOP_GRACE_S` seconds to exit, then stops it (SIGTERM, then SIGKILL), so no server
  outlives its client;
- says on stderr when the server exits with a code other than 0, or exits while its client is
  still connected, or closes its stdout and goes on running.

It exits with the server's exit code. Standard library only: it starts before anything else.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import BinaryIO

#: The longest message a server may send, in bytes, unless told otherwise: a result of 10 MB of
#: text (the workbook's largest), JSON-escaped, fits. (The SDK's reader joins a message's
#: pieces into one string again at each read, so its time grows with the square of a message's
#: length: 16 MiB is read in about a second.)
DEFAULT_MAX_MESSAGE_BYTES = 16 << 20
#: The deepest a message may nest, its own object the first level: the SDK's reader (pydantic's
#: JSON parser) refuses a message of 202 levels and more, and a message it refuses it drops.
MAX_MESSAGE_DEPTH = 200
#: The most JSON values a message may hold, each key counted as one, counted before it is
#: parsed (:func:`value_count`): 16 MiB of ``{}`` is 5.6 million objects, which took the agent
#: to 2 GB once the guard, the SDK and the client had each read them, and a review took one
#: server past 500 MiB with 940,000 nested one-key objects. A result of half a million values
#: is far past what a model reads whole (a 10 MB text is one value).
MAX_MESSAGE_VALUES = 500_000
#: How much of a server's stderr reaches the client's log, in bytes.
DEFAULT_MAX_STDERR_BYTES = 64 << 10
#: Seconds a server has to exit once its client has closed stdin, before it is stopped.
STOP_GRACE_S = 3.0
_CHUNK_BYTES = 64 << 10
#: The most bytes of a top-level ``id`` value read (a JSON-RPC id is a number or a string).
_MAX_ID_BYTES = 512
#: The most bytes of a top-level key read (``"id"`` and ``"method"`` written with escapes fit).
_MAX_KEY_BYTES = 64
#: How much of a line that is not JSON the note on stderr quotes, in characters.
_QUOTED_CHARS = 200
#: A JSON string, escapes and all (possessive: nothing kept to backtrack into).
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
#: Whole units from a position: bytes outside strings and whole strings; with a window's end,
#: it stops before a string the window cuts.
_UNITS = re.compile(rb'(?:[^"]++|"(?:[^"\\]++|\\.)*+")*+', re.DOTALL)
#: From a position, up to the first opening bracket outside strings.
_TO_OPENER = re.compile(rb'(?:[^"\[{]++|"(?:[^"\\]++|\\.)*+")*+', re.DOTALL)
#: The same, read backwards (over the reversed bytes): up to the first bracket outside strings.
#: A string reversed ends at a quote that no odd run of backslashes escapes.
_BACK_TO_BRACKET = re.compile(
    rb'(?:[^"\[\]{}]++|"(?:[^"]++|"(?=\\(?:\\\\)*+(?!\\)))*+")*+', re.DOTALL
)
#: A JSON escape of a surrogate (``\\ud800`` to ``\\udfff``).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
#: How far back from a message's end its last members are looked for (what the reversed copy
#: holds); members past that, before the last nested value, are not read.
_EDGE_BYTES = 64 << 10
#: Bytes of a line read at once when its structure is counted (bounds what a count holds).
_WINDOW_BYTES = 1 << 20
#: One token of a piece of a top level: a whole string, or a run of bytes outside strings.
_TOKEN = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[^"]++', re.DOTALL)
#: A key written with an escape (``"\\u0069d"`` is ``"id"``): edges that show one are not trusted.
_ESCAPED_KEY_LETTER = re.compile(rb"\\u006[4-9a-fA-F]")
#: The longest line whose id, when it stands between nested values, :class:`MessageScanner`
#: reads (it steps through every bracket in Python: about 0.7 s a MiB of ``{}``); past it, such a
#: line is dropped, said on stderr, rather than have a server hold the guard for seconds a line.
MAX_SCANNED_BYTES = 1 << 20


class MessageScanner:
    """Reads one JSON-RPC message a piece at a time, holding none of it but its top-level
    ``id`` (at most :data:`_MAX_ID_BYTES`): what a response over the limit needs to be answered
    for. Strings are skipped with a regular expression, so a long value costs little.

    After the whole message is fed: :meth:`response_id` is the id's JSON text when the message
    is a response (an ``id`` at its top level and no ``method``), else ``None``; and
    :attr:`has_method` says it is a request or a notification.
    """

    _OUTSIDE = re.compile(rb'["{}\[\],:]')
    _INSIDE = re.compile(rb'["\\]')

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.expect_key = False
        self.key: bytearray | None = None  # a top-level key being read (its first bytes)
        self.last_key = ""
        self.value: bytearray | None = None  # the top-level id's value being read
        self.id: bytes | None = None  # the last top-level id's JSON text (JSON takes the last)
        self.has_method = False

    def _take(self, data: bytes, start: int, end: int) -> None:
        if start >= end:
            return
        if self.key is not None:
            self.key += data[start:end][: _MAX_KEY_BYTES + 1 - len(self.key)]
        if self.value is not None:
            self.value += data[start:end]
            if len(self.value) > _MAX_ID_BYTES:
                self.value = None  # not an id this client ever sent
                self.id = b""

    def feed(self, data: bytes) -> None:
        """Read the next piece of the message."""
        pos = 0
        while pos < len(data):
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                    self._take(data, pos, pos + 1)
                    pos += 1
                    continue
                found = self._INSIDE.search(data, pos)
                end = found.start() if found else len(data)
                self._take(data, pos, end)
                if found is None:
                    return
                pos = end + 1
                if data[end] == 0x5C:  # a backslash: the next byte is escaped
                    self._take(data, end, end + 1)
                    self.escaped = True
                    continue
                self.in_string = False
                if self.key is not None:
                    self.last_key, self.key = _key_text(bytes(self.key)), None
                    self.has_method = self.has_method or self.last_key == "method"
                else:
                    self._take(data, end, end + 1)
                continue
            found = self._OUTSIDE.search(data, pos)
            end = found.start() if found else len(data)
            self._take(data, pos, end)
            if found is None:
                return
            pos = end + 1
            self._token(data, end)

    def _token(self, data: bytes, at: int) -> None:
        char = data[at : at + 1]
        top = self.depth == 1
        if char == b'"':
            self.in_string = True
            if top and self.expect_key:
                self.key, self.expect_key = bytearray(), False
            else:
                self._take(data, at, at + 1)
        elif char in (b"{", b"["):
            self._take(data, at, at + 1)
            self.depth += 1
            self.expect_key = self.depth == 1 and char == b"{"
        elif char in (b"}", b"]"):
            if top:
                self._end_value()
            else:
                self._take(data, at, at + 1)
            self.depth -= 1
        elif char == b",":
            if top:
                self._end_value()
                self.expect_key = True
            else:
                self._take(data, at, at + 1)
        elif char == b":":
            if top and self.last_key == "id":
                self.value = bytearray()
            else:
                self._take(data, at, at + 1)

    def _end_value(self) -> None:
        if self.value is not None:
            self.id, self.value = bytes(self.value).strip(), None
        self.last_key = ""

    def response_id(self) -> bytes | None:
        """The top-level id's JSON text when the message is a response (a string, a whole
        number, a number with a zero fraction read as that number, or ``null``, which JSON-RPC
        answers with ``null`` too); ``None`` when it is not a response, or its id is not one."""
        return _as_response_id(self.id, self.has_method)


def _key_text(raw: bytes) -> str:
    """A top-level key as JSON reads it (``\\u0069d`` is ``id``), from its first bytes; a key
    longer than any this scanner looks for reads as ``""``."""
    if len(raw) > _MAX_KEY_BYTES:
        return ""
    try:
        key = json.loads(b'"' + raw + b'"')
    except ValueError:
        return ""
    return key if isinstance(key, str) else ""


def _write(out: BinaryIO, data: bytes) -> bool:
    try:
        out.write(data)
        out.flush()
        return True
    except (BrokenPipeError, OSError, ValueError):
        return False


def _stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL two seconds later, for a server still running."""
    with contextlib.suppress(OSError):
        server.terminate()
        try:
            server.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            server.kill()


def _pass_stdin(server: subprocess.Popen[bytes], closed: threading.Event) -> None:
    """The client's stdin to the server's, until either closes; then the server has
    :data:`STOP_GRACE_S` seconds to exit before it is stopped."""
    assert server.stdin is not None
    try:
        while chunk := os.read(0, _CHUNK_BYTES):
            server.stdin.write(chunk)
            server.stdin.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        closed.set()
        with contextlib.suppress(BrokenPipeError, OSError):
            server.stdin.close()
    try:
        server.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _stop(server)


def _dropped_answer(request_id: bytes, message: str) -> bytes:
    """The JSON-RPC error response (``-32603``, internal error) that stands for a dropped answer
    to the request ``request_id`` (its JSON text)."""
    body = json.dumps({"code": -32603, "message": message})
    return b'{"jsonrpc":"2.0","id":' + request_id + b',"error":' + body.encode() + b"}\n"


def over_limit_error(request_id: bytes, max_bytes: int) -> bytes:
    """The error response that stands for an answer over ``max_bytes``."""
    return _dropped_answer(
        request_id,
        f"the MCP server's answer was over {max_bytes:,} bytes, the most the client takes in "
        "one message: it was dropped. Ask for less (a narrower query, one page at a time).",
    )


def unreadable_error(request_id: bytes, reason: str) -> bytes:
    """The error response that stands for an answer the client would not read, for ``reason``
    (what :func:`refusal_reason` says)."""
    return _dropped_answer(request_id, f"the MCP server's answer {reason}: it was dropped")


def _not_a_number(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _depth(value: object) -> int:
    """How many levels ``value`` nests (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend(
                (child, level + 1) for child in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


def value_count(line: bytes) -> int:
    """An upper bound on the JSON values and keys ``line`` holds, read without parsing it: its
    opening brackets, commas and colons outside strings, plus one (each value but the first
    follows a comma or opens its container, each key a colon; an empty container counts twice).
    About 2 ms a MiB, 40 ms a MiB of small strings; what it holds is bounded
    (:func:`_structure`)."""
    return 1 + sum(
        piece.count(b"[") + piece.count(b"{") + piece.count(b",") + piece.count(b":")
        for piece in _structure(line)
    )


def _balanced(line: bytes) -> bool:
    """Whether ``line`` closes as many brackets outside strings as it opens."""
    opened = sum(
        piece.count(b"[") + piece.count(b"{") - piece.count(b"]") - piece.count(b"}")
        for piece in _structure(line)
    )
    return opened == 0


def _structure(line: bytes) -> Iterator[bytes]:
    """``line`` outside its strings (each string read as ``0``), a window of at most
    :data:`_WINDOW_BYTES` at a time, so what a reader holds is bounded however many strings the
    line has; a string never closed is read as if it were structure."""
    pos, size = 0, len(line)
    while pos < size:
        end = _UNITS.match(line, pos, min(size, pos + _WINDOW_BYTES)).end()
        if end > pos:
            yield _STRING.sub(b"0", line[pos:end])
        elif string := _STRING.match(line, pos):  # one string longer than a window
            end = string.end()
        else:
            yield line[pos:]
            end = size
        pos = end


def _lone_surrogate(value: object) -> bool:
    """Whether a string in the parsed ``value`` holds a surrogate not in a pair (JSON's
    ``"\\ud800"``: Python's reader takes it, the SDK's refuses the whole message)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def refusal_reason(
    line: bytes, max_depth: int = MAX_MESSAGE_DEPTH, max_values: int = MAX_MESSAGE_VALUES
) -> str | None:
    """``None`` when ``line`` is a message the SDK's reader takes (one JSON object in UTF-8,
    nested at most ``max_depth`` levels, holding at most ``max_values`` values by
    :func:`value_count`, no ``NaN`` or lone surrogate, and a response JSON-RPC 2.0 allows when it
    is one); else why not, as a phrase that follows "the MCP server's answer". Never parses a
    line past ``max_values``: what a line of 16 MiB of ``{}`` would take (about 1 GB) is not
    spent."""
    if value_count(line) > max_values:
        return f"held more than {max_values:,} JSON values and keys, the most the client reads"
    try:
        value = json.loads(line.decode("utf-8"), parse_constant=_not_a_number)
    except RecursionError:  # deeper than Python's own parser goes: far past the limit
        return _too_deep(max_depth)
    except UnicodeDecodeError:
        return "was not UTF-8"
    except ValueError as exc:
        return f"was not JSON ({exc})"
    if not isinstance(value, dict):
        return "was not a JSON object"
    if _depth(value) > max_depth:
        return _too_deep(max_depth)
    if "id" in value and not isinstance(value.get("method"), str) and not _is_response(value):
        return (
            'was not a JSON-RPC 2.0 response (it needs "jsonrpc": "2.0", an id that is a '
            "string or an integer, and either a result object or an error with a code and a "
            "message)"
        )
    if _SURROGATE_ESCAPE.search(line) and _lone_surrogate(value):
        return "held a string with a lone surrogate (\\ud800 to \\udfff not in a pair), which the client's reader refuses"
    return None


def _too_deep(max_depth: int) -> str:
    return f"was nested deeper than {max_depth} levels, the most the client reads"


def _is_response(value: dict[str, object]) -> bool:
    """Whether ``value`` (a message with an ``id`` and no ``method``) is a response JSON-RPC 2.0
    allows, as MCP's result and error objects are (the JSON-RPC 2.0 specification, section 5;
    the MCP schema's ``JSONRPCResponse`` and ``JSONRPCError``, whose id is a string or an
    integer, ``null`` for an error only)."""
    if value.get("jsonrpc") != "2.0" or ("result" in value) == ("error" in value):
        return False
    request_id = value["id"]
    if isinstance(request_id, bool) or not isinstance(request_id, int | str | None):
        return False
    if "result" in value:
        return isinstance(value["result"], dict) and request_id is not None
    error = value["error"]
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message"), str)
    )


def edge_members(line: bytes) -> tuple[bytes | None, bool]:
    """What a JSON object's top level says of its kind, read from the members before its first
    nested value and after its last (where the SDKs write ``jsonrpc``, ``id`` and ``method``:
    the Python SDK's first, the TypeScript SDK's last): its ``id``'s JSON text (``b""`` for one
    longer than any id, ``None`` for none found) and whether it has a ``method`` that is a
    string (what makes it a request or a notification); each edge is read within
    :data:`_EDGE_BYTES`. No id is read from a line whose brackets do not balance (cut short, its
    last brace may be a nested object's), nor from one where ``"id"`` stands elsewhere too (a
    nested object's, or a second key between nested values) or a key letter is escaped: then
    only :class:`MessageScanner` can tell. Linear in time and memory however the line nests or
    what its strings hold, where :class:`MessageScanner` steps through every bracket in Python
    (9 s for 16 MiB of ``{}``)."""
    start, end = line.find(b"{"), line.rfind(b"}")
    if start < 0 or end <= start or b'"' in line[:start] or not _balanced(line):
        return None, False
    first_at = _TO_OPENER.match(line, start + 1, end).end()
    first = first_at < end and line[first_at] in b"[{"
    pieces = [line[start + 1 : min(first_at, start + 1 + _EDGE_BYTES)]]
    if first:
        backwards = line[end - 1 : max(first_at, end - 1 - _EDGE_BYTES) : -1]
        back = _BACK_TO_BRACKET.match(backwards).end()
        if back < len(backwards) and backwards[back] in b"]}":  # the last nested value's end
            pieces.append(line[end - back : end])
    found, has_method, ids = None, False, 0
    for piece in pieces:
        for key, value in _members(piece):
            has_method = has_method or (key == "method" and value.startswith(b'"'))
            if key == "id":  # JSON takes the last
                found, ids = (value if len(value) <= _MAX_ID_BYTES else b""), ids + 1
    if line.count(b'"id"') > ids or _ESCAPED_KEY_LETTER.search(line):
        return None, has_method  # another "id" elsewhere (nested, or a second one): unsure
    return found, has_method


def _members(piece: bytes) -> Iterator[tuple[str, bytes]]:
    """The members of a piece of a JSON object's top level whose value is a string or a scalar:
    each key's text and its value's JSON text. One pass, each byte read once (a token at a time;
    a string never closed ends the piece), so no input makes it slower than linear."""
    tokens, pos = [], 0
    while pos < len(piece) and (token := _TOKEN.match(piece, pos)) is not None:
        tokens.append(token[0])
        pos = token.end()
    for at, token in enumerate(tokens[:-1]):
        after = tokens[at + 1].lstrip()
        if not token.startswith(b'"') or after.startswith(b'"') or not after.startswith(b":"):
            continue
        scalar = after[1:].split(b",", 1)[0].strip()
        value = scalar or (tokens[at + 2] if at + 2 < len(tokens) else b"")
        key = _key_text(token[1:-1]) if len(token) <= _MAX_KEY_BYTES + 2 else ""
        if value:
            yield key, value


def edge_response_id(line: bytes) -> bytes | None:
    """The top-level id's JSON text of the JSON object ``line`` when it is a response, as
    :meth:`MessageScanner.response_id` reads it, from :func:`edge_members`; ``None`` when it
    has a ``method``, or no id is found."""
    return _as_response_id(*edge_members(line))


def _as_response_id(found: bytes | None, has_method: bool) -> bytes | None:
    """A response's id text as the client's error for it carries it (a number with a zero
    fraction read as that number), or ``None`` (not a response, or not an id)."""
    if has_method or not found:
        return None
    try:
        value = json.loads(found)
    except ValueError:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | str | None):
        return None
    return json.dumps(value).encode()


def _note(log: BinaryIO, text: str) -> None:
    _write(log, f"stdio guard: {text}\n".encode(errors="replace"))


def _content_bytes(held: bytearray) -> int:
    """How many bytes of a line are the message, its line break (``\\n`` or ``\\r\\n``) aside."""
    if held.endswith(b"\r\n"):
        return len(held) - 2
    return len(held) - 1 if held.endswith(b"\n") else len(held)


def _pass_stdout(
    server: subprocess.Popen[bytes], out: BinaryIO, log: BinaryIO, max_bytes: int
) -> None:
    """The server's stdout to the client, one whole JSON message at a time (see above)."""
    assert server.stdout is not None
    held = bytearray()  # the current message so far, while it is within the limit
    scanner: MessageScanner | None = None  # reads the rest of a message over the limit
    while chunk := server.stdout.read1(_CHUNK_BYTES):
        while chunk:
            newline = chunk.find(b"\n")
            piece = chunk if newline < 0 else chunk[: newline + 1]
            chunk = b"" if newline < 0 else chunk[newline + 1 :]
            if scanner is not None:
                scanner.feed(piece)
            else:
                held += piece
                if _content_bytes(held) > max_bytes:
                    scanner = MessageScanner()
                    scanner.feed(bytes(held))
                    del held[:]
            if newline < 0:
                continue
            if scanner is not None:
                if not _over_limit(out, log, scanner, max_bytes):
                    server.kill()  # the client has gone: nothing more can reach it
                    return
                scanner = None
                continue
            line, held = bytes(held), bytearray()
            if not line.strip():
                continue
            reason = refusal_reason(line)
            if reason is not None:
                if not _refuse(out, log, line, reason):
                    server.kill()
                    return
                continue
            if not _write(out, line):
                server.kill()
                return
    if scanner is not None:
        _note(log, f"a message over {max_bytes:,} bytes ended without a line break: dropped")
    elif held.strip():
        _note(log, "the server's last line ended without a line break: dropped")
    try:
        server.wait(timeout=1.0)  # a server that exits closes its stdout a moment before
    except subprocess.TimeoutExpired:
        _note(log, "the server closed its stdout and goes on running: it can answer nothing")


def _over_limit(out: BinaryIO, log: BinaryIO, scanner: MessageScanner, max_bytes: int) -> bool:
    """Answer for a message over ``max_bytes`` (a response: an error for its id), or drop it;
    ``False`` when the client can no longer be written to."""
    request_id = scanner.response_id()
    if request_id is not None:
        _note(log, f"an answer over {max_bytes:,} bytes dropped")
        return _write(out, over_limit_error(request_id, max_bytes))
    if scanner.has_method:
        _note(log, f"a request or notification over {max_bytes:,} bytes dropped")
    else:
        _note(log, f"a message over {max_bytes:,} bytes whose id cannot be read dropped")
    return True


def _refuse(out: BinaryIO, log: BinaryIO, line: bytes, reason: str) -> bool:
    """Answer for a line the client would not read (a response: an error for its id, which
    :func:`edge_members` reads, or, when the edges cannot tell, :class:`MessageScanner` in a
    line of at most :data:`MAX_SCANNED_BYTES`), or drop it, quoting its start; ``False`` when
    the client can no longer be written to."""
    found, has_method = edge_members(line)
    request_id = _as_response_id(found, has_method)
    if found is None and not has_method and len(line) <= MAX_SCANNED_BYTES and _balanced(line):
        scanner = MessageScanner()  # exact wherever the id stands (between nested values)
        scanner.feed(line)
        request_id = scanner.response_id()
    if request_id is not None:
        _note(log, f"an answer dropped: it {reason}")
        return _write(out, unreadable_error(request_id, reason))
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    _note(log, f"a line dropped: it {reason}: {text[:_QUOTED_CHARS]!r}")
    return True


def _pass_stderr(server: subprocess.Popen[bytes], log: BinaryIO, max_bytes: int) -> None:
    """The first ``max_bytes`` of the server's stderr to ours, then a line saying so."""
    assert server.stderr is not None
    passed = 0
    told = False
    while chunk := server.stderr.read1(_CHUNK_BYTES):
        if passed < max_bytes:
            keep = chunk[: max_bytes - passed]
            passed += len(keep)
            _write(log, keep)
        elif not told:
            told = True
            _note(log, f"the server's stderr past {max_bytes:,} bytes is dropped")


def main(argv: list[str] | None = None) -> int:
    """Run the server behind the guard; returns its exit code (127: it could not start)."""
    parser = argparse.ArgumentParser(prog="stdio_guard.py")
    parser.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES)
    parser.add_argument("--max-stderr-bytes", type=int, default=DEFAULT_MAX_STDERR_BYTES)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no server command after --")
    try:
        server = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as exc:
        print(f"stdio guard: cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    out, log = sys.stdout.buffer, sys.stderr.buffer
    client_closed = threading.Event()
    threading.Thread(target=_pass_stdin, args=(server, client_closed), daemon=True).start()
    errors = threading.Thread(
        target=_pass_stderr, args=(server, log, args.max_stderr_bytes), daemon=True
    )
    errors.start()
    _pass_stdout(server, out, log, args.max_message_bytes)
    code = server.wait()
    errors.join(timeout=1.0)
    code = code if code >= 0 else 128 - code
    if code or not client_closed.is_set():
        while_connected = "" if client_closed.is_set() else " while its client was connected"
        _note(log, f"the server exited with code {code}{while_connected}")
    return code


if __name__ == "__main__":
    sys.exit(main())
