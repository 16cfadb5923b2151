"""Context Relay Workbook: the library behind the notebooks and the ``workbook`` CLI.

Data flows one way through an agent turn: tool → result policy → store → messages. The public
API is what ``__all__`` lists, importable from ``helpers`` itself::

    from helpers import ToolOutputStore, default_registry, offline_client, policy_for, run_turn

    store = ToolOutputStore("sqlite:///var/mine.sqlite")
    record = run_turn(
        "Generate a transcript of the YouTube video with video_id='123' and then pass it "
        "to Deep Check for analysis.",
        client=offline_client(),
        model="offline-reference",
        policy=policy_for("box"),
        registry=default_registry(),
        store=store,
    )
    print(record.status, record.usage(), record.answer)

Names are loaded on first use (``import helpers`` stays fast). The modules, in layers (bottom
first; a module imports only from its own layer or those below: ``_LAYERS``, checked by a test):

- foundation: paths, ids, guards, tokens, redaction, instructions, plans, personas, replies;
- tools and their log: :mod:`~helpers.store` (with Alembic migrations in
  :mod:`~helpers.migrations`), :mod:`~helpers.registry`, :mod:`~helpers.tools`, dataset, pages,
  :mod:`~helpers.cases`;
- the context controls: :mod:`~helpers.policies` (inline / truncate / box and the box designs),
  :mod:`~helpers.anchors` (production agents' policies), boxing, preview, resolve_tools,
  compaction, modes, dual_stream;
- the loop: :mod:`~helpers.agent` (the turn), :mod:`~helpers.threads`;
- the models: :mod:`~helpers.offline_plan` (what the offline model does),
  :mod:`~helpers.offline` (the model), :mod:`~helpers.offline_server` (over loopback HTTP),
  :mod:`~helpers.llm` (profiles, the client);
- the evaluation: validation, :mod:`~helpers.evaluation`, :mod:`~helpers.pricing`,
  :mod:`~helpers.scaling`, :mod:`~helpers.compare`;
- the course: the CLI, the notebooks' views, hints and budget, generated figures and guide.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: The layers of the library, bottom first: a module imports only from its own layer or the
#: ones below it (a test checks it), so data and control flow one way, from the tools and their
#: log up to the course's commands.
_LAYERS: dict[str, tuple[str, ...]] = {
    "foundation": (
        "paths",
        "ids",
        "guards",
        "tokens",
        "redaction",
        "instructions",
        "plans",
        "personas",
        "replies",
    ),
    "tools and their log": (
        "store",
        "migrations",
        "registry",
        "dataset",
        "pages",
        "tools",
        "cases",
    ),
    "context controls": (
        "preview",
        "boxing",
        "resolve_tools",
        "policies",
        "anchors",
        "compaction",
        "modes",
        "dual_stream",
    ),
    "the loop": ("agent", "threads"),
    "models": ("offline_plan", "offline", "offline_server", "llm"),
    "evaluation": ("validation", "evaluation", "pricing", "scaling", "compare"),
    "course": (
        "views",
        "hints",
        "budget",
        "student_notebooks",
        "instructor_guide",
        "readme_figures",
        "bench",
        "outputs_cli",
        "cli",
    ),
}

#: Public name → the module that defines it.
_PUBLIC: dict[str, str] = {
    # the turn
    "run_turn": "helpers.agent",
    "TurnRecord": "helpers.agent",
    "ToolCallRecord": "helpers.agent",
    "ModelCallRecord": "helpers.agent",
    "CompactionSettings": "helpers.agent",
    "STATUSES": "helpers.agent",
    # strategies and the policies that carry them out
    "STRATEGIES": "helpers.evaluation",
    "policy_for": "helpers.evaluation",
    "make_policy": "helpers.policies",
    "ResultPolicy": "helpers.policies",
    "InlinePolicy": "helpers.policies",
    "TruncatePolicy": "helpers.policies",
    "MiddleTruncatePolicy": "helpers.policies",
    "BoxPolicy": "helpers.policies",
    "BoxDesign": "helpers.policies",
    "BOX_DESIGNS": "helpers.policies",
    "CodexPolicy": "helpers.anchors",
    "DeepAgentsPolicy": "helpers.anchors",
    "ClaudeCodePolicy": "helpers.anchors",
    "AgentsSdkTrimmerPolicy": "helpers.anchors",
    # the store and threads
    "ToolOutputStore": "helpers.store",
    "StoredOutput": "helpers.store",
    "open_thread": "helpers.threads",
    "load_history": "helpers.threads",
    # tools
    "ToolRegistry": "helpers.registry",
    "Tool": "helpers.registry",
    "ToolContext": "helpers.registry",
    "tool_from_function": "helpers.registry",
    "default_registry": "helpers.tools",
    # models
    "ModelConfig": "helpers.llm",
    "resolve_model": "helpers.llm",
    "make_client": "helpers.llm",
    "OfflineModel": "helpers.offline",
    "OfflineServer": "helpers.offline_server",
    "offline_client": "helpers.offline",
    "count_tokens": "helpers.tokens",
    "count_chat_tokens": "helpers.tokens",
    # cases and the comparison
    "Case": "helpers.cases",
    "load_cases": "helpers.cases",
    "run_case": "helpers.evaluation",
    "run_cases": "helpers.evaluation",
    "client_for_cases": "helpers.evaluation",
    "Comparison": "helpers.compare",
    "write_report": "helpers.compare",
    "run_scaling": "helpers.scaling",
    "load_prices": "helpers.pricing",
    "turn_cost": "helpers.pricing",
}

__all__ = [
    "BOX_DESIGNS",
    "STATUSES",
    "STRATEGIES",
    "AgentsSdkTrimmerPolicy",
    "BoxDesign",
    "BoxPolicy",
    "Case",
    "ClaudeCodePolicy",
    "CodexPolicy",
    "CompactionSettings",
    "Comparison",
    "DeepAgentsPolicy",
    "InlinePolicy",
    "MiddleTruncatePolicy",
    "ModelCallRecord",
    "ModelConfig",
    "OfflineModel",
    "OfflineServer",
    "ResultPolicy",
    "StoredOutput",
    "Tool",
    "ToolCallRecord",
    "ToolContext",
    "ToolOutputStore",
    "ToolRegistry",
    "TruncatePolicy",
    "TurnRecord",
    "client_for_cases",
    "count_chat_tokens",
    "count_tokens",
    "default_registry",
    "load_cases",
    "load_history",
    "load_prices",
    "make_client",
    "make_policy",
    "offline_client",
    "open_thread",
    "policy_for",
    "resolve_model",
    "run_case",
    "run_cases",
    "run_scaling",
    "run_turn",
    "tool_from_function",
    "turn_cost",
    "write_report",
]
assert set(__all__) == set(_PUBLIC)  # one list, two forms: keep them together


def __getattr__(name: str) -> Any:
    """Load a public name from its module the first time it is asked for."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'helpers' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and editors see
    from helpers.agent import (
        STATUSES,
        CompactionSettings,
        ModelCallRecord,
        ToolCallRecord,
        TurnRecord,
        run_turn,
    )
    from helpers.anchors import (
        AgentsSdkTrimmerPolicy,
        ClaudeCodePolicy,
        CodexPolicy,
        DeepAgentsPolicy,
    )
    from helpers.cases import Case, load_cases
    from helpers.compare import Comparison, write_report
    from helpers.evaluation import STRATEGIES, client_for_cases, policy_for, run_case, run_cases
    from helpers.llm import ModelConfig, make_client, resolve_model
    from helpers.offline import OfflineModel, offline_client
    from helpers.offline_server import OfflineServer
    from helpers.policies import (
        BOX_DESIGNS,
        BoxDesign,
        BoxPolicy,
        InlinePolicy,
        MiddleTruncatePolicy,
        ResultPolicy,
        TruncatePolicy,
        make_policy,
    )
    from helpers.pricing import load_prices, turn_cost
    from helpers.registry import Tool, ToolContext, ToolRegistry, tool_from_function
    from helpers.scaling import run_scaling
    from helpers.store import StoredOutput, ToolOutputStore
    from helpers.threads import load_history, open_thread
    from helpers.tokens import count_chat_tokens, count_tokens
    from helpers.tools import default_registry
