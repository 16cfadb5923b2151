"""The completion limit of each request: one that fits the model and the account, and what a
provider's refusal of it says.

Every request carries a completion limit, in tokens, in the field its provider reads
(:class:`helpers.models.providers.ProviderProfile`): without one a local model rambles until its
context is full. A fixed number is refused in documented ways, each read here by a
:class:`RefusalRule` with its source:

- the model writes fewer tokens than asked: OpenAI's gpt-3.5-turbo and gpt-4-turbo ("max_tokens
  is too large: 16384. This model supports at most 4096 completion tokens"), Anthropic's
  claude-3-haiku through its OpenAI SDK compatibility ("max_tokens: 8192 > 4096, which is the
  maximum allowed number of output tokens"), Groq ("max_tokens for `…` must be less than or
  equal to 8000");
- the prompt and the limit together exceed the window: vLLM started with a small
  ``--max-model-len`` ("'max_tokens' or 'max_completion_tokens' is too large: 4096. This
  model's maximum context length is 4096 tokens and your request has 503 input tokens",
  vllm-project/vllm#42474; before it, "you requested N tokens (P in the messages, C in the
  completion)", vllm-project/vllm#20409, which OpenAI's gpt-4 sends too);
- an account counts the limit against a per-minute allowance: Groq's free tier, HTTP 413
  "Request too large … on tokens per minute (TPM): Limit 6000, Requested 6596"
  (continuedev/continue#10218, zeeyado/koassistant.koplugin#106);
- the temperature: reasoning models take only the default ("'temperature' does not support
  0.2 with this model", OpenHands/OpenHands#4131);
- the field itself: reasoning models refuse ``max_tokens`` ("Use 'max_completion_tokens'
  instead", quoted in simonw/llm#724), and servers that predate it refuse
  ``max_completion_tokens`` (Azure OpenAI before api-version 2024-09-01-preview:
  "Unrecognized request argument supplied: max_completion_tokens").

:class:`CompletionBudget` is what one client knows about one model in a session: the limit it
starts from, the model's most output tokens and context window (the model table,
``data/pricing.yaml``; or ``<NAME>_CONTEXT_WINDOW``), and what a refusal taught. The turn asks
it for each request's limit (:meth:`CompletionBudget.request_limit`), and on a refusal it
learns (:meth:`CompletionBudget.learn`): the request is sent once more with the limit the
message names or implies, later requests start there, and the turn says so once
(:attr:`CompletionBudget.notes`).
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from helpers.models.providers import ProviderProfile

#: The fewest completion tokens worth sending a request with: when less is left of the window
#: once the prompt is in, the prompt is what is too long (the turn ends ``context_exceeded``).
MIN_COMPLETION_TOKENS = 256
#: Headroom on the client's own count of a prompt (o200k_base), whose tokenizer is rarely the
#: server's: a limit that leaves exactly the counted room is refused by a tokenizer that counts
#: more. Once a provider has said how many tokens it counted, its own ratio is used on top.
PROMPT_HEADROOM = 1.10


@dataclass(frozen=True)
class LimitRefusal:
    """What a provider's refusal of the completion limit says.

    Attributes:
        kind: ``"output"`` (the model writes at most ``tokens``), ``"window"`` (its context
            window is ``tokens``), ``"per_request"`` (the account allows ``tokens`` per
            request, prompt and limit together), ``"field"`` (send the limit in ``field``) or
            ``"temperature"`` (the model takes no temperature but its default).
        tokens: the number the message names for ``kind`` (``None`` for ``"field"``).
        prompt_tokens: the prompt as the provider counted it, when the message says.
        field: for ``"field"``: the request field the provider reads.
        rule: the name of the :class:`RefusalRule` that read it.
    """

    kind: str
    tokens: int | None = None
    prompt_tokens: int | None = None
    field: str | None = None
    rule: str = ""


@dataclass(frozen=True)
class RefusalRule:
    """One documented refusal of the completion limit: a pattern over the provider's message,
    what kind of limit it names (:attr:`LimitRefusal.kind`), and which of its groups say what.

    Attributes:
        tokens_group: the group naming :attr:`LimitRefusal.tokens`.
        prompt_group: the group naming the prompt's tokens, if the message says.
        requested_group: the group naming prompt and limit together (the prompt is that less
            the limit sent).
        field: for kind ``"field"``: the request field the provider reads.
    """

    name: str
    pattern: re.Pattern[str]
    kind: str
    source: str
    tokens_group: int | None = None
    prompt_group: int | None = None
    requested_group: int | None = None
    field: str | None = None

    def read(self, match: re.Match[str], sent_tokens: int) -> LimitRefusal | None:
        """What ``match`` says, for a request that carried ``sent_tokens``; ``None`` when a
        number it names is no real one (0, or :data:`MAX_TOKENS_READ` and above: a provider's
        text is untrusted)."""
        named = [g for g in (self.tokens_group, self.prompt_group, self.requested_group) if g]
        if any(not 0 < _n(match, g) < MAX_TOKENS_READ for g in named):
            return None
        tokens = _n(match, self.tokens_group) if self.tokens_group else None
        prompt = _n(match, self.prompt_group) if self.prompt_group else None
        if self.requested_group:
            prompt = max(_n(match, self.requested_group) - sent_tokens, 0)
        return LimitRefusal(self.kind, tokens, prompt, self.field, self.name)


#: The largest number of tokens read from a provider's message: a provider's text is
#: untrusted, and a number past any real window is not one.
MAX_TOKENS_READ = 100_000_000


def _n(match: re.Match[str], group: int) -> int:
    """Group ``group`` of ``match`` as a number of tokens, within 0 and
    :data:`MAX_TOKENS_READ` (digits are read at most 12 long: no huge integers)."""
    digits = match.group(group).replace(",", "")[:12]
    return min(int(digits or 0), MAX_TOKENS_READ)


_N = r"([\d,]+)"

REFUSAL_RULES: tuple[RefusalRule, ...] = (
    RefusalRule(
        "vllm_window",
        re.compile(
            rf"is too large: {_N}\. This model's maximum context length is {_N} tokens and "
            rf"your request has {_N} input tokens",
            re.I,
        ),
        "window",
        "vllm-project/vllm#42474",
        tokens_group=2,
        prompt_group=3,
    ),
    RefusalRule(
        "requested_window",
        re.compile(
            rf"maximum context length is {_N} tokens\. However, you requested {_N} tokens "
            rf"\({_N} in the messages, {_N} in the completion\)",
            re.I,
        ),
        "window",
        "vllm-project/vllm#20409; OpenAI's gpt-4 sends the same words",
        tokens_group=1,
        prompt_group=3,
    ),
    RefusalRule(
        "openai_output",
        re.compile(rf"supports at most {_N} completion tokens", re.I),
        "output",
        "OpenAI's answer for gpt-3.5-turbo and gpt-4-turbo, as quoted in tool-context-relay's "
        "issue 37",
        tokens_group=1,
    ),
    RefusalRule(
        "anthropic_output",
        re.compile(
            rf"max_tokens: {_N} > {_N}, which is the maximum allowed number of output tokens",
            re.I,
        ),
        "output",
        "Anthropic's Messages API validation, also through its OpenAI SDK compatibility",
        tokens_group=2,
    ),
    RefusalRule(
        "groq_output",
        re.compile(rf"max_tokens for `[^`]*` must be less than or equal to {_N}", re.I),
        "output",
        "skapadia3214/groq-moa#8",
        tokens_group=1,
    ),
    RefusalRule(
        "groq_tpm",
        re.compile(
            rf"Request too large for model .*?\(TPM\): Limit {_N}, Requested {_N}", re.I | re.S
        ),
        "per_request",
        "continuedev/continue#10218; zeeyado/koassistant.koplugin#106 (Groq counts the "
        "completion limit against the free tier's tokens per minute)",
        tokens_group=1,
        requested_group=2,
    ),
    RefusalRule(
        "use_max_completion_tokens",
        re.compile(r"Use 'max_completion_tokens' instead", re.I),
        "field",
        "OpenAI's reasoning models (o1, o3, gpt-5), quoted in simonw/llm#724",
        field="max_completion_tokens",
    ),
    RefusalRule(
        "no_max_completion_tokens",
        re.compile(
            r"(Unrecognized request argument supplied|Unsupported parameter|unknown field|"
            r"extra inputs are not permitted)[^.]*max_completion_tokens",
            re.I,
        ),
        "field",
        "Azure OpenAI before api-version 2024-09-01-preview; servers that predate the field",
        field="max_tokens",
    ),
    RefusalRule(
        "no_temperature",
        re.compile(
            r"'temperature' does not support|Unsupported parameter: 'temperature'|"
            r"temperature[^.]{0,40}(is )?not supported",
            re.I,
        ),
        "temperature",
        "OpenAI's reasoning models: \"Unsupported value: 'temperature' does not support 0.2 with "
        'this model. Only the default (1) value is supported." (OpenHands/OpenHands#4131; on '
        "Azure, holoviz/lumen#1087)",
    ),
)


def read_refusal(status: int, message: str, sent_tokens: int) -> LimitRefusal | None:
    """The refusal of the completion limit in an HTTP error (``status``, the provider's
    ``message``), given the limit ``sent_tokens`` the request carried; ``None`` when the error
    is about something else. Only 400, 413 and 422 are read (a refusal is never a 5xx)."""
    if status not in (400, 413, 422):
        return None
    for rule in REFUSAL_RULES:
        found = rule.pattern.search(message)
        refusal = rule.read(found, sent_tokens) if found else None
        if refusal is not None:
            return refusal
    return None


@dataclass(frozen=True)
class ModelLimits:
    """A model's own limits from the model table: ``window_tokens`` (its context window) and
    ``output_tokens`` (the most completion tokens one response holds); either may be ``None``."""

    window_tokens: int | None = None
    output_tokens: int | None = None


class ModelTableError(ValueError):
    """The model table holds a limit that is not a whole number of tokens above 0."""


def load_model_limits(path: Path | None = None) -> dict[str, ModelLimits]:
    """Every model's context window and most output tokens in the model table (default
    ``data/pricing.yaml``): its priced ``models:`` and its ``limits:`` (models it does not
    price), by lower-case name.

    Raises:
        ModelTableError: a limit that is not a whole number above 0.
        OSError: the file cannot be read.
    """
    import yaml

    from helpers.base.paths import DATA_DIR

    path = path or DATA_DIR / "pricing.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    table: dict[str, ModelLimits] = {}
    for section in ("models", "limits"):
        for name, entry in (data.get(section) or {}).items():
            values = [entry.get(k) for k in ("context_window_tokens", "max_output_tokens")]
            if any(v is not None and (type(v) is not int or v < 1) for v in values):
                raise ModelTableError(f"{path}: model {name!r}: a limit is not a whole number > 0")
            table[str(name).lower()] = ModelLimits(*values)
    return table


@cache
def _table() -> dict[str, ModelLimits]:
    return load_model_limits()


def model_limits(model: str) -> ModelLimits:
    """The limits of ``model`` in the model table (``data/pricing.yaml``): the entry named
    exactly, or whose name is followed by a dated or numbered release (``gpt-4-0613``,
    ``claude-3-haiku-20240307``); a router's ``vendor/`` prefix is set aside. Unknown models
    get no limits."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    table = _table()
    if name in table:
        return table[name]
    for key in sorted(table, key=len, reverse=True):
        rest = name.removeprefix(key + "-")
        if rest != name and re.fullmatch(r"[\d-]+", rest):
            return table[key]
    return ModelLimits()


@dataclass(frozen=True)
class Learned:
    """What :meth:`CompletionBudget.learn` made of a refusal: the ``note`` for the user when
    something new was learned (``None``: nothing new), or ``prompt_too_long`` when no limit can
    help (the prompt leaves fewer than :data:`MIN_COMPLETION_TOKENS`)."""

    note: str | None = None
    prompt_too_long: bool = False


@dataclass
class CompletionBudget:
    """What one client sends one model that the provider may refuse, for the session: the
    completion limit, and whether a temperature goes.

    Attributes:
        field: the request field of the limit (the profile's, until a refusal says otherwise).
        tokens: the limit to start from: the profile's, ``<NAME>_MAX_COMPLETION_TOKENS``, the
            model's own most output tokens, or what a refusal named.
        setting: the setting that changes it (``LOCAL_MAX_COMPLETION_TOKENS``), named in notes.
        prefix: the ``.env`` profile's settings prefix (``LOCAL``), for the other settings a
            note names (``LOCAL_CONTEXT_WINDOW``, ``LOCAL_TEMPERATURE``).
        window_tokens: the model's context window, when known (model table, setting, refusal).
        per_request_tokens: what the account allows per request, prompt and limit together
            (Groq's free tier), once a refusal named it.
        prompt_ratio: the provider's count of a prompt over the client's (at least 1).
        temperature: whether a temperature may be sent (a reasoning model refuses one).
        temperature_said: a note has said that the temperature is not sent.
        notes: what was learned and not yet said (the turn says each once).
    """

    field: str
    tokens: int
    setting: str
    prefix: str = "<NAME>"
    window_tokens: int | None = None
    per_request_tokens: int | None = None
    prompt_ratio: float = 1.0
    temperature: bool = True
    temperature_said: bool = False
    notes: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, profile: ProviderProfile, model: str) -> CompletionBudget:
        """The budget ``profile``'s endpoint starts from for ``model``: the profile's limit
        (within the model's own most output tokens, unless a setting chose the limit), in the
        field the model's family reads, the window the setting or the model table gives, and
        no temperature for a family that refuses one."""
        limits = model_limits(model)
        rule = profile.rule_for(model)
        budget = cls(
            field=profile.limit_field_for(model),
            tokens=profile.completion_limit_tokens,
            setting=profile.completion_limit_setting,
            prefix=profile.settings_prefix,
            window_tokens=profile.context_window_tokens or limits.window_tokens,
            temperature=rule is None or rule.temperature,
        )
        own = limits.output_tokens
        if own and own < budget.tokens and not profile.completion_limit_set:
            budget.tokens = own
            budget.notes.append(
                f"completion limit: requests carry {budget.field} {own:,}, because {model} "
                f"writes at most {own:,} completion tokens (the model table, data/pricing.yaml; "
                f"{budget.setting} changes it)"
            )
        return budget

    @property
    def needs_prompt_count(self) -> bool:
        """Whether a request's limit depends on its prompt (a window or an allowance known)."""
        return self.window_tokens is not None or self.per_request_tokens is not None

    def request_limit(self, prompt_tokens: int) -> dict[str, int]:
        """The limit field for a request whose prompt the client counts at ``prompt_tokens``:
        :attr:`tokens`, lowered to what the window and the per-request allowance leave after
        the prompt (with :data:`PROMPT_HEADROOM`), never below :data:`MIN_COMPLETION_TOKENS`
        (the provider then says the prompt is too long)."""
        tokens = self.tokens
        counted = math.ceil(prompt_tokens * self.prompt_ratio * PROMPT_HEADROOM)
        for cap in (self.window_tokens, self.per_request_tokens):
            if cap is not None:
                tokens = min(tokens, max(cap - counted, MIN_COMPLETION_TOKENS))
        return {self.field: tokens}

    def learn(self, refusal: LimitRefusal, sent_tokens: int, prompt_tokens: int) -> Learned:
        """Take in a provider's ``refusal`` of a request that carried ``sent_tokens`` and whose
        prompt the client counted at ``prompt_tokens``."""
        if refusal.prompt_tokens and prompt_tokens:
            self.prompt_ratio = max(1.0, refusal.prompt_tokens / prompt_tokens)
        if refusal.kind == "temperature":
            was, self.temperature, self.temperature_said = self.temperature, False, True
            why = "the model takes no temperature but its default"
            return Learned(f"{why}: {self.prefix}_TEMPERATURE is not sent" if was else None)
        if refusal.kind == "field" and refusal.field:
            was, self.field = self.field, refusal.field
            return Learned(
                None
                if was == refusal.field
                else f"the provider reads the completion limit as {refusal.field}: sent so from "
                f"now on (for OpenAI's models, {self.prefix}_PROVIDER_PROFILE=openai sends it so "
                "from the start)"
            )
        assert refusal.tokens is not None
        if refusal.kind == "output":
            was, self.tokens = self.tokens, min(self.tokens, refusal.tokens)
            return Learned(
                None
                if self.tokens == was
                else f"completion limit: the model writes at most {refusal.tokens:,} completion "
                f"tokens, so requests now carry {self.field} {self.tokens:,} (set "
                f"{self.setting}={self.tokens} to start there)"
            )
        prompt = refusal.prompt_tokens if refusal.prompt_tokens is not None else prompt_tokens
        if refusal.tokens - prompt < MIN_COMPLETION_TOKENS:
            return Learned(prompt_too_long=True)
        if refusal.kind == "window":
            was, self.window_tokens = self.window_tokens, refusal.tokens
            what = f"the model's context window is {refusal.tokens:,} tokens"
        else:
            was, self.per_request_tokens = self.per_request_tokens, refusal.tokens
            what = f"the account allows {refusal.tokens:,} tokens per request, prompt included"
        if was == refusal.tokens:
            return Learned()
        return Learned(
            f"completion limit: {what}, so each request's limit now leaves room for its prompt "
            f"(set {self.prefix}_CONTEXT_WINDOW={refusal.tokens} to start there)"
        )

    def retry_limit(self, refusal: LimitRefusal, prompt_tokens: int) -> dict[str, int]:
        """The limit of the one retry after :meth:`learn`: the room the refusal names (the
        provider counted the prompt) within :attr:`tokens`, else :meth:`request_limit`."""
        if refusal.kind in ("window", "per_request") and refusal.prompt_tokens is not None:
            assert refusal.tokens is not None
            return {self.field: max(min(self.tokens, refusal.tokens - refusal.prompt_tokens), 1)}
        return self.request_limit(prompt_tokens)


#: Each client's budgets by model (a client forgotten by Python is forgotten here too).
_BUDGETS: weakref.WeakKeyDictionary[object, dict[str, CompletionBudget]] = (
    weakref.WeakKeyDictionary()
)


def budget_for(
    client: object, model: str, start: Callable[[], CompletionBudget]
) -> CompletionBudget:
    """The session's budget of ``client`` for ``model``; made by ``start`` the first time."""
    try:
        budgets = _BUDGETS.setdefault(client, {})
    except TypeError:  # a client that cannot be weakly referenced: a budget per turn
        return start()
    if model not in budgets:
        budgets[model] = start()
    return budgets[model]
