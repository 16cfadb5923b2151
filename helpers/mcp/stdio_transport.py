"""``workbook mcp-server``'s stdio transport, within bounds a client cannot move.

The wire is the SDK's (MCP's stdio transport: one JSON-RPC message per line, UTF-8, the SDK's
own message types), and so is the rule that while the server serves, fd 0 reads the null device
and fd 1 writes to stderr (nothing a tool reads or prints touches the wire). What it adds to the
SDK's ``stdio_server``, which read a line whole however long (a 100 MB line took the server to
551 MB before it answered), handed each request to a task of its own however many waited (1,000
small calls written at once took it to 1 GB) and dropped a line it could not parse without a
word:

- a line is counted as it is read and never held past :data:`MAX_LINE_BYTES` (the same 16 MiB
  that :mod:`helpers.mcp.stdio_guard` allows a server's message): the rest of it is read and
  dropped, and the line is answered ``-32700``;
- at most :data:`MAX_REQUESTS_IN_FLIGHT` requests are in flight (passed to the server and not
  yet answered or cancelled); one more is answered at once with :data:`SERVER_BUSY`, its id
  kept, and never queued;
- a line that is not a JSON-RPC message gets JSON-RPC 2.0's answer (:func:`unreadable_answer`,
  id ``null``), whatever makes it so (not UTF-8, not JSON, nested past the parser's depth, a
  batch, a request whose id is not a string or an integer); a blank line gets nothing.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import json
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from helpers.mcp.stdio_guard import DEFAULT_MAX_MESSAGE_BYTES

#: The longest line read, in bytes (with its newline left out).
MAX_LINE_BYTES = DEFAULT_MAX_MESSAGE_BYTES
#: Requests in flight at once: each holds a worker thread or waits for one (the server runs
#: calls one at a time), so more only queue; a client that waits for its answers never meets it.
MAX_REQUESTS_IN_FLIGHT = 16
#: The JSON-RPC error code of a request refused because :data:`MAX_REQUESTS_IN_FLIGHT` are in
#: flight (JSON-RPC 2.0 leaves -32000 to -32099 to servers; the SDK uses -32000 and -32001).
SERVER_BUSY = -32010
#: Bytes read from stdin at once.
READ_CHUNK_BYTES = 64 << 10

Sink = MemoryObjectSendStream[SessionMessage]


def unreadable_answer(exc: Exception) -> types.JSONRPCError | None:
    """JSON-RPC 2.0's answer to a line the server cannot take (id ``null``: which request it
    was cannot be known): ``-32700`` Parse error for a line that is not JSON, ``-32600``
    Invalid Request for JSON that is not a message (a batch, a request without its method), each
    saying what the reader found on one line; ``None`` for a blank line (nothing to answer)."""
    errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else []
    first = errors[0] if errors else {}
    if isinstance(first.get("input"), str) and not first["input"].strip():
        return None
    said = " ".join(str(first.get("msg") or exc).split())[:200] or type(exc).__name__
    if first.get("type") == "json_invalid" or not errors:
        code, what = types.PARSE_ERROR, "not JSON"
    else:
        code, what = types.INVALID_REQUEST, "JSON, but not a JSON-RPC message"
    return _refusal(None, code, f"a line this server cannot read: {what} ({said})")


def _refusal(request_id: Any, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


@contextlib.contextmanager
def _claimed(fd: int, stand_in: int) -> Iterator[int]:
    """Serve the wire on a private duplicate of ``fd`` (yielded) while ``fd`` itself points at
    ``stand_in`` (closed here); ``fd`` is the wire again afterwards. The duplicate is never
    closed: a reading thread given up on may still wait on it, and a closed number is reused."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(stand_in, fd)
    os.close(stand_in)
    try:
        yield private
    finally:
        os.dup2(private, fd)


async def _lines(fd: int, max_line_bytes: int) -> AsyncIterator[bytes | None]:
    """The lines of ``fd`` without their newline, as bytes; ``None`` for a line longer than
    ``max_line_bytes`` (never held whole); until the end of the file."""
    buffer, dropping = bytearray(), False
    while True:
        chunk = await anyio.to_thread.run_sync(
            os.read, fd, READ_CHUNK_BYTES, abandon_on_cancel=True
        )
        if not chunk:
            if buffer and not dropping:
                yield bytes(buffer)
            return
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if dropping or len(buffer) + end - start > max_line_bytes:
                yield None
            else:
                buffer += chunk[start:end]
                yield bytes(buffer)
            buffer.clear()
            dropping, start = False, end + 1
        if not dropping:
            buffer += chunk[start:]
            if len(buffer) > max_line_bytes:
                buffer.clear()
                dropping = True


def _parsed(line: bytes) -> tuple[Any, types.JSONRPCError | None]:
    """A line's message (and ``None``), or ``None`` and the answer refusing it (both ``None``:
    a blank line)."""
    try:
        text = line.decode("utf-8").removesuffix("\r")
    except UnicodeDecodeError as exc:
        said = f"a line this server cannot read: not UTF-8 ({exc})"
        return None, _refusal(None, types.PARSE_ERROR, said)
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception as exc:  # pydantic's, or the parser's own (RecursionError, MemoryError)
        return None, unreadable_answer(exc)
    if isinstance(message, types.JSONRPCNotification) and '"id"' in text and _has_id(text):
        said = (
            "a line this server cannot read: a request whose id is neither a string nor an "
            "integer (JSON-RPC 2.0, section 4; MCP's RequestId)"
        )
        return None, _refusal(None, types.INVALID_REQUEST, said)
    return message, None


def _has_id(text: str) -> bool:
    """Whether the JSON object ``text`` has an ``id`` at its top level (the SDK reads a request
    whose id is ``null``, ``true``, ``1.5`` or an object as a notification, which gets no
    answer). Read only for a notification that mentions ``"id"``: a rare, small line."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "id" in value


def _id_key(request_id: object) -> tuple[str, int | str] | None:
    """What identifies a request id, its type included (``2.0`` and ``True`` are not the request
    ``2`` or ``1``: MCP's ids are strings or integers, which the SDK checks strictly); ``None``
    for any other value, which names no request."""
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    return (type(request_id).__name__, request_id)


class _InFlight:
    """The requests passed to the server and not yet answered or cancelled, by id."""

    def __init__(self) -> None:
        self.ids: collections.Counter[tuple[str, int | str]] = collections.Counter()

    def count(self) -> int:
        return sum(self.ids.values())

    def start(self, request_id: object) -> None:
        key = _id_key(request_id)
        if key is not None:
            self.ids[key] += 1

    def done(self, request_id: object) -> None:
        """One request of that id answered or cancelled; any other value (an unhashable one, a
        float, a ``requestId`` never sent) changes nothing."""
        key = _id_key(request_id)
        if key is None or key not in self.ids:
            return
        self.ids[key] -= 1
        if self.ids[key] <= 0:
            del self.ids[key]


async def _read(
    fd: int, to_server: Sink, answers: Sink, flight: _InFlight, max_line_bytes: int, most: int
) -> None:
    async with to_server, answers:
        async for line in _lines(fd, max_line_bytes):
            if line is None:
                said = f"a line this server cannot read: longer than {max_line_bytes:,} bytes"
                await answers.send(SessionMessage(_refusal(None, types.PARSE_ERROR, said)))
                continue
            message, refusal = _parsed(line)
            if refusal is not None:
                await answers.send(SessionMessage(refusal))
            if message is None:
                continue
            if isinstance(message, types.JSONRPCRequest):
                if flight.count() >= most:
                    said = (
                        f"this server has {most} requests in flight, its most: send this one "
                        "again once one is answered"
                    )
                    await answers.send(SessionMessage(_refusal(message.id, SERVER_BUSY, said)))
                    continue
                flight.start(message.id)
            elif (
                isinstance(message, types.JSONRPCNotification)
                and message.method == "notifications/cancelled"
            ):  # the SDK answers a cancelled request with nothing: its slot is free
                params = message.params if isinstance(message.params, dict) else {}
                flight.done(params.get("requestId"))
            await to_server.send(SessionMessage(message))


async def _write(
    fd: int, from_server: MemoryObjectReceiveStream[SessionMessage], flight: _InFlight
) -> None:
    out = anyio.wrap_file(os.fdopen(fd, "wb", closefd=False))
    async with from_server:
        async for item in from_server:
            message = item.message
            if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                flight.done(message.id)
            line = message.model_dump_json(by_alias=True, exclude_unset=True)
            await out.write(line.encode("utf-8") + b"\n")
            await out.flush()


@contextlib.asynccontextmanager
async def bounded_stdio(
    *, max_line_bytes: int = MAX_LINE_BYTES, max_in_flight: int = MAX_REQUESTS_IN_FLIGHT
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage], Sink]]:
    """Serve MCP over this process's stdin and stdout within the module's bounds: yields the
    streams the SDK's ``Server.run`` takes (what the client sent, what the server answers).

    Args:
        max_line_bytes: the longest line read, in bytes.
        max_in_flight: requests in flight at once.
    """
    flight = _InFlight()
    to_server, for_server = anyio.create_memory_object_stream[SessionMessage](0)
    from_server_sink, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    answers = from_server_sink.clone()
    with (
        _claimed(0, os.open(os.devnull, os.O_RDONLY)) as wire_in,
        _claimed(1, os.dup(2)) as wire_out,
    ):
        reading = anyio.CancelScope()

        async def read() -> None:
            with reading:
                await _read(wire_in, to_server, answers, flight, max_line_bytes, max_in_flight)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(_write, wire_out, from_server, flight)
            try:
                yield for_server, from_server_sink
            finally:  # no more reading; the writer writes all it was given, then ends
                reading.cancel()
                await from_server_sink.aclose()
