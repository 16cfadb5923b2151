"""What a tool call reads of its turn, and what it did to it: one direction of data.

A turn's state (the references the model was shown, the outputs it fetched in full, the tools
tool search loaded, the bytes stored) is the loop's own (:class:`helpers.loop.turn_state.TurnState`).
Nothing below the loop writes it: a policy, a resolve tool or ``tool_search`` *returns* what it
did as :class:`CallEffects` (a tool wraps its text in :class:`Reported`; a policy puts them on
what it returns), and the loop records them. Where a policy decides by the turn's state
(whether a reference was shown, an output fetched), the loop passes it in, read-only, as a
:class:`TurnView`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CallEffects:
    """What one step of a tool call (the policy preparing its arguments, the tool, the policy
    presenting its result) did to its turn, for the loop to record.

    Attributes:
        guards: the names of guards (:data:`helpers.base.guards.GUARDS`) that repaired the call
            or note what went through unchecked (``arguments_check_unfinished``), in the order
            they fired; the loop puts them on the call's record.
        fetched: the ``tool_call_id`` of each output the call brought back in full
            (``fetch_tool_output``).
        shown_references: reference ids (the ``<id>`` of ``internal://<id>``) the call's result
            showed the model (a boxed result).
        loaded_tools: the names of real tools the call loaded (``tool_search``): offered from the
            next model call of the turn on.
    """

    guards: tuple[str, ...] = ()
    fetched: frozenset[str] = frozenset()
    shown_references: frozenset[str] = frozenset()
    loaded_tools: frozenset[str] = frozenset()

    def __or__(self, other: CallEffects) -> CallEffects:
        """Both steps' effects: ``self``'s guards, then ``other``'s; the sets joined."""
        return CallEffects(
            guards=self.guards + other.guards,
            fetched=self.fetched | other.fetched,
            shown_references=self.shown_references | other.shown_references,
            loaded_tools=self.loaded_tools | other.loaded_tools,
        )


#: A step that changed nothing of its turn.
NO_EFFECTS = CallEffects()


@dataclass(frozen=True)
class Reported:
    """What a tool returns when its call changes its turn: the text the model (or the store)
    gets, and the effects for the loop to record. A tool that changes nothing returns its text
    (or any JSON value) alone; :meth:`helpers.tooling.registry.Tool.run` reads both forms."""

    text: str
    effects: CallEffects = NO_EFFECTS


@dataclass(frozen=True)
class TurnView:
    """What a policy may read of its turn's state, read-only: a snapshot the loop takes before
    each step (:meth:`helpers.loop.turn_state.TurnState.view`). The default is a call outside any
    turn: no prompt, nothing shown, fetched or loaded.

    Attributes:
        prompt: the user's prompt of the turn (what tool search matches tools against).
        shown_references: reference ids the model has been shown in the thread (boxed results of
            this turn, and those in the history it was given).
        fetched: the ``tool_call_id`` of each output fetched in full in this turn.
        loaded_tools: the real tools ``tool_search`` loaded in this turn.
    """

    prompt: str = ""
    shown_references: frozenset[str] = frozenset()
    fetched: frozenset[str] = frozenset()
    loaded_tools: frozenset[str] = frozenset()


#: What a policy reads of a call outside any turn (a test's, a checkpoint's): nothing yet.
NO_TURN = TurnView()
