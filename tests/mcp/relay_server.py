"""A small MCP server for the client's tests, written with the official SDK's ``MCPServer``.

Its tools are what an agent meets in other people's servers: a long report behind a resource
link (``make_report``: the text itself only through ``resources/read``), a fingerprint of the
exact text a tool received (``fingerprint``), a long plain text, binary content, structured
content, an error, and the ways a server fails: it dies, it hangs, it answers with more than
the client takes. Run as ``python tests/mcp/relay_server.py`` (stdio).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolResult,
    ImageContent,
    ResourceLink,
    TextContent,
)

server = MCPServer("relay-test", instructions="Tools for the workbook's MCP client tests.")


def report_text(lines: int) -> str:
    """The report ``make_report(lines)`` links to: numbered lines of mixed scripts, an emoji
    and a CRLF in each, so a byte lost or re-encoded on the way changes its fingerprint."""
    return "".join(f"{i:05d} Łódź 東京 naïve café 🚀 e\u0301 line {i}\r\n" for i in range(lines))


def fingerprint_of(text: str) -> str:
    """What ``fingerprint`` answers for ``text``."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"received {len(text)} chars, sha256 {digest}"


@server.resource("relay://report/{lines}", mime_type="text/plain")
def report(lines: str) -> str:
    """A report of that many lines."""
    return report_text(int(lines))


@server.tool()
def make_report(lines: int) -> CallToolResult:
    """Write a report of that many lines; it comes back as a resource link.

    Args:
        lines: how many lines.
    """
    text = report_text(lines)
    link = ResourceLink(
        type="resource_link",
        uri=f"relay://report/{lines}",
        name=f"report-{lines}.txt",
        mime_type="text/plain",
        size=len(text.encode()),
    )
    return CallToolResult(content=[link])


@server.tool()
def fingerprint(text: str) -> str:
    """Report the length and SHA-256 of the exact text received.

    Args:
        text: the text.
    """
    return fingerprint_of(text)


@server.tool()
def long_text(lines: int) -> str:
    """The same report, as plain text in the result.

    Args:
        lines: how many lines.
    """
    return report_text(lines)


@server.tool(name="relay.echo")
def echo(text: str) -> str:
    """Say the text back (a dotted name, as MCP allows).

    Args:
        text: the text.
    """
    return text


@server.tool()
def picture() -> CallToolResult:
    """A 1x1 PNG and a caption."""
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    return CallToolResult(
        content=[
            TextContent(type="text", text="a pixel"),
            ImageContent(type="image", data=png, mime_type="image/png"),
        ]
    )


@server.tool()
def stats() -> CallToolResult:
    """Structured content only."""
    return CallToolResult(content=[], structured_content={"rows": 3, "ok": True})


@server.tool()
def refuse(reason: str) -> CallToolResult:
    """A tool execution error saying ``reason``.

    Args:
        reason: what to say.
    """
    return CallToolResult(content=[TextContent(type="text", text=reason)], is_error=True)


@server.tool()
def crash() -> str:
    """The server process dies (exit code 3) without answering."""
    print("relay-test: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def sleepy(seconds: float) -> str:
    """Answer after that many seconds.

    Args:
        seconds: how long.
    """
    time.sleep(seconds)
    return "awake"


@server.tool()
def huge(megabytes: int) -> str:
    """A result of that many megabytes of text.

    Args:
        megabytes: how many.
    """
    return "x" * (megabytes << 20)


@server.tool()
def fail_with(code: int, message: str) -> str:
    """A JSON-RPC error with this code and message, as a server's own failure.

    Args:
        code: the error code.
        message: the message.
    """
    raise MCPError(code, message)


@server.tool()
def getenv(name: str) -> str:
    """The value of an environment variable of the server's process, or "(unset)".

    Args:
        name: the variable.
    """
    return os.environ.get(name, "(unset)")


@server.tool()
def internal_resource_grep(opaque_reference: str, pattern: str) -> str:
    """A tool named like the client's own resolve tool (the client leaves it out).

    Args:
        opaque_reference: anything.
        pattern: anything.
    """
    return "should never be called"


if __name__ == "__main__":
    server.run("stdio")
