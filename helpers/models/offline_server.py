"""The offline model over real loopback HTTP, with faults on demand: the network path a real
provider takes (timeouts, dropped connections, 5xx with ``Retry-After``, bodies that are not
JSON), for the client's tests and ``workbook serve-offline``.

The HTTP plumbing is the one every fake provider shares (:mod:`helpers.models.loopback`).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from helpers.models.loopback import LoopbackServer, Reply, Request
from helpers.models.offline import OfflineModel, api_error


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

    def reply(self, answer: Reply) -> Reply:
        """What the server sends instead of ``answer`` (the model's own reply)."""
        if self.kind == "drop":
            return Reply(b"", drop=True)
        if self.kind == "malformed":
            return Reply(b'{"id": "chatcmpl-broken", "choices": [')
        if self.kind == "status":
            headers = {}
            if self.retry_after_s is not None:
                headers["Retry-After"] = f"{self.retry_after_s:g}"
            error = api_error(f"injected fault: HTTP {self.status}", "server_error")
            return Reply(error, status=self.status, headers=headers)
        if self.kind == "delay":
            answer.delay_s = self.delay_s
            return answer
        raise ValueError(f"unknown fault kind {self.kind!r}")


class OfflineServer(LoopbackServer):
    """The offline model over real loopback HTTP (:class:`helpers.models.loopback.LoopbackServer`).

    Use as a context manager; ``base_url`` is ``http://127.0.0.1:<port>/v1``. Only loopback
    addresses are accepted for ``host`` (else :class:`ValueError`). ``faults`` are served
    first, one per chat request, in order (see :class:`Fault`); ``chat_requests`` counts the
    chat requests received.
    """

    def __init__(
        self,
        model: OfflineModel | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: list[Fault] | None = None,
    ):
        self.model = model or OfflineModel()
        self.faults: deque[Fault] = deque(faults or ())
        self.chat_requests = 0
        self._lock = threading.Lock()
        super().__init__(self._respond, host=host, port=port)

    def _respond(self, request: Request) -> Reply:
        fault = None
        if request.path.rstrip("/").endswith("/chat/completions"):
            with self._lock:
                self.chat_requests += 1
                fault = self.faults.popleft() if self.faults else None
        if fault is not None and fault.kind != "delay":
            return fault.reply(Reply(None))
        status, payload = self.model.respond(request.method, request.path, request.body)
        answer = Reply(payload, status=status)
        return fault.reply(answer) if fault is not None else answer
