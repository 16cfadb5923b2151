"""The offline model over real loopback HTTP, with faults on demand: the network path a real
provider takes (timeouts, dropped connections, 5xx with ``Retry-After``, bodies that are not
JSON), for the client's tests and ``workbook serve-offline``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from helpers.models.offline import OfflineModel, _api_error


@dataclass(frozen=True)
class Fault:
    """One injected fault for the next ``/chat/completions`` request.

    ``kind``: ``status`` (answer ``status`` with an OpenAI-style error body, and a
    ``Retry-After`` header of ``retry_after_s`` seconds if given), ``delay`` (wait ``delay_s``
    seconds, then answer normally: a client with a shorter timeout gives up), ``drop`` (close
    the connection without an answer) or ``malformed`` (200 with a body that is not JSON).
    """

    kind: str
    status: int = 500
    retry_after_s: float | None = None
    delay_s: float = 0.0


class OfflineServer:
    """The offline model over real loopback HTTP (standard-library server, own thread).

    Use as a context manager; ``base_url`` is ``http://127.0.0.1:<port>/v1``. Only loopback
    addresses are accepted for ``host``. ``faults`` are served first, one per chat request, in
    order (see :class:`Fault`); ``chat_requests`` counts the chat requests received.
    """

    def __init__(
        self,
        model: OfflineModel | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: list[Fault] | None = None,
    ):
        if not (host.startswith("127.") or host in ("localhost", "::1")):
            raise ValueError(f"the offline server only listens on loopback, not {host!r}")
        self.model = model or OfflineModel()
        self.faults: deque[Fault] = deque(faults or ())
        self.chat_requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(
                self, status: int, data: bytes, headers: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = None
                if self.path.rstrip("/").endswith("/chat/completions"):
                    with outer._lock:
                        outer.chat_requests += 1
                        fault = outer.faults.popleft() if outer.faults else None
                if fault is not None and fault.kind == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault is not None and fault.kind == "malformed":
                    self._send(200, b'{"id": "chatcmpl-broken", "choices": [')
                    return
                if fault is not None and fault.kind == "status":
                    headers = {}
                    if fault.retry_after_s is not None:
                        headers["Retry-After"] = f"{fault.retry_after_s:g}"
                    error = _api_error(f"injected fault: HTTP {fault.status}", "server_error")
                    self._send(fault.status, json.dumps(error).encode(), headers)
                    return
                if fault is not None and fault.kind == "delay":
                    time.sleep(fault.delay_s)
                status, payload = outer.model.respond(self.command, self.path, body)
                # a client that gave up (its timeout) is gone; there is nobody to answer
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(status, json.dumps(payload).encode())

            do_GET = do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> OfflineServer:
        self._thread.start()
        return self

    def serve_until_interrupted(self) -> None:
        """Block until Ctrl-C (the server keeps answering on its own thread meanwhile)."""
        with contextlib.suppress(KeyboardInterrupt):
            self._thread.join()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> OfflineServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
