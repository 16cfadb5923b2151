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

SeenKind = Literal["inline", "preview", "reference", "file", "error"]


@dataclass(frozen=True)
class Seen:
    """One tool result as the model sees it.

    Attributes:
        call_id: the ``tool_call_id`` of the message.
        content: the message's text, as sent.
        kind: ``inline`` (the whole value), ``preview`` (a truncated preview with its marker),
            ``reference`` (``uri`` names it; ``head`` is the preview shown under it, if any),
            ``file`` (a result saved to the file ``uri``, as deepagents and Claude Code do;
            ``head`` and ``tail`` are the lines its notice shows, ``total_lines`` the file's
            length in lines when the notice tells it) or ``error`` (an error result).
    """

    call_id: str
    content: str
    kind: SeenKind
    uri: str | None = None
    head: str | None = None
    tail: str | None = None
    total_lines: int | None = None


#: A strategy's reader: ``(tool_call_id, content)`` → what the model sees, or ``None`` when the
#: content is not this strategy's presentation of a long result.
ReadBack = Callable[[str, str], "Seen | None"]
