"""An MCP server written as raw JSON-RPC on stdio (no SDK: the SDK would not serialize it) whose
one tool answers with a result nested ``N`` levels deep, or (``N`` = 0) with a response JSON-RPC
does not allow (``"result": 5``). Run as ``python tests/mcp/deep_answer_server.py N``."""

from __future__ import annotations

import json
import sys

LEVELS = int(sys.argv[1])
TOOL = {"name": "deep", "description": "A deep answer.", "inputSchema": {"type": "object"}}


def answer(request_id: object, result: str) -> None:
    sys.stdout.write('{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "result": ')
    sys.stdout.write(result + "}\n")
    sys.stdout.flush()


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
    elif method == "tools/call" and LEVELS == 0:
        answer(request_id, "5")
    elif method == "tools/call":
        nested = "[" * LEVELS + "]" * LEVELS  # inside result.structuredContent.x
        answer(request_id, '{"content": [], "structuredContent": {"x": ' + nested + "}}")
    else:
        answer(request_id, "{}")
