"""Where a model chooses: say what it did, and explain a choice other than the reference model's.

The notebooks run against whatever model the profile names: the offline reference model, one of
its personas (``OFFLINE_MODEL=offline-reference:<persona>``), or a real model. Where the lesson
shows a model's choice (did it fetch the full output? did the whole transcript reach
``deep_check``? how many more turns fit?), a cell must not stop the room on an assert when a
model chooses otherwise: it says what happened and what a different choice means, and the
notebook runs on. An assert stays only where it checks the attendee's code, whatever the model
chose (the store holds every call the turn made; a refused tool did not run).

:func:`explain_choice` is that one way to say it; :func:`deep_check_received` reads what
``deep_check`` received in a turn, the figure most cells explain.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from helpers.text.escaping import for_terminal

if TYPE_CHECKING:
    from helpers.loop.records import TurnRecord

#: Set to 1 (``make test`` does, where the offline reference model runs the solution notebooks):
#: a choice other than the reference model's is then a defect of the page or the library (the
#: cell compares unlike things, or the reference model changed), never a model's freedom, so
#: :func:`explain_choice` raises instead of explaining it.
STRICT_ENV = "WORKBOOK_REFERENCE_CHOICES_ONLY"
#: How the two outcomes begin: words, readable in any font.
AS_EXPECTED = "As the reference model does:"
CHOSE_OTHERWISE = "This model chose otherwise:"


def explain_choice(holds: bool, *, expected: str, otherwise: str) -> None:
    """Print what the model did at a point where a model may choose.

    Args:
        holds: whether the model did what the offline reference model does here.
        expected: what that is, and why it is the lesson (shown when ``holds``).
        otherwise: what this model did instead, with the figures that show it, and what the
            difference means (shown when not ``holds``); model text in it is untrusted.

    It returns nothing, so a cell that ends with it shows the verdict alone (never a stray
    ``True`` or ``False``); a cell that branches on the choice keeps ``holds`` in a name of its
    own.

    Raises:
        AssertionError: ``holds`` is false while :data:`STRICT_ENV` is ``1``.

    Both texts reach a notebook's output as plain text, escaped for it
    (:func:`helpers.text.escaping.for_terminal`): a model's answer quoted in them cannot move the
    cursor or colour the page.
    """
    said = f"{AS_EXPECTED} {expected}" if holds else f"{CHOSE_OTHERWISE} {otherwise}"
    print(for_terminal(said))
    if not holds and os.environ.get(STRICT_ENV) == "1":
        raise AssertionError(
            f"{STRICT_ENV}=1, and the reference model chose otherwise here: with the offline "
            "reference model this verdict is a defect of the page, not a model's choice"
        )


#: ``deep_check``'s own report of what it received (:func:`helpers.tooling.tools.deep_check`).
_RECEIVED_RE = re.compile(r"^Deep Check: received (\d+) chars")


def deep_check_received(turn: TurnRecord) -> list[int]:
    """How many characters each ``deep_check`` call of ``turn`` received, in call order, read
    from the tool's own report ("Deep Check: received N chars …"); a call that was refused
    before it ran, or failed, is left out (its result is an error, not a report)."""
    found = (_RECEIVED_RE.match(c.result) for c in turn.tool_calls if c.name == "deep_check")
    return [int(m[1]) for m in found if m]
