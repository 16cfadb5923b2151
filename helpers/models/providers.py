"""What each provider's endpoint accepts, as data: one :class:`ProviderProfile` per provider.

Providers that all speak "OpenAI-compatible" chat completions still differ, and a client that
treats them alike breaks on the second model call of a tool-using turn. The differences the
agent acts on live here, each with its source, and nowhere else:

- **tool-call ids** (:class:`ToolCallIdFormat`): the ids the client gives tool calls go back in
  every later request; Mistral refuses any id that is not exactly 9 characters ``[a-zA-Z0-9]``,
  directly and behind OpenRouter;
- **fields that go back**: the provider fields (:data:`helpers.models.replies.PROVIDER_FIELDS`,
  :data:`helpers.models.replies.TOOL_CALL_PROVIDER_FIELDS`) this provider sends and needs back; they
  go back only to the endpoint that sent them (:func:`helpers.models.replies.for_endpoint`), and only
  those its profile names;
- **the completion limit**: every request carries one, in the field this provider reads
  (``max_completion_tokens`` or ``max_tokens``), so a rambling model stops; what fits the model
  and the account is :mod:`helpers.models.completion_limit`'s to say;
- **model families** (:class:`ModelRule`): OpenAI's reasoning models take
  ``max_completion_tokens``, no temperature, and ``developer`` instructions;
- **message order**: Mistral refuses a ``user`` message right after a ``tool`` message
  (:attr:`ProviderProfile.user_after_tool`), also behind OpenRouter
  (:attr:`ProviderProfile.upstreams`);
- how to recognise the provider from the base URL's host (and, behind a router, the model name).

Errors are the same data for every provider (:mod:`helpers.models.replies`: context overflow phrases,
error bodies) because their texts do not collide; retries are the SDK's, with the permanent
errors listed in :mod:`helpers.models.llm`.

A ``.env`` profile picks a provider profile with ``<NAME>_PROVIDER_PROFILE`` (one of
:data:`PROFILES`); without it the base URL's host decides, and an endpoint no profile knows gets
:data:`DEFAULT`, the safe choice for an unknown OpenAI-compatible server. To add a provider,
add one :class:`ProviderProfile` to ``_PROVIDER_PROFILES`` with its sources (:data:`PROFILES` lists
them by name, with the offline and default profiles).
"""

from __future__ import annotations

import re
import secrets
import string
import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from helpers.base import ids

#: The SDK's retries of a failed request (``--max-retries``).
DEFAULT_MAX_RETRIES = 2


@dataclass(frozen=True)
class ToolCallIdFormat:
    """The form of the ``tool_call_id`` values a provider accepts back.

    Attributes:
        name: how the form is described in messages, e.g. ``"9 characters [a-zA-Z0-9]"``.
        pattern: a regular expression an id of this form matches in full.
        make: a new random id of this form (from :mod:`secrets`: unguessable).
        source: where the rule comes from.
    """

    name: str
    pattern: re.Pattern[str]
    make: Callable[[], str]
    source: str

    def accepts(self, tool_call_id: str) -> bool:
        """Whether ``tool_call_id`` has this form."""
        return self.pattern.fullmatch(tool_call_id) is not None


def _alphanumeric_9() -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(9))


#: The workbook's own ids, ``call_`` and 24 hexadecimal digits (96 random bits), the form
#: OpenAI's own ids take; the truncation marker names them (``fetch_tool_output(tool_call_id=
#: 'call_…')``).
CALL_HEX = ToolCallIdFormat(
    "call_ + 24 hex digits",
    re.compile(r"call_[0-9a-f]{24}"),
    lambda: "call_" + ids.token_hex(12),
    "the workbook's own form, as OpenAI's chat completions send theirs",
)
#: Mistral's form: exactly 9 characters from ``[a-zA-Z0-9]`` (about 53 random bits); any other
#: id in a request gets HTTP 400 "Tool call id was … but must be a-z, A-Z, 0-9, with a length of
#: 9" (quoted in langchain-ai/langchain#24668), also when Mistral is reached through OpenRouter
#: (openclaw/openclaw#57672).
ALPHANUMERIC_9 = ToolCallIdFormat(
    "9 characters [a-zA-Z0-9]",
    re.compile(r"[A-Za-z0-9]{9}"),
    _alphanumeric_9,
    "Mistral's validation: langchain-ai/langchain#24668; through OpenRouter: "
    "openclaw/openclaw#57672",
)

#: The completion limit a profile sends when neither it nor ``.env`` says otherwise, in tokens:
#: enough for any answer the workbook's tasks need, and it stops a local model that rambles until
#: its context is full (llama-cpp-python's server generated 8,064 tokens in 388 s without one).
DEFAULT_COMPLETION_LIMIT_TOKENS = 4_096


@dataclass(frozen=True)
class ModelRule:
    """What a family of models requires of a request, beyond its provider's rules.

    Attributes:
        prefixes: model-name prefixes of the family (lower case; a router's ``vendor/`` prefix
            is set aside before matching).
        completion_limit_field: the field the family reads the completion limit from.
        temperature: whether a ``temperature`` may be sent (reasoning models refuse any but
            the default).
        system_role: the role the instructions go in (``"system"`` or ``"developer"``).
        source: where the rule comes from.
    """

    prefixes: tuple[str, ...]
    completion_limit_field: str = "max_completion_tokens"
    temperature: bool = False
    system_role: str = "developer"
    source: str = ""

    def matches(self, model: str) -> bool:
        """Whether ``model`` is of this family."""
        name = model.strip().lower().rsplit("/", 1)[-1]
        return name.startswith(self.prefixes)


#: OpenAI's reasoning models: the o-series and the gpt-5 family take ``max_completion_tokens``
#: (``max_tokens`` is refused: "Use 'max_completion_tokens' instead", simonw/llm#724), no
#: temperature but the default ("Unsupported value: 'temperature' does not support 0.2 with this
#: model. Only the default (1) value is supported.", OpenHands/OpenHands#4131), and their
#: instructions as ``developer`` messages (OpenAI's guide "Reasoning models").
REASONING_MODELS = ModelRule(
    ("o1", "o3", "o4", "gpt-5"),
    source="OpenAI docs, Reasoning models: max_completion_tokens, developer messages, default "
    "temperature only; simonw/llm#724",
)


@dataclass(frozen=True)
class ProviderProfile:
    """One provider's rules, each with its source.

    Attributes:
        name: the profile's name, as ``<NAME>_PROVIDER_PROFILE`` gives it (lower case).
        title: the provider's name for people.
        hosts: base-URL host names that identify the provider (exact, lower case).
        tool_call_ids: the id form the client gives tool calls sent to this provider.
        upstreams: for a router, ``(model-name prefix, profile name)`` pairs: a model whose name
            starts with the prefix is served by that provider, whose id form and message order
            the requests keep (Mistral's behind OpenRouter).
        fields_back: the provider fields this provider sends and must get back (message and
            tool-call fields); ``None``: every provider field it sent goes back (unknown server).
        completion_limit_field: the request field of the completion limit, in tokens.
        completion_limit_tokens: the limit sent on every request unless ``.env`` sets
            ``<NAME>_MAX_COMPLETION_TOKENS`` (kept within the model's own limits,
            :mod:`helpers.models.completion_limit`).
        completion_limit_setting: the setting that changes the limit, named in every message
            about it (the ``.env`` profile's own, e.g. ``LOCAL_MAX_COMPLETION_TOKENS``).
        settings_prefix: the ``.env`` profile's settings prefix (``LOCAL``), for messages that
            name another of its settings (``LOCAL_CONTEXT_WINDOW``).
        completion_limit_set: the limit comes from that setting (then the model table does not
            lower it; a provider's refusal still does).
        model_rules: rules of model families this provider serves (:class:`ModelRule`).
        user_after_tool: whether a ``user`` message may follow a ``tool`` message directly (a
            turn that stopped after its tool results leaves a thread ending so); where not, an
            assistant message saying the turn stopped is sent between them.
        context_window_tokens: the endpoint's context window as ``<NAME>_CONTEXT_WINDOW`` gives
            it (a local server's ``--max-model-len`` or ``-c``), else ``None`` (the model
            table's, when it knows the model).
        host_suffixes: base-URL host name endings that identify the provider (one host per
            customer resource, as Azure's ``<resource>.openai.azure.com``).
        sources: where each rule comes from (documentation pages, public issues).
    """

    name: str
    title: str
    hosts: tuple[str, ...] = ()
    tool_call_ids: ToolCallIdFormat = CALL_HEX
    upstreams: tuple[tuple[str, str], ...] = ()
    fields_back: tuple[str, ...] | None = ()
    completion_limit_field: str = "max_tokens"
    completion_limit_tokens: int = DEFAULT_COMPLETION_LIMIT_TOKENS
    completion_limit_setting: str = "<NAME>_MAX_COMPLETION_TOKENS"
    settings_prefix: str = "<NAME>"
    completion_limit_set: bool = False
    model_rules: tuple[ModelRule, ...] = ()
    user_after_tool: bool = True
    context_window_tokens: int | None = None
    host_suffixes: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    def upstream_for(self, model: str) -> ProviderProfile:
        """The profile whose id form and message order requests naming ``model`` keep: the
        upstream's behind a router (:attr:`upstreams`), else this one."""
        for prefix, name in self.upstreams:
            if model.lower().startswith(prefix):
                return PROFILES[name]
        return self

    def ids_for(self, model: str) -> ToolCallIdFormat:
        """The id form for requests naming ``model`` (a router's upstream may be stricter)."""
        return self.upstream_for(model).tool_call_ids

    def user_after_tool_for(self, model: str) -> bool:
        """Whether a ``user`` message may follow a ``tool`` message in requests naming
        ``model`` (a router's upstream may refuse it)."""
        return self.user_after_tool and self.upstream_for(model).user_after_tool

    def rule_for(self, model: str) -> ModelRule | None:
        """The :class:`ModelRule` of ``model``'s family, if this provider has one."""
        return next((r for r in self.model_rules if r.matches(model)), None)

    def limit_field_for(self, model: str) -> str:
        """The request field of the completion limit for ``model``."""
        rule = self.rule_for(model)
        return rule.completion_limit_field if rule else self.completion_limit_field

    def completion_limit(self) -> dict[str, int]:
        """The request field carrying the completion limit, e.g. ``{"max_tokens": 4096}``."""
        return {self.completion_limit_field: self.completion_limit_tokens}

    def with_completion_limit(self, tokens: int, setting: str | None = None) -> ProviderProfile:
        """This profile with another completion limit, in tokens (from ``setting``, if one).

        Raises:
            ValueError: ``tokens`` is below 1.
        """
        if tokens < 1:
            raise ValueError(f"a completion limit must be at least 1 token, not {tokens}")
        named = {"completion_limit_setting": setting} if setting else {}
        return replace(
            self, completion_limit_tokens=tokens, completion_limit_set=bool(setting), **named
        )

    def with_window(self, tokens: int | None) -> ProviderProfile:
        """This profile with the endpoint's context window, in tokens (``None``: unknown)."""
        return replace(self, context_window_tokens=tokens)

    def for_settings(self, prefix: str) -> ProviderProfile:
        """This profile read for the ``.env`` profile whose settings start with ``prefix``
        (``LOCAL``): its messages name ``LOCAL_MAX_COMPLETION_TOKENS`` and the like."""
        setting = (
            self.completion_limit_setting
            if self.completion_limit_set
            else f"{prefix}_MAX_COMPLETION_TOKENS"
        )
        return replace(self, settings_prefix=prefix, completion_limit_setting=setting)


_PROVIDER_PROFILES = (
    ProviderProfile(
        "openai",
        "OpenAI",
        hosts=("api.openai.com",),
        completion_limit_field="max_completion_tokens",
        completion_limit_tokens=16_384,
        model_rules=(REASONING_MODELS,),
        sources=(
            "OpenAI API reference, Create chat completion: max_tokens is deprecated in favour "
            'of max_completion_tokens and refused by reasoning models ("Unsupported parameter: '
            "'max_tokens' is not supported with this model\", quoted in simonw/llm#724)",
            "16,384: gpt-4o's maximum output tokens (OpenAI model page); a model that writes "
            "fewer (gpt-3.5-turbo, gpt-4-turbo: 4,096) gets its own from the model table",
            REASONING_MODELS.source,
        ),
    ),
    ProviderProfile(
        "azure",
        "Azure OpenAI",
        host_suffixes=(".openai.azure.com", ".cognitiveservices.azure.com"),
        completion_limit_field="max_completion_tokens",
        completion_limit_tokens=16_384,
        model_rules=(REASONING_MODELS,),
        sources=(
            "Azure OpenAI docs, REST API reference: a deployment's URL "
            "/openai/deployments/<deployment>/chat/completions with the required api-version "
            "query and the api-key header (the openai SDK's AzureOpenAI client)",
            "max_completion_tokens from api-version 2024-09-01-preview; an older api-version "
            "refuses it and the client falls back to max_tokens (helpers.models.completion_limit)",
            REASONING_MODELS.source,
        ),
    ),
    ProviderProfile(
        "openrouter",
        "OpenRouter",
        hosts=("openrouter.ai",),
        upstreams=(("mistralai/", "mistral"),),
        fields_back=("reasoning", "reasoning_details"),
        model_rules=(REASONING_MODELS,),
        sources=(
            "OpenRouter docs, Reasoning Tokens: pass reasoning_details back unmodified to "
            "continue reasoning across tool calls",
            "Mistral models through OpenRouter keep Mistral's id rule (openclaw/openclaw#57672) "
            "and its message order (zed-industries/zed#37021, charmbracelet/crush#279)",
        ),
    ),
    ProviderProfile(
        "deepseek",
        "DeepSeek",
        hosts=("api.deepseek.com",),
        fields_back=("reasoning_content",),
        completion_limit_tokens=8_192,
        sources=(
            "DeepSeek API docs, Thinking Mode, Tool Calls: reasoning_content must be sent back "
            'in tool-calling turns, else HTTP 400 "Missing `reasoning_content` field"',
            "DeepSeek API docs, Models & Pricing: deepseek-chat writes at most 8K tokens",
        ),
    ),
    ProviderProfile(
        "gemini",
        "Google Gemini (OpenAI compatibility)",
        hosts=("generativelanguage.googleapis.com",),
        fields_back=("extra_content",),
        completion_limit_tokens=8_192,
        sources=(
            "Gemini API docs, Thought signatures (OpenAI compatibility): each tool call's "
            "extra_content.google.thought_signature must come back, else Gemini 3 answers "
            'HTTP 400 "Function call is missing a thought_signature"',
        ),
    ),
    ProviderProfile(
        "mistral",
        "Mistral AI",
        hosts=("api.mistral.ai",),
        tool_call_ids=ALPHANUMERIC_9,
        user_after_tool=False,
        sources=(
            ALPHANUMERIC_9.source,
            "Mistral answers HTTP 400 \"Unexpected role 'user' after role 'tool'\" to a thread "
            "whose last turn stopped after its tool results (zed-industries/zed#37021, "
            "yetone/avante.nvim#2695)",
            "Mistral answers HTTP 422 extra_forbidden for a message field it does not know, "
            "so no other provider's field reaches it",
        ),
    ),
    ProviderProfile(
        "groq",
        "Groq",
        hosts=("api.groq.com",),
        completion_limit_field="max_completion_tokens",
        sources=(
            "Groq API reference, chat completions: max_completion_tokens, max_tokens deprecated "
            "(groq/groq-python#175)",
            "Groq answers HTTP 400 \"property 'reasoning_content' is unsupported\" for another "
            "provider's reasoning field",
        ),
    ),
    ProviderProfile(
        "anthropic",
        "Anthropic (OpenAI SDK compatibility)",
        hosts=("api.anthropic.com",),
        completion_limit_tokens=8_192,
        sources=(
            "Anthropic docs, OpenAI SDK compatibility: max_tokens supported, unknown fields "
            "ignored",
        ),
    ),
    ProviderProfile(
        "ollama",
        "Ollama",
        fields_back=None,
        sources=("Ollama docs, OpenAI compatibility: /v1/chat/completions reads max_tokens",),
    ),
    ProviderProfile(
        "llama.cpp",
        "llama.cpp server",
        fields_back=None,
        sources=("ggml-org/llama.cpp, tools/server/README.md: max_tokens (alias of n_predict)",),
    ),
    ProviderProfile(
        "vllm",
        "vLLM",
        fields_back=None,
        sources=("vLLM docs, OpenAI-compatible server: max_tokens and max_completion_tokens",),
    ),
    ProviderProfile(
        "lmstudio",
        "LM Studio",
        fields_back=None,
        sources=("LM Studio docs, OpenAI compatibility endpoints: max_tokens",),
    ),
)

#: The host of the offline reference model's base URL (:mod:`helpers.models.offline`).
OFFLINE_HOST = "offline.invalid"
#: The offline reference model stands for gpt-4o, the model ``workbook compare`` prices its runs
#: at: gpt-4o's context window and its most output tokens per response (both in
#: ``data/pricing.yaml``, dated and sourced; a test keeps them equal). A completion that reaches
#: the output limit is cut (``finish_reason: "length"``) as OpenAI cuts it.
OFFLINE_CONTEXT_WINDOW_TOKENS = 128_000
OFFLINE_COMPLETION_LIMIT_TOKENS = 16_384

OFFLINE = ProviderProfile(
    "offline",
    "the offline reference model",
    hosts=(OFFLINE_HOST,),
    fields_back=None,
    completion_limit_field="max_completion_tokens",
    completion_limit_tokens=OFFLINE_COMPLETION_LIMIT_TOKENS,
    sources=("helpers.models.offline: it reads max_completion_tokens and max_tokens",),
)

#: An endpoint no profile knows: the fields every OpenAI-compatible server reads
#: (``max_tokens``), the workbook's own ids, provider fields back to the endpoint that sent them.
DEFAULT = ProviderProfile(
    "default",
    "an OpenAI-compatible server",
    fields_back=None,
    sources=("max_tokens: the chat-completions field every OpenAI-compatible server reads",),
)

#: Every profile by name (``<NAME>_PROVIDER_PROFILE`` picks one).
PROFILES: dict[str, ProviderProfile] = {p.name: p for p in (*_PROVIDER_PROFILES, OFFLINE, DEFAULT)}


class UnknownProviderProfileError(ValueError):
    """A profile name that is not in :data:`PROFILES`; the message lists the known ones."""


def profile_named(name: str) -> ProviderProfile:
    """The profile called ``name`` (case-insensitive).

    Raises:
        UnknownProviderProfileError: no such profile.
    """
    try:
        return PROFILES[name.strip().lower()]
    except KeyError:
        known = ", ".join(PROFILES)
        raise UnknownProviderProfileError(
            f"no provider profile {name!r}; the known ones are {known}"
        ) from None


#: The profile each client was made with (:func:`remember_profile`); a client forgotten by
#: Python is forgotten here too.
_CLIENT_PROFILES: weakref.WeakKeyDictionary[object, ProviderProfile] = weakref.WeakKeyDictionary()


def remember_profile(client: object, profile: ProviderProfile) -> None:
    """Note that requests through ``client`` follow ``profile`` (``make_client`` does this with
    the ``.env`` choice, so notebooks and the CLI need not pass it on)."""
    _CLIENT_PROFILES[client] = profile


def profile_of(client: object) -> ProviderProfile:
    """The profile ``client`` was made with (:func:`remember_profile`), else the one its base
    URL's host names (:func:`profile_for`)."""
    remembered = _CLIENT_PROFILES.get(client)
    if remembered is not None:
        return remembered
    return profile_for(str(getattr(client, "base_url", "") or "") or None)


def profile_for(base_url: str | None) -> ProviderProfile:
    """The profile of the provider at ``base_url`` (``None``: OpenAI's own endpoint), by its
    host; :data:`DEFAULT` for a host no profile names (a local server, a proxy)."""
    if base_url is None:
        return PROFILES["openai"]
    host = (urlsplit(base_url).hostname or "").lower()
    for profile in PROFILES.values():
        if host in profile.hosts or any(host.endswith(end) for end in profile.host_suffixes):
            return profile
    return DEFAULT
