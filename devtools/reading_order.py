"""The box mechanism's reading order, measured: which definitions a reader follows, and how long.

Issue 50 asks that a reader follow ``box`` end to end (the turn, one tool call, the box policy,
the reference, the store, the resolve tool) in at most :data:`MAX_LINES` lines across at most
:data:`MAX_FILES` files. :data:`STEPS` is that path, in reading order; :func:`measure` finds each
definition in its module's source (``ast``: from its first decorator to its last line) and
counts its lines, so the table docs/library.md shows (``<!-- figures:reading_order -->``,
written by ``make figures``) is measured, and a renamed or moved definition fails the block.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from helpers.base.paths import PACKAGE_PARENT

#: The goal of issue 50: box end to end in at most this many lines …
MAX_LINES = 1_500
#: … across at most this many files.
MAX_FILES = 6


@dataclass(frozen=True)
class Step:
    """One stop of the reading order: a definition (``Class``, ``Class.method`` or ``function``)
    of a module, and what it does on box's path."""

    module: str
    name: str
    does: str


#: Box's path from the turn to the resolve tool, in the order a reader meets it. The start is an
#: ``Agent`` holding ``build_policy("box")`` (a ``BoxPolicy``: the strategy registry maps the
#: name to the class).
STEPS: tuple[Step, ...] = (
    Step("helpers.loop.agent", "Agent", "what is built once: client, model, policy, tools, store"),
    Step("helpers.loop.agent", "_Turn", "the loop: ask the model, run its tool calls, repeat"),
    Step("helpers.loop.dispatch", "dispatch", "one tool call, whatever happens an error result"),
    Step("helpers.loop.dispatch", "_read_call", "the model's arguments read, or refused"),
    Step("helpers.loop.dispatch", "_run_call", "unbox, run the tool, keep its output, present it"),
    Step("helpers.loop.dispatch", "_keep_output", "the output into the store, bounded"),
    Step("helpers.context.policies", "ResultPolicy", "what every policy answers"),
    Step("helpers.context.policies", "BoxPolicy", "box: a reference and a preview for long output"),
    Step("helpers.context.boxing", "make_reference", "a reference: `internal://<id>`"),
    Step("helpers.context.boxing", "render_reference", "the text the model sees for a reference"),
    Step("helpers.context.boxing", "unbox_arguments", "references in arguments to their outputs"),
    Step("helpers.context.boxing", "resolve_in_thread", "a reference looked up in its thread"),
    Step("helpers.store.writing", "StoreWriting.log_tool", "one output stored"),
    Step("helpers.context.resolve_tools", "internal_resource", "the resolve tool: look inside"),
    Step("helpers.context.resolve_tools", "_row", "the reference's row, in this thread only"),
    Step("helpers.context.resolve_tools", "internal_resource_read", "read it whole, bounded"),
)


@dataclass(frozen=True)
class Measured:
    """A step and its size: the file (relative to the project) and the definition's lines."""

    step: Step
    path: str
    lines: int


def _definition(tree: ast.Module, name: str) -> ast.AST:
    node: ast.AST = tree
    for part in name.split("."):
        found = [
            child
            for child in ast.iter_child_nodes(node)
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and child.name == part
        ]
        if not found:
            raise LookupError(f"no definition {name!r} (stops at {part!r})")
        node = found[0]
    return node


def measure(steps: tuple[Step, ...] = STEPS) -> list[Measured]:
    """Each step with its file and its number of source lines.

    Raises:
        LookupError: a step names a module or definition that does not exist.
    """
    measured = []
    for step in steps:
        spec = importlib.util.find_spec(step.module)
        if spec is None or spec.origin is None:
            raise LookupError(f"no module {step.module}")
        source = Path(spec.origin)
        node = _definition(ast.parse(source.read_text(encoding="utf-8")), step.name)
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = node.end_lineno or node.lineno
        path = source.relative_to(PACKAGE_PARENT).as_posix()
        measured.append(Measured(step, path, end - first + 1))
    return measured


def reading_order_markdown() -> str:
    """The reading order as a Markdown table, with its totals against the goal."""
    rows = measure()
    lines = ["| # | file | definition | what it does | lines |", "|---|---|---|---|---|"]
    for i, row in enumerate(rows, 1):
        lines.append(f"| {i} | `{row.path}` | `{row.step.name}` | {row.step.does} | {row.lines} |")
    total = sum(row.lines for row in rows)
    files = len({row.path for row in rows})
    lines.append(
        f"\n{total:,} lines across {files} files (the goal: at most {MAX_LINES:,} lines across "
        f"at most {MAX_FILES} files)."
    )
    return "\n".join(lines)
