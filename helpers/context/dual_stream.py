"""The dual stream: a short summary to the model, the full result to the interface.

From a production agent's tool context (RitoSwap's tool context, its ``tool-bridge.ts``): the model does not need 5 MB of base64 image
data or 200 SQL rows to know that the call worked; the user's screen does. So each result is
split in two:

- :func:`summarize_for_model`, what goes into the ``tool`` message: explicit text parts if the
  result has them; for JSON, a one-line ``Result: key=value, …`` of the first few fields; for
  binary data, its type and size only; otherwise a bounded text;
- the full result, kept in the store (every dispatch is logged) for the interface to render: a
  table for SQL rows, a page preview, an image. It never enters the context.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from helpers.context.policies import Presented, ResultPolicy
from helpers.tooling.registry import Tool, ToolContext

if TYPE_CHECKING:
    from helpers.store.reading import StoredOutput

#: The longest summary the model gets, in characters.
MAX_SUMMARY_CHARS = 300
#: How many fields a JSON summary names.
SUMMARY_FIELDS = 4


def _short(value: Any, width: int = 40) -> str:
    if isinstance(value, list):
        return f"[{len(value)} items]"
    if isinstance(value, dict):
        return f"{{{len(value)} fields}}"
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _bounded(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return f"{text[: max_chars - 30]}… [{len(text) - max_chars + 30:,} more chars]"


def _binary_summary(part: dict[str, Any]) -> str | None:
    data = part.get("data") or part.get("blob")
    if not isinstance(data, str):
        return None
    try:
        size = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        size = len(data)
    kind = part.get("mimeType") or part.get("type") or "binary"
    return f"[{kind}, {size:,} bytes, shown to the user]"


def summarize_for_model(result: Any, max_chars: int = MAX_SUMMARY_CHARS) -> str:
    """The model's view of a tool result: at most ``max_chars`` characters, never binary data.

    ``result`` may be a string (JSON text is parsed), a dict (an MCP-style result with
    ``content`` parts, or plain JSON), a list, or bytes.
    """
    if isinstance(result, bytes | bytearray):
        return f"[binary, {len(result):,} bytes, shown to the user]"
    if isinstance(result, str):
        stripped = result.strip()
        if stripped[:1] in ("{", "["):
            try:
                return summarize_for_model(json.loads(stripped), max_chars)
            except ValueError:
                pass
        return _bounded(result, max_chars)
    if isinstance(result, dict):
        parts = result.get("content")
        if isinstance(parts, list) and parts and all(isinstance(p, dict) for p in parts):
            texts = [
                str(p["text"]).strip() for p in parts if p.get("type") == "text" and "text" in p
            ]
            others = [s for p in parts if p.get("type") != "text" and (s := _binary_summary(p))]
            if texts or others:
                return _bounded("\n".join(texts + others), max_chars)
        binary = _binary_summary(result)
        if binary is not None and len(result) <= 3:
            return binary
        fields = list(result.items())[:SUMMARY_FIELDS]
        line = "Result: " + ", ".join(f"{k}={_short(v)}" for k, v in fields)
        if len(result) > SUMMARY_FIELDS:
            line += f", … ({len(result) - SUMMARY_FIELDS} more fields)"
        return _bounded(line, max_chars)
    if isinstance(result, list):
        return _bounded(
            f"Result: list of {len(result)} items, first: {_short(result[0]) if result else '-'}",
            max_chars,
        )
    return _bounded(json.dumps(result, ensure_ascii=False, default=str), max_chars)


class DualStreamPolicy(ResultPolicy):
    """The model sees :func:`summarize_for_model` of each result; the store keeps all of it."""

    name = "dual"
    needs_store = True

    def __init__(self, max_chars: int = MAX_SUMMARY_CHARS):
        self.max_chars = max_chars

    def instructions(self, *, few_shot: bool = True) -> str:
        from helpers.context.instructions import GENERAL

        return (
            GENERAL
            + "\n\nTool results are summarised for you; the user sees the full result on screen. "
            "Refer to it instead of repeating it."
        )

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        summary = summarize_for_model(output, self.max_chars)
        return Presented(summary, "inline" if summary == output else "truncated")

    def describe(self) -> str:
        return f"dual stream (summary of at most {self.max_chars} chars to the model)"
