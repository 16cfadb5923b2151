"""The plumbing every fake provider shares: one function from a request to a reply, served over
real loopback HTTP (:class:`LoopbackServer`) or in-process (:func:`mock_transport`).

The offline model (:mod:`helpers.models.offline_server`, ``workbook serve-offline``) and the
tests' scripted provider (``tests/provider.py``) are both a :data:`Responder`; only what they
answer differs. Over loopback a reply can also be late (``delay_s``: a client with a shorter
timeout gives up) or never come (``drop``: the connection is closed unanswered), the network
faults a real provider's clients must survive.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2

#: The hosts a fake provider may listen on: loopback only, never a network a stranger can reach.
LOOPBACK_HOSTS = ("localhost", "::1")


@dataclass(frozen=True)
class Request:
    """One HTTP request as a fake provider sees it: method, path (with any query), headers,
    and the body's bytes."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Reply:
    """One HTTP response: ``status``, ``body`` (bytes, text, or a JSON value encoded as JSON),
    ``content_type``, extra ``headers``; over loopback, ``delay_s`` seconds late, or with
    ``drop`` no answer at all (the connection closed)."""

    body: Any
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False

    def encoded(self) -> bytes:
        """The body's bytes: as given, text in UTF-8, anything else as JSON."""
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


#: A fake provider: what it answers to each request.
Responder = Callable[[Request], Reply]


def _handler(respond: Responder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            reply = respond(Request(self.command, self.path, dict(self.headers), body))
            if reply.drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if reply.delay_s:
                time.sleep(reply.delay_s)
            data = reply.encoded()
            # a client that gave up (its timeout) is gone; there is nobody to answer
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

    return Handler


#: How often the server looks whether it was asked to stop, in seconds (``serve_forever``'s
#: poll interval, 0.5 s by default, is what :meth:`LoopbackServer.stop` waits at worst).
STOP_POLL_S = 0.05


class LoopbackServer:
    """A :data:`Responder` over real HTTP on a loopback address (standard-library server, its own
    thread, one thread per connection).

    Use as a context manager; :attr:`base_url` is ``http://127.0.0.1:<port><prefix>``; ``port``
    0 takes a free one.

    Raises:
        ValueError: ``host`` is not a loopback address.
        OSError: the port cannot be bound.
    """

    def __init__(
        self, respond: Responder, *, host: str = "127.0.0.1", port: int = 0, prefix: str = "/v1"
    ):
        if not (host.startswith("127.") or host in LOOPBACK_HOSTS):
            raise ValueError(f"a fake provider only listens on loopback, not {host!r}")
        self.prefix = prefix
        self.httpd = ThreadingHTTPServer((host, port), _handler(respond))
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, args=(STOP_POLL_S,), daemon=True
        )

    @property
    def base_url(self) -> str:
        """Where a client finds the API: ``http://<host>:<port><prefix>``."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}{self.prefix}"

    def start(self) -> LoopbackServer:
        """Serve on the server's own thread; returns the server."""
        self._thread.start()
        return self

    def serve_until_interrupted(self) -> None:
        """Block until Ctrl-C (the server keeps answering on its own thread meanwhile)."""
        with contextlib.suppress(KeyboardInterrupt):
            self._thread.join()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def mock_transport(respond: Responder) -> httpx2.MockTransport:
    """The same :data:`Responder` in-process: an ``httpx2`` transport for a client's
    ``http_client`` (no socket; ``delay_s`` and ``drop`` do not apply)."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        reply = respond(
            Request(request.method, request.url.path, dict(request.headers), request.read())
        )
        headers = {"content-type": reply.content_type, **reply.headers}
        return httpx2.Response(reply.status, content=reply.encoded(), headers=headers)

    return httpx2.MockTransport(handle)
