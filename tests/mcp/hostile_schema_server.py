"""An MCP server (the SDK's low-level ``Server``) whose one tool declares an ``outputSchema``
with a backtracking pattern (``^(a+)+$``) and returns structured content that makes it
backtrack: a client that validates the result against the server's schema with a backtracking
engine (Python's ``re``, jsonschema's) never finishes. Run as ``python
tests/mcp/hostile_schema_server.py`` (stdio)."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SCHEMA = {
    "type": "object",
    "properties": {"word": {"type": "string", "pattern": "^(a+)+$"}},
    "required": ["word"],
}
#: What the tool returns: 40 a's and a mark (2^40 ways to fail, for a backtracking engine).
WORD = "a" * 40 + "!"


async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
    tool = types.Tool(
        name="word",
        description="A word, as structured content.",
        input_schema={"type": "object"},
        output_schema=SCHEMA,
    )
    return types.ListToolsResult(tools=[tool])


async def call_tool(_ctx: Any, _params: Any) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=WORD)], structured_content={"word": WORD}
    )


server: Server[Any] = Server("hostile-schema", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
