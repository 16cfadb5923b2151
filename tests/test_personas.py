"""Offline personas: each makes its mistake, the guard named for it catches it, and without the
guard the mistake would have reached a tool (shown with a client that lacks it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hang import HANG_GUARD_S

from helpers.cases.case_files import load_cases
from helpers.evaluation.runs import run_case
from helpers.evaluation.validation import case_tool_name
from helpers.models.offline import OfflineModel, WireError, offline_client
from helpers.models.personas import (
    MISTAKE_PERSONAS,
    PERSONAS,
    Persona,
    get_persona,
    persona_for_model,
)

CASES = {case.id: case for case in load_cases()}


@pytest.mark.parametrize("name", MISTAKE_PERSONAS)
def test_each_persona_is_caught_by_its_guard_or_costs_tokens(store, client, name) -> None:
    persona = PERSONAS[name]
    ideal = run_case(CASES["case1"], persona.strategy, client=client, model="m", store=store)
    run = run_case(
        CASES["case1"], persona.strategy, client=client, model=persona.model_name, store=store
    )
    assert run.persona == name and run.record.status == "ok"
    guards = run.record.guard_counts()
    if persona.guard is None:  # reads-everything: nothing refuses it, it only costs
        assert guards == {} and not run.passed
        assert run.record.usage()["prompt_tokens"] > 2 * ideal.record.usage()["prompt_tokens"]
        assert "internal_resource_read" in [case_tool_name(t) for t in run.record.tool_calls]
    else:
        assert guards.get(persona.guard, 0) >= 1, guards
        assert run.passed, run.validation.reasons  # caught, corrected, byte-exact
        assert run.validation.sinks_exact is True


def test_the_mistakes_are_real(store, client) -> None:
    """What each persona sends, before the guard: the wrong bytes it would have routed."""
    seen = {}
    for name in ("backticks", "embeds", "invents"):
        run = run_case(
            CASES["case1"], "box", client=client, model=PERSONAS[name].model_name, store=store
        )
        first_sink = next(t for t in run.record.tool_calls if t.name == "deep_check")
        seen[name] = json.loads(first_sink.arguments)["text"]
    assert seen["backticks"].startswith("`internal://") and seen["backticks"].endswith("`")
    assert seen["embeds"].startswith("Here is the text: internal://")
    assert seen["invents"] == "internal://Zx81Qa0pLm3v"
    truncate = run_case(
        CASES["case1"],
        "truncate",
        client=client,
        model=PERSONAS["passes-preview"].model_name,
        store=store,
    )
    first_sink = next(t for t in truncate.record.tool_calls if t.name == "deep_check")
    assert "full output: fetch_tool_output(tool_call_id=" in first_sink.arguments


def test_deepseek_persona_refuses_a_client_that_drops_reasoning() -> None:
    """A loop that echoes only role, content and tool_calls (notebook 01's first version) gets
    DeepSeek's HTTP 400 on its second request."""
    model = OfflineModel()
    persona = "offline-reference:deepseek-thinking"
    messages = [{"role": "user", "content": CASES["case1"].prompt}]
    first = model.complete({"model": persona, "messages": messages})["choices"][0]["message"]
    assert first["reasoning_content"] and first["tool_calls"]
    call = first["tool_calls"][0]
    dropped = {"role": "assistant", "content": None, "tool_calls": first["tool_calls"]}
    result = {"role": "tool", "tool_call_id": call["id"], "content": "x"}
    with pytest.raises(WireError, match=r"Missing `reasoning_content` field .* index 1"):
        model.complete({"model": persona, "messages": [*messages, dropped, result]})
    kept = {**dropped, "reasoning_content": first["reasoning_content"]}
    model.complete({"model": persona, "messages": [*messages, kept, result]})  # accepted


def test_id_zero_persona_sends_zero_ids(client) -> None:
    reply = client.chat.completions.create(
        model="offline-reference:id-zero",
        messages=[{"role": "user", "content": CASES["case1"].prompt}],
    )
    assert reply.choices[0].message.tool_calls[0].id == "0"


def test_persona_names() -> None:
    assert persona_for_model("offline-reference").name == "ideal"
    assert persona_for_model("gpt-4o-mini").name == "ideal"
    assert persona_for_model("offline-reference:embeds").name == "embeds"
    with pytest.raises(ValueError, match="unknown offline persona 'nope'"):
        get_persona("nope")
    bad = offline_client().chat.completions.with_raw_response
    with pytest.raises(Exception, match="unknown offline persona"):
        bad.create(model="offline-reference:nope", messages=[{"role": "user", "content": "x"}])
    for persona in PERSONAS.values():  # every persona is documented
        assert persona.mistake and persona.seen_in and persona.strategy in ("box", "truncate")


def test_workbook_cases_with_personas() -> None:
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.cli",
            "cases",
            "data/cases/case1.md",
            "--persona",
            "ideal",
            "--persona",
            "embeds",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert [(r["persona"], r["passed"]) for r in runs] == [(None, True), ("embeds", True)]
    assert runs[1]["guards"] == {"refused_embedded_reference": 1}
    real = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "cases", "--persona", "embeds", "--json"],
        capture_output=True,
        text=True,
        env={
            **env,
            "WORKBOOK_PROFILE": "local",
            "LOCAL_BASE_URL": "http://127.0.0.1:9/v1",
            "LOCAL_MODEL": "m",
        },
        timeout=HANG_GUARD_S,
    )
    assert real.returncode == 2 and "offline" in json.loads(real.stdout)["error"]


class _ForgetsArguments(Persona):
    """A mistake the workbook does not ship: the first call of a turn is made with no
    arguments at all."""

    name = "forgets-arguments"
    mistake = "the first time, calls a tool with no arguments"
    seen_in = "models that stop a tool call early"

    def wrong_arguments(self, tool, arguments, first_time):
        return {} if arguments and first_time("forget") else None


def test_a_new_mistake_is_one_class_and_the_turn_goes_on(store, client, monkeypatch) -> None:
    """A persona is one subclass overriding one hook, registered by name: its bad call becomes
    an error result, the model reads it and corrects itself, and the case still passes."""
    persona = _ForgetsArguments()
    monkeypatch.setitem(PERSONAS, persona.name, persona)
    assert persona_for_model(persona.model_name) is persona
    run = run_case(CASES["case1"], "box", client=client, model=persona.model_name, store=store)
    first, second = run.record.tool_calls[:2]
    assert json.loads(first.arguments) == {} and first.result_kind == "error"
    assert first.name == second.name and json.loads(second.arguments) != {}
    assert run.record.status == "ok" and run.passed, run.validation.reasons
