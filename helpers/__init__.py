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

Names are loaded on first use (``import helpers`` stays fast). The library is in layers,
bottom first; a module imports only from its own layer or those below (``_LAYERS``, checked by a
test):

- the foundation, at the root: paths, ids, guards, limits, tokens, redaction, escaping,
  instructions, plans, personas, replies, :mod:`~helpers.cases`;
- :mod:`helpers.tooling`: the tool registry, the real tools and their data, the SQLAlchemy store
  and its Alembic migrations;
- :mod:`helpers.context`: the context controls (policies and box designs, the anchors'
  policies, references, previews, resolve tools, compaction, modes, the dual stream);
- :mod:`helpers.loop`: the agent turn and threads;
- :mod:`helpers.models`: model access and the offline reference model (plan, model, server);
- :mod:`helpers.evaluation`: validation, runs per strategy, pricing, scaling, the comparison;
- :mod:`helpers.course`: the CLI, the notebooks' views, hints and budget, generated figures.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: The layers of the library, bottom first: the modules at the root of ``helpers`` (the
#: foundation), then one subpackage per layer. A module imports only from its own layer or the
#: ones below it (a test checks it), so data and control flow one way, from the tools and their
#: log up to the course's commands.
_LAYERS: tuple[str, ...] = (
    "foundation",
    "tooling",
    "context",
    "loop",
    "models",
    "evaluation",
    "course",
)

#: Public name → the module that defines it.
_PUBLIC: dict[str, str] = {
    # the turn
    "run_turn": "helpers.loop.agent",
    "TurnRecord": "helpers.loop.agent",
    "ToolCallRecord": "helpers.loop.agent",
    "ModelCallRecord": "helpers.loop.agent",
    "CompactionSettings": "helpers.loop.agent",
    "TurnLimits": "helpers.limits",
    "STATUSES": "helpers.loop.agent",
    # strategies and the policies that carry them out
    "STRATEGIES": "helpers.evaluation.runs",
    "policy_for": "helpers.evaluation.runs",
    "make_policy": "helpers.context.policies",
    "Strategy": "helpers.context.strategies",
    "StrategyOptions": "helpers.context.strategies",
    "register_strategy": "helpers.context.strategies",
    "build_policy": "helpers.context.strategies",
    "ResultPolicy": "helpers.context.policies",
    "InlinePolicy": "helpers.context.policies",
    "TruncatePolicy": "helpers.context.policies",
    "MiddleTruncatePolicy": "helpers.context.policies",
    "BoxPolicy": "helpers.context.policies",
    "BoxDesign": "helpers.context.policies",
    "BOX_DESIGNS": "helpers.context.policies",
    "CodexPolicy": "helpers.context.anchors",
    "DeepAgentsPolicy": "helpers.context.anchors",
    "ClaudeCodePolicy": "helpers.context.anchors",
    "AgentsSdkTrimmerPolicy": "helpers.context.anchors",
    # the store and threads
    "ToolOutputStore": "helpers.tooling.store",
    "StoredOutput": "helpers.tooling.store",
    "open_thread": "helpers.loop.threads",
    "load_history": "helpers.loop.threads",
    # tools
    "ToolRegistry": "helpers.tooling.registry",
    "Tool": "helpers.tooling.registry",
    "ToolContext": "helpers.tooling.registry",
    "tool_from_function": "helpers.tooling.registry",
    "default_registry": "helpers.tooling.tools",
    # models
    "ModelConfig": "helpers.models.llm",
    "resolve_model": "helpers.models.llm",
    "make_client": "helpers.models.llm",
    "OfflineModel": "helpers.models.offline",
    "OfflineServer": "helpers.models.offline_server",
    "offline_client": "helpers.models.offline",
    "count_tokens": "helpers.tokens",
    "count_chat_tokens": "helpers.tokens",
    # cases and the comparison
    "Case": "helpers.cases",
    "load_cases": "helpers.cases",
    "run_case": "helpers.evaluation.runs",
    "run_cases": "helpers.evaluation.runs",
    "client_for_cases": "helpers.evaluation.runs",
    "Comparison": "helpers.evaluation.compare",
    "write_report": "helpers.evaluation.compare",
    "run_scaling": "helpers.evaluation.scaling",
    "load_prices": "helpers.evaluation.pricing",
    "turn_cost": "helpers.evaluation.pricing",
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
    "Strategy",
    "StrategyOptions",
    "Tool",
    "ToolCallRecord",
    "ToolContext",
    "ToolOutputStore",
    "ToolRegistry",
    "TruncatePolicy",
    "TurnLimits",
    "TurnRecord",
    "build_policy",
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
    "register_strategy",
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
    from helpers.cases import Case, load_cases
    from helpers.context.anchors import (
        AgentsSdkTrimmerPolicy,
        ClaudeCodePolicy,
        CodexPolicy,
        DeepAgentsPolicy,
    )
    from helpers.context.policies import (
        BOX_DESIGNS,
        BoxDesign,
        BoxPolicy,
        InlinePolicy,
        MiddleTruncatePolicy,
        ResultPolicy,
        TruncatePolicy,
        make_policy,
    )
    from helpers.context.strategies import (
        Strategy,
        StrategyOptions,
        build_policy,
        register_strategy,
    )
    from helpers.evaluation.compare import Comparison, write_report
    from helpers.evaluation.pricing import load_prices, turn_cost
    from helpers.evaluation.runs import (
        STRATEGIES,
        client_for_cases,
        policy_for,
        run_case,
        run_cases,
    )
    from helpers.evaluation.scaling import run_scaling
    from helpers.loop.agent import (
        STATUSES,
        CompactionSettings,
        ModelCallRecord,
        ToolCallRecord,
        TurnRecord,
        run_turn,
    )
    from helpers.loop.threads import load_history, open_thread
    from helpers.models.llm import ModelConfig, make_client, resolve_model
    from helpers.models.offline import OfflineModel, offline_client
    from helpers.models.offline_server import OfflineServer
    from helpers.tokens import count_chat_tokens, count_tokens
    from helpers.tooling.registry import Tool, ToolContext, ToolRegistry, tool_from_function
    from helpers.tooling.store import StoredOutput, ToolOutputStore
    from helpers.tooling.tools import default_registry
