"""An MCP server (the SDK's low-level ``Server``) whose tools' input schemas hold references
(``$ref``) of every kind a client meets: one to a URL (the client fetches none), one to a
pointer and one to an anchor the schema does not have, one whose pointer runs through a string
and one that points at a value that is no schema, one that resolves within the schema, and
one that resolves but makes a call's check run out of steps (``anyOf`` of two references to the
next level, 40 levels deep). Each call is answered with the arguments it received, as JSON. Run as
``python tests/mcp/schema_ref_server.py`` (stdio)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

#: ``anyOf`` of two references to the next level, 40 levels deep: 2**40 paths to check.
LEVELS = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(40)}

SCHEMAS: dict[str, dict[str, Any]] = {
    "remote": {
        "type": "object",
        "properties": {"word": {"$ref": "http://127.0.0.1:9/word.json"}},
    },
    "pointer": {
        "type": "object",
        "$defs": {"word": {"type": "string"}},
        "properties": {"word": {"$ref": "#/$defs/wrod"}},
    },
    "anchor": {
        "type": "object",
        "properties": {"word": {"$ref": "#no-such-anchor"}},
    },
    "through": {
        "type": "object",
        "x-data": {"word": "a string, not a schema"},
        "properties": {"word": {"$ref": "#/x-data/word/inner"}},
    },
    "value": {
        "type": "object",
        "x-data": {"word": 5},
        "properties": {"word": {"$ref": "#/x-data/word"}},
    },
    "local": {
        "type": "object",
        "$defs": {"word": {"$anchor": "word", "type": "string"}},
        "properties": {"word": {"$ref": "#/$defs/word"}, "again": {"$ref": "#word"}},
        "required": ["word"],
    },
    "costly": {
        "type": "object",
        "$defs": {**LEVELS, "d40": {"type": "string"}},
        "properties": {"x": {"$ref": "#/$defs/d0"}},
    },
}


async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=f"The {name} tool.", input_schema=schema)
            for name, schema in SCHEMAS.items()
        ]
    )


async def call_tool(_ctx: Any, params: Any) -> types.CallToolResult:
    said = json.dumps({"tool": params.name, "arguments": params.arguments}, sort_keys=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=said)])


server: Server[Any] = Server("schema-refs", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
