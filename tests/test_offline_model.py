"""The offline reference model over the mock transport and over real loopback HTTP."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import urllib.request

import openai
import pytest
from hang import HANG_GUARD_S
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.cases.case_files import ALL_CASES, load_cases
from helpers.context.strategies import build_policy
from helpers.loop.agent import Agent, run_turn
from helpers.models.offline import (
    SUGGEST_READ_CHARS,
    SUGGESTIONS,
    OfflineModel,
    PlanError,
    no_plan_answer,
    normalize_prompt,
    offline_client,
    prompt_terms,
)
from helpers.models.offline_server import OfflineServer
from helpers.text.tokens import count_chat_tokens
from helpers.tooling.tools import default_registry

CASE1 = "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep Check for analysis."


def test_chat_completion_shape_and_usage(client) -> None:
    messages = [{"role": "user", "content": CASE1}]
    response = client.chat.completions.create(model="offline-reference", messages=messages)
    assert response.object == "chat.completion"
    call = response.choices[0].message.tool_calls[0]
    assert call.function.name == "yt_transcribe" and json.loads(call.function.arguments) == {
        "video_id": "123"
    }
    assert response.choices[0].finish_reason == "tool_calls" and call.id.startswith("call_")
    assert response.usage.prompt_tokens == count_chat_tokens(messages)
    assert response.usage.completion_tokens > 0


def test_unknown_prompt_gets_a_plain_answer(client) -> None:
    response = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Write a poem"}]
    )
    answer = response.choices[0].message.content
    assert answer == no_plan_answer([])  # it shares no telling word with any case prompt
    assert "no plan for this prompt" in answer and "configure a real model in .env" in answer
    assert "None of the prompts I know is near yours." in answer


# -- what it answers to a prompt it has no plan for: the nearest case prompts ----------------------

#: The model every suggestion test asks: the default book, every shipped case with a plan.
MODEL = OfflineModel()
CASES = {case.id: case for case in load_cases(ALL_CASES) if case.offline_plan}
#: Paraphrases users really sent, and the case each should suggest first.
PARAPHRASES = {
    "Transcribe video 123 and send the text to deep check": "case1",
    "Using run_sql, list the ISO 3166-2 subdivisions of Sweden (code, name and type).": "sql1",
}


def test_the_model_knows_exactly_the_case_prompts_and_their_ids() -> None:
    assert set(MODEL.plans) == {normalize_prompt(c.prompt) for c in CASES.values()}
    assert sorted(MODEL.case_ids.values()) == sorted(CASES)
    assert MODEL.plan_for("  " + CASES["case3"].prompt.replace(" ", "\n  ")) is not None
    assert MODEL.plan_for(CASES["case1"].prompt.lower()) is None  # word for word, case too


@pytest.mark.parametrize(("prompt", "case_id"), list(PARAPHRASES.items()))
def test_a_paraphrase_gets_its_case_first_over_the_real_client(client, prompt, case_id) -> None:
    response = client.chat.completions.create(
        model="offline-reference", messages=[{"role": "user", "content": prompt}]
    )
    answer = response.choices[0].message.content
    suggestions = MODEL.nearest(prompt)
    assert suggestions[0].case_id == case_id and len(suggestions) == SUGGESTIONS
    assert answer == no_plan_answer(suggestions)
    wanted = normalize_prompt(CASES[case_id].prompt)
    assert f"\n1. {case_id}: {wanted}\n" in answer  # first, with its id and its whole prompt
    assert (
        response.choices[0].finish_reason == "stop" and not response.choices[0].message.tool_calls
    )


def test_a_suggested_prompt_sent_as_it_is_runs_its_plan(client) -> None:
    first = MODEL.nearest(next(iter(PARAPHRASES)))[0]
    response = client.chat.completions.create(
        model="offline-reference", messages=[{"role": "user", "content": first.prompt}]
    )
    assert response.choices[0].message.tool_calls[0].function.name == "yt_transcribe"


def test_the_crude_stem_meets_inflections_and_keeps_numbers_and_quoted_values() -> None:
    pairs = [
        ("transcribe", "transcript"),
        ("Transcription", "transcripts"),
        ("save", "saving"),
        ("saved", "saves"),
        ("file", "files"),
        ("check", "checked"),
        ("pass", "passes"),
    ]
    for a, b in pairs:
        assert prompt_terms(a) == prompt_terms(b), (a, b)
    assert prompt_terms("video 123") != prompt_terms("video 999")
    assert "transcript.txt" in prompt_terms("named 'transcript.txt'")
    assert "123" in prompt_terms("video_id='123'") and "3166" in prompt_terms("ISO 3166-2")


def test_a_model_given_plans_suggests_them_and_learns_added_ones() -> None:
    model = OfflineModel({"Fetch the weather for Oslo": [{"answer": "rain"}]})
    assert [(s.case_id, s.prompt) for s in model.nearest("weather in oslo?")] == [
        (None, "Fetch the weather for Oslo")
    ]
    assert model.nearest("Tell me about Bergen") == []
    model.add_plan("Fetch the tides for Bergen", [{"answer": "high"}], case_id="tides")
    assert [s.line() for s in model.nearest("Tell me about Bergen")] == [
        "tides: Fetch the tides for Bergen"
    ]


#: Words that are in no case prompt: added to a prompt they change no suggestion.
FILLERS = ("please", "kindly", "thanks", "quickly", "now")
_TRAILING = ".,;:?!"


@st.composite
def reworded(draw: st.DrawFn) -> tuple[str, str]:
    """A case id and its prompt lightly reworded: each word's case changed, the words shuffled,
    trailing punctuation dropped or changed, filler words added, the whitespace changed."""
    case_id = draw(st.sampled_from(sorted(CASES)))
    words = CASES[case_id].prompt.split()
    out = []
    for word in words:
        case = draw(st.sampled_from(["keep", "lower", "upper", "title"]))
        word = word if case == "keep" else getattr(word, case)()
        if word[-1] in _TRAILING and draw(st.booleans()):
            word = word[:-1] + draw(st.sampled_from(["", *_TRAILING]))
        out.append(word)
    out += draw(st.lists(st.sampled_from(FILLERS), max_size=4))
    random.Random(draw(st.integers(0, 2**32))).shuffle(out)
    return case_id, draw(st.sampled_from([" ", "  ", "\n", " \t"])).join(out)


def test_the_fillers_are_words_no_case_prompt_has() -> None:
    known = set().union(*(prompt_terms(p) for p in MODEL.plans))
    assert not known & prompt_terms(" ".join(FILLERS))


@settings(derandomize=True, max_examples=200, deadline=None)
@given(reworded())
def test_a_reworded_case_prompt_suggests_its_case_first(drawn) -> None:
    case_id, prompt = drawn
    suggestions = MODEL.nearest(prompt)
    assert suggestions and suggestions[0].case_id == case_id, (prompt, suggestions[:2])
    assert suggestions[0].prompt == normalize_prompt(CASES[case_id].prompt)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.text(max_size=300) | st.from_regex(r"[\w '\"`.,-]{0,200}", fullmatch=True))
def test_any_text_gets_at_most_three_known_prompts_best_first(text) -> None:
    suggestions = MODEL.nearest(text)
    assert len(suggestions) <= SUGGESTIONS
    assert all(s.prompt in MODEL.plans and 0 < s.score <= 1 for s in suggestions)
    assert [s.score for s in suggestions] == sorted((s.score for s in suggestions), reverse=True)
    assert len({s.prompt for s in suggestions}) == len(suggestions)
    assert MODEL.nearest(text) == suggestions  # deterministic
    assert no_plan_answer(suggestions).count("\n") == 1 + bool(suggestions) + len(suggestions)


def test_a_process_with_another_hash_seed_suggests_the_same() -> None:
    prompt = next(iter(PARAPHRASES))
    code = (
        "from helpers.models.offline import OfflineModel; "
        f"print([s.to_json() for s in OfflineModel().nearest({prompt!r})])"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        for seed in ("1", "2")
    ]
    seen = {run.communicate(timeout=HANG_GUARD_S)[0] for run in runs}
    assert len(seen) == 1 and "case1" in seen.pop()


@pytest.mark.parametrize(
    "hostile",
    [
        "'a' " * 250_000,
        "x" * 1_000_000,
        "transcribe " * 100_000,
        "\u00df\u0130" * 500_000,  # casefold grows these
        "".join(chr(0x4E00 + i % 20_000) for i in range(1_000_000)),
    ],
    ids=["quotes", "one-word", "repeated", "casefold-grows", "cjk"],
)
def test_a_hostile_megabyte_is_bounded_in_time_and_reads_only_its_head(hostile) -> None:
    start = time.process_time()  # CPU seconds: the work, whatever the machine's load
    suggestions = MODEL.nearest(hostile)
    assert time.process_time() - start < 1.0
    assert len(suggestions) <= SUGGESTIONS
    assert suggestions == MODEL.nearest(hostile[:SUGGEST_READ_CHARS])  # the rest is never read


def test_a_megabyte_prompt_gets_its_suggestions_over_the_real_client() -> None:
    prompt = "Transcribe video 123 and send the text to deep check. " + "x" * 1_000_000
    model = OfflineModel(context_window_tokens=10_000_000)
    response = offline_client(model).chat.completions.create(
        model="offline-reference", messages=[{"role": "user", "content": prompt}]
    )
    answer = response.choices[0].message.content
    assert answer.startswith("I am the offline reference model") and "\n1. case1: " in answer
    assert len(answer) < 2_000  # the prompt is never echoed


def test_orphan_tool_message_is_rejected_like_the_api(client) -> None:
    with pytest.raises(openai.BadRequestError, match="must be a response to a preceding"):
        client.chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "x"},
                {"role": "tool", "tool_call_id": "call_1", "content": "y"},
            ],
        )


def test_a_failed_tool_makes_the_model_say_so(registry, store) -> None:
    model = OfflineModel(
        {
            "p": [
                {"call": "get_page", "args": {"url": "https://nowhere.invalid/"}},
                {"answer": "{result1}"},
            ]
        }
    )
    rec = run_turn("p", Agent(offline_client(model), "m", build_policy("box"), registry, store))
    assert rec.ok and "get_page returned an error" in rec.answer and "404" in rec.answer


def test_bad_plans_are_refused() -> None:
    with pytest.raises(PlanError, match="must be an answer"):
        OfflineModel({"p": [{"call": "x"}]})
    with pytest.raises(PlanError, match="exactly one of"):
        OfflineModel({"p": [{"jump": 1}, {"answer": "a"}]})


def test_the_same_turn_over_loopback_http(registry, store) -> None:
    with OfflineServer() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.base_url + "/models") as reply:
            assert json.load(reply)["data"][0]["id"] == "offline-reference"
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        rec = run_turn(
            CASE1, Agent(client, "offline-reference", build_policy("box"), registry, store)
        )
    assert rec.ok and rec.tool_calls[0].result.startswith("internal://")
    assert "received 10" in rec.answer


def test_server_listens_only_on_loopback() -> None:
    with pytest.raises(ValueError, match="loopback"):
        OfflineServer(host="0.0.0.0")


def test_a_request_over_the_context_window_is_refused_as_openai_does(store) -> None:
    model = OfflineModel(context_window_tokens=3_000)
    raw = offline_client(model).chat.completions.with_raw_response
    messages = [{"role": "user", "content": "word " * 5_000}]
    with pytest.raises(openai.BadRequestError) as refused:
        raw.create(model="offline-reference", messages=messages)
    error = refused.value.body
    assert refused.value.status_code == 400 and refused.value.code == "context_length_exceeded"
    assert error["param"] == "messages" and error["type"] == "invalid_request_error"
    assert error["message"].startswith("This model's maximum context length is 3000 tokens.")
    record = run_turn(
        "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep "
        "Check for analysis.",
        Agent(
            offline_client(model),
            "offline-reference",
            build_policy("inline"),
            default_registry(),
            store,
        ),
    )
    assert record.status == "context_exceeded" and "context window" in record.error
    assert [t.name for t in record.tool_calls] == ["yt_transcribe"]  # it failed on the next call


def test_large_cases_overflow_inline_and_pass_boxed(tmp_path) -> None:
    """The large cases at a tenth of their size, in a window scaled down with them."""
    env = {
        **os.environ,
        "WORKBOOK_PROFILE": "offline",
        "OFFLINE_CONTEXT_WINDOW": "12000",
        "WORKBOOK_DOCUMENT_SCALE": "0.1",
        "WORKBOOK_VAR_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.cli",
            "cases",
            "data/cases/large/*.md",
            "--strategy",
            "all",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    runs = json.loads(done.stdout)["runs"]
    by = {(r["case"], r["strategy"]): r for r in runs}
    for case in (
        "unicode_save",
        "unicode_lookup",
        "unicode_check",
        "unicode_fanout",
        "iso639_save",
        "sql_all",
    ):
        assert by[(case, "box")]["passed"], by[(case, "box")]["reasons"]
        assert by[(case, "inline")]["status"] == "context_exceeded", case
        assert not by[(case, "truncate")]["passed"], case


def test_the_docs_state_the_limits_the_code_has() -> None:
    from pathlib import Path

    from helpers.cli.exits import EXIT_NO_PLAN

    docs = (Path(__file__).parent.parent / "docs" / "models.md").read_text()
    section = " ".join(docs.split("## The offline reference model", 1)[1].split())
    assert f"at most {SUGGESTIONS}, best first" in section
    assert f"Only the first {SUGGEST_READ_CHARS:,} characters of a prompt" in section
    assert f"exit code {EXIT_NO_PLAN}" in section
