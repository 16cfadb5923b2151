"""The state of one turn, owned by the loop: what its calls did so far.

Data flows one way, tool → policy → store → messages: a tool, a policy or ``tool_search``
returns what it did (:class:`helpers.tooling.effects.CallEffects`), and only the loop
(:mod:`helpers.loop.agent`, :mod:`helpers.loop.dispatch`) writes it here; a policy reads it
through :meth:`TurnState.view`, a snapshot it cannot change. A call outside any turn (an MCP
server's ``tools/call``, a test's) runs in a fresh state of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from helpers.tooling.effects import CallEffects, TurnView


@dataclass
class TurnState:
    """What one turn's tool calls have done so far (programs' calls in code mode included).

    Attributes:
        prompt: the user's prompt of the turn (what tool search matches tools against); set
            as the turn starts, never changed.
        shown_references: reference ids the model has been shown in the thread: those in the
            history the turn was given (:meth:`helpers.loop.agent.Agent.run`), then each boxed
            result of the turn (a policy's :class:`~helpers.context.policies.Presented`).
        fetched: the ``tool_call_id`` of each output fetched in full in this turn
            (``fetch_tool_output``'s effects); the truncate policy lets a value that starts like
            such an output pass.
        loaded_tools: the real tools ``tool_search`` loaded in this turn; the box policy's
            searched design offers them from the next model call on.
        stored_bytes: the UTF-8 bytes the turn's tool calls have stored (each output plus the
            arguments text), against :attr:`helpers.base.limits.TurnLimits.max_stored_bytes_per_turn`.
    """

    prompt: str = ""
    shown_references: set[str] = field(default_factory=set)
    fetched: set[str] = field(default_factory=set)
    loaded_tools: set[str] = field(default_factory=set)
    stored_bytes: int = 0

    def view(self) -> TurnView:
        """What a policy may read of the turn now: a frozen copy."""
        return TurnView(
            prompt=self.prompt,
            shown_references=frozenset(self.shown_references),
            fetched=frozenset(self.fetched),
            loaded_tools=frozenset(self.loaded_tools),
        )

    def record(self, effects: CallEffects) -> None:
        """Take what a call did into the turn (its guards go on the call's record, not here)."""
        self.shown_references |= effects.shown_references
        self.fetched |= effects.fetched
        self.loaded_tools |= effects.loaded_tools
