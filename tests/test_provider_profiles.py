"""Provider profiles (helpers/models/providers.py): each provider's rules as data, chosen by host or by
``.env``, and what they change on the wire: the form of tool-call ids, the provider fields that
go back, the completion limit every request carries, which the offline model honours.

The end-to-end checks against a scripted provider on loopback are in test_providers.py
(Mistral's ids, the limit's field and value); these check the rules themselves."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider import scripted_client

from helpers.context.compaction import SUMMARY_COMPLETION_LIMIT_TOKENS, model_summarizer
from helpers.models.llm import ConfigError, make_client, resolve_model
from helpers.models.offline import NO_PLAN_ANSWER, OfflineModel
from helpers.models.providers import (
    ALPHANUMERIC_9,
    CALL_HEX,
    DEFAULT,
    OFFLINE,
    PROFILES,
    UnknownProviderProfileError,
    profile_for,
    profile_named,
    profile_of,
)
from helpers.models.replies import (
    FIELDS_FROM,
    PROVIDER_FIELDS,
    TOOL_CALL_PROVIDER_FIELDS,
    for_endpoint,
)
from helpers.text.tokens import count_tokens

CASE1 = (
    "Generate a transcript of the YouTube video with video_id='123' and then pass it to "
    "Deep Check for analysis."
)


def test_every_profile_cites_its_sources_and_sends_a_limit_in_a_known_field() -> None:
    for profile in PROFILES.values():
        assert profile.sources and all(len(s) > 20 for s in profile.sources), profile.name
        assert profile.completion_limit_field in ("max_tokens", "max_completion_tokens")
        assert profile.completion_limit_tokens >= 1024, profile.name
        assert profile_named(profile.name.upper()) is profile


@pytest.mark.parametrize("profile", [p for p in PROFILES.values() if p.hosts], ids=lambda p: p.name)
def test_a_known_host_finds_its_profile(profile) -> None:
    for host in profile.hosts:
        assert profile_for(f"https://{host.upper()}/v1/") is profile


def test_other_endpoints_get_the_safe_default_and_no_url_is_openai() -> None:
    for url in ("http://127.0.0.1:11434/v1", "https://proxy.example.com/openai/v1", "nonsense"):
        assert profile_for(url) is DEFAULT
    assert profile_for(None) is PROFILES["openai"]
    assert DEFAULT.completion_limit() == {"max_tokens": 4096} and DEFAULT.fields_back is None
    with pytest.raises(UnknownProviderProfileError, match=r"the known ones are .*mistral"):
        profile_named("mistrall")


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.sampled_from([CALL_HEX, ALPHANUMERIC_9]))
def test_made_ids_have_their_form_and_do_not_repeat(form) -> None:
    made = [form.make() for _ in range(50)]
    assert all(form.accepts(i) for i in made) and len(set(made)) == len(made)


def test_a_router_takes_the_id_form_of_the_model_behind_it() -> None:
    router = PROFILES["openrouter"]
    assert router.ids_for("mistralai/mistral-small-3.2") is ALPHANUMERIC_9
    assert router.ids_for("MistralAI/Devstral") is ALPHANUMERIC_9
    assert router.ids_for("deepseek/deepseek-v3.2") is CALL_HEX
    assert PROFILES["mistral"].ids_for("anything") is ALPHANUMERIC_9


# -- which provider fields go back -----------------------------------------------------------

ALL_FIELDS = (*PROVIDER_FIELDS, *TOOL_CALL_PROVIDER_FIELDS)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    fields=st.sets(st.sampled_from(ALL_FIELDS)),
    own=st.booleans(),
    keep=st.none() | st.sets(st.sampled_from(ALL_FIELDS)).map(tuple),
)
def test_a_field_goes_back_only_to_its_own_endpoint_and_only_if_the_profile_takes_it(
    fields, own, keep
) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    call |= {f: {"v": f} for f in fields if f in TOOL_CALL_PROVIDER_FIELDS}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    message |= {f: f"v-{f}" for f in fields if f in PROVIDER_FIELDS}
    message[FIELDS_FROM] = "http://a.example/v1"
    before = copy.deepcopy(message)
    endpoint = "http://a.example/v1/" if own else "http://b.example/v1"
    sent = for_endpoint([message], endpoint, keep=keep)[0]
    got = {f for f in PROVIDER_FIELDS if f in sent} | {
        f for f in TOOL_CALL_PROVIDER_FIELDS if f in sent["tool_calls"][0]
    }
    expected = {f for f in fields if own and (keep is None or f in keep)}
    assert got == expected, f"fields {sorted(fields)}, own {own}, keep {keep}"
    assert FIELDS_FROM not in sent and message == before  # the input is never changed


def test_each_thinking_provider_takes_back_exactly_what_it_sent() -> None:
    assert PROFILES["deepseek"].fields_back == ("reasoning_content",)
    assert PROFILES["gemini"].fields_back == ("extra_content",)
    assert set(PROFILES["openrouter"].fields_back or ()) == {"reasoning", "reasoning_details"}
    for strict in ("mistral", "groq", "openai"):
        assert PROFILES[strict].fields_back == ()


# -- the offline model honours the limit a request carries -----------------------------------


def _complete(model: OfflineModel, prompt: str, limit: int | None) -> dict:
    request = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    if limit is not None:
        request["max_completion_tokens"] = limit
    return model.complete(request)


def _without_ids(choice: dict) -> dict:
    choice = copy.deepcopy(choice)
    for call in choice["message"].get("tool_calls") or []:
        call.pop("id")
    return choice


@settings(derandomize=True, max_examples=60, deadline=None)
@given(limit=st.integers(1, 150), prompt=st.sampled_from([CASE1, "Write a poem"]))
def test_the_offline_model_stops_at_the_completion_limit(limit, prompt) -> None:
    model = OfflineModel()
    full = _complete(model, prompt, None)
    answer = _complete(model, prompt, limit)
    full_tokens = full["usage"]["completion_tokens"]
    got_tokens = answer["usage"]["completion_tokens"]
    choice = answer["choices"][0]
    assert got_tokens <= limit, f"limit {limit}: {got_tokens} completion tokens"
    if full_tokens <= limit:
        assert _without_ids(choice) == _without_ids(full["choices"][0])
        assert got_tokens == full_tokens
        return
    assert choice["finish_reason"] == "length", f"limit {limit} < {full_tokens}"
    message, whole = choice["message"], full["choices"][0]["message"]
    if whole.get("content"):  # the text is cut, never changed
        assert whole["content"].startswith((message["content"] or "").rstrip("\ufffd"))
    for call in message.get("tool_calls") or []:
        original = whole["tool_calls"][0]["function"]["arguments"]
        assert original.startswith(call["function"]["arguments"].rstrip("\ufffd"))


def test_the_offline_model_refuses_a_limit_that_is_not_a_count() -> None:
    model = OfflineModel()
    for bad in (0, -3, 2.5, "100", True):
        status, body = model.respond(
            "POST",
            "/v1/chat/completions",
            json.dumps(
                {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": bad}
            ).encode(),
        )
        assert status == 400 and "max_tokens" in body["error"]["message"], bad
    assert count_tokens(NO_PLAN_ANSWER) > 20  # the property above really cuts text


# -- .env chooses, and every request carries a limit -----------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"OPENAI_API_KEY": "k", "OPENAI_MODEL": "gpt-4o"}, "openai"),
        ({"OPENROUTER_API_KEY": "k", "OPENROUTER_MODEL": "x/y"}, "openrouter"),
        (
            {"X_BASE_URL": "https://api.deepseek.com/v1", "X_API_KEY": "k", "X_MODEL": "m"},
            "deepseek",
        ),
        ({"X_BASE_URL": "http://127.0.0.1:11434/v1", "X_MODEL": "m"}, "default"),
        (
            {
                "X_BASE_URL": "http://127.0.0.1:11434/v1",
                "X_MODEL": "m",
                "X_PROVIDER_PROFILE": "ollama",
            },
            "ollama",
        ),
        ({}, "offline"),
    ],
    ids=["openai", "openrouter", "deepseek-by-host", "local", "local-named", "offline"],
)
def test_a_profile_gets_its_providers_rules(env, expected) -> None:
    name = {"openai": "openai", "openrouter": "openrouter", "offline": "offline"}.get(expected, "x")
    config = resolve_model(name, env=env)
    assert config.provider_profile.name == expected


def test_the_completion_limit_comes_from_env_and_is_checked() -> None:
    env = {"X_BASE_URL": "http://127.0.0.1:8080/v1", "X_MODEL": "m"}
    config = resolve_model("x", env={**env, "X_MAX_COMPLETION_TOKENS": "512"})
    assert config.provider_profile.completion_limit() == {"max_tokens": 512}
    offline = resolve_model("offline", env={"OFFLINE_MAX_COMPLETION_TOKENS": "64"})
    assert offline.provider_profile.completion_limit() == {"max_completion_tokens": 64}
    assert config.provider_profile.completion_limit_setting == "X_MAX_COMPLETION_TOKENS"
    assert config.provider_profile.completion_limit_set
    plain = resolve_model("offline", env={}).provider_profile
    assert plain.completion_limit() == OFFLINE.completion_limit() and not plain.completion_limit_set
    assert plain.completion_limit_setting == "OFFLINE_MAX_COMPLETION_TOKENS"
    for bad in ("0", "-5", "1e3", "lots"):
        with pytest.raises(ConfigError, match="X_MAX_COMPLETION_TOKENS"):
            resolve_model("x", env={**env, "X_MAX_COMPLETION_TOKENS": bad})
    with pytest.raises(ConfigError, match=r"X_PROVIDER_PROFILE.*known ones"):
        resolve_model("x", env={**env, "X_PROVIDER_PROFILE": "nope"})


def test_a_model_written_summary_asks_for_a_bounded_completion() -> None:
    client, requests = scripted_client([{"role": "assistant", "content": "short summary"}])
    groq = PROFILES["groq"].with_completion_limit(SUMMARY_COMPLETION_LIMIT_TOKENS)
    summarize = model_summarizer(client, "m", completion_limit=groq.completion_limit())
    assert "short summary" in summarize([], "heuristic")
    assert requests[0]["max_completion_tokens"] == SUMMARY_COMPLETION_LIMIT_TOKENS
    assert "max_tokens" not in requests[0]


def test_a_client_made_for_a_profile_keeps_its_rules() -> None:
    env = {
        "X_BASE_URL": "http://127.0.0.1:8080/v1",
        "X_MODEL": "m",
        "X_PROVIDER_PROFILE": "mistral",
    }
    client = make_client(resolve_model("x", env=env))
    assert profile_of(client).name == "mistral"
    assert profile_of(client).tool_call_ids is PROFILES["mistral"].tool_call_ids
    other, _requests = scripted_client([{"role": "assistant", "content": "hi"}])
    assert profile_of(other) is DEFAULT  # not made by make_client: by its host


def test_the_guide_lists_every_provider_profile_from_the_registry() -> None:
    """docs/models.md's table of profiles is written from ``PROFILES`` (``make figures``), so a
    new profile is listed with no prose edit."""
    from pathlib import Path

    from devtools.registry_docs import profiles_markdown
    from helpers.text.escaping import for_markdown

    guide = (Path(__file__).resolve().parent.parent / "docs" / "models.md").read_text("utf-8")
    block = guide.split("<!-- figures:profiles -->\n", 1)[1].split("\n<!-- /figures:profiles", 1)[0]
    assert block == profiles_markdown(), "docs/models.md's profiles are stale: run `make figures`"
    assert [line.split(" | ")[0] for line in block.splitlines()[2:]] == [
        f"| {for_markdown(name)}" for name in PROFILES
    ]
