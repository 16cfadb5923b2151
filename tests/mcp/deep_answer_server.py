"""An MCP server written as raw JSON-RPC on stdio (no SDK: the SDK would not serialize it) whose
one tool answers in a way the client's reader would not take. Run as
``python tests/mcp/deep_answer_server.py MODE``, where ``MODE`` is:

- a number ``N`` > 0: a result nested ``N`` levels deep;
- ``0``: a response JSON-RPC does not allow (``"result": 5``);
- ``values``: a result of 16 MiB of ``{}`` (5.6 million values), its id written last;
- ``float-id``: a good result, its id written ``1.0`` for ``1``;
- ``surrogate``: a text holding a lone surrogate (``"\\ud800"``);
- ``bad-notification``: a log notification whose level MCP does not have, then a good result.
"""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1]
TOOL = {"name": "deep", "description": "A deep answer.", "inputSchema": {"type": "object"}}
GOOD = '{"content": [{"type": "text", "text": "fine"}]}'


def write(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def answer(request_id: object, result: str, id_text: str | None = None) -> None:
    said = json.dumps(request_id) if id_text is None else id_text
    write('{"jsonrpc": "2.0", "id": ' + said + ', "result": ' + result + "}")


def tool_answer(request_id: object) -> None:
    if MODE == "0":
        answer(request_id, "5")
    elif MODE == "values":
        many = "{}," * ((16 << 20) // 3 - 100) + "{}"
        result = '{"content": [], "structuredContent": {"x": [' + many + "]}}"
        write('{"jsonrpc": "2.0", "result": ' + result + ', "id": ' + json.dumps(request_id) + "}")
    elif MODE == "float-id":
        answer(request_id, GOOD, f"{request_id}.0")
    elif MODE == "surrogate":
        answer(request_id, '{"content": [{"type": "text", "text": "a\\ud800b"}]}')
    elif MODE == "bad-notification":
        params = '{"level": "nonsense", "data": 1}'
        write('{"jsonrpc": "2.0", "method": "notifications/message", "params": ' + params + "}")
        answer(request_id, GOOD)
    else:
        nested = "[" * int(MODE) + "]" * int(MODE)  # inside result.structuredContent.x
        answer(request_id, '{"content": [], "structuredContent": {"x": ' + nested + "}}")


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        info = {"name": "deep", "version": "1"}
        said = {"protocolVersion": message["params"]["protocolVersion"], "capabilities":
                {"tools": {}}, "serverInfo": info}  # fmt: skip
        answer(request_id, json.dumps(said))
    elif method == "tools/list":
        answer(request_id, json.dumps({"tools": [TOOL]}))
    elif method == "tools/call":
        tool_answer(request_id)
    else:
        answer(request_id, "{}")
