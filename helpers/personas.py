"""Offline personas: the offline reference model, making on purpose the mistakes real models make.

The ideal offline model does everything right, so it can never show what the client's guards
(:mod:`helpers.guards`) are for. A persona follows the same plans, and makes one kind of mistake,
deterministically, the way real models and servers do. Choose one by model name:
``offline-reference:<persona>`` (``workbook cases --persona NAME``; ``workbook compare`` runs them
all). Each persona names the guard that should catch its mistake; a run shows whether it did, and
what the mistake cost in tokens.

A mistake of the *model* is made once per turn (the first time it could be made) and then, once
the error result has told the model what to do, corrected, as a model that reads its errors
would. ``backticks`` never corrects (its mistake is harmless once unwrapped) and
``reads-everything`` never needs to (nothing refuses it: it only costs tokens). Mistakes of the
*server* (``id-zero``, ``deepseek-thinking``) happen on every response.
"""

from __future__ import annotations

from dataclasses import dataclass

OFFLINE_MODEL_NAME = "offline-reference"
PERSONA_SEPARATOR = ":"


@dataclass(frozen=True)
class Persona:
    """One kind of mistake.

    Attributes:
        name: what ``--persona`` takes.
        mistake: what it does wrong.
        seen_in: where real models or servers do it.
        guard: the guard that catches it (a name in :data:`helpers.guards.GUARDS`), or ``None``
            when no guard can (the mistake only costs tokens).
        strategy: the strategy under which the mistake can happen (``box`` or ``truncate``).
    """

    name: str
    mistake: str
    seen_in: str
    guard: str | None
    strategy: str = "box"
    wraps_references: bool = False
    embeds_references: bool = False
    reads_everything: bool = False
    invents_ids: bool = False
    passes_previews: bool = False
    numbers_ids_zero: bool = False
    thinks: bool = False

    @property
    def model_name(self) -> str:
        """The model name that selects this persona."""
        if self.name == "ideal":
            return OFFLINE_MODEL_NAME
        return f"{OFFLINE_MODEL_NAME}{PERSONA_SEPARATOR}{self.name}"


IDEAL = Persona(
    "ideal",
    "none: passes references unchanged, fetches or resolves only what it needs",
    "the offline reference model",
    None,
)

PERSONAS: dict[str, Persona] = {
    p.name: p
    for p in (
        IDEAL,
        Persona(
            "backticks",
            "wraps references in backticks (real tools) or double quotes (resolve tools)",
            "chat-tuned models that format identifiers as Markdown code",
            "reference_unwrapped",
            wraps_references=True,
        ),
        Persona(
            "embeds",
            "puts a reference inside a sentence ('Here is the text: internal://…') the first "
            "time it passes one",
            "models that paraphrase arguments instead of copying them",
            "refused_embedded_reference",
            embeds_references=True,
        ),
        Persona(
            "reads-everything",
            "reads every reference in full with internal_resource_read, then copies the value",
            "cautious models that will not pass on what they have not seen",
            None,
            reads_everything=True,
        ),
        Persona(
            "invents",
            "the first time, passes a reference or a tool_call_id copied from the few-shot "
            "examples (internal://Zx81Qa0pLm3v, call_1) instead of the real one",
            "small models that copy ids from the system prompt's examples",
            "refused_unknown_reference",
            invents_ids=True,
        ),
        Persona(
            "passes-preview",
            "the first time, passes a truncated preview (marker included) as the full value",
            "models that do not read the truncation marker",
            "refused_preview_as_value",
            strategy="truncate",
            passes_previews=True,
        ),
        Persona(
            "id-zero",
            'the server numbers tool calls per response: every tool_call_id is "0"',
            "some llama.cpp, Ollama and LM Studio versions",
            "tool_call_id_replaced",
            numbers_ids_zero=True,
        ),
        Persona(
            "deepseek-thinking",
            "sends reasoning_content with every message and answers HTTP 400 if an assistant "
            "message with tool calls comes back without it",
            "DeepSeek's thinking mode (deepseek-reasoner, V3.2 and later)",
            "provider_fields_echoed",
            thinks=True,
        ),
    )
}
#: The personas that make a mistake (every persona but the ideal one).
MISTAKE_PERSONAS = tuple(name for name in PERSONAS if name != "ideal")


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
