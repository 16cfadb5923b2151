"""Providers as a room meets them (issue 37): a completion limit that fits the model and the
account, every provider's own reason shown, threads that replay on any provider, Azure OpenAI
and reasoning models. Each behaviour is played by the scripted provider on loopback
(tests/provider.py) in the provider's own words, and ends in its verdict through
``workbook ask --json``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider import (
    MISTRAL_IDS,
    SECRET,
    TRANSCRIBE,
    Answer,
    ScriptedProvider,
    completion,
    last_tool,
    limit_rules,
    openai_error,
    server_prompt_tokens,
    tool_call,
    tool_messages,
)

from helpers.cli.exits import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE
from helpers.models.providers import PROFILES


def task(request: dict[str, Any]) -> dict[str, Any]:
    """The transcript task, read from the conversation (not from the request's number, which
    a refused request would shift): transcribe, pass the result on, answer."""
    done = tool_messages(request)
    if not done:
        return TRANSCRIBE
    if len(done) == 1:
        ref = last_tool({"messages": done[:1]})
        return completion(tool_calls=[tool_call("deep_check", {"text": ref}, "call_p2")])
    return completion("Deep Check is done.")


def refused(provider: ScriptedProvider) -> int:
    """Requests the provider answered with an error (the rest were model calls)."""
    return len(provider.chat_requests) - len(provider.answered)


@pytest.fixture(autouse=True)
def _count_answers(monkeypatch):
    """Count the provider's successful answers (``provider.answered``)."""
    original = ScriptedProvider._respond

    def respond(self, request):
        answer = original(self, request)
        if not hasattr(self, "answered"):
            self.answered = []
        if answer.status == 200 and request.path.split("?")[0].endswith("/chat/completions"):
            self.answered.append(answer)
        return answer

    monkeypatch.setattr(ScriptedProvider, "_respond", respond)


def limits_of(provider: ScriptedProvider) -> list[int]:
    return [
        body.get("max_tokens") or body.get("max_completion_tokens")
        for body in provider.chat_requests
    ]


# -- 1. a completion limit that fits ------------------------------------------------------------


@pytest.mark.parametrize("style", ["vllm", "vllm-old"])
def test_vllm_with_a_4096_token_window_completes_and_says_its_limit_once(ask, style) -> None:
    """vLLM started with --max-model-len 4096 refuses the profile's 4,096-token limit on any
    prompt: one refusal, the turn goes on, never context_exceeded, and one notice names the
    setting."""
    with ScriptedProvider([limit_rules(task, style=style, window=4096)]) as provider:
        run = ask(provider)
    assert run.code == EXIT_OK and run.data["status"] == "ok", run.data
    assert refused(provider) == 1
    notices = run.data["notices"]
    assert len(notices) == 1 and "LOCAL_CONTEXT_WINDOW=4096" in notices[0], notices
    for body, limit in zip(provider.chat_requests[1:], limits_of(provider)[1:], strict=True):
        assert server_prompt_tokens(body) + limit <= 4096


def test_groq_free_tier_counts_the_limit_against_its_tokens_per_minute(ask) -> None:
    """Groq's free tier: prompt + limit within 6,000 TPM, else 413. With the transcript inline
    (about 2,500 tokens) the profile's 4,096 does not fit; the turn completes. A prompt that
    leaves no room at all is the account's limit, not the model's window."""

    def transcribe_then_answer(request: dict[str, Any]) -> dict[str, Any]:
        return completion("It is about dogs.") if tool_messages(request) else TRANSCRIBE

    steps = [limit_rules(transcribe_then_answer, style="groq-tpm", per_request=6000)]
    with ScriptedProvider(steps) as provider:
        run = ask(provider, "--strategy", "inline", env={"LOCAL_PROVIDER_PROFILE": "groq"})
    assert run.data["status"] == "ok", (run.data["error"], limits_of(provider))
    assert refused(provider) == 1
    assert len(run.data["notices"]) == 1 and "6,000 tokens per request" in run.data["notices"][0]
    assert "LOCAL_CONTEXT_WINDOW=6000" in run.data["notices"][0]
    with ScriptedProvider([limit_rules(task, style="groq-tpm", per_request=6000)]) as provider:
        run = ask(provider, "--strategy", "inline", env={"LOCAL_PROVIDER_PROFILE": "groq"})
    assert run.data["status"] == "error", run.data  # the transcript passed on, twice over
    assert "6,000 tokens per request" in run.data["error"] and "context" not in run.data["error"]


@pytest.mark.parametrize(
    ("model", "profile", "style", "most_output", "window"),
    [
        ("gpt-3.5-turbo", "openai", "openai-output", 4096, None),
        ("gpt-4-turbo-2024-04-09", "openai", "openai-output", 4096, None),
        ("gpt-4-0613", "openai", "openai-window", None, 8192),
        ("claude-3-haiku-20240307", "anthropic", "anthropic", 4096, None),
    ],
)
def test_an_older_model_gets_its_own_limit_from_the_model_table(
    ask, model, profile, style, most_output, window
) -> None:
    """gpt-3.5-turbo and gpt-4-turbo write at most 4,096 tokens, gpt-4 has an 8k window,
    claude-3-haiku writes 4,096: each completes with no setting changed and says which limit."""
    steps = [limit_rules(task, style=style, most_output=most_output, window=window)]
    env = {"LOCAL_MODEL": model, "LOCAL_PROVIDER_PROFILE": profile}
    with ScriptedProvider(steps) as provider:
        run = ask(provider, env=env)
    assert run.data["status"] == "ok", run.data
    assert run.data["notices"] and len(set(run.data["notices"])) == len(run.data["notices"])
    assert all("LOCAL_" in n for n in run.data["notices"])
    if most_output:
        assert refused(provider) == 0 and max(limits_of(provider)) <= most_output
    else:  # the window: the server's tokenizer counts more than the client's, once
        assert refused(provider) <= 1


def test_a_prompt_that_leaves_no_room_is_context_exceeded(ask) -> None:
    """With a 1,000-token window the inline transcript alone does not fit: no retry helps."""
    with ScriptedProvider([limit_rules(task, style="vllm", window=1000)]) as provider:
        run = ask(provider, "--strategy", "inline")
    assert run.data["status"] == "context_exceeded", run.data
    assert "leaves fewer than" in run.data["error"]


def test_a_limit_refused_twice_names_the_setting(ask) -> None:
    always = openai_error(
        "max_tokens is too large: 99. This model supports at most 512 completion tokens, "
        "whereas you provided 99."
    )
    with ScriptedProvider([lambda r: always]) as provider:
        run = ask(provider)
    assert run.code == EXIT_FAILED and run.data["status"] == "error"
    assert "refused the completion limit again" in run.data["error"]
    assert "LOCAL_MAX_COMPLETION_TOKENS" in run.data["error"]
    assert len(provider.chat_requests) == 2


def test_reasoning_that_spends_the_whole_limit_says_so(ask) -> None:
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 4096,
        "total_tokens": 4216,
        "completion_tokens_details": {"reasoning_tokens": 4096},
    }
    final = completion("", finish_reason="length", usage=usage)
    with ScriptedProvider([lambda r: final]) as provider:
        run = ask(provider)
    assert run.code == EXIT_INCOMPLETE and run.data["status"] == "incomplete"
    assert "reasoning" in run.data["error"] and "LOCAL_MAX_COMPLETION_TOKENS" in run.data["error"]


def test_a_reasoning_model_behind_a_proxy_gets_the_field_it_reads(ask) -> None:
    """An o-series model behind a server the client does not know: "Use
    'max_completion_tokens' instead" is learned, and the notice names the openai profile."""
    steps = [limit_rules(task, style="reasoning", field="max_completion_tokens")]
    with ScriptedProvider(steps) as provider:
        run = ask(provider, env={"LOCAL_MODEL": "o3-mini"})
    assert run.data["status"] == "ok", run.data
    assert refused(provider) == 1
    assert "LOCAL_PROVIDER_PROFILE=openai" in run.data["notices"][0]
    assert all("max_completion_tokens" in b for b in provider.chat_requests[1:])


def test_a_reasoning_model_on_its_profile_gets_its_rules_from_the_start(ask) -> None:
    """max_completion_tokens, no temperature, the instructions as developer: no refusal."""
    steps = [limit_rules(task, style="reasoning", field="max_completion_tokens")]
    env = {"LOCAL_MODEL": "o3-mini", "LOCAL_PROVIDER_PROFILE": "openai", "LOCAL_TEMPERATURE": "0.2"}
    with ScriptedProvider(steps) as provider:
        run = ask(provider, env=env)
    assert run.data["status"] == "ok" and refused(provider) == 0, run.data
    for body in provider.chat_requests:
        assert "temperature" not in body and "max_tokens" not in body
        assert "system" not in {m["role"] for m in body["messages"]}
    assert provider.chat_requests[0]["messages"][0]["role"] == "developer"


# -- 2. every provider's own reason ---------------------------------------------------------------

UPSTREAM_RAW = json.dumps(
    {
        "error": {
            "type": "invalid_request_error",
            "message": "Model 'moonshotai/kimi-k2.6' supports at most 1 image per prompt.",
        }
    }
)


@pytest.mark.parametrize(
    ("status", "metadata", "expected"),
    [
        (400, {"raw": UPSTREAM_RAW, "provider_name": "Crucible"}, "Crucible said: Model"),
        (
            429,
            {
                "raw": "z-ai/glm-4.6 is temporarily rate-limited upstream. Please retry shortly.",
                "provider_name": "BaseTen",
            },
            "BaseTen said: z-ai/glm-4.6 is temporarily rate-limited upstream",
        ),
    ],
    ids=["400-json-raw", "429-text-raw"],
)
def test_openrouters_upstream_reason_is_shown(ask, status, metadata, expected) -> None:
    """OpenRouter's "Provider returned error" carries the upstream's reason in
    error.metadata.raw (diegosouzapw/OmniRoute#3044, open-webui/computer#293)."""
    body = {"error": {"message": "Provider returned error", "code": status, "metadata": metadata}}
    with ScriptedProvider([lambda r: Answer(body, status=status)]) as provider:
        run = ask(provider)
    assert run.data["status"] == "error" and expected in run.data["error"], run.data["error"]


def test_openrouters_no_tool_endpoints_gets_its_own_hint(ask) -> None:
    body = {"error": {"message": "No endpoints found that support tool use.", "code": 404}}
    with ScriptedProvider([lambda r: Answer(body, status=404)]) as provider:
        run = ask(provider)
    assert "supported_parameters=tools" in run.data["error"]
    assert "check the model name" not in run.data["error"]


@pytest.mark.parametrize(
    ("status", "body", "hint"),
    [
        (
            429,
            {
                "error": {
                    "message": "Rate limit exceeded: free-models-per-day. Add 10 credits to "
                    "unlock 1000 free model requests per day",
                    "code": 429,
                }
            },
            "no retry helps before it resets",
        ),
        (
            500,
            {"error": {"code": 500, "message": "tools param requires --jinja flag"}},
            "start llama-server with --jinja",
        ),
    ],
    ids=["openrouter-free-daily", "llama.cpp-no-jinja"],
)
def test_an_error_no_retry_fixes_is_not_retried(ask, status, body, hint) -> None:
    with ScriptedProvider([lambda r: Answer(body, status=status)]) as provider:
        run = ask(provider, "--max-retries", "2")
    assert run.data["status"] == "error" and hint in run.data["error"], run.data["error"]
    assert len(provider.chat_requests) == 1


def test_groqs_failed_generation_is_shown(ask) -> None:
    failed = '<function=yt_transcribe{"video_id": 123}</function>'
    error = openai_error(
        "Failed to call a function. Please adjust your prompt. See 'failed_generation' for "
        "more details.",
        code="tool_use_failed",
        failed_generation=failed,
    )
    with ScriptedProvider([lambda r: error]) as provider:
        run = ask(provider, env={"LOCAL_PROVIDER_PROFILE": "groq"})
    assert run.data["status"] == "error"
    assert failed in run.data["error"] and "could not parse" in run.data["error"]


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL"])
def test_geminis_own_finish_reasons_are_their_own_verdict(ask, reason) -> None:
    with ScriptedProvider([lambda r: completion("", finish_reason=reason)]) as provider:
        run = ask(provider)
    assert run.data["status"] == "incomplete"
    assert f"finish_reason '{reason}'" in run.data["error"]
    assert "empty" not in run.data["error"]


# -- 3. threads that replay on any provider ---------------------------------------------------


@pytest.mark.parametrize("profile", sorted(set(PROFILES) - {"offline"}))
def test_a_thread_stopped_after_tool_results_continues_on_each_profile(ask, profile) -> None:
    """The first turn stops after its tool ran (--max-iterations 1): the thread ends with a
    tool message. The next turn continues it; Mistral refuses a user message right after a
    tool message (zed-industries/zed#37021), and its profile sends one between."""
    mistral = profile == "mistral"
    env = {"LOCAL_PROVIDER_PROFILE": profile}
    flags = {"ids": MISTRAL_IDS if mistral else None, "tool_order": mistral, "strict": mistral}
    with ScriptedProvider([lambda r: TRANSCRIBE], **flags) as provider:
        first = ask(provider, "--max-iterations", "1", env=env)
    assert first.data["status"] == "max_iterations", first.data
    thread = first.data["thread_id"]
    with ScriptedProvider([lambda r: completion("Passed on.")], **flags) as provider:
        second = ask(provider, "--thread", thread, env=env, prompt="Now pass it on.")
    assert second.data["status"] == "ok", second.data
    roles = [m["role"] for m in provider.chat_requests[0]["messages"]]
    assert roles[-1] == "user" and roles[-2] == ("assistant" if mistral else "tool")


# -- 4. Azure OpenAI, and headers of a profile's own ---------------------------------------------


def azure(prefix: str = "/openai/deployments/dep-4o") -> ScriptedProvider:
    """A scripted Azure OpenAI deployment: the api-version query and the api-key header are
    required (Azure answers 404 "Resource not found" and 401 otherwise)."""

    def step(request: dict[str, Any]) -> Any:
        return task(request)

    provider = ScriptedProvider([step], prefix=prefix)
    original = provider._respond

    def respond(request):
        if "api-version=2024-10-21" not in request.path:
            return Answer({"error": {"code": "404", "message": "Resource not found"}}, 404)
        if request.headers.get("api-key") != SECRET or "authorization" in {
            k.lower() for k in request.headers
        }:
            return Answer({"error": {"code": "401", "message": "Access denied"}}, 401)
        return original(request)

    provider._respond = respond
    return provider


def test_an_azure_profile_completes_a_turn_with_its_api_version(ask) -> None:
    with azure() as provider:
        root = provider.base_url.removesuffix("/openai/deployments/dep-4o")
        env = {
            "WORKBOOK_PROFILE": "azure",
            "AZURE_BASE_URL": root,
            "AZURE_API_KEY": SECRET,
            "AZURE_MODEL": "dep-4o",
        }
        run = ask(provider, env=env)
    assert run.code == EXIT_OK and run.data["status"] == "ok", run.data
    assert all("max_completion_tokens" in b for b in provider.chat_requests)


def test_an_azure_deployment_url_pasted_whole_says_what_to_set(ask) -> None:
    url = "https://res.openai.azure.com/openai/deployments/dep-4o/chat/completions?api-version=2024-10-21"
    run = ask(None, env={"LOCAL_BASE_URL": url})
    assert run.code == EXIT_USAGE
    assert (
        "Azure OpenAI deployment" in run.data["error"] and "LOCAL_MODEL=dep-4o" in run.data["error"]
    )


def test_extra_headers_reach_the_profiles_endpoint_and_no_output(ask) -> None:
    project = "ocid1.generativeaiproject.oc1.iad.secretproject"
    headers = json.dumps({"OpenAI-Project": project})
    with ScriptedProvider([task]) as provider:
        run = ask(provider, env={"LOCAL_EXTRA_HEADERS": headers})
    assert run.data["status"] == "ok"
    sent = [{k.lower(): v for k, v in r["headers"].items()} for r in provider.requests]
    assert all(h.get("openai-project") == project for h in sent)
    assert project not in run.out


@pytest.mark.parametrize("bad", ['["x"]', '{"Bad Name": "v"}', '{"X": "line\\nbreak"}', "{"])
def test_bad_extra_headers_are_a_usage_error(ask, bad) -> None:
    run = ask(None, env={"LOCAL_BASE_URL": "http://127.0.0.1:9/v1", "LOCAL_EXTRA_HEADERS": bad})
    assert run.code == EXIT_USAGE and "LOCAL_EXTRA_HEADERS" in run.data["error"]


def test_the_terminal_says_the_learned_limit_once(monkeypatch, capsys, tmp_path) -> None:
    """Without --json, the notice is one line before the answer."""
    from helpers.cli import main

    with ScriptedProvider([limit_rules(task, style="vllm", window=4096)]) as provider:
        monkeypatch.setenv("WORKBOOK_PROFILE", "local")
        monkeypatch.setenv("LOCAL_MODEL", "scripted-model")
        monkeypatch.setenv("LOCAL_BASE_URL", provider.base_url)
        db = f"sqlite:///{tmp_path / 'store.sqlite'}"
        code = main(["ask", "Transcribe video 123.", "--db", db, "--max-retries", "0"])
    out = capsys.readouterr().out
    assert code == EXIT_OK and out.count("Note:") == 1 and "LOCAL_CONTEXT_WINDOW" in out


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**30),
    st.integers(min_value=0, max_value=10**30),
    st.sampled_from(["vllm", "requested", "output", "anthropic", "groq"]),
    st.integers(min_value=1, max_value=200_000),
)
def test_any_numbers_a_provider_names_are_read_within_bounds(a, b, form, sent) -> None:
    """A provider's message is untrusted: whatever numbers it names (0, huge), reading and
    learning never raise, and every limit sent stays a whole number from 1 to the bound."""
    from helpers.models.completion_limit import MAX_TOKENS_READ, CompletionBudget, read_refusal

    messages = {
        "vllm": f"is too large: {a}. This model's maximum context length is {b} tokens and "
        f"your request has {a} input tokens",
        "requested": f"maximum context length is {b} tokens. However, you requested {a} tokens "
        f"({a} in the messages, {b} in the completion)",
        "output": f"This model supports at most {a} completion tokens",
        "anthropic": f"max_tokens: {b} > {a}, which is the maximum allowed number of output tokens",
        "groq": f"Request too large for model `m` on tokens per minute (TPM): Limit {a}, "
        f"Requested {b}, please reduce",
    }
    refusal = read_refusal(413 if form == "groq" else 400, messages[form], sent)
    if refusal is None:  # a number that is no real one: not read as a refusal at all
        assert min(a, b) == 0 or max(a, b) >= MAX_TOKENS_READ
        return
    assert refusal.tokens is None or 0 < refusal.tokens < MAX_TOKENS_READ
    budget = CompletionBudget("max_tokens", 4096, "X_MAX_COMPLETION_TOKENS")
    learned = budget.learn(refusal, sent, 500)
    limits = [budget.request_limit(500)["max_tokens"]]
    if not learned.prompt_too_long:
        limits.append(budget.retry_limit(refusal, 500)["max_tokens"])
    assert all(1 <= n <= 4096 for n in limits), limits


def test_a_reasoning_model_refuses_the_temperature_too_and_the_turn_goes_on(ask) -> None:
    """Behind a proxy, an o-series model refuses max_tokens and then the temperature: each is
    learned once, and the notes name LOCAL_TEMPERATURE and the openai profile."""
    steps = [limit_rules(task, style="reasoning", field="max_completion_tokens")]
    env = {"LOCAL_MODEL": "o3-mini", "LOCAL_TEMPERATURE": "0.2"}
    with ScriptedProvider(steps) as provider:
        run = ask(provider, env=env)
    assert run.data["status"] == "ok", run.data
    assert refused(provider) == 2
    notes = " ".join(run.data["notices"])
    assert "LOCAL_TEMPERATURE is not sent" in notes and "LOCAL_PROVIDER_PROFILE=openai" in notes


def test_a_temperature_the_family_refuses_is_said_once_not_sent(ask) -> None:
    steps = [limit_rules(task, style="reasoning", field="max_completion_tokens")]
    env = {
        "LOCAL_MODEL": "gpt-5-mini",
        "LOCAL_PROVIDER_PROFILE": "openai",
        "LOCAL_TEMPERATURE": "0",
    }
    with ScriptedProvider(steps) as provider:
        run = ask(provider, env=env)
    assert run.data["status"] == "ok" and refused(provider) == 0
    assert sum("LOCAL_TEMPERATURE" in n for n in run.data["notices"]) == 1


def test_a_mistral_model_behind_openrouter_keeps_mistrals_order(ask) -> None:
    """OpenRouter passes Mistral's rule on (zed-industries/zed#37021): the openrouter profile
    sends Mistral's models a message between tool results and the next user message."""
    env = {"LOCAL_PROVIDER_PROFILE": "openrouter", "LOCAL_MODEL": "mistralai/mistral-medium-3"}
    flags = {"ids": MISTRAL_IDS, "tool_order": True}
    with ScriptedProvider([lambda r: TRANSCRIBE], **flags) as provider:
        first = ask(provider, "--max-iterations", "1", env=env)
    with ScriptedProvider([lambda r: completion("Passed on.")], **flags) as provider:
        second = ask(provider, "--thread", first.data["thread_id"], env=env, prompt="Go on.")
    assert second.data["status"] == "ok", second.data


def test_mistrals_order_refusal_names_the_profile_to_set(ask) -> None:
    with ScriptedProvider([lambda r: TRANSCRIBE]) as provider:
        first = ask(provider, "--max-iterations", "1")
    with ScriptedProvider([lambda r: completion("x")], tool_order=True) as provider:
        second = ask(provider, "--thread", first.data["thread_id"], prompt="Go on.")
    assert second.data["status"] == "error"
    assert "LOCAL_PROVIDER_PROFILE=mistral" in second.data["error"]


def test_a_window_refusal_never_caps_later_answers(ask) -> None:
    """One big prompt must not lower the limit of every later request: the window leaves each
    request the room its own prompt leaves."""
    from helpers.models.completion_limit import CompletionBudget, LimitRefusal

    budget = CompletionBudget("max_tokens", 4096, "X_MAX_COMPLETION_TOKENS", "X")
    learned = budget.learn(LimitRefusal("window", 8192, 7000), 4096, 7000)
    assert learned.note and "X_CONTEXT_WINDOW=8192" in learned.note
    assert budget.request_limit(500)["max_tokens"] == 4096
    assert budget.learn(LimitRefusal("window", 8192, 7500), 700, 7400).note is None


@pytest.mark.parametrize(
    "raw", ["[" * 5000 + "]" * 5000, "NaN", "1e999999", '{"error": {"message": ' * 3000]
)
def test_a_strange_upstream_reason_is_shown_as_sent(ask, raw) -> None:
    body = {"error": {"message": "Provider returned error", "code": 400, "metadata": {"raw": raw}}}
    with ScriptedProvider([lambda r: Answer(body, status=400)]) as provider:
        run = ask(provider)
    assert run.data["status"] == "error" and "Provider returned error" in run.data["error"]
    assert "internal error" not in run.data["error"] and "nan" not in run.data["error"]
    assert raw[:20] in run.data["error"]
