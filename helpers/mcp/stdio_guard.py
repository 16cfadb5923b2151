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
  bytes. A message over ``N`` is not passed on: when its start names a request id, an error
  response for that id goes instead (``-32603``, "the server's answer was over N bytes"), so
  that call fails with a reason and the session goes on; a message without an id ends the
  server;
- passes the first ``M`` bytes of the server's stderr on, then one line saying the rest was
  dropped.

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
from typing import BinaryIO

#: The longest message a server may send, in bytes, unless told otherwise: a result of 10 MB of
#: text (the workbook's largest), JSON-escaped, fits. (The SDK's reader joins a message's
#: pieces into one string again at each read, so its time grows with the square of a message's
#: length: 16 MiB is read in about a second.)
DEFAULT_MAX_MESSAGE_BYTES = 16 << 20
#: How much of a server's stderr reaches the client's log, in bytes.
DEFAULT_MAX_STDERR_BYTES = 64 << 10
_CHUNK_BYTES = 64 << 10
#: How far into a message its request id is looked for (the SDK and most servers write
#: ``{"jsonrpc":"2.0","id":…`` first).
_ID_WINDOW_BYTES = 256
_ID_RE = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,128}")')


def _write(out: BinaryIO, data: bytes) -> bool:
    try:
        out.write(data)
        out.flush()
        return True
    except (BrokenPipeError, OSError, ValueError):
        return False


def _pass_stdin(server: subprocess.Popen[bytes]) -> None:
    """The client's stdin to the server's, until either closes."""
    assert server.stdin is not None
    try:
        while chunk := os.read(0, _CHUNK_BYTES):
            server.stdin.write(chunk)
            server.stdin.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            server.stdin.close()


def over_limit_error(request_id: bytes, max_bytes: int) -> bytes:
    """The JSON-RPC error response that stands for an answer over ``max_bytes``."""
    message = (
        f"the MCP server's answer was over {max_bytes:,} bytes, the most the client takes in "
        "one message: it was dropped. Ask for less (a narrower query, one page at a time)."
    )
    body = json.dumps({"code": -32603, "message": message})
    return b'{"jsonrpc":"2.0","id":' + request_id + b',"error":' + body.encode() + b"}\n"


def _pass_stdout(
    server: subprocess.Popen[bytes], out: BinaryIO, log: BinaryIO, max_bytes: int
) -> None:
    """The server's stdout to the client, one whole message at a time; a message over
    ``max_bytes`` is replaced (see above). At most ``max_bytes`` are held."""
    assert server.stdout is not None
    held = bytearray()  # the current message so far
    dropping = False  # its start is past, and it is over the limit: skip to its end
    while chunk := server.stdout.read1(_CHUNK_BYTES):
        while chunk:
            newline = chunk.find(b"\n")
            piece = chunk if newline < 0 else chunk[: newline + 1]
            chunk = b"" if newline < 0 else chunk[newline + 1 :]
            if not dropping:
                held += piece
                if len(held) > max_bytes:
                    dropping = True
                    found = _ID_RE.search(bytes(held[:_ID_WINDOW_BYTES]))
                    del held[:]
                    if found is None:
                        _write(
                            log,
                            f"stdio guard: a message over {max_bytes:,} bytes without "
                            "a request id; stopping the server\n".encode(),
                        )
                        server.kill()
                        return
                    _write(
                        log, f"stdio guard: an answer over {max_bytes:,} bytes dropped\n".encode()
                    )
                    if not _write(out, over_limit_error(found[1], max_bytes)):
                        server.kill()
                        return
            if newline >= 0:
                if not dropping and not _write(out, bytes(held)):
                    server.kill()
                    return
                del held[:]
                dropping = False
    if held and not dropping:
        _write(out, bytes(held))


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
            _write(
                log,
                f"\nstdio guard: the server's stderr past {max_bytes:,} bytes "
                "is dropped\n".encode(),
            )


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
    threading.Thread(target=_pass_stdin, args=(server,), daemon=True).start()
    errors = threading.Thread(
        target=_pass_stderr, args=(server, log, args.max_stderr_bytes), daemon=True
    )
    errors.start()
    _pass_stdout(server, out, log, args.max_message_bytes)
    code = server.wait()
    errors.join(timeout=1.0)
    code = code if code >= 0 else 128 - code
    if code:
        _write(log, f"stdio guard: the server exited with code {code}\n".encode())
    return code


if __name__ == "__main__":
    sys.exit(main())
