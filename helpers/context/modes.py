"""Per-mode tool whitelists: the model is given, and may run, only its mode's tools.

The pattern comes from a production agent's tool context (RitoSwap's tool context, its
``tool-bridge.ts``): a dangerous tool is offered
only in the mode that needs it, and filtering the *schemas* is not enough on its own. The
dispatcher must refuse a call to a tool outside the whitelist too, because a model (or a prompt
injection speaking through it) can name a tool it was never given. :class:`ModeRegistry` does
both: it lists only the whitelisted tools, and looking up any other tool fails with a reason, so
the agent turns the call into an error result and the tool never runs.

Modes here (:data:`MODE_RULES`):

- ``explore``: read-only. Every tool registered ``read_only=True`` (transcripts, pages, SQL
  reads, deep checks) and the model-only tools.
- ``operate``: everything, including ``google_drive_write_file``.

Which tools a mode admits follows from the tools' own properties (:attr:`Tool.read_only`,
:attr:`Tool.internal`), so a new read-only tool is offered in ``explore`` without a change
here, and every strategy's model-only tools (resolve tools, ``fetch_tool_output``, the anchors'
``read_file`` and ``grep``) work in every mode: they read this thread's store and act on
nothing. :data:`MODES` is the same rule as name lists, for the workbook's own tools (notebook 07
builds its guard from it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from helpers.context.resolve_tools import fetch_tools, resolve_tools
from helpers.tooling import tools
from helpers.tooling.registry import Tool, ToolRegistry, UnknownToolError

#: The workbook's tools registered ``read_only=True``.
READ_ONLY_TOOLS = frozenset(t.name for t in tools.registry if t.read_only)
#: The model-only tools of the truncate and box strategies (both forms of the resolve tools).
MODEL_ONLY_TOOLS = frozenset(
    t.name for t in [*fetch_tools(), *resolve_tools("five"), *resolve_tools("one")]
)


@dataclass(frozen=True)
class Mode:
    """A mode: the tools it offers the model and lets run.

    Attributes:
        name: the mode's name (``--mode``, messages).
        tools: the tool names it admits; ``None`` admits every tool.
        read_only: it also admits any tool registered ``read_only=True``.
    """

    name: str
    tools: frozenset[str] | None
    read_only: bool = False

    def admits(self, tool: Tool) -> bool:
        """Whether ``tool`` may be offered and run: every tool when :attr:`tools` is ``None``;
        else a tool of the workbook's it names, a model-only (``internal``) tool, or, in a
        read-only mode, a read-only tool. A tool an MCP server runs is never admitted by its
        name alone (a server may serve a ``deep_check`` that writes), and it is not read-only
        (its ``readOnlyHint`` is the server's word, and the MCP spec says a client MUST take
        annotations as untrusted unless the server is trusted): only a mode that admits every
        tool offers it."""
        if self.tools is None or tool.internal:
            return True
        if tool.server is None and tool.name in self.tools:
            return True
        return self.read_only and tool.read_only


#: Every mode, by name.
MODE_RULES: dict[str, Mode] = {
    "explore": Mode("explore", READ_ONLY_TOOLS | MODEL_ONLY_TOOLS, read_only=True),
    "operate": Mode("operate", None),
}
#: Each mode's whitelist as tool names (``None``: every tool): :data:`MODE_RULES` for the
#: workbook's own tools.
MODES: dict[str, frozenset[str] | None] = {name: m.tools for name, m in MODE_RULES.items()}


class ModeRegistry(ToolRegistry):
    """The tools of ``full`` that ``mode`` admits; every other tool of ``full`` is refused by
    name.

    Args:
        full: all registered tools.
        mode: the mode (:class:`Mode`).
    """

    def __init__(self, full: ToolRegistry, mode: Mode):
        self.mode = mode
        self.full = full
        super().__init__(t for t in full if mode.admits(t))

    def get(self, name: str) -> Tool:
        """The tool, if this mode allows it.

        Raises:
            UnknownToolError: the tool does not exist, or exists but not in this mode (the
                message says which, so the model learns why).
        """
        if name in self.full and name not in self:
            raise UnknownToolError(
                f"tool {name!r} is not available in mode {self.mode.name!r}; "
                f"available: {', '.join(self.names())}"
            )
        return super().get(name)

    def merged(self, extra: Iterable[Tool]) -> ModeRegistry:
        """The same mode over ``full`` plus ``extra`` (the policy's model-only tools)."""
        return ModeRegistry(self.full.merged(extra), self.mode)


def for_mode(registry: ToolRegistry, mode: str | None) -> ToolRegistry:
    """``registry`` limited to ``mode``'s whitelist (``None``: unchanged).

    Raises:
        ValueError: an unknown mode.
    """
    if mode is None:
        return registry
    if mode not in MODE_RULES:
        raise ValueError(f"mode must be one of {', '.join(MODE_RULES)}, got {mode!r}")
    return ModeRegistry(registry, MODE_RULES[mode])
