"""``workbook mcp-server``'s stdio transport, within bounds a client cannot move.

The wire is the SDK's (MCP's stdio transport: one JSON-RPC message per line, UTF-8, the SDK's
own message types), and so is the rule that while the server serves, fd 0 reads the null device
and fd 1 writes to stderr (nothing a tool reads or prints touches the wire). What it adds to the
SDK's ``stdio_server``, which read a line whole however long (a 100 MB line took the server to
551 MB before it answered), handed each request to a task of its own however many waited (1,000
small calls written at once took it to 1 GB) and dropped a line it could not parse without a
word:

- a line is counted as it is read and never held past :data:`MAX_LINE_BYTES` (8 MiB, room for
  the longest arguments a call may have): the rest of it is read and dropped, and the line is
  answered ``-32700``;
- at most :data:`MAX_REQUESTS_IN_FLIGHT` requests, of at most :data:`MAX_BYTES_IN_FLIGHT` bytes
  together, are in flight (passed to the server, and neither answered with the answer written
  nor cancelled with its handler ended); one more is answered at once with :data:`SERVER_BUSY`,
  its id kept, and never queued;
- a line holding more than :data:`MAX_REQUEST_VALUES` JSON values and keys
  (:func:`~helpers.mcp.stdio_guard.value_count`) is refused before it is parsed (``-32600``, for its id when its top level shows it);
- a line that is not a JSON-RPC message gets JSON-RPC 2.0's answer (:func:`unreadable_answer`),
  whatever makes it so (not UTF-8, not JSON, nested past the parser's depth, a batch, a request
  whose id is not a string or an integer), id ``null`` unless the line is nested too deep and
  its top level shows a request's id; a blank line gets nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from helpers.loop.dispatch import MAX_ARGUMENTS_CHARS
from helpers.mcp.stdio_guard import (
    edge_members,
    value_count,
)

#: The longest line read, in bytes (with its newline left out).
#: A call's arguments are at most 1,000,000 characters (:data:`MAX_ARGUMENTS_CHARS`): 4 MB as
#: UTF-8, 6 MB were every one written as a ``\\uXXXX`` escape; a longer line holds nothing a
#: tool may run on. Half the guard's 16 MiB: a line of ASCII with one emoji is parsed four bytes a
#: character, and 16 MiB of it took the server to 345 MiB.
MAX_LINE_BYTES = max(8 << 20, 6 * MAX_ARGUMENTS_CHARS + (64 << 10))
#: Requests in flight at once: each holds a worker thread or waits for one (the server runs
#: calls one at a time), so more only queue; a client that waits for its answers never meets it.
MAX_REQUESTS_IN_FLIGHT = 16
#: The bytes of requests in flight at once (their lines), so that 16 requests of nearly the most
#: bytes each (16 of 15 MiB held 850 MB once parsed) cannot be held together; one line of
#: :data:`MAX_LINE_BYTES` always fits when nothing else is in flight.
MAX_BYTES_IN_FLIGHT = MAX_LINE_BYTES
#: The JSON values and keys of one request, and of the requests in flight together, counted
#: before a line is parsed (:func:`~helpers.mcp.stdio_guard.value_count`): 16 MiB of ``{}``
#: took the server to 1.2 GB, and 940,000 nested one-key objects in 5.5 MiB past 500 MiB. A
#: call's arguments are at most 1,000,000 characters (:class:`helpers.base.limits.TurnLimits`).
MAX_REQUEST_VALUES = 250_000
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


async def _lines(fd: int, max_line_bytes: int) -> AsyncIterator[bytearray | None]:
    """The lines of ``fd`` without their newline (a ``\\r`` before it dropped too), each a
    buffer of its own that is not used again; ``None`` for a line longer than
    ``max_line_bytes`` (never held whole); until the end of the file."""
    buffer, dropping = bytearray(), False
    while True:
        chunk = await anyio.to_thread.run_sync(
            os.read, fd, READ_CHUNK_BYTES, abandon_on_cancel=True
        )
        if not chunk:
            if buffer and not dropping:
                yield _without_cr(buffer)
            return
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if dropping or len(buffer) + end - start > max_line_bytes:
                yield None
            else:
                buffer += chunk[start:end]
                yield _without_cr(buffer)
            buffer, dropping, start = bytearray(), False, end + 1
        if not dropping:
            buffer += chunk[start:]
            if len(buffer) > max_line_bytes:
                buffer = bytearray()
                dropping = True


def _without_cr(line: bytearray) -> bytearray:
    if line.endswith(b"\r"):
        del line[-1:]
    return line


def _parsed(line: bytes, values: int) -> tuple[Any, types.JSONRPCError | None]:
    """A line's message (and ``None``), or ``None`` and the answer refusing it (both ``None``:
    a blank line). A line holding more than :data:`MAX_REQUEST_VALUES` JSON values is refused
    before it is parsed (16 MiB of ``{}`` took the server to 1.2 GB), and so is one nested past
    the parser's depth, each answered for its id when its top level shows it. The bytes are
    parsed as they are (the parser checks their UTF-8): no copy of the line is made."""
    if not line.strip():
        return None, None
    if values > MAX_REQUEST_VALUES:
        said = (
            f"a message this server does not read: more than {MAX_REQUEST_VALUES:,} JSON values "
            "and keys"
        )
        return None, _refusal(_request_id(line), types.INVALID_REQUEST, said)
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # pydantic's, or the parser's own (RecursionError, MemoryError)
        try:
            line.decode("utf-8")  # said first: the parser's own words for it are vaguer
        except UnicodeDecodeError as not_utf8:
            said = f"a line this server cannot read: not UTF-8 ({not_utf8})"
            return None, _refusal(None, types.PARSE_ERROR, said)
        refusal = unreadable_answer(exc)
        if refusal is not None and "recursion limit" in refusal.error.message:
            refusal.id = _request_id(line)
        return None, refusal
    if isinstance(message, types.JSONRPCNotification) and b'"id"' in line and _has_id(line):
        said = (
            "a line this server cannot read: a request whose id is neither a string nor an "
            "integer (JSON-RPC 2.0, section 4; MCP's RequestId)"
        )
        return None, _refusal(None, types.INVALID_REQUEST, said)
    return message, None


def _request_id(line: bytes) -> int | str | None:
    """The id of the request ``line`` read from its top level's edges
    (:func:`helpers.mcp.stdio_guard.edge_members`) when it is a request's (a string or an
    integer, with a ``method``); else ``None``, the id JSON-RPC answers what it cannot read
    with."""
    found, has_method = edge_members(line)
    if not (has_method and found):
        return None
    try:
        value = json.loads(found)
    except ValueError:
        return None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def _has_id(text: bytes) -> bool:
    """Whether the JSON object ``text`` has an ``id`` at its top level (the SDK reads a request
    whose id is ``null``, ``true``, ``1.5`` or an object as a notification, which gets no
    answer). Read only for a notification that mentions ``"id"``: a rare, small line."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "id" in value


def _id_key(request_id: object) -> tuple[str, int | str] | None:
    """What identifies a request id as the SDK correlates it (its ``coerce_request_id``: ``"7"``
    and ``7`` are one id, as in the TypeScript SDK; ``2.0`` and ``True`` are no request's id);
    ``None`` for any value that names no request."""
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    coerced = coerce_request_id(request_id)
    return (type(coerced).__name__, coerced)


#: What a request in flight holds: the bytes of its line and the JSON values in it.
Held = tuple[int, int]


class _InFlight:
    """The requests passed to the server and not yet done, by id, with what each holds (the
    bytes of its line, its JSON values). A request is done when its answer is written, or,
    cancelled, when its handler ends: the SDK answers a cancelled request with nothing, but its
    handler's thread runs on, so a client that cancels what it sends is still held to the cap."""

    def __init__(self) -> None:
        self.sizes: dict[tuple[str, int | str], list[Held]] = {}
        self.cancelled: dict[tuple[str, int | str], list[Held]] = {}

    def _all(self) -> list[Held]:
        return [h for held in (self.sizes, self.cancelled) for hs in held.values() for h in hs]

    def count(self) -> int:
        return len(self._all())

    def bytes(self) -> int:
        return sum(size for size, _ in self._all())

    def values(self) -> int:
        return sum(values for _, values in self._all())

    def start(self, request_id: object, size: int = 0, values: int = 0) -> None:
        key = _id_key(request_id)
        if key is not None:
            self.sizes.setdefault(key, []).append((size, values))

    def done(self, request_id: object) -> None:
        """One request of that id answered; any other value (an unhashable one, a float, an id
        never sent) changes nothing."""
        key = _id_key(request_id)
        for held in (self.sizes, self.cancelled):
            if key is not None and key in held:
                _take_one(held, key)
                return

    def cancel(self, request_id: object) -> None:
        """The client cancelled one request of that id: it stays counted until its handler
        ends (:meth:`handler_ended`)."""
        key = _id_key(request_id)
        if key is not None and key in self.sizes:
            self.cancelled.setdefault(key, []).append(_take_one(self.sizes, key))

    def handler_ended(self, request_id: object) -> None:
        """A handler of a request of that id ended: a cancelled one is done (an answered one is
        done when its answer is written)."""
        key = _id_key(request_id)
        if key is not None and key in self.cancelled:
            _take_one(self.cancelled, key)


def _take_one(held: dict[tuple[str, int | str], list[Held]], key: tuple[str, int | str]) -> Held:
    first = held[key].pop(0)
    if not held[key]:
        del held[key]
    return first


def _busy(flight: _InFlight, size: int, values: int, most: int, max_bytes: int) -> str:
    """Why a request of ``size`` bytes and ``values`` JSON values is refused now (the server's
    most in flight: requests, bytes, values), or ``""``."""
    again = "send this one again once one is answered"
    if flight.count() >= most:
        return f"this server has {most} requests in flight, its most: {again}"
    if flight.bytes() + size > max_bytes:
        return (
            f"this server has {flight.bytes():,} bytes of requests in flight and takes at most "
            f"{max_bytes:,}: {again}"
        )
    if values <= MAX_REQUEST_VALUES < flight.values() + values:  # more alone: refused
        return (
            f"this server has {flight.values():,} JSON values of requests in flight and takes "
            f"at most {MAX_REQUEST_VALUES:,}: {again}"
        )
    return ""


async def _read(
    fd: int,
    to_server: Sink,
    answers: Sink,
    flight: _InFlight,
    max_line_bytes: int,
    most: int,
    max_bytes: int = MAX_BYTES_IN_FLIGHT,
) -> None:
    async with to_server, answers:
        async for line in _lines(fd, max_line_bytes):
            if line is None:
                said = f"a line this server cannot read: longer than {max_line_bytes:,} bytes"
                await answers.send(SessionMessage(_refusal(None, types.PARSE_ERROR, said)))
                continue
            size, values = len(line), value_count(line)
            busy = _busy(flight, size, values, most, max_bytes)
            if busy and (request_id := _request_id(line)) is not None:  # refused unparsed
                await answers.send(SessionMessage(_refusal(request_id, SERVER_BUSY, busy)))
                continue
            message, refusal = _parsed(line, values)
            del line  # the parsed message is what is held from here
            if refusal is not None:
                await answers.send(SessionMessage(refusal))
            if message is None:
                continue
            if isinstance(message, types.JSONRPCRequest):
                if busy:
                    await answers.send(SessionMessage(_refusal(message.id, SERVER_BUSY, busy)))
                    continue
                flight.start(message.id, size, values)
            elif (
                isinstance(message, types.JSONRPCNotification)
                and message.method == "notifications/cancelled"
            ):  # the SDK answers a cancelled request with nothing: done once its handler ends
                params = message.params if isinstance(message.params, dict) else {}
                flight.cancel(params.get("requestId"))
            await to_server.send(SessionMessage(message))


async def _write(
    fd: int, from_server: MemoryObjectReceiveStream[SessionMessage], flight: _InFlight
) -> None:
    """Each message to the wire as one line; an answer's request is done once it is written
    (an answer waiting to be written still counts), and the line is made once, as bytes."""
    out = anyio.wrap_file(os.fdopen(fd, "wb", closefd=False))
    async with from_server:
        async for item in from_server:
            message = item.message
            line = types.jsonrpc_message_adapter.dump_json(
                message, by_alias=True, exclude_unset=True
            )
            await out.write(line)
            await out.write(b"\n")
            await out.flush()
            del line
            if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                flight.done(message.id)


#: What :func:`bounded_stdio` yields: the server's read stream, its write stream, and what a
#: request handler calls with its request's id when it ends.
Wire = tuple[MemoryObjectReceiveStream[SessionMessage], Sink, Callable[[object], None]]


@contextlib.asynccontextmanager
async def bounded_stdio(
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_in_flight: int = MAX_REQUESTS_IN_FLIGHT,
    max_bytes_in_flight: int = MAX_BYTES_IN_FLIGHT,
) -> AsyncIterator[Wire]:
    """Serve MCP over this process's stdin and stdout within the module's bounds: yields the
    streams the SDK's ``Server.run`` takes (what the client sent, what the server answers) and
    the function each request handler calls with its request's id as it ends, whatever ends it
    (a cancelled request is in flight until then).

    Args:
        max_line_bytes: the longest line read, in bytes.
        max_in_flight: requests in flight at once.
        max_bytes_in_flight: the bytes of the lines of requests in flight at once.
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
                await _read(
                    wire_in,
                    to_server,
                    answers,
                    flight,
                    max_line_bytes,
                    max_in_flight,
                    max_bytes_in_flight,
                )

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(_write, wire_out, from_server, flight)
            try:
                yield for_server, from_server_sink, flight.handler_ended
            finally:  # no more reading; the writer writes all it was given, then ends
                reading.cancel()
                await from_server_sink.aclose()
