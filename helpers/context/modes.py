"""Per-mode tool whitelists: the model is given, and may run, only its mode's tools.

The pattern comes from a production agent's tool context (RitoSwap's tool context, its
``tool-bridge.ts``): a dangerous tool is offered
only in the mode that needs it, and filtering the *schemas* is not enough on its own. The
dispatcher must refuse a call to a tool outside the whitelist too, because a model (or a prompt
injection speaking through it) can name a tool it was never given. :class:`ModeRegistry` does
both: it lists only the whitelisted tools, and looking up any other tool fails with a reason, so
the agent turns the call into an error result and the tool never runs.

Modes here:

- ``explore``: read-only. Transcripts, pages, SQL reads, deep checks, and the model-only tools.
- ``operate``: everything, including ``google_drive_write_file``.
"""

from __future__ import annotations

from collections.abc import Iterable

from helpers.tooling.registry import Tool, ToolRegistry, UnknownToolError

READ_ONLY_TOOLS = frozenset({"yt_transcribe", "deep_check", "get_page", "run_sql"})
MODEL_ONLY_TOOLS = frozenset(
    {
        "fetch_tool_output",
        "internal_resource_length",
        "internal_resource_read_slice",
        "internal_resource_read_lines",
        "internal_resource_grep",
        "internal_resource_read",
    }
)
MODES: dict[str, frozenset[str] | None] = {
    "explore": READ_ONLY_TOOLS | MODEL_ONLY_TOOLS,
    "operate": None,  # every tool
}


class ModeRegistry(ToolRegistry):
    """The tools of one mode; every other tool of ``full`` is refused by name.

    Args:
        full: all registered tools.
        mode: the mode's name (for messages).
        allowed: the whitelist; ``None`` allows every tool.
    """

    def __init__(self, full: ToolRegistry, mode: str, allowed: Iterable[str] | None):
        self.mode = mode
        self.full = full
        self.allowed = None if allowed is None else frozenset(allowed)
        super().__init__(t for t in full if self.allowed is None or t.name in self.allowed)

    def get(self, name: str) -> Tool:
        """The tool, if this mode allows it.

        Raises:
            UnknownToolError: the tool does not exist, or exists but not in this mode (the
                message says which, so the model learns why).
        """
        if name in self.full and name not in self:
            raise UnknownToolError(
                f"tool {name!r} is not available in mode {self.mode!r}; "
                f"available: {', '.join(self.names())}"
            )
        return super().get(name)

    def merged(self, extra: Iterable[Tool]) -> ModeRegistry:
        """The same mode over ``full`` plus ``extra`` (the policy's model-only tools)."""
        return ModeRegistry(self.full.merged(extra), self.mode, self.allowed)


def for_mode(registry: ToolRegistry, mode: str | None) -> ToolRegistry:
    """``registry`` limited to ``mode``'s whitelist (``None``: unchanged).

    Raises:
        ValueError: an unknown mode.
    """
    if mode is None:
        return registry
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return ModeRegistry(registry, mode, MODES[mode])
