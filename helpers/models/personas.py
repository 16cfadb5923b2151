"""Offline personas: the offline reference model, making on purpose the mistakes real models make.

The ideal offline model does everything right, so it can never show what the client's guards
(:mod:`helpers.base.guards`) are for. A persona follows the same plans, and makes one kind of mistake,
deterministically, the way real models and servers do. Choose one by model name:
``offline-reference:<persona>`` (``workbook cases --persona NAME``; ``workbook compare`` runs them
all). Each persona names the guard that should catch its mistake; a run shows whether it did, and
what the mistake cost in tokens.

:class:`Persona` is the ideal model: every hook does it right. Each mistake is one subclass that
overrides the one hook where the mistake lives:

- the model's hooks, asked by the plan interpreter (:mod:`helpers.models.offline_plan`):
  :meth:`Persona.wrong_arguments` (``backticks``, ``embeds``, ``invents``),
  :meth:`Persona.reads_before_use` (``reads-everything``), :meth:`Persona.passes_preview`
  (``passes-preview``);
- the server's hooks, asked by the offline model (:mod:`helpers.models.offline`):
  :meth:`Persona.tool_call_id` (``id-zero``), :meth:`Persona.reply` and
  :meth:`Persona.refusal` (``deepseek-thinking``).

A mistake of the *model* is made once per turn (the first time it could be made) and then, once
the error result has told the model what to do, corrected, as a model that reads its errors
would. ``backticks`` never corrects (its mistake is harmless once unwrapped) and
``reads-everything`` never needs to (nothing refuses it: it only costs tokens). Mistakes of the
*server* (``id-zero``, ``deepseek-thinking``) happen on every response.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from helpers.context.boxing import SCHEME

OFFLINE_MODEL_NAME = "offline-reference"
PERSONA_SEPARATOR = ":"

#: What ``invents`` passes instead of a real reference or tool_call_id: the ids of the few-shot
#: examples in the system prompt (:mod:`helpers.context.instructions`).
INVENTED_REFERENCE = "internal://Zx81Qa0pLm3v"
INVENTED_TOOL_CALL_ID = "call_1"

#: Asked by a model hook before a one-time mistake: ``True`` the first time the mistake's name
#: is asked about in this turn.
FirstTime = Callable[[str], bool]


def map_references(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (a tool call's arguments, any JSON value) with every bare reference string
    (``internal://…``, nothing around it) replaced by ``change(reference)``."""
    if isinstance(value, str) and value.startswith(SCHEME) and " " not in value:
        return change(value)
    if isinstance(value, dict):
        return {k: map_references(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [map_references(v, change) for v in value]
    return value


def _has_reference(arguments: dict[str, Any]) -> bool:
    return map_references(arguments, lambda r: "\0") != arguments


def _is_resolve_tool(tool: str) -> bool:
    return tool.startswith("internal_resource_")


class Persona:
    """The ideal offline model, and what every persona is: one kind of mistake.

    Class attributes (each persona's description, shown by ``workbook compare`` and notebook
    05): ``name`` (what ``--persona`` takes), ``mistake`` (what it does wrong), ``seen_in``
    (where real models or servers do it), ``guard`` (the guard that catches it, a name in
    :data:`helpers.base.guards.GUARDS`, or ``None`` when none can: the mistake only costs tokens),
    ``strategy`` (the strategy under which the mistake can happen) and
    ``corrects_after_error`` (whether, once an error result comes back, it retries right).
    """

    name: ClassVar[str] = "ideal"
    mistake: ClassVar[str] = (
        "none: passes references unchanged, fetches or resolves only what it needs"
    )
    seen_in: ClassVar[str] = "the offline reference model"
    guard: ClassVar[str | None] = None
    strategy: ClassVar[str] = "box"
    corrects_after_error: ClassVar[bool] = True

    @property
    def model_name(self) -> str:
        """The model name that selects this persona."""
        if self.name == IDEAL.name:
            return OFFLINE_MODEL_NAME
        return f"{OFFLINE_MODEL_NAME}{PERSONA_SEPARATOR}{self.name}"

    def __repr__(self) -> str:
        return f"<persona {self.name}>"

    # -- the model's mistakes -------------------------------------------------------------------

    def wrong_arguments(
        self, tool: str, arguments: dict[str, Any], first_time: FirstTime
    ) -> dict[str, Any] | None:
        """The arguments of a call to ``tool`` as this persona gets them wrong, or ``None`` when
        it gets this call right (the ideal model always does)."""
        return None

    def reads_before_use(self) -> bool:
        """Whether the model reads a reference in full before it routes it or looks inside it
        (the ideal model passes it on unread and looks only at what it needs)."""
        return False

    def passes_preview(self, first_time: FirstTime) -> bool:
        """Whether, this time, the model passes a truncated preview (its marker included) as
        the value a tool asked for (the ideal model fetches the full output first)."""
        return False

    # -- the server's mistakes ------------------------------------------------------------------

    def tool_call_id(self) -> str:
        """The id of a tool call in a response: ``call_`` and 24 random hex digits, unique as
        OpenAI's are."""
        return "call_" + secrets.token_hex(12)

    def reply(self, message: dict[str, Any]) -> dict[str, Any]:
        """The assistant message as the server sends it (the ideal server: unchanged)."""
        return message

    def refusal(self, messages: list[Mapping[str, Any]]) -> str | None:
        """The error text with which the server refuses a request's ``messages`` (an HTTP
        400), or ``None`` when it accepts them."""
        return None


class Backticks(Persona):
    name = "backticks"
    mistake = "wraps references in backticks (real tools) or double quotes (resolve tools)"
    seen_in = "chat-tuned models that format identifiers as Markdown code"
    guard = "reference_unwrapped"
    corrects_after_error = False  # harmless once unwrapped: it never learns

    def wrong_arguments(
        self, tool: str, arguments: dict[str, Any], first_time: FirstTime
    ) -> dict[str, Any] | None:
        if not _has_reference(arguments):
            return None
        if _is_resolve_tool(tool):
            return map_references(arguments, lambda r: f'"{r}"')
        return map_references(arguments, lambda r: f"`{r}`")


class Embeds(Persona):
    name = "embeds"
    mistake = (
        "puts a reference inside a sentence ('Here is the text: internal://…') the first time "
        "it passes one"
    )
    seen_in = "models that paraphrase arguments instead of copying them"
    guard = "refused_embedded_reference"

    def wrong_arguments(
        self, tool: str, arguments: dict[str, Any], first_time: FirstTime
    ) -> dict[str, Any] | None:
        if _has_reference(arguments) and not _is_resolve_tool(tool) and first_time("embed"):
            return map_references(arguments, lambda r: f"Here is the text: {r}")
        return None


class ReadsEverything(Persona):
    name = "reads-everything"
    mistake = "reads every reference in full with internal_resource_read, then copies the value"
    seen_in = "cautious models that will not pass on what they have not seen"

    def reads_before_use(self) -> bool:
        return True


class Invents(Persona):
    name = "invents"
    mistake = (
        "the first time, passes a reference or a tool_call_id copied from the few-shot "
        f"examples ({INVENTED_REFERENCE}, {INVENTED_TOOL_CALL_ID}) instead of the real one"
    )
    seen_in = "small models that copy ids from the system prompt's examples"
    guard = "refused_unknown_reference"

    def wrong_arguments(
        self, tool: str, arguments: dict[str, Any], first_time: FirstTime
    ) -> dict[str, Any] | None:
        if tool == "fetch_tool_output" and first_time("invent"):
            return {**arguments, "tool_call_id": INVENTED_TOOL_CALL_ID}
        if _has_reference(arguments) and first_time("invent"):
            return map_references(arguments, lambda r: INVENTED_REFERENCE)
        return None


class PassesPreview(Persona):
    name = "passes-preview"
    mistake = "the first time, passes a truncated preview (marker included) as the full value"
    seen_in = "models that do not read the truncation marker"
    guard = "refused_preview_as_value"
    strategy = "truncate"

    def passes_preview(self, first_time: FirstTime) -> bool:
        return first_time("preview")


class IdZero(Persona):
    name = "id-zero"
    mistake = 'the server numbers tool calls per response: every tool_call_id is "0"'
    seen_in = "some llama.cpp, Ollama and LM Studio versions"
    guard = "tool_call_id_replaced"

    def tool_call_id(self) -> str:
        return "0"


#: DeepSeek's answer when a thinking-mode tool call comes back without its reasoning.
REASONING_MISSING = (
    "Missing `reasoning_content` field in the assistant message at message index {index}. For "
    "more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
)


class DeepSeekThinking(Persona):
    name = "deepseek-thinking"
    mistake = (
        "sends reasoning_content with every message and answers HTTP 400 if an assistant "
        "message with tool calls comes back without it"
    )
    seen_in = "DeepSeek's thinking mode (deepseek-reasoner, V3.2 and later)"
    guard = "provider_fields_echoed"

    def reply(self, message: dict[str, Any]) -> dict[str, Any]:
        """``message`` with a ``reasoning_content`` first, as DeepSeek's thinking mode sends."""
        calls = message.get("tool_calls") or []
        thought = (
            f"The plan's next step is a call to {calls[0]['function']['name']}."
            if calls
            else "I have what I need; time to answer."
        )
        return {"role": "assistant", "reasoning_content": thought, **message}

    def refusal(self, messages: list[Mapping[str, Any]]) -> str | None:
        """DeepSeek's 400 for an assistant message with tool calls that comes back without the
        ``reasoning_content`` it was sent with (api-docs.deepseek.com, thinking mode)."""
        for index, message in enumerate(messages):
            if (
                message.get("role") == "assistant"
                and message.get("tool_calls")
                and message.get("reasoning_content") is None
            ):
                return REASONING_MISSING.format(index=index)
        return None


IDEAL = Persona()

PERSONAS: dict[str, Persona] = {
    p.name: p
    for p in (
        IDEAL,
        Backticks(),
        Embeds(),
        ReadsEverything(),
        Invents(),
        PassesPreview(),
        IdZero(),
        DeepSeekThinking(),
    )
}
#: The personas that make a mistake (every persona but the ideal one).
MISTAKE_PERSONAS = tuple(name for name in PERSONAS if name != IDEAL.name)


class UnknownPersonaError(ValueError):
    """A model name or ``--persona`` that names no persona."""


def get_persona(name: str) -> Persona:
    """The persona called ``name``. Raises :class:`UnknownPersonaError` naming the known ones."""
    try:
        return PERSONAS[name]
    except KeyError:
        raise UnknownPersonaError(
            f"unknown offline persona {name!r}; known: {', '.join(PERSONAS)}"
        ) from None


def persona_for_model(model: str | None) -> Persona:
    """The persona a requested model name selects: ``offline-reference:<name>``; any other name
    is the ideal model. Raises :class:`UnknownPersonaError` for an unknown persona name."""
    prefix = OFFLINE_MODEL_NAME + PERSONA_SEPARATOR
    if model and model.startswith(prefix):
        return get_persona(model[len(prefix) :])
    return IDEAL
