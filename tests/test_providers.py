"""Real providers, real model mistakes: `workbook ask --profile local` against a scripted
OpenAI-compatible server on loopback (tests/provider.py).

Every scenario asserts the verdict (``status`` and exit code), that ``--json`` printed exactly
one JSON object, that no API key appears in any output or store file, and, where a tool ran on a
long value, that it received byte for byte the stored output (SHA-256 of what the tool received
against the stored row).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from provider import (
    MESSAGE_FIELDS,
    MISTRAL_IDS,
    PROMPT,
    SECRET,
    TRANSCRIBE,
    Answer,
    Run,
    ScriptedProvider,
    completion,
    last_tool,
    tool_call,
    tool_messages,
)

from helpers.cli import main
from helpers.cli.exits import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE
from helpers.models.providers import PROFILES
from helpers.models.replies import FIELDS_FROM
from helpers.store.tool_outputs import ToolOutputStore


def routed_exactly(run: Run, sink: str = "deep_check", argument: str = "text") -> None:
    """Every run of ``sink`` received the byte-exact output of the transcript call."""
    store = ToolOutputStore(run.db)
    source = next(c for c in run.named("yt_transcribe") if c["ran"])
    row = store.get(run.data["thread_id"], source["id"])
    store.close()
    assert row is not None and row.sha256 == source["output_sha256"] and row.n_chars == 10244
    ran = [c for c in run.named(sink) if c["ran"]]
    assert ran, f"{sink} never ran"
    assert all(c["received_sha256"][argument] == row.sha256 for c in ran)


def pass_on(wrap, sink: str = "deep_check", argument: str = "text"):
    """A step that passes the first tool result (a reference) on, wrapped by ``wrap``."""

    def step(request: dict[str, Any]) -> dict[str, Any]:
        ref = last_tool({"messages": tool_messages(request)[:1]})  # the reference line
        return completion(tool_calls=[tool_call(sink, {argument: wrap(ref)}, "call_p2")])

    return step


def answer(text: str = "Deep Check is done.") -> Any:
    return lambda request: completion(text)


# -- 1. every response shape ends in a verdict ------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        ({"id": "x", "choices": []}, "application/json", "no choices"),
        ({"id": "x", "choices": None}, "application/json", "no choices"),
        (
            {"error": {"message": "Upstream timed out", "code": 502}},
            "application/json",
            "Upstream timed out",
        ),
        ("<html><body>Bad gateway</body></html>", "text/html", "not JSON"),
        ('{"id": "x", "choices": [', "application/json", "malformed JSON"),
        ({"choices": [{"index": 0}]}, "application/json", "no message"),
        ([1, 2, 3], "application/json", "not an object"),
        (  # OpenRouter: the model failed after it started; choices end with "error"
            {
                "error": {"message": "Provider returned error", "code": 502},
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": ""},
                        "finish_reason": "error",
                    }
                ],
            },
            "application/json",
            "Provider returned error",
        ),
        (
            {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": ""},
                        "finish_reason": "error",
                        "error": {"message": "overloaded upstream", "code": 503},
                    }
                ]
            },
            "application/json",
            "overloaded upstream",
        ),
        (
            {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": ""},
                        "finish_reason": "error",
                    }
                ]
            },
            "application/json",
            "finish_reason 'error'",
        ),
    ],
    ids=[
        "choices-empty",
        "choices-null",
        "error-in-200",
        "html",
        "truncated-json",
        "no-message",
        "array",
        "error-with-choices",
        "error-in-the-choice",
        "finish-reason-error",
    ],
)
def test_a_broken_response_is_an_error_verdict(ask, body, content_type, expected) -> None:
    with ScriptedProvider([lambda r: Answer(body, content_type=content_type)]) as provider:
        run = ask(provider)
    assert run.code == EXIT_FAILED and run.data["status"] == "error"
    assert expected in run.data["error"]


@pytest.mark.parametrize("usage", [{}, {"prompt_tokens": None, "completion_tokens": None}, ...])
def test_missing_or_null_usage_is_counted(ask, usage) -> None:
    with ScriptedProvider([lambda r: completion("The answer.", usage=usage)]) as provider:
        run = ask(provider)
    assert run.code == EXIT_OK and run.data["answer"] == "The answer."
    call = run.data["model_calls"][0]
    assert call["usage_source"] == "counted" and call["prompt_tokens"] > 100


def test_null_arguments_without_usage_become_an_error_result(ask) -> None:
    steps = [
        lambda r: completion(tool_calls=[tool_call("yt_transcribe", None)], usage=...),
        lambda r: completion(f"I got: {last_tool(r)}", usage=...),
    ]
    with ScriptedProvider(steps) as provider:
        run = ask(provider)
    assert run.code == EXIT_OK
    assert "missing required argument(s): video_id" in run.calls[0]["result"]
    assert not run.calls[0]["ran"]
    assert {c["usage_source"] for c in run.data["model_calls"]} == {"counted"}


def test_arguments_as_an_object_and_content_as_parts(ask) -> None:
    steps = [
        lambda r: completion(
            tool_calls=[tool_call("yt_transcribe", {"video_id": "123"}, as_object=True)]
        ),
        pass_on(lambda ref: ref),
        lambda r: completion([{"type": "text", "text": "Done, "}, {"type": "text", "text": "ok."}]),
    ]
    with ScriptedProvider(steps) as provider:
        run = ask(provider)
    assert run.code == EXIT_OK and run.data["answer"] == "Done, ok."
    routed_exactly(run)


@pytest.mark.parametrize(
    ("final", "reason"),
    [
        (completion("The transcript says", finish_reason="length"), "finish_reason 'length'"),
        (completion("", finish_reason="content_filter"), "content filter"),
        (completion(None), "empty"),
        (completion("   "), "empty"),
        (completion(None, message_extra={"refusal": "I cannot help with that."}), "refused"),
        (
            completion(
                '<tool_call>\n{"name": "yt_transcribe", "arguments": {"video_id": "123"}}\n</tool_call>'
            ),
            "--tool-call-parser",
        ),
        (completion('{"name": "yt_transcribe", "parameters": {"video_id": "123"}}'), "--jinja"),
        (
            completion('[TOOL_CALLS][{"name": "yt_transcribe", "arguments": {}}]'),
            "tool call as text",
        ),
    ],
    ids=[
        "length",
        "content-filter",
        "null-content",
        "blank",
        "refusal",
        "hermes-tag-as-text",
        "json-call-as-text",
        "mistral-tag-as-text",
    ],
)
def test_a_cut_or_empty_answer_is_incomplete(ask, final, reason) -> None:
    with ScriptedProvider([lambda r: final]) as provider:
        run = ask(provider)
    assert run.code == EXIT_INCOMPLETE and run.data["status"] == "incomplete"
    assert reason in run.data["error"]
    assert run.data["answer"] == (final["choices"][0]["message"]["content"] or "")


def test_an_answer_only_in_reasoning_is_shown_as_reasoning(ask) -> None:
    final = completion(None, message_extra={"reasoning_content": "The number is 6065."})
    with ScriptedProvider([lambda r: final]) as provider:
        run = ask(provider)
    assert run.code == EXIT_INCOMPLETE and run.data["answer"] == ""
    assert run.data["reasoning"] == "The number is 6065." and "reasoning" in run.data["error"]


@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        (500, f"internal error while serving key {SECRET}", "HTTP 500"),
        (401, f"Incorrect API key provided: {SECRET[:-4]}XXXX.", "check the API key"),
        (429, f"rate limited for {SECRET}", "HTTP 429"),
    ],
)
def test_a_provider_error_is_reported_with_the_key_redacted(ask, status, message, expected) -> None:
    error = Answer({"error": {"message": message, "type": "x"}}, status=status)
    with ScriptedProvider([lambda r: error]) as provider:
        run = ask(provider)
    assert run.code == EXIT_FAILED and run.data["status"] == "error"
    assert expected in run.data["error"] and "[redacted]" in run.data["error"]


@pytest.mark.parametrize(
    ("code", "requests"),
    [("insufficient_quota", 1), ("rate_limit_exceeded", 3)],
    ids=["quota: never retried", "rate limit: retried"],
)
def test_a_quota_error_is_not_retried_as_a_rate_limit_is(ask, code, requests) -> None:
    """OpenAI answers both with a 429 (https://platform.openai.com/docs/guides/error-codes);
    only the rate limit passes with time."""
    error = Answer(
        {"error": {"message": f"{code} for this key", "type": code, "code": code}},
        status=429,
        headers={"retry-after": "0.1"},
    )
    with ScriptedProvider([lambda r: error]) as provider:
        run = ask(provider, "--max-retries", "2")
        sent = len(provider.requests)
    assert run.code == EXIT_FAILED and "HTTP 429" in run.data["error"] and code in run.data["error"]
    assert sent == requests


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (  # OpenAI
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens. However, "
                    "your messages resulted in 9100 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        ),
        (  # llama.cpp's server, before generation
            400,
            {
                "error": {
                    "code": 400,
                    "message": "request (9100 tokens) exceeds the available context size "
                    "(4096 tokens), try increasing it",
                    "type": "exceed_context_size_error",
                }
            },
        ),
        (  # llama.cpp's server, during generation
            500,
            {"error": {"code": 500, "message": "Context size has been exceeded.", "type": "x"}},
        ),
        (  # Gemini's OpenAI-compatible endpoint: a list of error objects
            400,
            [
                {
                    "error": {
                        "code": 400,
                        "message": "The input token count (1200000) exceeds the maximum number "
                        "of tokens allowed (1048576).",
                        "status": "INVALID_ARGUMENT",
                    }
                }
            ],
        ),
    ],
    ids=["openai", "llama.cpp-400", "llama.cpp-500", "gemini"],
)
def test_each_providers_context_overflow_is_context_exceeded(ask, status, body) -> None:
    """Not an ``error``: ``cases`` and ``compare`` count overflows from this status. A 500 that
    says so is not retried (the SDK would send it twice more)."""
    with ScriptedProvider([lambda r: Answer(body, status=status)]) as provider:
        run = ask(provider, "--max-retries", "2")
        sent = len(provider.requests)
    assert run.data["status"] == "context_exceeded", run.data["error"]
    assert "longer than the model's context window" in run.data["error"]
    message = (body[0] if isinstance(body, list) else body)["error"]["message"]
    assert message in run.data["error"]  # the provider's own words, not a repr of its body
    assert sent == 1


@pytest.mark.parametrize(("prompt_tokens", "flagged"), [(500, True), (3_000, False)])
def test_a_prompt_the_server_cut_silently_is_flagged(ask, prompt_tokens, flagged) -> None:
    """Ollama past num_ctx: the turn goes on, but the usage shows far fewer tokens than were
    sent (the 10,244-character transcript inline is about 2,400 tokens)."""
    steps = [
        lambda r: TRANSCRIBE,
        lambda r: completion("Done.", usage=(prompt_tokens, 5)),
    ]
    with ScriptedProvider(steps) as provider:
        run = ask(provider, "--strategy", "inline")
    assert run.code == EXIT_OK
    assert ("prompt_cut_by_server" in run.data["guards"]) == flagged


def test_a_base_url_without_v1_gets_a_hint(ask) -> None:
    with ScriptedProvider([answer()]) as provider:
        root = provider.base_url.removesuffix("/v1")
        run = ask(provider, env={"LOCAL_BASE_URL": root})
    assert run.code == EXIT_FAILED and "HTTP 404" in run.data["error"]
    assert "lacks /v1" in run.data["error"] and f"{root}/v1" in run.data["error"]


def test_a_base_url_with_the_endpoint_path_gets_a_hint(ask) -> None:
    with ScriptedProvider([answer()]) as provider:
        pasted = f"{provider.base_url}/chat/completions"
        run = ask(provider, env={"LOCAL_BASE_URL": pasted})
    assert run.code == EXIT_FAILED and "HTTP 404" in run.data["error"]
    assert f"set the base URL to {provider.base_url})" in run.data["error"]


def test_timeout_from_the_flag_and_from_the_profile(ask) -> None:
    slow = [lambda r: Answer(completion("late"), delay_s=1.5)]
    with ScriptedProvider(slow) as provider:
        by_flag = ask(provider, "--timeout", "0.3")
        by_env = ask(provider, env={"LOCAL_TIMEOUT": "0.3"})
        patient = ask(provider, "--timeout", "60")  # a hang guard: many times the 1.5 s delay
    for run in (by_flag, by_env):
        assert run.code == EXIT_FAILED and "APITimeoutError" in run.data["error"]
        assert "--timeout" in run.data["error"]
    assert patient.code == EXIT_OK and patient.data["answer"] == "late"


@pytest.mark.parametrize(
    ("first", "second", "guard"),
    [
        (
            tool_call("functions.yt_transcribe", {"video_id": "123"}),
            lambda ref: tool_call("functions.deep_check", {"text": ref}, "call_p2"),
            "tool_name_unprefixed",
        ),
        (
            tool_call("yt_transcribe", json.dumps(json.dumps({"video_id": "123"}))),
            lambda ref: tool_call("deep_check", json.dumps(json.dumps({"text": ref})), "call_p2"),
            "arguments_double_encoded",
        ),
    ],
    ids=["functions-prefix", "double-encoded"],
)
def test_harmony_names_and_double_encoded_arguments_route_byte_exact(
    ask, first, second, guard
) -> None:
    """gpt-oss's ``functions.<tool>`` names and arguments sent as a JSON string of the object
    are what the model meant: each call runs its tool with the real value, the guard noted."""
    steps = [
        lambda r: completion(tool_calls=[first]),
        lambda r: completion(tool_calls=[second(last_tool(r))]),
        answer(),
    ]
    with ScriptedProvider(steps) as provider:
        run = ask(provider)
    assert run.code == EXIT_OK, run.data
    routed_exactly(run)
    assert all(guard in c["guards"] for c in run.calls)


def test_a_prefixed_name_gets_no_more_than_its_bare_name(ask) -> None:
    """In explore, functions.google_drive_write_file is refused as the bare name is, and a
    string that is not an object inside stays a refusal."""
    steps = [
        lambda r: completion(
            tool_calls=[
                tool_call(
                    "functions.google_drive_write_file", {"file_name": "a", "file_content": "b"}
                ),
                tool_call("functions.nosuch", {}, "call_p2"),
                tool_call("deep_check", json.dumps(json.dumps("just text")), "call_p3"),
            ]
        ),
        answer(),
    ]
    with ScriptedProvider(steps) as provider:
        run = ask(provider, "--mode", "explore")
    assert run.code == EXIT_OK
    write, unknown, text = run.calls
    assert not write["ran"] and "not available in mode 'explore'" in write["result"]
    assert not unknown["ran"] and "'functions.nosuch' as 'nosuch'" in unknown["result"]
    assert not text["ran"] and "takes a JSON object of arguments, got str" in text["result"]


# -- 2. tool-call ids the client can trust ----------------------------------------------------


@pytest.mark.parametrize(
    "provider_id", ["0", "", ..., None], ids=["zero", "empty", "missing", "null"]
)
def test_unusable_provider_ids_still_route_byte_exact(ask, provider_id) -> None:
    steps = [
        lambda r: completion(
            tool_calls=[tool_call("yt_transcribe", {"video_id": "123"}, provider_id)]
        ),
        lambda r: completion(
            tool_calls=[tool_call("deep_check", {"text": last_tool(r)}, provider_id)]
        ),
        answer(),
    ]
    with ScriptedProvider(steps) as provider:
        run = ask(provider)
        sent = provider.chat_requests[-1]["messages"]
    assert run.code == EXIT_OK
    routed_exactly(run)
    ids = [c["id"] for c in run.calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)
    # the conversation sent back pairs every call with its result under the client's ids
    echoed = [c["id"] for m in sent if m.get("tool_calls") for c in m["tool_calls"]]
    assert echoed == ids == [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert run.data["guards"].get("tool_call_id_replaced", 0) >= 1


def test_a_server_that_numbers_every_call_zero(ask) -> None:
    steps = [lambda r: TRANSCRIBE, pass_on(lambda ref: ref), answer()]
    with ScriptedProvider(steps, zero_ids=True) as provider:
        run = ask(provider)
    assert run.code == EXIT_OK and [c["provider_id"] for c in run.calls] == ["0", "0"]
    routed_exactly(run)


def test_two_calls_with_one_id_in_one_message_both_run(ask) -> None:
    twice = completion(
        tool_calls=[
            tool_call("yt_transcribe", {"video_id": "123"}, "dup"),
            tool_call("yt_transcribe", {"video_id": "999"}, "dup"),
        ]
    )
    with ScriptedProvider([lambda r: twice, answer("two transcripts")]) as provider:
        run = ask(provider)
    assert run.code == EXIT_OK and all(c["ran"] for c in run.calls)
    assert len({c["id"] for c in run.calls}) == 2
    assert run.calls[0]["result"].startswith("internal://") and "welcome" in run.calls[1]["result"]


def test_truncation_marker_names_the_clients_id_under_a_zero_id_server(ask) -> None:
    def fetch(request: dict[str, Any]) -> dict[str, Any]:
        marker_id = last_tool(request).rsplit("tool_call_id='", 1)[1].split("'")[0]
        return completion(tool_calls=[tool_call("fetch_tool_output", {"tool_call_id": marker_id})])

    def copy(request: dict[str, Any]) -> dict[str, Any]:
        full = json.loads(last_tool(request))["tool_output"]
        return completion(tool_calls=[tool_call("deep_check", {"text": full})])

    steps = [lambda r: TRANSCRIBE, fetch, copy, answer()]
    with ScriptedProvider(steps, zero_ids=True) as provider:
        run = ask(provider, "--strategy", "truncate")
    assert run.code == EXIT_OK
    assert json.loads(run.calls[1]["arguments"])["tool_call_id"] == run.calls[0]["id"]
    routed_exactly(run)


MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}")


@pytest.mark.parametrize(
    "env",
    [
        {"LOCAL_PROVIDER_PROFILE": "mistral"},
        {"LOCAL_PROVIDER_PROFILE": "openrouter", "LOCAL_MODEL": "mistralai/mistral-small-3.2"},
    ],
    ids=["mistral", "mistral-through-openrouter"],
)
def test_mistral_gets_ids_of_its_own_form_and_the_turn_completes(ask, env) -> None:
    """Mistral refuses any tool-call id that is not 9 characters [a-zA-Z0-9] (HTTP 400), also
    behind OpenRouter: under its profile the client's own ids take that form."""
    steps = [lambda r: TRANSCRIBE, pass_on(lambda ref: ref), answer()]
    with ScriptedProvider(steps, ids=MISTRAL_IDS) as provider:
        run = ask(provider, env=env)
        sent = provider.chat_requests[-1]["messages"]
    assert run.code == EXIT_OK, run.data.get("error")
    routed_exactly(run)
    ids = [c["id"] for c in run.calls]
    assert len(set(ids)) == 2 and all(MISTRAL_ID.fullmatch(i) for i in ids), ids
    echoed = [c["id"] for m in sent if m.get("tool_calls") for c in m["tool_calls"]]
    assert echoed == ids == [m["tool_call_id"] for m in sent if m["role"] == "tool"]


def test_without_its_profile_mistral_refuses_the_clients_ids(ask) -> None:
    steps = [lambda r: TRANSCRIBE, pass_on(lambda ref: ref), answer()]
    with ScriptedProvider(steps, ids=MISTRAL_IDS) as provider:
        run = ask(provider)
    assert run.code == EXIT_FAILED
    assert "must be a-z, A-Z, 0-9, with a length of 9" in run.data["error"]


@pytest.mark.parametrize(
    ("env", "field", "tokens"),
    [
        ({}, "max_tokens", PROFILES["default"].completion_limit_tokens),
        ({"LOCAL_PROVIDER_PROFILE": "groq"}, "max_completion_tokens", 4096),
        ({"LOCAL_PROVIDER_PROFILE": "OpenAI"}, "max_completion_tokens", 16384),
        (
            {"LOCAL_PROVIDER_PROFILE": "ollama", "LOCAL_MAX_COMPLETION_TOKENS": "300"},
            "max_tokens",
            300,
        ),
    ],
    ids=["unknown-server", "groq", "openai", "limit-from-env"],
)
def test_every_request_carries_the_profiles_completion_limit(ask, env, field, tokens) -> None:
    steps = [lambda r: TRANSCRIBE, pass_on(lambda ref: ref), answer()]
    with ScriptedProvider(steps) as provider:
        run = ask(provider, env=env)
        bodies = provider.chat_requests
    assert run.code == EXIT_OK, run.data.get("error")
    other = ({"max_tokens", "max_completion_tokens"} - {field}).pop()
    assert len(bodies) == 3
    assert all(b[field] == tokens and other not in b for b in bodies), bodies[0]


def test_a_reply_cut_at_the_completion_limit_is_incomplete(ask) -> None:
    cut = {
        **completion("The transcript says that the"),
    }
    cut["choices"][0]["finish_reason"] = "length"
    with ScriptedProvider([lambda r: cut]) as provider:
        run = ask(provider, env={"LOCAL_MAX_COMPLETION_TOKENS": "8"})
    assert run.code == EXIT_INCOMPLETE and run.data["status"] == "incomplete"
    assert provider.chat_requests[0]["max_tokens"] == 8


def test_tool_calls_cut_at_the_completion_limit_are_not_run_and_the_turn_is_incomplete(
    ask,
) -> None:
    """A reply that stops at the output limit inside a tool call's arguments: the cut call is
    not run, its error result says the reply was cut (not just "malformed JSON"), and a turn
    that never gets past it ends ``incomplete``, naming the limit, not ``max_iterations``."""
    cut_call = tool_call("deep_check", '{"text": "The transcript s', "call_cut")
    whole = tool_call("yt_transcribe", {"video_id": "123"}, "call_whole")
    cut = completion(tool_calls=[whole, cut_call], finish_reason="length", usage=(10, 8))
    with ScriptedProvider([lambda r: cut]) as provider:
        run = ask(provider, env={"LOCAL_MAX_COMPLETION_TOKENS": "8"})
        second = provider.chat_requests[1]["messages"]
    assert run.code == EXIT_INCOMPLETE and run.data["status"] == "incomplete"
    assert run.data["error"].startswith("the model's output limit: ")
    assert "finish_reason 'length'" in run.data["error"]
    assert "chat template" not in run.data["error"]  # not blamed on a local server
    first = next(c for c in run.data["tool_calls"] if c["name"] == "deep_check")
    assert first["result_kind"] == "error" and not first["ran"]
    assert "stopped at your output limit" in first["result"]
    assert (
        "inside the arguments of deep_check" in tool_messages({"messages": second})[-1]["content"]
    )
    # the whole call of the same reply ran; the cut one never reached the tool
    assert next(c["name"] for c in run.data["tool_calls"] if c["ran"]) == "yt_transcribe"
    assert not any(c["ran"] for c in run.data["tool_calls"] if c["name"] == "deep_check")


def test_an_unknown_provider_profile_is_a_usage_error(ask) -> None:
    with ScriptedProvider([answer()]) as provider:
        run = ask(provider, env={"LOCAL_PROVIDER_PROFILE": "mistrall"})
    assert run.code == EXIT_USAGE
    assert "mistrall" in run.data["error"] and "mistral" in run.data["error"]
    assert provider.chat_requests == []


# -- 3. provider fields echoed back -----------------------------------------------------------


@pytest.mark.parametrize("zero_ids", [False, True], ids=["deepseek", "deepseek-and-id-zero"])
def test_deepseek_thinking_mode_completes_the_transcript_task(ask, zero_ids) -> None:
    steps = [lambda r: TRANSCRIBE, pass_on(lambda ref: ref), answer()]
    with ScriptedProvider(steps, thinking=True, zero_ids=zero_ids) as provider:
        run = ask(provider)
        second = provider.chat_requests[1]["messages"]
    assert run.code == EXIT_OK, run.data.get("error")
    routed_exactly(run)
    echoed = next(m for m in second if m["role"] == "assistant")
    assert echoed["reasoning_content"] == "Thinking about the next step."
    assert run.data["reasoning"] == "Thinking about the next step."


def test_openrouter_reasoning_details_are_sent_back(ask) -> None:
    steps = [lambda r: TRANSCRIBE, pass_on(lambda ref: ref), answer()]
    with ScriptedProvider(steps, reasoning_details=True) as provider:
        run = ask(provider)
        second = provider.chat_requests[1]["messages"]
    assert run.code == EXIT_OK
    echoed = next(m for m in second if m["role"] == "assistant")
    assert echoed["reasoning_details"][0]["signature"] == "sig-1"


def test_gemini_thought_signatures_go_back_with_each_call(ask) -> None:
    """Gemini 3 answers 400 when a tool call comes back without its thought signature."""
    steps = [lambda r: TRANSCRIBE, pass_on(lambda ref: ref), answer()]
    with ScriptedProvider(steps, thought_signatures=True) as provider:
        run = ask(provider)
        last = provider.chat_requests[-1]["messages"]
    assert run.code == EXIT_OK, run.data.get("error")
    routed_exactly(run)
    sent = [c for m in last if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert [c["extra_content"]["google"]["thought_signature"] for c in sent] == ["c2lnLTE0"] * 2
    assert all(FIELDS_FROM not in m for m in last)


@pytest.mark.parametrize(
    "first_provider",
    [{"thinking": True}, {"thought_signatures": True}, {"reasoning_details": True}],
    ids=["deepseek", "gemini", "openrouter"],
)
def test_a_thread_continues_on_another_provider_without_the_first_ones_fields(
    ask, first_provider
) -> None:
    """Provider fields go back to the endpoint that sent them and to no other: a strict server
    (Mistral's 422 extra_forbidden, Groq's 400) continues a thread another provider began; the
    first provider, asked again, still gets its own fields."""
    with ScriptedProvider([lambda r: TRANSCRIBE, answer("Done.")], **first_provider) as provider:
        first = ask(provider, "--thread", "moved", "--new-thread")
        origin = provider.base_url
        ref = first.calls[0]["result"].split("\n", 1)[0]
        with ScriptedProvider([pass_on(lambda _ref: ref), answer()], strict=True) as strict:
            second = ask(strict, "--thread", "moved", prompt="Now Deep Check it.")
            sent = strict.chat_requests[0]["messages"]
        assert second.code == EXIT_OK, second.data.get("error")
        assert all(set(m) <= MESSAGE_FIELDS for m in sent)
    # the thread keeps the first provider's fields, marked as its own, for when it is asked again
    store = ToolOutputStore(first.db)
    kept = next(m for m in store.thread_messages("moved") if m.get("tool_calls"))
    store.close()
    assert kept[FIELDS_FROM] == origin
    assert set(kept) | set(kept["tool_calls"][0]) - MESSAGE_FIELDS - {"id", "type", "function"}


# -- 4. references as models really write them ------------------------------------------------


@pytest.mark.parametrize(
    "wrap",
    [
        lambda ref: f"`{ref}`",
        lambda ref: f'"{ref}"',
        lambda ref: f"'{ref}'",
        lambda ref: f"<{ref}>",
        lambda ref: f"\n  {ref}  \n",
        lambda ref: f"```\n{ref}\n```",
        lambda ref: f"{ref}.",
    ],
    ids=[
        "backticks",
        "double-quotes",
        "single-quotes",
        "angle-brackets",
        "whitespace",
        "fence",
        "full-stop",
    ],
)
def test_a_wrapped_reference_is_resolved_byte_exact(ask, wrap) -> None:
    steps = [lambda r: TRANSCRIBE, pass_on(wrap), answer()]
    with ScriptedProvider(steps) as provider:
        run = ask(provider)
    assert run.code == EXIT_OK
    routed_exactly(run)
    assert run.named("deep_check")[0]["guards"] == ["reference_unwrapped"]


def test_the_backticked_reference_is_written_as_the_transcript(ask, tmp_path) -> None:
    from helpers.base.paths import outbox_dir

    name = f"wrapped-{tmp_path.name}.txt"
    write = pass_on(lambda ref: f"`{ref}`", "google_drive_write_file", "file_content")

    def with_name(request: dict[str, Any]) -> dict[str, Any]:
        body = write(request)
        call = body["choices"][0]["message"]["tool_calls"][0]["function"]
        call["arguments"] = json.dumps({"file_name": name, **json.loads(call["arguments"])})
        return body

    with ScriptedProvider([lambda r: TRANSCRIBE, with_name, answer("Saved.")]) as provider:
        # the task names Google Drive: tool search offers the outbox from the first call
        run = ask(provider, prompt="Transcribe video 123 and save it to a Google Drive file.")
    assert run.code == EXIT_OK
    routed_exactly(run, "google_drive_write_file", "file_content")
    written = (outbox_dir() / name).read_text(encoding="utf-8")
    assert len(written) == 10244 and written.endswith("The number to remember is 6065")


@pytest.mark.parametrize(
    "sentence",
    [
        lambda ref: f"Please analyse {ref}",
        lambda ref: f"{ref} is the transcript",
        lambda ref: ref.replace("internal://", "INTERNAL://"),
        lambda ref: f"Transcript: [{ref}]({ref})",
    ],
    ids=["sentence", "leading", "upper-case-scheme", "markdown-link"],
)
def test_a_reference_inside_text_is_refused_and_never_routed_as_text(ask, sentence) -> None:
    def corrected(request: dict[str, Any]) -> dict[str, Any]:
        error = json.loads(last_tool(request))["error"]
        assert "alone" in error  # the error tells the model what to do
        return pass_on(lambda ref: ref)(request)

    steps = [lambda r: TRANSCRIBE, pass_on(sentence), corrected, answer()]
    with ScriptedProvider(steps) as provider:
        run = ask(provider)
    assert run.code == EXIT_OK
    refused, accepted = run.named("deep_check")
    assert not refused["ran"] and refused["guards"] == ["refused_embedded_reference"]
    assert accepted["ran"]
    routed_exactly(run)  # the only deep_check that ran got the transcript, never the sentence


def test_a_resource_link_object_works_in_a_resolve_tool_and_as_json_text(ask) -> None:
    def length(request: dict[str, Any]) -> dict[str, Any]:
        link = json.loads(tool_messages(request)[0]["content"])
        return completion(
            tool_calls=[tool_call("internal_resource", {"opaque_reference": link, "op": "length"})]
        )

    link_text = pass_on(lambda link_json: link_json)  # the resource link's JSON text, whole
    steps = [lambda r: TRANSCRIBE, length, link_text, answer()]
    with ScriptedProvider(steps) as provider:
        run = ask(provider, "--boxing", "json")
    assert run.code == EXIT_OK
    assert json.loads(run.named("internal_resource")[0]["result"]) == {"length_chars": 10244}
    routed_exactly(run)


def test_an_invented_reference_is_refused_before_the_tool_runs(ask) -> None:
    steps = [
        lambda r: TRANSCRIBE,
        lambda r: completion(
            tool_calls=[tool_call("deep_check", {"text": "internal://Zx81Qa0pLm3v"})]
        ),
        answer("Could not."),
    ]
    with ScriptedProvider(steps) as provider:
        run = ask(provider)
    call = run.named("deep_check")[0]
    assert run.code == EXIT_OK and not call["ran"]
    assert call["guards"] == ["refused_unknown_reference"]


def test_a_preview_passed_as_the_value_is_refused_under_truncate(ask) -> None:
    def fetch(request: dict[str, Any]) -> dict[str, Any]:
        assert "fetch the full output first" in json.loads(last_tool(request))["error"].lower()
        call_id = tool_messages(request)[0]["tool_call_id"]
        return completion(tool_calls=[tool_call("fetch_tool_output", {"tool_call_id": call_id})])

    def copy(request: dict[str, Any]) -> dict[str, Any]:
        full = json.loads(last_tool(request))["tool_output"]
        return completion(tool_calls=[tool_call("deep_check", {"text": full})])

    steps = [lambda r: TRANSCRIBE, pass_on(lambda preview: preview), fetch, copy, answer()]
    with ScriptedProvider(steps) as provider:
        run = ask(provider, "--strategy", "truncate")
    assert run.code == EXIT_OK
    refused = run.named("deep_check")[0]
    assert not refused["ran"] and refused["guards"] == ["refused_preview_as_value"]
    routed_exactly(run)


# -- 5. threads that continue -----------------------------------------------------------------


def test_a_thread_continues_with_its_messages(ask) -> None:
    first_turn = [lambda r: TRANSCRIBE, answer("I transcribed it.")]
    with ScriptedProvider(first_turn) as provider:
        first = ask(provider, "--thread", "workshop-1", "--new-thread")
    assert first.code == EXIT_OK and first.data["thread_id"] == "workshop-1"
    shown = first.calls[0]["result"]
    ref = shown.split("\n", 1)[0]  # the reference line (a note and a preview follow)
    steps = [pass_on(lambda _ref: ref), answer()]
    with ScriptedProvider(steps) as provider:
        second = ask(provider, "--thread", "workshop-1", prompt="Now Deep Check it.")
        request = provider.chat_requests[0]["messages"]
    assert second.code == EXIT_OK and second.data["history_messages"] == 4
    roles = [m["role"] for m in request]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert request[1]["content"] == PROMPT and request[3]["content"] == shown
    assert request[4]["content"] == "I transcribed it."
    second.data["tool_calls"] = first.calls + second.calls  # the source is in the first turn
    routed_exactly(second)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--thread", "no-such-thread"), "unknown thread 'no-such-thread'"),
        (("--new-thread",), "--new-thread starts the thread named by --thread"),
        (("--thread", "   "), "must not be empty"),
    ],
)
def test_thread_usage_errors(ask, flags, expected) -> None:
    with ScriptedProvider([answer()]) as provider:
        run = ask(provider, *flags)
        assert provider.requests == []  # nothing was sent
    assert run.code == EXIT_USAGE and run.data["status"] == "usage_error"
    assert expected in run.data["error"]


def test_a_long_thread_id_and_a_near_miss(ask) -> None:
    long_id = "thread-" + "x" * 500
    with ScriptedProvider([answer("hi")]) as provider:
        started = ask(provider, "--thread", long_id, "--new-thread")
        again = ask(provider, "--thread", long_id, "--new-thread")
        mistyped = ask(provider, "--thread", long_id[:-1] + "y")
    assert started.code == EXIT_OK and started.data["thread_id"] == long_id
    assert again.code == EXIT_USAGE and "already exists" in again.data["error"]
    assert mistyped.code == EXIT_USAGE and "Did you mean" in mistyped.data["error"]


# -- 6. profiles that do what they say --------------------------------------------------------


def test_openai_headers_never_reach_another_endpoint(ask) -> None:
    env = {
        "OPENAI_ORG_ID": "org-secretorg",
        "OPENAI_PROJECT_ID": "proj_secret",
        "OPENAI_CUSTOM_HEADERS": "X-Team: blue\nAuthorization: Bearer sk-other",
        "OPENAI_API_KEY": "sk-openai-should-not-travel",
    }
    with ScriptedProvider([answer("hi")]) as provider:
        run = ask(provider, env=env)
        headers = {k.lower(): v for k, v in provider.requests[0]["headers"].items()}
    assert run.code == EXIT_OK
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert not {"openai-organization", "openai-project", "x-team"} & set(headers)


def test_a_profile_with_its_own_url_and_key(ask) -> None:
    with ScriptedProvider([answer("from deepseek")]) as provider:
        run = ask(
            None,
            env={
                "WORKBOOK_PROFILE": "deepseek",
                "DEEPSEEK_PROVIDER": "openai",
                "DEEPSEEK_BASE_URL": provider.base_url,
                "DEEPSEEK_API_KEY": f"  {SECRET}\n",  # pasted with spaces: stripped
                "DEEPSEEK_MODEL": "deepseek-reasoner",
                "OPENAI_API_KEY": "sk-openai-must-stay-home",
            },
        )
        request = provider.requests[0]
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert run.code == EXIT_OK and run.data["answer"] == "from deepseek"
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert request["json"]["model"] == "deepseek-reasoner"


def test_a_profile_url_without_its_own_key_is_refused(ask) -> None:
    run = ask(
        None,
        env={
            "WORKBOOK_PROFILE": "deepseek",
            "DEEPSEEK_PROVIDER": "openai",
            "DEEPSEEK_BASE_URL": "http://127.0.0.1:9/v1",
            "DEEPSEEK_MODEL": "deepseek-chat",
            "OPENAI_API_KEY": "sk-openai-must-stay-home",
        },
    )
    assert run.code == EXIT_USAGE and "needs its own DEEPSEEK_API_KEY" in run.data["error"]


def test_config_errors_are_one_json_object(ask) -> None:
    run = ask(None, env={"WORKBOOK_PROFILE": "nosuch"})
    assert run.code == EXIT_USAGE and run.data["status"] == "usage_error"
    assert "NOSUCH_PROVIDER" in run.data["error"]


# -- found by an adversarial review: disguises, cut text, echoed keys, bad options -------------


@pytest.mark.parametrize(
    "disguise",
    [
        lambda ref: f"_{ref}_",
        lambda ref: f"Please analyse {ref}_full thanks",
        lambda ref: f"{ref}-1",
        lambda ref: ref + ref,
        lambda ref: ref.replace("internal://", "internal:\\/\\/"),
        lambda ref: ref.replace("internal://", "internal%3A%2F%2F"),
        lambda ref: ref.replace("internal://", "inter\u200bnal://"),
        lambda ref: ref.replace("internal://", "internal\uff1a//"),
        lambda ref: ref.replace("internal://", "internal:"),
        lambda ref: ref.removeprefix("internal://"),
    ],
    ids=[
        "underscores",
        "glued-suffix",
        "dash-suffix",
        "twice",
        "escaped-slashes",
        "percent-encoded",
        "zero-width-space",
        "full-width-colon",
        "no-slashes",
        "bare-id",
    ],
)
def test_a_reference_in_disguise_never_reaches_a_tool(ask, disguise) -> None:
    steps = [lambda r: TRANSCRIBE, pass_on(disguise), answer("gave up")]
    with ScriptedProvider(steps) as provider:
        run = ask(provider)
    (call,) = run.named("deep_check")
    assert not call["ran"] and call["guards"] == ["refused_embedded_reference"]


def test_a_code_fence_with_a_language_tag_is_unwrapped(ask) -> None:
    steps = [lambda r: TRANSCRIBE, pass_on(lambda ref: f"```text\n{ref}\n```"), answer()]
    with ScriptedProvider(steps) as provider:
        run = ask(provider)
    routed_exactly(run)


@pytest.mark.parametrize(
    "rewrite",
    [
        lambda p: p.replace("...[", "…["),
        lambda p: p.replace("tool_call_id='", 'tool_call_id="').replace("')]", '")]'),
        lambda p: p.replace("full output:", "full\noutput:"),
        lambda p: p.rsplit(" ...[+", 1)[0],  # the marker cut off: the bare preview
        lambda p: p.rsplit(" ...[+", 1)[0][:200] + "\n\n(the rest was cut)",
    ],
    ids=["ellipsis", "double-quotes", "line-break", "marker-cut-off", "head-of-preview"],
)
def test_a_rewritten_preview_is_refused_under_truncate(ask, rewrite) -> None:
    steps = [lambda r: TRANSCRIBE, pass_on(rewrite), answer("gave up")]
    with ScriptedProvider(steps) as provider:
        run = ask(provider, "--strategy", "truncate")
    (call,) = run.named("deep_check")
    assert not call["ran"] and call["guards"] == ["refused_preview_as_value"]
    assert "fetch_tool_output" in json.loads(call["result"])["error"]


def test_text_cut_mid_character_is_repaired_and_the_thread_goes_on(ask) -> None:
    cut = '{"choices": [{"message": {"role": "assistant", "content": "caf\\ud83d"}}]}'
    with ScriptedProvider([lambda r: Answer(cut)]) as provider:
        first = ask(provider, "--thread", "cut-emoji", "--new-thread")
    assert first.code == EXIT_OK and first.data["answer"] == "caf\ufffd"
    with ScriptedProvider([answer("still here")]) as provider:
        second = ask(provider, "--thread", "cut-emoji")
    assert second.code == EXIT_OK and second.data["answer"] == "still here"


def test_arguments_cut_mid_character_are_refused_before_the_tool_runs(ask) -> None:
    broken = (
        '{"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{"id": '
        '"c", "type": "function", "function": {"name": "deep_check", "arguments": '
        '"{\\"text\\": \\"x\\\\ud83d\\"}"}}]}, "finish_reason": "tool_calls"}]}'
    )
    with ScriptedProvider([lambda r: Answer(broken), answer("ok")]) as provider:
        run = ask(provider)
    (call,) = run.calls
    assert run.code == EXIT_OK and not call["ran"]
    assert "not valid Unicode" in json.loads(call["result"])["error"]


def test_content_filter_with_tool_calls_runs_nothing(ask) -> None:
    filtered = completion(tool_calls=[tool_call("yt_transcribe", {"video_id": "123"})])
    filtered["choices"][0]["finish_reason"] = "content_filter"
    with ScriptedProvider([lambda r: filtered]) as provider:
        run = ask(provider)
    assert run.code == EXIT_INCOMPLETE and run.calls == []
    assert "1 tool call(s) were not run" in run.data["error"]


def test_a_key_the_model_repeats_is_redacted_before_any_tool_or_store(ask, tmp_path) -> None:
    steps = [
        lambda r: completion(
            tool_calls=[tool_call("deep_check", {"text": f"my key is {SECRET} ok"})],
            message_extra={"reasoning_content": f"I should leak {SECRET}"},
        ),
        answer(f"Your key: {SECRET} and {SECRET.replace('-', '%2D')}"),
    ]
    with ScriptedProvider(steps) as provider:
        run = ask(provider)  # the fixture finds the key in no output and no store file
    assert "[redacted]" in run.data["answer"] and "[redacted]" in run.calls[0]["arguments"]


@pytest.mark.parametrize(
    "flags",
    [
        ("--strategy", "bogus"),
        ("--timeout", "nan"),
        ("--timeout", "inf"),
        ("--max-iterations", "0"),
        ("--no-such-option",),
    ],
)
def test_bad_options_are_one_json_object(ask, flags) -> None:
    run = ask(None, *flags)
    assert run.code == EXIT_USAGE and run.data["status"] == "usage_error"


@pytest.mark.parametrize("db", ["nosuch://x", "not a url", "sqlite:////proc/no/such/dir/x.sqlite"])
def test_a_bad_store_url_is_a_usage_error(ask, db) -> None:
    run = ask(None, "--db", db, env={"LOCAL_BASE_URL": "http://127.0.0.1:9/v1"})
    assert run.code == EXIT_USAGE and "cannot use" in run.data["error"]


def test_odd_bodies_name_what_was_wrong(ask) -> None:
    not_a_list = completion("x")
    not_a_list["choices"][0]["message"]["tool_calls"] = {"id": "c"}
    detail = Answer({"detail": "messages.2.content: field required"}, status=422)
    with ScriptedProvider([lambda r: not_a_list]) as provider:
        first = ask(provider)
    with ScriptedProvider([lambda r: detail]) as provider:
        second = ask(provider)
    assert first.code == EXIT_FAILED and "tool_calls is a dict, not a list" in first.data["error"]
    assert second.code == EXIT_FAILED and "field required" in second.data["error"]


def test_a_failed_prompt_is_not_sent_twice_when_retried(ask) -> None:
    boom = Answer({"error": {"message": "overloaded"}}, status=503)
    with ScriptedProvider([lambda r: boom]) as provider:
        failed = ask(provider, "--thread", "retry-me", "--new-thread")
    with ScriptedProvider([answer("fine now")]) as provider:
        again = ask(provider, "--thread", "retry-me")
        sent = provider.chat_requests[0]["messages"]
    assert failed.code == EXIT_FAILED and again.code == EXIT_OK
    assert [m["role"] for m in sent] == ["system", "user"]


def test_control_characters_never_reach_the_terminal(monkeypatch, capsys, tmp_path) -> None:
    steps = [answer("hello \x1b[2J\x1b]0;pwned\x07 [bold red]markup[/] world")]
    with ScriptedProvider(steps) as provider:
        monkeypatch.setenv("WORKBOOK_PROFILE", "local")
        monkeypatch.setenv("LOCAL_BASE_URL", provider.base_url)
        monkeypatch.setenv("LOCAL_MODEL", "m")
        code = main(["ask", "hi", "--db", f"sqlite:///{tmp_path / 's.sqlite'}", "--color", "never"])
    out = capsys.readouterr().out
    assert code == EXIT_OK and "\x1b" not in out and "\x07" not in out
    assert "\\x1b[2J" in out and "[bold red]markup[/]" in out


def test_cached_tokens_are_read_from_usage_as_each_provider_reports_them() -> None:
    """OpenAI and OpenRouter: usage.prompt_tokens_details.cached_tokens; DeepSeek:
    usage.prompt_cache_hit_tokens; nothing, a null or a non-count: None (unknown, never 0)."""
    from helpers.models.replies import parse_reply

    def cached(usage: object) -> int | None:
        body = {
            "choices": [
                {"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
            ],
            "usage": usage,
        }
        return parse_reply(json.dumps(body)).cached_tokens

    base = {"prompt_tokens": 2000, "completion_tokens": 5}
    assert cached({**base, "prompt_tokens_details": {"cached_tokens": 1920}}) == 1920
    assert cached({**base, "prompt_tokens_details": {"cached_tokens": 0}}) == 0
    assert (
        cached({**base, "prompt_cache_hit_tokens": 1536, "prompt_cache_miss_tokens": 464}) == 1536
    )
    assert cached({**base, "prompt_tokens_details": {"cached_tokens": None}}) is None
    assert cached({**base, "prompt_tokens_details": None}) is None
    assert cached({**base, "prompt_tokens_details": {"cached_tokens": "1920"}}) is None
    assert cached(base) is None
    assert cached(None) is None
