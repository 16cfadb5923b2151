"""Notebook 01's plumbing: the prompts, one model call that says why a provider refused it, the
transcript task's verdict, the three tasks' context growth and its chart.

The loop itself stays in the notebook (``inline_turn``: call the model, stop on text, else
dispatch with the attendee's ``handle_tool_calls`` and go again); what is here is what the loop
leans on but does not teach.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import openai

from helpers.cases.case_files import load_cases
from helpers.course.choices import explain_choice
from helpers.display.charts import ThemedChart, themed_chart
from helpers.text.escaping import for_terminal

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from openai.types.chat import ChatCompletion

    from helpers.display.theme import ChartTheme
    from helpers.tooling.registry import ToolRegistry

#: The system prompt of notebook 01's loop.
SYSTEM_PROMPT = "You are a helpful assistant that uses tools."

#: Notebook 01's three tasks on real data, label → the id of the case whose prompt it runs (each
#: one a case the offline reference model carries out): a SQL result routed to a file, a large
#: page, the transcript.
INLINE_CASES: dict[str, str] = {
    "SQL result → file": "sql2",
    "large page → grep": "web2",
    "transcript → deep_check": "case1",
}


def case_prompts() -> dict[str, str]:
    """Every shipped case's prompt, by case id, read from ``data/cases/`` (:func:`load_cases`).

    Raises:
        helpers.cases.case_files.CaseError: a case file cannot be used.
    """
    return {case.id: case.prompt for case in load_cases()}


#: The workbook's transcript case (``case1``): a long result the model only has to pass on
#: (``yt_transcribe`` → ``deep_check``), its prompt read from the case file. Notebooks 01 to 04
#: run it.
TRANSCRIPT_TASK: str = case_prompts()["case1"]

#: A turn as notebook 01 runs it: prompt → (the answer or ``None``, prompt tokens per call).
InlineTurn = Callable[[str], tuple[str | None, list[int]]]


def opening_messages(prompt: str) -> list[dict[str, Any]]:
    """The messages a turn starts from: the system prompt (:data:`SYSTEM_PROMPT`), then
    ``prompt`` as the user's message (``[{"role": "system", …}, {"role": "user", …}]``)."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prompt},
    ]


def call_model(
    client: openai.OpenAI, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> ChatCompletion | None:
    """One model call: ``client.chat.completions.create(model=model, messages=messages,
    tools=tools)``, with the tool schemas as the registry gives them (``registry.schemas()``).

    Returns:
        The response; ``None`` when the provider refused the request (HTTP 400), after printing
        its reason, escaped (a provider's text is untrusted): the turn stops there.

    Raises:
        openai.OpenAIError: any other failure of the call (no connection, a bad key…).
    """
    try:
        return client.chat.completions.create(model=model, messages=messages, tools=tools)
    except openai.BadRequestError as exc:  # the provider refused the request: say why
        print("the provider refused the request:", for_terminal(str(exc.message)))
        return None


def explain_transcript_turn(answer: str | None, tokens: list[int], registry: ToolRegistry) -> None:
    """Say whether ``deep_check`` received the whole transcript in the transcript turn, and what
    the inline context cost (:func:`helpers.course.choices.explain_choice`).

    Args:
        answer: the turn's answer (``None`` when it stopped without one); untrusted.
        tokens: the prompt tokens of each model call of the turn.
        registry: the tools, to measure the transcript (``yt_transcribe`` on video ``123``).

    Raises:
        AssertionError: the model chose otherwise while ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``.
    """
    transcript_chars = len(registry.get("yt_transcribe").call({"video_id": "123"}))
    explain_choice(
        bool(answer) and f"received {transcript_chars} chars" in str(answer),
        expected=f"deep_check received all {transcript_chars:,} characters. Inline, the model "
        f"read the transcript on each of its {len(tokens) - 1} calls after yt_transcribe "
        "answered, and wrote it once more, as deep_check's arguments.",
        otherwise=f"the answer does not say deep_check received all {transcript_chars:,} "
        f"characters ({str(answer)[:120]!r}): the model stopped, asked back or passed on a "
        "part, or the provider refused a request (said above; notebook 05 shows a provider "
        f"that wants more echoed back). Every call read the results inline: {tokens} prompt "
        "tokens per call.",
    )


def context_growth(turn: InlineTurn) -> dict[str, list[int]]:
    """Run ``turn`` (the notebook's ``inline_turn``) on each task of :data:`INLINE_CASES` (its
    case's prompt, read from the case file) and print, per task, the prompt tokens of each model
    call and their total.

    Args:
        turn: runs one prompt; returns (answer, prompt tokens per call).

    Returns:
        label → the prompt tokens of each model call, in call order.

    Raises:
        KeyError: a case of :data:`INLINE_CASES` is not shipped.
        helpers.cases.case_files.CaseError: a case file cannot be used.
    """
    prompts = case_prompts()
    growth: dict[str, list[int]] = {}
    for label, case_id in INLINE_CASES.items():
        _answer, tokens = turn(prompts[case_id])
        growth[label] = tokens
        print(f"{label:26} prompt tokens per call: {tokens}  (total {sum(tokens):,})")
    return growth


def growth_chart(growth: dict[str, list[int]]) -> ThemedChart:
    """The prompt tokens of each model call, one line per task, in both of JupyterLab's themes
    (:func:`helpers.display.charts.themed_chart`); ``growth`` as :func:`context_growth` returns it."""

    def draw(fig: Figure, _theme: ChartTheme) -> None:
        ax = fig.subplots()
        for label, tokens in growth.items():
            ax.plot(range(1, len(tokens) + 1), tokens, marker="o", label=label)
        ax.set_xlabel("model call")
        ax.set_ylabel("prompt tokens (context)")
        ax.set_xticks(range(1, max((len(t) for t in growth.values()), default=0) + 1))
        ax.set_title("Inline tool results: the context grows with every result")
        ax.legend()

    return themed_chart(
        draw, alt="prompt tokens of each model call: the context grows with every result"
    )
