"""The anchors: each production agent's policy with its published parameters, its way of looking
inside a saved result, and the offline model using it through the real client."""

from __future__ import annotations

import json
import re

import pytest

from helpers.context.anchors import (
    AGENTS_SDK_PREVIEW_CHARS,
    CLAUDE_CODE_MAX_OUTPUT_CHARS,
    DEEPAGENTS_CHARS_PER_TOKEN,
    DEEPAGENTS_EVICT_TOKENS,
    AgentsSdkTrimmerPolicy,
    ClaudeCodePolicy,
    CodexBudget,
    CodexPolicy,
    DeepAgentsPolicy,
    codex_truncate,
)
from helpers.context.strategies import build_policy
from helpers.evaluation.pricing import DEFAULT_PRICE_MODEL
from helpers.evaluation.runs import client_for_cases, run_case
from helpers.evaluation.scaling import document, scaling_case, scaling_registry
from helpers.loop.agent import Agent, run_turn
from helpers.models.llm import resolve_model
from helpers.models.offline_plan import classify
from helpers.tooling.registry import ToolContext, tool_from_function


def test_codex_budget_follows_the_model_family() -> None:
    """model_info.rs: bytes(10,000) by default (gpt-4o, the gpt-5 family), tokens(10,000) for
    the Codex models; a function-call output gets 20% more, rounded up."""
    assert CodexBudget.for_model("gpt-4o") == CodexBudget("bytes", 10_000)
    assert CodexBudget.for_model("gpt-5.1") == CodexBudget("bytes", 10_000)
    assert CodexBudget.for_model("gpt-5.1-codex-max") == CodexBudget("tokens", 10_000)
    assert CodexBudget("bytes", 10_000).for_tool_output() == CodexBudget("bytes", 12_000)
    assert CodexBudget("tokens", 10_000).for_tool_output().bytes == 48_000
    assert CodexPolicy().model == DEFAULT_PRICE_MODEL  # priced at gpt-4o: the byte budget
    assert CodexPolicy().budget == CodexBudget("bytes", 12_000)


def test_codex_keeps_head_and_tail_within_its_byte_budget() -> None:
    budget = CodexBudget("bytes", 12_000)
    small = "x" * 12_000
    assert codex_truncate(small, budget) is small  # exactly the budget: untouched
    text = "".join(f"line {i:06d}\n" for i in range(20_000))  # 240,000 bytes, ASCII
    cut = codex_truncate(text, budget)
    assert not cut.startswith("Warning")  # the header is exec output's, not a tool's
    head, marker, tail = re.fullmatch(r"(.*)(…\d+ chars truncated…)(.*)", cut, re.S).groups()
    assert text.startswith(head) and text.endswith(tail)
    assert len(head.encode()) == 6_000 and len(tail.encode()) == 6_000
    assert marker == f"…{240_000 - 12_000} chars truncated…"


def test_codex_cuts_on_character_boundaries_and_counts_characters() -> None:
    text = "é" * 50_000  # two bytes each: 100,000 bytes
    cut = codex_truncate(text, CodexBudget("bytes", 12_001))
    head, marker, tail = re.fullmatch(r"(é*)(…\d+ chars truncated…)(é*)", cut).groups()
    assert len(head) == 3_000 and len(tail) == 3_000  # 6,000 and 6,001 bytes: whole characters
    assert marker == f"…{50_000 - 6_000} chars truncated…"


def test_codex_under_a_token_budget_counts_estimated_tokens() -> None:
    text = "x" * 100_000
    cut = codex_truncate(text, CodexBudget("tokens", 12_000))  # 48,000 bytes kept
    assert cut == "x" * 24_000 + f"…{(100_000 - 48_000) // 4} tokens truncated…" + "x" * 24_000


def _ctx(store, thread: str) -> ToolContext:
    return ToolContext(store=store, thread_id=thread)


def _saved(policy, store, output: str, call_id: str = "call_big") -> tuple[str, ToolContext]:
    """Log ``output`` as a tool result of a thread and present it under ``policy``."""
    ctx = _ctx(store, "thread_anchor")
    store.ensure_thread(ctx.thread_id)
    row = store.log_tool(ctx.thread_id, call_id, "get_page", {"url": "u"}, output)

    def get_page(url: str) -> str:
        return output

    tool = tool_from_function(get_page)
    return policy.present(ctx, tool, call_id, output, row).content, ctx


def _tool(policy, name: str):
    return next(t for t in policy.internal_tools() if t.name == name)


def test_deepagents_evicts_over_20000_tokens_and_pages_with_read_file(store) -> None:
    policy = DeepAgentsPolicy()
    limit = DEEPAGENTS_CHARS_PER_TOKEN * DEEPAGENTS_EVICT_TOKENS

    def t() -> str:
        return ""

    tool = tool_from_function(t)
    assert policy.present(_ctx(store, "t"), tool, "c", "x" * limit, None).kind == "inline"
    lines = [f"row {i}: " + "y" * 30 for i in range(3_000)]
    lines[1_500] = "z" * 12_000  # one line over 5,000 characters: continuation rows
    output = "\n".join(lines)
    notice, ctx = _saved(policy, store, output)
    assert notice.startswith(
        "Tool result too large, the result of this tool call call_big was saved in the "
        "filesystem at this path: /large_tool_results/call_big"
    )
    assert "     1\trow 0: " in notice and "  3000\trow 2999: " in notice
    assert "... [2990 lines truncated] ..." in notice
    seen = classify("call_big", notice)
    assert (seen.kind, seen.uri, seen.total_lines) == (
        "saved",
        "/large_tool_results/call_big",
        3000,
    )
    read = _tool(policy, "read_file")
    page = read.call({"file_path": "/large_tool_results/call_big"}, ctx)
    assert page.splitlines()[0] == "     1\trow 0: " + "y" * 30 and len(page.splitlines()) == 100
    long = read.call({"file_path": "/large_tool_results/call_big", "offset": 1500, "limit": 1}, ctx)
    assert long.splitlines()[0] == "  1501\t" + "z" * 5_000
    assert [r.split("\t")[0].strip() for r in long.splitlines()] == ["1501", "1501.1", "1501.2"]
    with pytest.raises(ValueError, match="exceeds file length"):
        read.call({"file_path": "/large_tool_results/call_big", "offset": 3000}, ctx)
    with pytest.raises(ValueError, match="not found"):
        read.call({"file_path": "/large_tool_results/call_other"}, ctx)
    grep = _tool(policy, "grep").call({"pattern": "^row 2999", "path": seen.uri}, ctx)
    assert grep == "/large_tool_results/call_big:3000:row 2999: " + "y" * 30


def test_a_saved_file_is_read_from_its_own_thread_and_content_whatever_was_read_before(
    store,
) -> None:
    """The lines of the files read last are kept by content: the same path in another thread
    is that thread's file (or not found there), a file of the same length but other content is
    split afresh, and a second read of one file gives what the first gave."""
    policy = ClaudeCodePolicy()
    read = _tool(policy, "Read")
    first = "\n".join(f"first {i}: " + "a" * 2_500 for i in range(24))
    other = first.replace("first", "other")  # the same length, other characters
    _, ctx = _saved(policy, store, first, "call_same")
    path = "/tool-results/call_same"
    again = read.call({"file_path": path, "offset": 3, "limit": 1}, ctx)
    assert again == read.call({"file_path": path, "offset": 3, "limit": 1}, ctx)
    assert again.startswith("     3\tfirst 2: ")
    elsewhere = _ctx(store, "thread_elsewhere")
    with pytest.raises(ValueError, match="not found"):
        read.call({"file_path": path}, elsewhere)
    store.ensure_thread(elsewhere.thread_id)
    store.log_tool(elsewhere.thread_id, "call_same", "get_page", {"url": "u"}, other)
    assert read.call({"file_path": path, "offset": 3, "limit": 1}, elsewhere).startswith(
        "     3\tother 2: "
    )
    grep = _tool(policy, "Grep")
    assert grep.call({"pattern": "^first 23", "path": path, "output_mode": "count"}, ctx) == "1"
    assert grep.call({"pattern": "^first", "path": path, "output_mode": "count"}, elsewhere) == "0"


def test_claude_code_saves_over_50000_chars_with_a_2kb_preview(store) -> None:
    policy = ClaudeCodePolicy()
    output = "\n".join(f"{i}: " + "w" * 2_500 for i in range(24))  # lines over 2,000 chars
    assert len(output) > CLAUDE_CODE_MAX_OUTPUT_CHARS
    kept = "x" * CLAUDE_CODE_MAX_OUTPUT_CHARS  # exactly the threshold: inline
    assert _saved(policy, store, kept, "call_kept")[0] == kept
    notice, ctx = _saved(policy, store, output, "call_cc")
    assert notice.startswith(
        "<persisted-output>\nOutput too large (58.7KB). Full output saved to: "
    )
    assert "/tool-results/call_cc.txt" in notice and "Preview (first 2KB):\n0: www" in notice
    seen = classify("call_cc", notice)
    assert seen.kind == "saved" and seen.uri == "/tool-results/call_cc.txt"
    assert seen.head is not None and len(seen.head.encode()) == 2_000
    page = _tool(policy, "Read").call({"file_path": seen.uri, "offset": 2, "limit": 1}, ctx)
    assert page == "     2\t1: " + "w" * 1_997  # Read cuts a line at 2,000 characters
    count = _tool(policy, "Grep").call(
        {"pattern": "^1", "path": seen.uri, "output_mode": "count"}, ctx
    )
    assert count == "11"  # 1, 10..19


def test_agents_sdk_trims_only_outputs_older_than_two_turns() -> None:
    policy = AgentsSdkTrimmerPolicy()
    long = "v" * 900

    def turn(n: int) -> list[dict]:
        return [
            {"role": "user", "content": f"q{n}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "yt_transcribe", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": long},
        ]

    messages = [{"role": "system", "content": "s"}, *turn(1), *turn(2)]
    assert policy.messages_for_call(messages) is messages  # two turns: nothing is older
    messages += turn(3)
    sent = policy.messages_for_call(messages)
    assert sent[3]["content"] == (
        f"[Trimmed: yt_transcribe output — 900 chars → {AGENTS_SDK_PREVIEW_CHARS} char preview]\n"
        + "v" * AGENTS_SDK_PREVIEW_CHARS
        + "..."
    )
    assert sent[6]["content"] == long and sent[9]["content"] == long
    assert messages[3]["content"] == long  # the history keeps it whole


def test_a_thread_under_the_agents_sdk_trimmer_sends_less_on_the_third_turn(
    store, registry
) -> None:
    from helpers.cases.case_files import load_cases

    case = next(c for c in load_cases() if c.id == "case1")
    client = client_for_cases(resolve_model("offline", None), [case])
    policy, thread, history, prompts = AgentsSdkTrimmerPolicy(), "thread_sdk", [], []
    for _ in range(3):
        record = Agent(client, "m", policy, registry, store).run(
            case.prompt, thread_id=thread, history=history
        )
        assert record.ok
        prompts.append(record.model_calls[0].prompt_tokens)
        history = record.messages[1:]
    # turn 3's first call carries turn 1's transcript trimmed to 200 chars, turn 2's whole: it
    # grows by at least 2,000 tokens less than turn 2's did (the 10,244-char transcript)
    assert prompts[2] - prompts[1] < prompts[1] - prompts[0] - 2_000


@pytest.mark.parametrize("strategy", ["codex", "deepagents", "claude-code"])
def test_the_offline_model_looks_inside_each_anchor_its_own_way(store, strategy) -> None:
    """A 200 KB result: the detail at its end is found the anchor's way, and only boxing
    routes the whole of it."""
    case = scaling_case(200_000)
    client = client_for_cases(resolve_model("offline", None), [case])
    record = run_turn(
        case.prompt, Agent(client, "m", build_policy(strategy), scaling_registry(), store)
    )
    names = [t.name for t in record.tool_calls]
    tail = document(200_000).rstrip("\n")[-30:]
    if strategy == "codex":  # no way back: the tail is visible, the whole is not
        assert names == ["get_document", "deep_check"] and tail in record.tool_calls[0].result
        # the model copies the cut text it saw (12,000 bytes for gpt-4o, the marker between
        # head and tail): the tool receives that copy, never the document
        routed = record.tool_calls[1]
        sent = json.loads(routed.arguments)["text"]
        assert routed.ran and re.search(r"…\d+ chars truncated…", sent)
        assert len(sent.encode()) < 12_100 and sent != document(200_000)
    else:  # the model reads the saved file page by page to copy it
        read = "read_file" if strategy == "deepagents" else "Read"
        assert names[0] == "get_document" and read in names
        # it copies the whole, or the workbook's cap of model calls stops it first (Claude
        # Code's Read gives at most 25,000 tokens a call), and the verdict says which
        copied = "deep_check" in names
        capped = record.status == "max_iterations" and "stopped by the workbook's cap" in (
            record.error or ""
        )
        assert copied != capped, (names, record.status, record.error)
        if strategy == "deepagents":
            assert copied


def test_anchor_parameters_are_the_published_ones() -> None:
    assert CodexPolicy().budget == CodexBudget("bytes", 12_000)  # gpt-4o: bytes(10,000) × 1.2
    assert DeepAgentsPolicy().evict_tokens == 20_000
    assert ClaudeCodePolicy().max_output_chars == 50_000
    sdk = AgentsSdkTrimmerPolicy()
    assert (sdk.recent_turns, sdk.max_output_chars, sdk.preview_chars) == (2, 500, 200)


def test_run_case_under_every_anchor_on_a_shipped_case(store) -> None:
    from helpers.cases.case_files import load_cases

    case = next(c for c in load_cases() if c.id == "web3")
    client = client_for_cases(resolve_model("offline", None), [case])
    for strategy in ("codex", "deepagents", "claude-code", "agents-sdk"):
        run = run_case(case, strategy, client=client, model="m", store=store)
        assert run.passed, (strategy, run.validation.reasons)
    claude = run_case(case, "claude-code", client=client, model="m", store=store)
    # 44,499 chars: under the 50,000 a non-Bash tool result may have, so it stays inline
    assert [t.name for t in claude.record.tool_calls] == ["get_page"]
    assert claude.record.tool_calls[0].result_kind == "inline"
    assert claude.record.tool_calls[0].output_chars < CLAUDE_CODE_MAX_OUTPUT_CHARS


def test_deepagents_read_file_cuts_its_answer_at_80000_characters_as_deepagents_does(
    store,
) -> None:
    """deepagents' own cut: the answer kept to 80,000 characters in all, its
    READ_FILE_TRUNCATION_MSG (with the path) at the end; the offline model reads on from the
    line the cut fell in, so the copy it rebuilds is whole."""
    from helpers.context.anchors import DEEPAGENTS_READ_MAX_CHARS

    policy = DeepAgentsPolicy()
    lines = [f"{i:05d} " + "q" * 120 for i in range(3_000)]  # 2,000 rows: about 262,000 chars
    _, ctx = _saved(policy, store, "\n".join(lines), "call_cut")
    read = _tool(policy, "read_file")
    page = read.call({"file_path": "/large_tool_results/call_cut", "limit": 2_000}, ctx)
    assert DEEPAGENTS_READ_MAX_CHARS == 80_000 and len(page) == 80_000
    assert page.endswith(
        "[Output was truncated due to size limits. The file content is very large. Consider "
        "reformatting the file to make it easier to navigate. For example, if this is JSON, use "
        "execute(command='jq . /large_tool_results/call_cut') to pretty-print it with line "
        "breaks. For other formats, you can use appropriate formatting tools to split long lines.]"
    )
    short = read.call({"file_path": "/large_tool_results/call_cut", "limit": 10}, ctx)
    assert "truncated" not in short and len(short.splitlines()) == 10


def test_claude_code_read_refuses_more_than_25000_tokens_and_the_model_asks_for_less(
    store,
) -> None:
    """Claude Code's Read: a read over 25,000 tokens is an error naming the count and asking
    for offset and limit (anthropics/claude-code#4002); the offline model halves its page."""
    from helpers.context.anchors import CLAUDE_CODE_READ_MAX_TOKENS

    policy = ClaudeCodePolicy()
    lines = [" ".join(f"w{(i * 7 + k) % 9973}" for k in range(40)) for i in range(3_000)]
    output = "\n".join(lines)
    _, ctx = _saved(policy, store, output, "call_many")
    read = _tool(policy, "Read")
    with pytest.raises(ValueError) as refused:
        read.call({"file_path": "/tool-results/call_many.txt"}, ctx)
    message = str(refused.value)
    assert re.fullmatch(
        r"File content \(\d+ tokens\) exceeds maximum allowed tokens \(25000\)\. Please use "
        r"offset and limit parameters to read specific portions of the file, or use the "
        r"GrepTool to search for specific content\.",
        message,
    )
    assert int(re.search(r"\((\d+) tokens\)", message)[1]) > CLAUDE_CODE_READ_MAX_TOKENS
    page = read.call({"file_path": "/tool-results/call_many.txt", "limit": 200}, ctx)
    assert len(page.splitlines()) == 200


def test_a_run_stopped_by_the_workbooks_cap_says_so_for_an_agent_with_its_own_limit(
    store,
) -> None:
    """iso639_save under deepagents reads 0.9 MB back page by page: the workbook's cap of 8
    model calls stops it, which the verdict names (deepagents itself allows 9,999 steps)."""
    from helpers.cases.case_files import ALL_CASES, load_cases

    case = next(c for c in load_cases(ALL_CASES) if c.id == "iso639_save")
    client = client_for_cases(resolve_model("offline", env={}), [case])
    run = run_case(case, "deepagents", client=client, model="offline-reference", store=store)
    assert run.record.status == "max_iterations"
    assert "stopped by the workbook's cap, not the agent: deepagents allows 9,999 steps" in (
        run.record.error or ""
    )
    assert any("stopped by the workbook's cap" in r for r in run.validation.reasons)


def test_a_copy_that_lost_only_its_final_newline_is_reported_as_such() -> None:
    """A copy rebuilt from numbered rows (a saved file read back page by page) loses the
    document's final newline: the sink check names that difference, not "other bytes"; a copy
    that differs anywhere else is still "other bytes"."""
    from helpers.base.ids import content_sha256_and_trimmed
    from helpers.evaluation.validation import validate
    from helpers.loop.records import ToolCallRecord, TurnRecord

    case = scaling_case(100_000)
    whole = document(100_000)
    assert whole.endswith("\n")

    def reasons(received: str) -> list[str]:
        record = TurnRecord(
            model="m", strategy="deepagents", boxing="opaque", thread_id="t", prompt=case.prompt
        )
        out, out_trimmed = content_sha256_and_trimmed(whole)
        got, got_trimmed = content_sha256_and_trimmed(received)
        record.tool_calls = [
            ToolCallRecord(
                "c1",
                "get_document",
                "{}",
                "saved",
                "saved",
                len(whole),
                out,
                ran=True,
                output_sha256_trimmed=out_trimmed,
            ),
            ToolCallRecord(
                "c2",
                "deep_check",
                "{}",
                "ok",
                "inline",
                2,
                "x",
                {"text": got},
                ran=True,
                received_sha256_trimmed={"text": got_trimmed},
            ),
        ]
        return [r for r in validate(case, record).reasons if r.startswith("sink check")]

    assert reasons(whole) == []
    assert reasons(whole.rstrip("\n")) == [
        "sink check: deep_check.text is not byte-exact get_document output (received the same "
        "text but for its final newline(s))"
    ]
    assert reasons(whole[1:]) == [
        "sink check: deep_check.text is not byte-exact get_document output (received other bytes)"
    ]
