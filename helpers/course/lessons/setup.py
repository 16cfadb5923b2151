"""Notebook 00's plumbing (set-up): what the offline model answers, and the set-up's verdict.

The notebook keeps in view what the lesson is about (``resolve_model``, ``make_client``, the
registry, the real data, ``Agent`` and ``run_turn``); here is what it only runs: the tour of the
offline model's prompts and the check that the client and the model talk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helpers.course.choices import explain_choice
from helpers.text.escaping import for_terminal

if TYPE_CHECKING:
    import openai

    from helpers.loop.records import TurnRecord
    from helpers.models.llm import ModelConfig

#: A prompt no case has: the offline model answers it with the nearest case prompts, no tool call.
UNKNOWN_PROMPT = "Transcribe video 123 and send the text to deep check"


def what_the_offline_model_knows(config: ModelConfig, client: openai.OpenAI) -> None:
    """Print what the model in ``config`` answers: for the offline reference model, how many
    case prompts it carries out (counted from its plans) and their case ids, then its reply to
    :data:`UNKNOWN_PROMPT`, asked through ``client`` (the reply escaped by
    :func:`helpers.text.escaping.for_terminal`); for a real model, one line saying it answers any
    prompt. Returns nothing, so the cell shows the printed lines alone."""
    if not config.offline:
        print("A real model answers any prompt; the offline model answers only the case prompts.")
        return
    from helpers.models.offline import OfflineModel

    offline = OfflineModel()
    ids = sorted(set(offline.case_ids.values()))
    listed = for_terminal(", ".join(ids))  # case ids come from case files: untrusted
    print(f"It carries out {len(offline.plans)} case prompts, exactly these: {listed}")
    reply = client.chat.completions.create(
        model=config.model, messages=[{"role": "user", "content": UNKNOWN_PROMPT}]
    )
    print(f"\nAny other prompt, e.g. {UNKNOWN_PROMPT!r}, gets:\n")
    print(for_terminal(reply.choices[0].message.content or ""))


def setup_verdict(turn: TurnRecord, model: str) -> None:
    """Say whether the set-up works: the client reached ``model`` and a turn ran (checked), and
    what the model then chose (:func:`helpers.course.choices.explain_choice`: the transcript
    reached ``deep_check``, or what it did instead).

    Raises:
        AssertionError: the turn ended in ``error`` (the model could not be reached, or
            refused), or, under ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``, the model chose otherwise
            than the reference model.
    """
    # the set-up works when the client and the model talk; what the model then does is its choice
    assert turn.status != "error", (
        f"the model could not be reached or refused: {for_terminal(str(turn.error))}"
    )
    print("✓ The set-up works: the agent ran a turn with", for_terminal(model))
    called = [call.name for call in turn.tool_calls]
    explain_choice(
        turn.ok and "deep_check" in called,
        expected=f"it called {called}, then answered: the transcript reached deep_check.",
        otherwise=f"it called {called} and the turn ended {turn.status!r}: a model may ask back, "
        "or stop early; the next notebooks show what each choice costs.",
    )
