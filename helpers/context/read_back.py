"""What a model sees in a ``tool`` message: a tool result read back as a careful model reads it.

Each strategy presents a long result its own way (a preview and a truncation marker, an opaque
reference, a notice of a saved file), so each strategy's policy reads its own presentation back
(``read_back`` on the policy class, registered with the strategy in
:mod:`helpers.context.strategies`). The offline reference model reads every tool message through
them (:func:`helpers.context.strategies.read_back`) instead of parsing each strategy's text
itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

#: What became of a tool result, one vocabulary for what the agent presented
#: (``ToolCallRecord.result_kind``, :class:`helpers.context.policies.Presented`) and what a
#: model reads back (:attr:`Seen.kind`): ``inline`` (the whole value), ``truncated`` (a preview
#: and its truncation marker; the rest can be fetched), ``boxed`` (an opaque reference or a
#: resource link), ``middle`` (head and tail, no way back; a model reads it as ``inline``),
#: ``saved`` (a notice of the result saved to a file, as deepagents and Claude Code do) or
#: ``error`` (an error result).
ResultKind = Literal["inline", "truncated", "boxed", "middle", "saved", "error"]


@dataclass(frozen=True)
class Seen:
    """One tool result as the model sees it.

    Attributes:
        call_id: the ``tool_call_id`` of the message.
        content: the message's text, as sent.
        kind: a :data:`ResultKind`: ``inline``, ``truncated`` (a preview with its marker:
            ``uri`` is the ``tool_call_id`` that ``fetch_tool_output`` takes, ``head`` the
            text shown before the marker and ``tail`` any shown after it), ``boxed`` (``uri`` names the reference; ``head`` is the preview shown under it, if
            any), ``saved`` (a result saved to the file ``uri``; ``head`` and ``tail`` are the
            lines its notice shows, ``total_lines`` the file's length in lines when the notice
            tells it) or ``error``.
    """

    call_id: str
    content: str
    kind: ResultKind
    uri: str | None = None
    head: str | None = None
    tail: str | None = None
    total_lines: int | None = None


#: A strategy's reader: ``(tool_call_id, content)`` → what the model sees, or ``None`` when the
#: content is not this strategy's presentation of a long result.
ReadBack = Callable[[str, str], "Seen | None"]
