"""Code mode: the model writes a program that calls the tools; only what it returns is seen.

Production agents now keep tool results out of the context a third way, besides previews and
references: the model gets one tool that runs a program it writes, in which the tools are
functions. Intermediate results live in the program's variables; only what the program returns
enters the context. Anthropic calls it programmatic tool calling (``allowed_callers`` on a tool
definition, with its code-execution tool: platform.claude.com docs, "Programmatic tool calling";
its engineering posts "Code execution with MCP", 2025-11-04, and "Advanced tool use",
2025-11-24); OpenAI's Responses API runs model-written JavaScript in a fresh isolated V8 runtime,
each tool's allowed callers ``direct`` or ``programmatic`` (developers.openai.com, "Programmatic
tool calling").

Here, :class:`CodePolicy` (the ``code`` strategy) offers the model one tool, ``run_program(code)``:
its description lists each tool as an async JavaScript function with its signature; the program
runs in a V8 isolate of its own (:mod:`helpers.tooling.program_sandbox`, with its limits), and
each tool call it makes goes the way of any call (:class:`helpers.loop.dispatch.ProgramCalls`:
guards, references unboxed, the tool, the store, the turn's caps), its full output handed back
to the program as a value. What the program returns is presented by the box rules
(:class:`~helpers.context.policies.BoxPolicy`, the workbook's design): a short return inline, a
long one as a reference with a preview, and the resolve tool offered once a reference exists.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from helpers.context.instructions import CODE_INSTRUCTIONS
from helpers.context.policies import BoxPolicy, Prepared, Presented, ResultPolicy
from helpers.tooling.effects import NO_TURN, TurnView
from helpers.tooling.program_sandbox import ProgramError, ProgramLimits, run_program
from helpers.tooling.registry import Tool, ToolContext, ToolRegistry

if TYPE_CHECKING:
    from helpers.store.reading import StoredOutput

#: The one tool code mode offers.
RUN_PROGRAM = "run_program"

_JS_TYPES = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}


def _js_type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(choice) for choice in schema["enum"])
    return _JS_TYPES.get(str(schema.get("type")), "any")


def js_signature(tool: Tool) -> str:
    """``tool`` as the program sees it: one line, e.g.
    ``tools.run_sql({query: string, max_rows?: number}) → string: Run one read-only SQL query``
    (its description's first line). An argument not in ``required`` is marked ``?``."""
    properties = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    arguments = ", ".join(
        f"{name}{'' if name in required else '?'}: {_js_type(schema)}"
        for name, schema in properties.items()
    )
    summary = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
    return f"tools.{tool.name}({{{arguments}}}) → string: {summary}"


def program_tool_description(tools: ToolRegistry) -> str:
    """The ``run_program`` tool's description: what a program is, and each tool it may call as
    a JavaScript signature (:func:`js_signature`)."""
    lines = [
        "Run a JavaScript program: the body of an async function. Each tool is an async "
        "function of `tools`, taking one object of arguments; it resolves to the tool's output "
        "(a string: JSON.parse a JSON output) and rejects with the tool's error. Only the value "
        "the program returns is shown to you (a string as it is, anything else as JSON); "
        "console output is not. No network, files or modules: only these tools.",
        "",
        *(js_signature(tool) for tool in tools),
    ]
    return "\n".join(lines)


class CodePolicy(ResultPolicy):
    """Code mode: one ``run_program`` tool; tool calls happen inside the program, and its
    return value is presented by the box rules (see the module's docstring).

    Its ``present`` shows a program's tool calls their full output (a program gets real values),
    and boxes a long return; ``prepare_arguments`` unboxes references in a program's tool calls
    (and leaves the program's text alone: a reference inside it is unboxed when the program
    passes it, whole, to a tool).
    """

    name = "code"
    needs_store = True

    def __init__(
        self,
        threshold: int | None = None,
        boxing: str = "opaque",
        limits: ProgramLimits | None = None,
    ):
        """Args:
            threshold: box a returned value longer than this (the box design's unit: tokens
                for the workbook's design); ``None``: the design's own.
            boxing: how a long return is shown: ``opaque`` or ``json`` (an MCP resource link).
            limits: each program's :class:`~helpers.tooling.program_sandbox.ProgramLimits`.

        Raises:
            ValueError: a negative threshold or an unknown boxing mode.
        """
        self.box = BoxPolicy(threshold, boxing, design="workbook")
        self.boxing = boxing
        self.limits = limits or ProgramLimits()

    def internal_tools(self) -> list[Tool]:
        return self.box.internal_tools()

    def tools_for(self, turn: TurnView) -> list[Tool]:
        """The resolve tool, once a returned value was boxed in this thread."""
        return self.box.tools_for(turn)

    def task_tools(self, registry: ToolRegistry, turn: TurnView) -> ToolRegistry:
        """``run_program`` alone, its description listing ``registry``'s tools (the tools a
        program may call, whatever mode filtered them) and the resolve tool."""
        callable_tools = registry.merged(self.internal_tools())
        return ToolRegistry([self.program_tool(callable_tools)])

    def program_tool(self, tools: ToolRegistry) -> Tool:
        """The ``run_program`` tool, its description naming ``tools``."""
        limits = self.limits

        def run(ctx: ToolContext, code: str) -> str:
            host = ctx.program_host
            if host is None:
                raise ProgramError("run_program runs only in an agent's turn (it has no tools)")
            result = run_program(code, host, limits)
            if not result.ok:
                raise ProgramError(f"after {result.tool_calls} tool call(s), {result.error}")
            return result.text

        return Tool(
            name=RUN_PROGRAM,
            description=program_tool_description(tools),
            parameters={
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": "the program: JavaScript statements, `await "
                        "tools.NAME({...})` for each tool call, and `return` with what you need.",
                    }
                },
                "required": ["code"],
                "additionalProperties": False,
            },
            fn=run,
            takes_context=True,
            category="execution",
            hints={"code": str},
        )

    def instructions(self, *, few_shot: bool = True) -> str:
        return CODE_INSTRUCTIONS.text(few_shot=few_shot)

    def prepare_arguments(
        self, ctx: ToolContext, tool: Tool, arguments: Any, turn: TurnView = NO_TURN
    ) -> Prepared:
        if tool.name == RUN_PROGRAM:
            return Prepared(arguments)
        return self.box.prepare_arguments(ctx, tool, arguments, turn)

    def present(
        self, ctx: ToolContext, tool: Tool, tool_call_id: str, output: str, row: StoredOutput | None
    ) -> Presented:
        """A program's return by the box rules; a tool call's output, to the program, whole."""
        if tool.name == RUN_PROGRAM:
            return self.box.present(ctx, tool, tool_call_id, output, row)
        return Presented(output, "inline")

    def is_long(self, output: str) -> bool:
        return self.box.is_long(output)

    read_back = staticmethod(BoxPolicy.read_back)

    def box_threshold_chars(self) -> int | None:
        return self.box.box_threshold_chars()

    def box_rule(self) -> str | None:
        return self.box.box_rule()

    def describe(self) -> str:
        return f"code (a program's return boxed {self.box.design.rule()}, {self.boxing})"
