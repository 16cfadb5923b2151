"""An MCP server (the SDK's low-level ``Server``) that lists many tools, each within the
client's per-tool caps (a description of 8,000 characters, a schema of about 60,000 bytes):
together they would make every request to the model megabytes long. Run as ``python
tests/mcp/many_tools_server.py N`` (stdio; ``N`` tools, 128 by default)."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 128
#: One tool's schema: an object of 480 string properties, each with a description.
SCHEMA = {
    "type": "object",
    "properties": {
        f"field_{k:03d}": {"type": "string", "description": "x" * 70} for k in range(480)
    },
}


async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
    tools = [
        types.Tool(name=f"tool_{n:03d}", description="d" * 8_000, input_schema=SCHEMA)
        for n in range(COUNT)
    ]
    return types.ListToolsResult(tools=tools)


async def call_tool(_ctx: Any, params: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])


server: Server[Any] = Server("many-tools", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
