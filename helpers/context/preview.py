"""Truncated previews: the first ``limit`` characters of a long tool result, then a marker.

The marker tells the model how much is hidden and how to get it::

    <first 600 characters> ...[+11400 chars. full output: fetch_tool_output(tool_call_id='call_X7Y')]

Units are characters (Python ``str`` length), not bytes: a preview never splits a character, and
the count in the marker is exactly ``len(output) - limit``. The design follows Part 11 "Tool-Output Offload"
of the Oracle AI Developer Hub agent workshop, which counted bytes; we count characters.

A preview is for the model to read, never a value to pass on: the truncate strategy refuses a
tool call whose argument still holds a marker, or is a preview with its marker cut off (the model
meant the full output; see :meth:`helpers.context.policies.TruncatePolicy.prepare_arguments`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from helpers.base.guards import GuardRefusal

#: Default preview length in characters.
DEFAULT_PREVIEW_LIMIT_CHARS = 600

MARKER_RE = re.compile(
    r" \.\.\.\[\+(?P<hidden>\d+) chars\. full output: "
    r"fetch_tool_output\(tool_call_id='(?P<call_id>[^']*)'\)\]\Z"
)


#: The longest truncation marker, in characters (a tool_call_id is at most 255 characters).
MAX_MARKER_CHARS = 400


class PreviewPassedAsValue(GuardRefusal):
    """A tool argument still holds a truncation marker: the model passed a preview on as if it
    were the full output. The call is refused before the tool runs."""

    guard = "refused_preview_as_value"


def truncation_marker(hidden_chars: int, tool_call_id: str) -> str:
    """The marker that ends a preview: `` ...[+N chars. full output: fetch_tool_output(…)]``."""
    return f" ...[+{hidden_chars} chars. full output: fetch_tool_output(tool_call_id='{tool_call_id}')]"


def preview_limit_chars(limit: int) -> int:
    """``limit``, a preview's length in characters, once it is known to be one.

    Raises:
        ValueError: ``limit`` is negative.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0 characters, got {limit}")
    return limit


def make_preview(output: str, tool_call_id: str, limit: int = DEFAULT_PREVIEW_LIMIT_CHARS) -> str:
    """``output`` itself if it has at most ``limit`` characters, else its first ``limit``
    characters followed by :func:`truncation_marker`.

    Raises:
        ValueError: ``limit`` is negative.
    """
    limit = preview_limit_chars(limit)
    if len(output) <= limit:
        return output
    return output[:limit] + truncation_marker(len(output) - limit, tool_call_id)


@dataclass(frozen=True)
class Preview:
    """A parsed preview: the visible text, how many characters are hidden, and where they are."""

    text: str
    hidden_chars: int
    tool_call_id: str


def parse_preview(content: str) -> Preview | None:
    """The :class:`Preview` that ``content`` is, or ``None`` if it carries no truncation marker."""
    # the marker ends the content and is short: look at the tail only (linear in any content)
    match = MARKER_RE.search(content, max(0, len(content) - MAX_MARKER_CHARS))
    if match is None:
        return None
    return Preview(content[: match.start()], int(match["hidden"]), match["call_id"])
