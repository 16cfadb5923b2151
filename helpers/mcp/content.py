"""An MCP tool result as the one text a tool returns, so it goes through the turn's policy.

MCP 2026-07-28 ("Tools › Tool Result") lets a result hold text, images, audio, resource links
and embedded resources, plus ``structuredContent``. A chat-completions ``tool`` message is one
text, and the policy (preview, boxing, the store) works on one text, so :func:`mcp_result_text`
makes one of them, losing nothing:

- a ``text`` block is its text;
- a ``resource_link`` is read through ``resources/read`` (the caller's ``read``), and is the
  text of what comes back: the server's long result reaches the store byte for byte, and the
  model sees what the client's own rule makes of it (a reference, a preview), never the
  server's uri (a uri lives only as long as the server's session; a reference lives as long
  as the thread);
- an embedded ``resource`` is its text;
- binary content (an image, audio, a blob) is the JSON of its block, base64 and all, so a
  reference to it carries every byte to the tool it is passed to;
- blocks are joined with one line break; a result whose only content is ``structuredContent``
  is that value as JSON.

A result with ``isError`` raises :class:`McpToolError` with its text (the spec: clients SHOULD
give tool execution errors to the model, so it can correct itself); the turn makes it an error
result. Everything is bounded: at most :data:`MAX_RESULT_BYTES` of text in all, and an error
message is cut to :data:`MAX_ERROR_CHARS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types as types

#: The most UTF-8 bytes one MCP tool result may come to, its resources read included: what one
#: turn may store (:data:`helpers.base.limits.MAX_STORED_BYTES_PER_TURN`).
MAX_RESULT_BYTES = 64_000_000
#: The most resource links one result may ask the client to read.
MAX_LINKS_PER_RESULT = 16
#: An error message from a server is cut to this many characters.
MAX_ERROR_CHARS = 2_000


class McpToolError(RuntimeError):
    """The server ran the tool and reported an error (``isError``); ``str()`` is its text."""


class McpResultTooLarge(RuntimeError):
    """A result (with the resources it links to) is over :data:`MAX_RESULT_BYTES`, or links to
    more than :data:`MAX_LINKS_PER_RESULT` resources."""


def cut(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` of at most ``limit`` characters, a cut one ending in ``…[+N chars]``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[+{len(text) - limit:,} chars]"


def _block_json(block: Any) -> str:
    return json.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True))


def _contents_text(contents: types.TextResourceContents | types.BlobResourceContents) -> str:
    if isinstance(contents, types.TextResourceContents):
        return contents.text
    return _block_json(contents)


def mcp_result_text(
    result: types.CallToolResult,
    read: Callable[[str], types.ReadResourceResult],
    *,
    max_bytes: int = MAX_RESULT_BYTES,
) -> str:
    """The text a tool returns for ``result`` (the rules above).

    Args:
        result: what ``tools/call`` returned.
        read: ``resources/read`` on the same server: a uri → its result.
        max_bytes: the most UTF-8 bytes the text may come to.

    Raises:
        McpToolError: the result is a tool execution error.
        McpResultTooLarge: over ``max_bytes``, or too many links.
        Whatever ``read`` raises for a link it cannot read.
    """
    blocks = list(result.content)
    if result.is_error:
        said = "\n".join(b.text for b in blocks if isinstance(b, types.TextContent))
        raise McpToolError(cut(said.strip() or "the server reported an error and gave no text"))
    links = sum(isinstance(b, types.ResourceLink) for b in blocks)
    if links > MAX_LINKS_PER_RESULT:
        raise McpResultTooLarge(
            f"the result links to {links} resources; the client reads at most "
            f"{MAX_LINKS_PER_RESULT} for one call"
        )
    parts: list[str] = []
    size = 0
    for block in blocks:
        if isinstance(block, types.TextContent):
            texts = [block.text]
        elif isinstance(block, types.ResourceLink):
            texts = [_contents_text(c) for c in read(block.uri).contents]
        elif isinstance(block, types.EmbeddedResource):
            texts = [_contents_text(block.resource)]
        else:  # an image, audio, or a block of a later version: every byte, as JSON
            texts = [_block_json(block)]
        for text in texts:
            size += len(text.encode("utf-8", "surrogatepass")) + (1 if parts else 0)
            if size > max_bytes:
                raise McpResultTooLarge(
                    f"the result is over {max_bytes:,} bytes, the most one call may bring "
                    "(ask for less: a narrower query, one page at a time)"
                )
            parts.append(text)
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)
