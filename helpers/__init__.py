"""Context Relay Workbook: the library behind the notebooks and the ``workbook`` CLI.

Data flows one way through an agent turn: tool → result policy → store → messages. The public
API is what ``__all__`` lists, importable from ``helpers`` itself::

    from helpers import (
        Agent,
        ToolOutputStore,
        build_policy,
        default_registry,
        offline_client,
        run_turn,
    )

    store = ToolOutputStore("sqlite:///var/mine.sqlite")
    agent = Agent(
        offline_client(), "offline-reference", build_policy("box"), default_registry(), store
    )
    record = run_turn(
        "Generate a transcript of the YouTube video with video_id='123' and then pass it "
        "to Deep Check for analysis.",
        agent,
    )
    print(record.status, record.usage(), record.answer)

Names are loaded on first use (``import helpers`` stays fast). The library is in layers,
bottom first; a module imports only from its own layer or those below (``_LAYERS``, checked by a
test):

- :mod:`helpers.base`: where files live (paths), ids, the guards and the caps of a turn (limits);
- :mod:`helpers.text`: untrusted text per sink (escaping), secrets redacted, o200k_base token
  counts, text that UTF-8 can encode (unicode), RE2's options (patterns);
- :mod:`helpers.display`: the views' colours (theme), the ✓ and ✗ marks, charts in both themes;
- :mod:`helpers.cases`: prompt cases (case files) and the offline model's plan language;
- :mod:`helpers.store`: the SQLAlchemy tool-output store, its Alembic migrations, checkpoint rows;
- :mod:`helpers.tooling`: the tool registry, the real tools and their data, the sandboxes
  (run_sql's workers, code mode's V8 isolates), the drive outbox;
- :mod:`helpers.context`: the context controls (policies and box designs, the anchors'
  policies, references, previews, resolve tools, instructions, compaction, context editing,
  code mode, modes, the dual stream);
- :mod:`helpers.models`: model access: the client and .env profiles, each provider's rules as
  data, its replies read safely, completion limits; the offline reference model (plan, model,
  server) and its personas;
- :mod:`helpers.loop`: the agent turn (the loop, one model call, one tool call's dispatch, the
  turn's records) and threads;
- :mod:`helpers.mcp`: real MCP, the official SDK on both ends;
- :mod:`helpers.evaluation`: validation, runs per strategy, pricing, scaling, the comparison;
- :mod:`helpers.course`: the notebooks' lessons, views, hints and budget, the checkpoints, the
  room;
- :mod:`helpers.cli`: the ``workbook`` command, one module per command.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

#: Why native Windows stops at ``import helpers``: the tools' bounds are POSIX (``run_sql``'s
#: worker limits its memory and CPU with ``resource``; the drive outbox locks its ledger with
#: ``fcntl`` and opens files relative to a folder descriptor), and a tool that ran unbounded
#: would break the threat model (docs/threat-model.md). Said once, before anything fails halfway.
POSIX_ONLY = (
    "the Context Relay Workbook needs Linux or macOS: its tools' limits are POSIX (resource, "
    "fcntl). On Windows, run it in WSL 2, or in the browser: Codespaces, Binder or Colab"
)
if sys.platform == "win32":
    if sys.argv and sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1].startswith("workbook"):
        sys.exit(f"workbook: {POSIX_ONLY}")  # the CLI: one line, as for its other refusals
    raise ImportError(POSIX_ONLY)

#: The layers of the library, bottom first: one subpackage per layer (the root holds only this
#: module, the public API). A module imports only from its own layer or the
#: ones below it (a test checks it), so data and control flow one way, from the tools and their
#: log up to the course's commands.
_LAYERS: tuple[str, ...] = (
    "base",
    "text",
    "display",
    "cases",
    "store",
    "tooling",
    "context",
    "models",
    "loop",
    "mcp",
    "evaluation",
    "course",
    "cli",
)

#: Public name → the module that defines it.
_PUBLIC: dict[str, str] = {
    # the turn
    "run_turn": "helpers.loop.agent",
    "Agent": "helpers.loop.agent",
    "RunConfig": "helpers.loop.agent",
    "TurnRecord": "helpers.loop.records",
    "ToolCallRecord": "helpers.loop.records",
    "ModelCallRecord": "helpers.loop.records",
    "CompactionSettings": "helpers.loop.agent",
    "TurnLimits": "helpers.base.limits",
    "STATUSES": "helpers.loop.records",
    # strategies and the policies that carry them out
    "strategy_names": "helpers.context.strategies",
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
    "CodePolicy": "helpers.context.code_mode",
    "RUN_PROGRAM": "helpers.context.code_mode",
    "js_signature": "helpers.context.code_mode",
    "run_program": "helpers.tooling.program_sandbox",
    "ProgramLimits": "helpers.tooling.program_sandbox",
    "ProgramResult": "helpers.tooling.program_sandbox",
    "ProgramCalls": "helpers.loop.dispatch",
    # the store and threads
    "ToolOutputStore": "helpers.store.tool_outputs",
    "StoredOutput": "helpers.store.reading",
    "open_thread": "helpers.loop.threads",
    "load_history": "helpers.loop.threads",
    # tools
    "ToolRegistry": "helpers.tooling.registry",
    "Tool": "helpers.tooling.registry",
    "ToolContext": "helpers.tooling.registry",
    "tool_from_function": "helpers.tooling.registry",
    "default_registry": "helpers.tooling.tools",
    # MCP: the workbook's tools served, MCP servers' tools in the agent
    "WorkbookMcpServer": "helpers.mcp.server",
    "workbook_server_spec": "helpers.mcp.server",
    "McpServerSpec": "helpers.mcp.settings",
    "mcp_servers_from_env": "helpers.mcp.settings",
    "McpServer": "helpers.mcp.client",
    "McpServers": "helpers.mcp.client",
    "McpServerError": "helpers.mcp.settings",
    "McpToolError": "helpers.mcp.content",
    "mcp_result_text": "helpers.mcp.content",
    # models
    "ModelConfig": "helpers.models.llm",
    "resolve_model": "helpers.models.llm",
    "make_client": "helpers.models.llm",
    "OfflineModel": "helpers.models.offline",
    "OfflineServer": "helpers.models.offline_server",
    "offline_client": "helpers.models.offline",
    "count_tokens": "helpers.text.tokens",
    "count_chat_tokens": "helpers.text.tokens",
    # cases and the comparison
    "Case": "helpers.cases.case_files",
    "load_cases": "helpers.cases.case_files",
    "run_case": "helpers.evaluation.runs",
    "run_cases": "helpers.evaluation.runs",
    "client_for_cases": "helpers.evaluation.runs",
    "Comparison": "helpers.evaluation.compare",
    "ComparisonMetrics": "helpers.evaluation.metrics",
    "load_comparison": "helpers.evaluation.metrics",
    "write_report": "helpers.evaluation.compare",
    "run_scaling": "helpers.evaluation.scaling",
    "load_prices": "helpers.evaluation.pricing",
    "turn_cost": "helpers.evaluation.pricing",
    "session_cost": "helpers.evaluation.pricing",
    "session_requests": "helpers.evaluation.pricing",
    "session_costs_markdown": "helpers.evaluation.report",
    # the context controls the notebooks take apart
    "ReferenceRefused": "helpers.context.boxing",
    "make_reference": "helpers.context.boxing",
    "reference_id": "helpers.context.boxing",
    "embedded_reference_ids": "helpers.context.boxing",
    "Presented": "helpers.context.policies",
    "Prepared": "helpers.context.policies",
    "CallEffects": "helpers.tooling.effects",
    "Reported": "helpers.tooling.effects",
    "TurnView": "helpers.tooling.effects",
    "guess_mime_type": "helpers.context.policies",
    "internal_resource_grep": "helpers.context.resolve_tools",
    "CompactionRules": "helpers.context.compaction",
    "SUMMARY_HEADER": "helpers.context.compaction",
    "compact": "helpers.context.compaction",
    "categories_markdown": "helpers.context.compaction",
    "tool_categories": "helpers.context.compaction",
    "find_exchanges": "helpers.context.compaction",
    "quoted": "helpers.context.compaction",
    "summarize_category": "helpers.context.compaction",
    "ClearToolUses": "helpers.context.context_editing",
    "clear_tool_uses": "helpers.context.context_editing",
    "policy_with_clearing": "helpers.context.context_editing",
    "DualStreamPolicy": "helpers.context.dual_stream",
    "MODES": "helpers.context.modes",
    "for_mode": "helpers.context.modes",
    "dispatch": "helpers.loop.dispatch",
    "new_thread_id": "helpers.loop.records",
    # the store's table, for notebook 02
    "Base": "helpers.store.schema",
    "ToolOutput": "helpers.store.schema",
    "make_engine": "helpers.store.database",
    "get_page": "helpers.tooling.tools",
    "run_sql": "helpers.tooling.tools",
    "yt_transcribe": "helpers.tooling.tools",
    # the run-time folder, guards, personas, untrusted text
    "var_dir": "helpers.base.paths",
    "outbox_dir": "helpers.base.paths",
    "GUARDS": "helpers.base.guards",
    "PERSONAS": "helpers.models.personas",
    "MISTAKE_PERSONAS": "helpers.models.personas",
    "for_terminal": "helpers.text.escaping",
    "load_case": "helpers.cases.case_files",
    # the comparison's reports and charts
    "compared_strategies": "helpers.context.strategies",
    "run_personas": "helpers.evaluation.runs",
    "comparison_markdown": "helpers.evaluation.report",
    "strategies_side_by_side_markdown": "helpers.evaluation.report",
    "comparison_verdicts": "helpers.evaluation.report",
    "headline_html": "helpers.evaluation.report",
    "guard_hits_text": "helpers.evaluation.report",
    "scaling_markdown": "helpers.evaluation.scaling",
    "plot_totals": "helpers.evaluation.room_charts",
    "plot_scaling_room": "helpers.evaluation.room_charts",
    "themed_chart": "helpers.display.charts",
    "ThemedChart": "helpers.display.charts",
    # the course: hints, views, budgets, progress, and each TODO's checkpoint
    "hint": "helpers.course.hints",
    "why": "helpers.course.checkpoint",
    "approve_spend": "helpers.course.budget",
    "explain_choice": "helpers.course.choices",
    "deep_check_received": "helpers.course.choices",
    "progress": "helpers.course.progress",
    "answer_html": "helpers.course.views",
    "full_result_widget": "helpers.course.views",
    "markdown_view": "helpers.course.views",
    "messages_html": "helpers.course.views",
    "side_by_side": "helpers.course.views",
    "check_handle_tool_calls": "helpers.course.checks.dispatch",
    "check_log_tool": "helpers.course.checks.persist",
    "check_prune": "helpers.course.checks.persist",
    "check_make_preview": "helpers.course.checks.preview",
    "check_fetch_tool_output": "helpers.course.checks.preview",
    "check_box_result": "helpers.course.checks.boxing",
    "check_unbox": "helpers.course.checks.boxing",
    "check_read_slice": "helpers.course.checks.boxing",
    "check_grep": "helpers.course.checks.boxing",
    "check_categorize": "helpers.course.checks.compaction",
    "check_summarize_writes": "helpers.course.checks.compaction",
    "check_fold_indices": "helpers.course.checks.compaction",
    "check_schemas_for_mode": "helpers.course.checks.modes",
    "check_guarded_call": "helpers.course.checks.modes",
    "check_summarize": "helpers.course.checks.modes",
    "check_bridge": "helpers.course.checks.code_mode",
    "check_error_report_program": "helpers.course.checks.code_mode",
    "check_mcp_result_text": "helpers.course.checks.mcp",
    "ALL_CASES": "helpers.cases.case_files",
    # the lessons: notebook 00's plumbing (helpers/course/lessons)
    "what_the_offline_model_knows": "helpers.course.lessons.setup",
    "setup_verdict": "helpers.course.lessons.setup",
    # the lessons: notebook 01's plumbing (helpers/course/lessons)
    "TRANSCRIPT_TASK": "helpers.course.lessons.inline",
    "opening_messages": "helpers.course.lessons.inline",
    "call_model": "helpers.course.lessons.inline",
    "explain_transcript_turn": "helpers.course.lessons.inline",
    "context_growth": "helpers.course.lessons.inline",
    "growth_chart": "helpers.course.lessons.inline",
    # the lessons: notebook 02's plumbing (helpers/course/lessons)
    "empty_tool_outputs_db": "helpers.course.lessons.persist",
    "store_with_log_tool": "helpers.course.lessons.persist",
    "show_thread_rows": "helpers.course.lessons.persist",
    "confirm_every_dispatch_logged": "helpers.course.lessons.persist",
    "confirm_thread_pruned": "helpers.course.lessons.persist",
    # the lessons: notebook 03's plumbing (helpers/course/lessons)
    "NotebookTruncatePolicy": "helpers.course.lessons.preview",
    "print_calls": "helpers.course.lessons.preview",
    "explain_transcript_routed": "helpers.course.lessons.preview",
    "explain_truncated_fetch": "helpers.course.lessons.preview",
    "fetches_per_case": "helpers.course.lessons.preview",
    "compare_truncate_with_inline": "helpers.course.lessons.preview",
    # the lessons: notebook 04's plumbing (helpers/course/lessons)
    "NotebookBoxPolicy": "helpers.course.lessons.boxing",
    "two_threads": "helpers.course.lessons.boxing",
    "print_refusal": "helpers.course.lessons.boxing",
    "same_answers_as_library": "helpers.course.lessons.boxing",
    # the lessons: notebook 05's plumbing (helpers/course/lessons)
    "run_every_case": "helpers.course.lessons.side_by_side",
    "print_comparison_verdicts": "helpers.course.lessons.side_by_side",
    "case_explorer": "helpers.course.lessons.side_by_side",
    "grow_one_result": "helpers.course.lessons.side_by_side",
    "scaling_verdict": "helpers.course.lessons.side_by_side",
    "run_your_case": "helpers.course.lessons.side_by_side",
    "persona_table": "helpers.course.lessons.side_by_side",
    "run_mistakes": "helpers.course.lessons.side_by_side",
    "mistakes_table": "helpers.course.lessons.side_by_side",
    "confirm_guards_caught_every_mistake": "helpers.course.lessons.side_by_side",
    "ideal_beside_embeds": "helpers.course.lessons.side_by_side",
    "show_naive_loop_refused": "helpers.course.lessons.side_by_side",
    # the lessons: notebook 06's plumbing (helpers/course/lessons)
    "CompactionSession": "helpers.course.lessons.compaction",
    "confirm_compaction_against_library": "helpers.course.lessons.compaction",
    "explain_turns_that_fit": "helpers.course.lessons.compaction",
    "confirm_summary_keeps_what_matters": "helpers.course.lessons.compaction",
    "last_context_view": "helpers.course.lessons.compaction",
    "session_costs_view": "helpers.course.lessons.compaction",
    # the lessons: notebook 07's plumbing (helpers/course/lessons)
    "modes_overview": "helpers.course.lessons.modes",
    "refuse_forged_write": "helpers.course.lessons.modes",
    "NotebookModeRegistry": "helpers.course.lessons.modes",
    "mode_agent": "helpers.course.lessons.modes",
    "nothing_written_to": "helpers.course.lessons.modes",
    "print_mode_turn": "helpers.course.lessons.modes",
    "confirm_write_tool_not_offered": "helpers.course.lessons.modes",
    "explain_same_calls_as_library": "helpers.course.lessons.modes",
    "dual_stream_results": "helpers.course.lessons.modes",
    "NotebookDualStream": "helpers.course.lessons.modes",
    "dual_stream_agent": "helpers.course.lessons.modes",
    "print_model_side": "helpers.course.lessons.modes",
    "confirm_both_streams": "helpers.course.lessons.modes",
    # the lessons: notebook 08's plumbing (helpers/course/lessons)
    "EchoHost": "helpers.course.lessons.code_mode",
    "BridgeHost": "helpers.course.lessons.code_mode",
    "show_run": "helpers.course.lessons.code_mode",
    "show_stopped": "helpers.course.lessons.code_mode",
    "run_box_and_code": "helpers.course.lessons.code_mode",
    "box_and_code_totals": "helpers.course.lessons.code_mode",
    # the lessons: notebook 09's plumbing (helpers/course/lessons)
    "McpServerLauncher": "helpers.course.lessons.mcp",
    "print_mcp_tools": "helpers.course.lessons.mcp",
    "print_resource_link": "helpers.course.lessons.mcp",
    "print_resource_read": "helpers.course.lessons.mcp",
    "print_mcp_notes": "helpers.course.lessons.mcp",
    "run_mcp_case": "helpers.course.lessons.mcp",
    "print_mcp_turns": "helpers.course.lessons.mcp",
    "explain_mcp_deep_check": "helpers.course.lessons.mcp",
    "broken_mcp_server": "helpers.course.lessons.mcp",
}

#: The public names (the notebooks import only these): the keys of :data:`_PUBLIC`.
# -- __all__: generated from _PUBLIC: do not edit (tests/public_api.py --write)
__all__ = [
    "ALL_CASES",
    "BOX_DESIGNS",
    "GUARDS",
    "MISTAKE_PERSONAS",
    "MODES",
    "PERSONAS",
    "RUN_PROGRAM",
    "STATUSES",
    "SUMMARY_HEADER",
    "TRANSCRIPT_TASK",
    "Agent",
    "AgentsSdkTrimmerPolicy",
    "Base",
    "BoxDesign",
    "BoxPolicy",
    "BridgeHost",
    "CallEffects",
    "Case",
    "ClaudeCodePolicy",
    "ClearToolUses",
    "CodePolicy",
    "CodexPolicy",
    "CompactionRules",
    "CompactionSession",
    "CompactionSettings",
    "Comparison",
    "ComparisonMetrics",
    "DeepAgentsPolicy",
    "DualStreamPolicy",
    "EchoHost",
    "InlinePolicy",
    "McpServer",
    "McpServerError",
    "McpServerLauncher",
    "McpServerSpec",
    "McpServers",
    "McpToolError",
    "MiddleTruncatePolicy",
    "ModelCallRecord",
    "ModelConfig",
    "NotebookBoxPolicy",
    "NotebookDualStream",
    "NotebookModeRegistry",
    "NotebookTruncatePolicy",
    "OfflineModel",
    "OfflineServer",
    "Prepared",
    "Presented",
    "ProgramCalls",
    "ProgramLimits",
    "ProgramResult",
    "ReferenceRefused",
    "Reported",
    "ResultPolicy",
    "RunConfig",
    "StoredOutput",
    "Strategy",
    "StrategyOptions",
    "ThemedChart",
    "Tool",
    "ToolCallRecord",
    "ToolContext",
    "ToolOutput",
    "ToolOutputStore",
    "ToolRegistry",
    "TruncatePolicy",
    "TurnLimits",
    "TurnRecord",
    "TurnView",
    "WorkbookMcpServer",
    "answer_html",
    "approve_spend",
    "box_and_code_totals",
    "broken_mcp_server",
    "build_policy",
    "call_model",
    "case_explorer",
    "categories_markdown",
    "check_box_result",
    "check_bridge",
    "check_categorize",
    "check_error_report_program",
    "check_fetch_tool_output",
    "check_fold_indices",
    "check_grep",
    "check_guarded_call",
    "check_handle_tool_calls",
    "check_log_tool",
    "check_make_preview",
    "check_mcp_result_text",
    "check_prune",
    "check_read_slice",
    "check_schemas_for_mode",
    "check_summarize",
    "check_summarize_writes",
    "check_unbox",
    "clear_tool_uses",
    "client_for_cases",
    "compact",
    "compare_truncate_with_inline",
    "compared_strategies",
    "comparison_markdown",
    "comparison_verdicts",
    "confirm_both_streams",
    "confirm_compaction_against_library",
    "confirm_every_dispatch_logged",
    "confirm_guards_caught_every_mistake",
    "confirm_summary_keeps_what_matters",
    "confirm_thread_pruned",
    "confirm_write_tool_not_offered",
    "context_growth",
    "count_chat_tokens",
    "count_tokens",
    "deep_check_received",
    "default_registry",
    "dispatch",
    "dual_stream_agent",
    "dual_stream_results",
    "embedded_reference_ids",
    "empty_tool_outputs_db",
    "explain_choice",
    "explain_mcp_deep_check",
    "explain_same_calls_as_library",
    "explain_transcript_routed",
    "explain_transcript_turn",
    "explain_truncated_fetch",
    "explain_turns_that_fit",
    "fetches_per_case",
    "find_exchanges",
    "for_mode",
    "for_terminal",
    "full_result_widget",
    "get_page",
    "grow_one_result",
    "growth_chart",
    "guard_hits_text",
    "guess_mime_type",
    "headline_html",
    "hint",
    "ideal_beside_embeds",
    "internal_resource_grep",
    "js_signature",
    "last_context_view",
    "load_case",
    "load_cases",
    "load_comparison",
    "load_history",
    "load_prices",
    "make_client",
    "make_engine",
    "make_reference",
    "markdown_view",
    "mcp_result_text",
    "mcp_servers_from_env",
    "messages_html",
    "mistakes_table",
    "mode_agent",
    "modes_overview",
    "new_thread_id",
    "nothing_written_to",
    "offline_client",
    "open_thread",
    "opening_messages",
    "outbox_dir",
    "persona_table",
    "plot_scaling_room",
    "plot_totals",
    "policy_with_clearing",
    "print_calls",
    "print_comparison_verdicts",
    "print_mcp_notes",
    "print_mcp_tools",
    "print_mcp_turns",
    "print_mode_turn",
    "print_model_side",
    "print_refusal",
    "print_resource_link",
    "print_resource_read",
    "progress",
    "quoted",
    "reference_id",
    "refuse_forged_write",
    "register_strategy",
    "resolve_model",
    "run_box_and_code",
    "run_case",
    "run_cases",
    "run_every_case",
    "run_mcp_case",
    "run_mistakes",
    "run_personas",
    "run_program",
    "run_scaling",
    "run_sql",
    "run_turn",
    "run_your_case",
    "same_answers_as_library",
    "scaling_markdown",
    "scaling_verdict",
    "session_cost",
    "session_costs_markdown",
    "session_costs_view",
    "session_requests",
    "setup_verdict",
    "show_naive_loop_refused",
    "show_run",
    "show_stopped",
    "show_thread_rows",
    "side_by_side",
    "store_with_log_tool",
    "strategies_side_by_side_markdown",
    "strategy_names",
    "summarize_category",
    "themed_chart",
    "tool_categories",
    "tool_from_function",
    "turn_cost",
    "two_threads",
    "var_dir",
    "what_the_offline_model_knows",
    "why",
    "workbook_server_spec",
    "write_report",
    "yt_transcribe",
]
# -- end of __all__


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


if TYPE_CHECKING:  # what type checkers and editors see: the same names as _PUBLIC
    # -- imports: generated from _PUBLIC: do not edit (tests/public_api.py --write)
    from helpers.base.guards import GUARDS
    from helpers.base.limits import TurnLimits
    from helpers.base.paths import outbox_dir, var_dir
    from helpers.cases.case_files import ALL_CASES, Case, load_case, load_cases
    from helpers.context.anchors import (
        AgentsSdkTrimmerPolicy,
        ClaudeCodePolicy,
        CodexPolicy,
        DeepAgentsPolicy,
    )
    from helpers.context.boxing import (
        ReferenceRefused,
        embedded_reference_ids,
        make_reference,
        reference_id,
    )
    from helpers.context.code_mode import RUN_PROGRAM, CodePolicy, js_signature
    from helpers.context.compaction import (
        SUMMARY_HEADER,
        CompactionRules,
        categories_markdown,
        compact,
        find_exchanges,
        quoted,
        summarize_category,
        tool_categories,
    )
    from helpers.context.context_editing import ClearToolUses, clear_tool_uses, policy_with_clearing
    from helpers.context.dual_stream import DualStreamPolicy
    from helpers.context.modes import MODES, for_mode
    from helpers.context.policies import (
        BOX_DESIGNS,
        BoxDesign,
        BoxPolicy,
        InlinePolicy,
        MiddleTruncatePolicy,
        Prepared,
        Presented,
        ResultPolicy,
        TruncatePolicy,
        guess_mime_type,
    )
    from helpers.context.resolve_tools import internal_resource_grep
    from helpers.context.strategies import (
        Strategy,
        StrategyOptions,
        build_policy,
        compared_strategies,
        register_strategy,
        strategy_names,
    )
    from helpers.course.budget import approve_spend
    from helpers.course.checkpoint import why
    from helpers.course.checks.boxing import (
        check_box_result,
        check_grep,
        check_read_slice,
        check_unbox,
    )
    from helpers.course.checks.code_mode import check_bridge, check_error_report_program
    from helpers.course.checks.compaction import (
        check_categorize,
        check_fold_indices,
        check_summarize_writes,
    )
    from helpers.course.checks.dispatch import check_handle_tool_calls
    from helpers.course.checks.mcp import check_mcp_result_text
    from helpers.course.checks.modes import (
        check_guarded_call,
        check_schemas_for_mode,
        check_summarize,
    )
    from helpers.course.checks.persist import check_log_tool, check_prune
    from helpers.course.checks.preview import check_fetch_tool_output, check_make_preview
    from helpers.course.choices import deep_check_received, explain_choice
    from helpers.course.hints import hint
    from helpers.course.lessons.boxing import (
        NotebookBoxPolicy,
        print_refusal,
        same_answers_as_library,
        two_threads,
    )
    from helpers.course.lessons.code_mode import (
        BridgeHost,
        EchoHost,
        box_and_code_totals,
        run_box_and_code,
        show_run,
        show_stopped,
    )
    from helpers.course.lessons.compaction import (
        CompactionSession,
        confirm_compaction_against_library,
        confirm_summary_keeps_what_matters,
        explain_turns_that_fit,
        last_context_view,
        session_costs_view,
    )
    from helpers.course.lessons.inline import (
        TRANSCRIPT_TASK,
        call_model,
        context_growth,
        explain_transcript_turn,
        growth_chart,
        opening_messages,
    )
    from helpers.course.lessons.mcp import (
        McpServerLauncher,
        broken_mcp_server,
        explain_mcp_deep_check,
        print_mcp_notes,
        print_mcp_tools,
        print_mcp_turns,
        print_resource_link,
        print_resource_read,
        run_mcp_case,
    )
    from helpers.course.lessons.modes import (
        NotebookDualStream,
        NotebookModeRegistry,
        confirm_both_streams,
        confirm_write_tool_not_offered,
        dual_stream_agent,
        dual_stream_results,
        explain_same_calls_as_library,
        mode_agent,
        modes_overview,
        nothing_written_to,
        print_mode_turn,
        print_model_side,
        refuse_forged_write,
    )
    from helpers.course.lessons.persist import (
        confirm_every_dispatch_logged,
        confirm_thread_pruned,
        empty_tool_outputs_db,
        show_thread_rows,
        store_with_log_tool,
    )
    from helpers.course.lessons.preview import (
        NotebookTruncatePolicy,
        compare_truncate_with_inline,
        explain_transcript_routed,
        explain_truncated_fetch,
        fetches_per_case,
        print_calls,
    )
    from helpers.course.lessons.setup import setup_verdict, what_the_offline_model_knows
    from helpers.course.lessons.side_by_side import (
        case_explorer,
        confirm_guards_caught_every_mistake,
        grow_one_result,
        ideal_beside_embeds,
        mistakes_table,
        persona_table,
        print_comparison_verdicts,
        run_every_case,
        run_mistakes,
        run_your_case,
        scaling_verdict,
        show_naive_loop_refused,
    )
    from helpers.course.progress import progress
    from helpers.course.views import (
        answer_html,
        full_result_widget,
        markdown_view,
        messages_html,
        side_by_side,
    )
    from helpers.display.charts import ThemedChart, themed_chart
    from helpers.evaluation.compare import Comparison, write_report
    from helpers.evaluation.metrics import ComparisonMetrics, load_comparison
    from helpers.evaluation.pricing import load_prices, session_cost, session_requests, turn_cost
    from helpers.evaluation.report import (
        comparison_markdown,
        comparison_verdicts,
        guard_hits_text,
        headline_html,
        session_costs_markdown,
        strategies_side_by_side_markdown,
    )
    from helpers.evaluation.room_charts import plot_scaling_room, plot_totals
    from helpers.evaluation.runs import client_for_cases, run_case, run_cases, run_personas
    from helpers.evaluation.scaling import run_scaling, scaling_markdown
    from helpers.loop.agent import Agent, CompactionSettings, RunConfig, run_turn
    from helpers.loop.dispatch import ProgramCalls, dispatch
    from helpers.loop.records import (
        STATUSES,
        ModelCallRecord,
        ToolCallRecord,
        TurnRecord,
        new_thread_id,
    )
    from helpers.loop.threads import load_history, open_thread
    from helpers.mcp.client import McpServer, McpServers
    from helpers.mcp.content import McpToolError, mcp_result_text
    from helpers.mcp.server import WorkbookMcpServer, workbook_server_spec
    from helpers.mcp.settings import McpServerError, McpServerSpec, mcp_servers_from_env
    from helpers.models.llm import ModelConfig, make_client, resolve_model
    from helpers.models.offline import OfflineModel, offline_client
    from helpers.models.offline_server import OfflineServer
    from helpers.models.personas import MISTAKE_PERSONAS, PERSONAS
    from helpers.store.database import make_engine
    from helpers.store.reading import StoredOutput
    from helpers.store.schema import Base, ToolOutput
    from helpers.store.tool_outputs import ToolOutputStore
    from helpers.text.escaping import for_terminal
    from helpers.text.tokens import count_chat_tokens, count_tokens
    from helpers.tooling.effects import CallEffects, Reported, TurnView
    from helpers.tooling.program_sandbox import ProgramLimits, ProgramResult, run_program
    from helpers.tooling.registry import Tool, ToolContext, ToolRegistry, tool_from_function
    from helpers.tooling.tools import default_registry, get_page, run_sql, yt_transcribe
    # -- end of imports
