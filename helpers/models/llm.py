"""Model access: ``.env`` profiles and the ``openai`` client.

Settings come from the environment and a ``.env`` file in the project root (python-dotenv;
the environment wins). Three provider blocks, each ``<P>_API_KEY``, ``<P>_BASE_URL``,
``<P>_MODEL``, ``<P>_TIMEOUT``:

- ``OPENAI`` (base URL optional), ``OPENROUTER`` (base URL defaults to OpenRouter's),
  ``LOCAL`` (any OpenAI-compatible server; base URL required, key optional);
- plus the built-in ``OFFLINE`` provider, the offline reference model (:mod:`helpers.models.offline`);
  its ``<NAME>_MODEL`` is ``offline-reference`` (the default: the ideal model) or
  ``offline-reference:<persona>``, the same plans with one persona's mistake
  (:mod:`helpers.models.personas`).

A profile ``<NAME>`` picks a provider and may set its own ``<NAME>_MODEL``, ``<NAME>_TEMPERATURE``,
``<NAME>_TIMEOUT``, ``<NAME>_BASE_URL`` and ``<NAME>_API_KEY`` (and, for the offline model,
``<NAME>_CONTEXT_WINDOW`` in tokens, default 128,000); what it does not set comes from its
provider's block. The provider's rules (:mod:`helpers.models.providers`) come from the base URL's host,
or from ``<NAME>_PROVIDER_PROFILE`` (e.g. ``ollama``, ``mistral``), and every request carries a
completion limit: the rules' own, or ``<NAME>_MAX_COMPLETION_TOKENS``. A profile with its own base URL must bring its own key (a provider's key is only
ever sent to that provider's endpoint), and a profile with a base URL but no ``<NAME>_PROVIDER``
is an OpenAI-compatible server (``local``). Choose a profile with ``--profile`` or
``WORKBOOK_PROFILE``; a provider's own name works as a profile too. With no profile chosen, the
default is ``openai`` when ``OPENAI_API_KEY`` is set (in ``.env`` or the shell: one rule for the
CLI and the notebooks), else the offline reference model. Every run says which model it uses and
why that one (:meth:`ModelConfig.describe`, :attr:`ModelConfig.chosen_by`), and a notebook cell
that starts many paid turns waits for a go-ahead (:mod:`helpers.course.budget`).

Values are stripped of surrounding whitespace. API keys are never printed (``repr`` hides them)
and are redacted from every error message (:mod:`helpers.text.redaction`). OpenAI's organization and
project headers (``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``) and ``OPENAI_CUSTOM_HEADERS``, which the
SDK reads from the environment, go to OpenAI's own endpoint only.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai

from helpers.models.offline import OFFLINE_MODEL_NAME, OfflineModel, offline_client
from helpers.models.personas import PERSONAS, UnknownPersonaError, persona_for_model
from helpers.models.providers import (
    DEFAULT_MAX_RETRIES,
    OFFLINE,
    PROFILES,
    ProviderProfile,
    profile_for,
    profile_named,
    remember_profile,
)
from helpers.models.replies import error_message, error_rule, is_context_overflow
from helpers.models.settings import (
    PROFILE_NAME_RE,
    PROVIDERS,
    load_env,
    settings_prefix,
)
from helpers.text.redaction import endpoint_shown

#: The ``api-version`` an Azure OpenAI profile sends unless ``<NAME>_API_VERSION`` says
#: otherwise: the latest generally available data-plane version with tools and
#: ``max_completion_tokens`` (Azure OpenAI docs, "API version lifecycle").
AZURE_DEFAULT_API_VERSION = "2024-10-21"
#: A header name as HTTP allows it (RFC 9110's token).
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
#: The model a provider's own profile runs when ``<PROVIDER>_MODEL`` is not set, so a key alone
#: works (``OPENAI_API_KEY`` in the shell, no ``.env``): OpenAI's smallest priced model in
#: ``data/pricing.yaml``. Other providers have no default: their model names are their own.
DEFAULT_MODELS = {"openai": "gpt-4o-mini"}
OPENROUTER_DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
OPENAI_HOST = "api.openai.com"
#: Seconds the SDK waits for one model response before it gives up (then retries).
DEFAULT_TIMEOUT_S = 120.0
#: How to choose a model, said the same way to CLI and notebook users.
HOW_TO_CHOOSE = "(or choose one per run: --model on the command line, model= in Python)"


class ConfigError(ValueError):
    """The ``.env`` settings do not describe a usable model; the message says what to set."""


@dataclass(frozen=True)
class ModelConfig:
    """A resolved model choice: which provider, which model, how to reach it."""

    profile: str
    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    organization: str | None = None
    project: str | None = None
    #: the model's context window in tokens, from ``<NAME>_CONTEXT_WINDOW`` (the offline model
    #: answers within it; a real model's completion limit is kept within it)
    context_window_tokens: int | None = None
    #: Azure OpenAI's ``api-version`` query (``<NAME>_API_VERSION``); ``None`` elsewhere
    api_version: str | None = None
    #: headers sent with every request to this profile's endpoint only (``<NAME>_EXTRA_HEADERS``)
    extra_headers: dict[str, str] = field(default_factory=dict, repr=False)
    #: the provider's rules (:mod:`helpers.models.providers`): id form, fields back, completion limit
    provider_profile: ProviderProfile = OFFLINE
    #: why this profile runs, in words (``"named"``: given by name, ``"WORKBOOK_PROFILE=…"``,
    #: ``"OPENAI_API_KEY is set…"``)
    chosen_by: str = ""

    @property
    def offline(self) -> bool:
        return self.provider == "offline"

    @property
    def is_openai_endpoint(self) -> bool:
        """The requests go to OpenAI itself (the only endpoint that gets OpenAI's headers)."""
        if self.provider != "openai":
            return False
        return self.base_url is None or urlsplit(self.base_url).hostname == OPENAI_HOST

    def describe(self) -> str:
        """A line for the user, e.g. ``offline reference model (offline-reference; no network)``."""
        why = f" [{self.chosen_by}]" if self.chosen_by else ""
        if self.offline:
            return f"offline reference model ({self.model}; no network, no key){why}"
        where = endpoint_shown(self.base_url)
        return f"{self.model} via {self.provider} ({where}), profile {self.profile}{why}"


def _number(env: Mapping[str, str], key: str, *, positive: bool = False) -> float | None:
    raw = env.get(key)
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{key}={raw!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"{key}={raw!r} must be a finite number")
    if positive and value <= 0:
        raise ConfigError(f"{key}={raw!r} must be a number of seconds above 0")
    return value


def _check_url(key: str, url: str) -> str:
    """``url``, if the client can send to it: http(s), a host whose name can be encoded (IDNA:
    no empty label, none over 63 characters), a port in 1-65535, no query or fragment (the
    ``openai`` SDK appends ``chat/completions`` to the base URL's text, so ``/v1?key=K`` would be
    sent as ``/v1/?key=Kchat/completions``), no control character (said first, by its position
    in the value: the parsers' own reasons name a bracket, or a position in a URL shown without
    its user), and nothing the HTTP client's own parser (``httpx2.URL``) refuses.

    Raises:
        ConfigError: naming ``key`` and why (the URL shown without user, password or query).
    """
    control = next((i for i, c in enumerate(url) if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if control is not None:  # before any parser: theirs name a bracket or a position elsewhere
        raise ConfigError(
            f"{key} holds a control character ({url[control]!r}) at position {control} of its "
            "value; copy the URL again, e.g. http://127.0.0.1:1234/v1"
        )
    shown = endpoint_shown(url)
    try:
        parts = urlsplit(url)
        web = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError as exc:  # e.g. "Invalid IPv6 URL": the URL itself cannot be read
        raise ConfigError(
            f"{key} cannot be read as a URL ({exc}); copy it again, e.g. http://127.0.0.1:1234/v1"
        ) from None
    if not web:  # not shown: without "scheme://", a user:password@ reads as a scheme and path
        raise ConfigError(f"{key} is not an http(s) URL with a host, e.g. http://127.0.0.1:1234/v1")
    try:
        port = parts.port
    except ValueError:
        port = 0
    reason = "its port is not a number from 1 to 65535" if port == 0 else None
    try:
        httpx2.URL(url)
        str(parts.hostname).encode("idna")
    except (ValueError, httpx2.InvalidURL) as exc:  # the reason names a character, not the URL
        reason = reason or str(exc).rstrip(".")  # (UnicodeError is a ValueError)
    if reason:
        raise ConfigError(f"{key}={shown!r} cannot be sent to: {reason}; copy the URL again")
    if "api-version=" in parts.query and "/openai/deployments/" in parts.path:
        deployment = parts.path.split("/openai/deployments/", 1)[1].split("/", 1)[0]
        prefix = key.removesuffix("_BASE_URL")
        raise ConfigError(
            f"{key}={shown!r} is an Azure OpenAI deployment's URL: set {prefix}_PROVIDER=azure, "
            f"{key}={parts.scheme}://{parts.netloc}, {prefix}_MODEL={deployment} (the "
            f"deployment) and {prefix}_API_VERSION to the api-version it names"
        )
    if parts.query or parts.fragment:  # the SDK appends its paths after them: ?key=…chat/…
        raise ConfigError(
            f"{key}={shown!r} goes on with a query or a fragment (?… or #…), which the client "
            "cannot send its requests under; a key belongs in the profile's _API_KEY setting"
        )
    return url


@dataclass(frozen=True)
class _Profile:
    """A ``.env`` profile being read: its name, its provider, and the keys to look under (the
    profile's own first, then its provider's block)."""

    env: Mapping[str, str]
    name: str
    prefix: str  # the profile's name as a settings prefix, e.g. DEEPSEEK
    provider: str  # one of PROVIDERS
    keys: tuple[str, ...]
    chosen_by: str = ""  # why this profile runs (ModelConfig.chosen_by)
    from_file: Mapping[str, Path] = field(default_factory=dict)  # Settings.from_file

    def origin(self, key: str) -> str:
        """Where setting ``key`` came from: its ``.env`` file, or ``"the shell"``."""
        return str(self.from_file[key]) if key in self.from_file else "the shell"

    @property
    def block(self) -> str:
        return self.provider.upper()

    def setting(self, suffix: str) -> tuple[str | None, str | None]:
        """``(value, key)`` of the first of ``<KEY>_<suffix>`` that is set, else ``(None, None)``."""
        for key in self.keys:
            if self.env.get(f"{key}_{suffix}"):
                return self.env[f"{key}_{suffix}"], f"{key}_{suffix}"
        return None, None

    def number(self, suffix: str) -> float | None:
        """The first of ``<KEY>_<suffix>`` that is set, as a number above 0."""
        return next(
            (n for k in self.keys if (n := _number(self.env, f"{k}_{suffix}", positive=True))),
            None,
        )


def _read_profile(env: Mapping[str, str], profile: str | None) -> _Profile:
    """Which profile runs and on which provider.

    Raises:
        ConfigError: the profile name is empty when given, or not a name
            (:data:`PROFILE_NAME_RE`); the profile names no provider, or an unknown one.
    """
    if profile is not None and not profile.strip():
        raise ConfigError(
            "the profile name is empty; name one (offline, a provider, or a profile of your own "
            "in .env), or leave --profile out for WORKBOOK_PROFILE's"
        )
    name = (profile or env.get("WORKBOOK_PROFILE") or "").strip()
    if name and not PROFILE_NAME_RE.fullmatch(name):
        shown = repr(name) if len(name) <= 80 else f"{name[:60]!r}… ({len(name):,} characters)"
        source = "" if profile and profile.strip() else " (WORKBOOK_PROFILE's)"
        raise ConfigError(
            f"profile {shown}{source} is not a profile name: ASCII letters, digits, '-' and '_', "
            "not starting with '-' or '_', at most 64 (a profile's settings are named after it, "
            "<NAME>_BASE_URL, <NAME>_MODEL...)"
        )
    if profile and profile.strip():
        chosen_by = "named"  # by -p/--profile, or resolve_model(name) in code
    elif name:
        chosen_by = f"WORKBOOK_PROFILE={name}"
    elif env.get("OPENAI_API_KEY"):
        name, chosen_by = (
            "openai",
            "OPENAI_API_KEY is set; WORKBOOK_PROFILE=offline to stay offline",
        )
    else:
        name, chosen_by = "offline", "no profile chosen and no OPENAI_API_KEY"
    prefix = settings_prefix(name)
    provider = (env.get(f"{prefix}_PROVIDER") or "").lower()
    if not provider:
        if name.lower() in PROVIDERS:
            provider = name.lower()
        elif env.get(f"{prefix}_BASE_URL"):
            provider = "local"  # a base URL of its own: an OpenAI-compatible server
        else:
            raise ConfigError(
                f"profile {name!r} has no {prefix}_PROVIDER; set it to one of "
                f"{', '.join(PROVIDERS)} (or give the profile its own {prefix}_BASE_URL)"
            )
    if provider not in PROVIDERS:
        raise ConfigError(f"{prefix}_PROVIDER={provider!r} is not one of {', '.join(PROVIDERS)}")
    keys = (prefix,) if prefix == provider.upper() else (prefix, provider.upper())
    return _Profile(env, name, prefix, provider, keys, chosen_by)


def _offline_model(p: _Profile, model: str | None) -> str:
    """The offline model a profile runs: ``model`` if given, else ``<KEY>_MODEL``, else the ideal
    ``offline-reference``; ``offline-reference:<persona>`` chooses a persona
    (:mod:`helpers.models.personas`), so the notebooks can run against a model that makes a
    persona's mistake. A name given in code or with ``--model`` is otherwise the ideal model
    under a label of the caller's (``workbook cases --model offline-a --model offline-b`` writes
    a matrix); a ``<KEY>_MODEL`` setting must name the offline model.

    Raises:
        ConfigError: an unknown persona; a ``<KEY>_MODEL`` that is not ``offline-reference`` or
            ``offline-reference:<persona>``. The message names the setting and the personas.
    """
    if model and model.strip():
        chosen, key = model.strip(), "the model asked for"
    else:
        chosen, key = p.setting("MODEL")
    if not chosen:
        return OFFLINE_MODEL_NAME
    try:
        persona = persona_for_model(chosen)
    except UnknownPersonaError as exc:
        raise ConfigError(f"{key}={chosen!r}: {exc}") from None
    if model and model.strip() and not chosen.startswith(OFFLINE_MODEL_NAME):
        return chosen  # a label for the ideal model
    if chosen not in (persona.model_name, f"{OFFLINE_MODEL_NAME}:{persona.name}"):
        raise ConfigError(
            f"{key}={chosen!r} is not an offline model: use {OFFLINE_MODEL_NAME}, or "
            f"{OFFLINE_MODEL_NAME}:<persona> with a persona of {', '.join(PERSONAS)}"
        )
    return persona.model_name  # offline-reference:ideal is offline-reference


def _rules(p: _Profile, found: ProviderProfile) -> ProviderProfile:
    """The provider's rules for a profile: ``<KEY>_PROVIDER_PROFILE`` if set, else ``found`` (by
    the base URL's host); the completion limit from ``<KEY>_MAX_COMPLETION_TOKENS`` if set.

    Raises:
        ConfigError: an unknown provider profile, or a limit that is not a whole number above 0.
    """
    named, key = p.setting("PROVIDER_PROFILE")
    try:
        rules = profile_named(named) if named else found
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    raw, key = p.setting("MAX_COMPLETION_TOKENS")
    if raw is None:
        return rules.for_settings(p.prefix)
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{key}={raw!r} must be a whole number of tokens above 0")
    return rules.with_completion_limit(int(raw), setting=str(key)).for_settings(p.prefix)


def _base_url(p: _Profile) -> tuple[str | None, bool]:
    """``(base URL, whether it is the profile's own)``; ``None``: the SDK's default (OpenAI).

    Raises:
        ConfigError: a URL that is not http(s), or a local server without one.
    """
    base_url, key = p.setting("BASE_URL")
    if base_url is not None:
        return _check_url(str(key), base_url), key == f"{p.prefix}_BASE_URL" and p.prefix != p.block
    if p.provider == "openrouter":
        return OPENROUTER_DEFAULT_BASE_URL, False
    if p.provider == "local":
        raise ConfigError(
            f"profile {p.name!r} is an OpenAI-compatible server and needs {p.keys[-1]}_BASE_URL, "
            "e.g. http://127.0.0.1:1234/v1"
        )
    if p.provider == "azure":
        raise ConfigError(
            f"profile {p.name!r} is Azure OpenAI and needs {p.keys[-1]}_BASE_URL, the resource's "
            "endpoint, e.g. https://my-resource.openai.azure.com"
        )
    return None, False


def _extra_headers(p: _Profile) -> dict[str, str]:
    """``<KEY>_EXTRA_HEADERS``: a JSON object of header names and values sent with every
    request to this profile's endpoint (OCI Generative AI's ``OpenAI-Project``, a gateway's
    tenant header); their values are redacted like keys (:mod:`helpers.text.redaction`).

    Raises:
        ConfigError: not a JSON object of strings, a name HTTP does not allow, or a value that
            cannot travel in a header (not printable ASCII).
    """
    raw, key = p.setting("EXTRA_HEADERS")
    if raw is None:
        return {}
    try:
        headers = json.loads(raw)
    except ValueError:
        headers = None
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise ConfigError(
            f"{key} must be a JSON object of header names and text values, e.g. "
            '{"OpenAI-Project": "ocid1.generativeaiproject.oc1..."}'
        )
    for name, value in headers.items():
        if not _HEADER_NAME_RE.fullmatch(name):
            raise ConfigError(f"{key}: {name!r} is not a header name HTTP allows")
        if not (value.isascii() and value.isprintable()):
            raise ConfigError(f"{key}: the value of {name} cannot travel in an HTTP header")
    return headers


def _api_key(p: _Profile, own_endpoint: bool) -> str:
    """The profile's key: its own, else (not for its own endpoint) its provider's. A key goes
    only to a base URL set in the same place (both in one ``.env`` file, or both in the shell):
    a ``.env`` planted in the working folder that sets ``OPENAI_BASE_URL`` alone never gets the
    shell's ``OPENAI_API_KEY`` sent to its URL.

    Raises:
        ConfigError: no key where one is needed, a key that cannot be sent as it is, or a key
            and a base URL from different places.
    """
    key_name = f"{p.prefix}_API_KEY"
    if not p.env.get(key_name) and not own_endpoint:
        key_name = f"{p.block}_API_KEY"
    api_key = p.env.get(key_name)
    _, url_key = p.setting("BASE_URL")
    if api_key and url_key:
        url_from, key_from = p.origin(url_key), p.origin(key_name)
        if url_from != key_from:  # a .env planted where the command runs sets only a URL
            raise ConfigError(
                f"{url_key} comes from {url_from} but {key_name} from {key_from}: a key is sent "
                "only to a base URL set beside it; set both in the same place"
            )
    if api_key and any(c.isspace() for c in api_key):
        raise ConfigError(
            f"the API key of profile {p.name!r} has whitespace inside it; copy the key again"
        )
    if api_key and not (api_key.isascii() and api_key.isprintable()):
        raise ConfigError(
            f"the API key of profile {p.name!r} holds a character that cannot travel in an HTTP "
            "header (not printable ASCII, e.g. a zero-width space); copy the key again"
        )
    if api_key:
        return api_key
    if p.provider == "local":
        return "not-needed"
    if own_endpoint:
        raise ConfigError(
            f"profile {p.name!r} sets its own {p.prefix}_BASE_URL, so it needs its own "
            f"{p.prefix}_API_KEY ({p.block}_API_KEY is only sent to {p.provider}'s endpoint)"
        )
    wanted = " or ".join(f"{k}_API_KEY" for k in p.keys)
    raise ConfigError(f"profile {p.name!r} uses {p.provider}, which needs {wanted} in .env")


def resolve_model(
    profile: str | None = None,
    model: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> ModelConfig:
    """Work out provider, model, URL, key, temperature, timeout and the provider's rules for a
    profile.

    Args:
        profile: profile name (case-insensitive); default ``WORKBOOK_PROFILE``, else ``openai``
            if ``OPENAI_API_KEY`` is set, else ``offline``.
        model: a model name that overrides the profile's.
        env: the settings (default :func:`load_env`).

    Raises:
        ConfigError: unknown provider or provider profile, missing key or base URL, no model, a
            completion limit that is not a whole number above 0, a key with whitespace
            inside, a bad URL, temperature or timeout. The message names the setting to fix.
    """
    raw_env = load_env() if env is None else env
    env = {k: v.strip() for k, v in raw_env.items() if v is not None and v.strip() != ""}
    p = replace(_read_profile(env, profile), from_file=getattr(raw_env, "from_file", {}))
    temperature = _number(env, f"{p.prefix}_TEMPERATURE")
    timeout_s = p.number("TIMEOUT") or DEFAULT_TIMEOUT_S
    if p.provider == "offline":
        window = p.number("CONTEXT_WINDOW")
        return ModelConfig(
            p.name.lower(),
            "offline",
            _offline_model(p, model),
            temperature=temperature,
            timeout_s=timeout_s,
            context_window_tokens=int(window) if window else None,
            provider_profile=_rules(p, OFFLINE),
            chosen_by=p.chosen_by,
        )
    chosen = model.strip() if model else p.setting("MODEL")[0]
    if not chosen and p.name.lower() == p.provider:
        chosen = DEFAULT_MODELS.get(p.provider)
    if not chosen:
        wanted = " or ".join(f"{k}_MODEL" for k in p.keys)
        raise ConfigError(f"no model for profile {p.name!r}: set {wanted} in .env {HOW_TO_CHOOSE}")
    base_url, own_endpoint = _base_url(p)
    window = p.number("CONTEXT_WINDOW")
    api_version = None
    if p.provider == "azure":
        api_version = p.setting("API_VERSION")[0] or AZURE_DEFAULT_API_VERSION
    config = ModelConfig(
        p.name.lower(),
        p.provider,
        chosen,
        base_url,
        _api_key(p, own_endpoint),
        temperature,
        timeout_s,
        context_window_tokens=int(window) if window else None,
        api_version=api_version,
        extra_headers=_extra_headers(p),
        provider_profile=_rules(
            p, PROFILES["azure"] if p.provider == "azure" else profile_for(base_url)
        ).with_window(int(window) if window else None),
        chosen_by=p.chosen_by,
    )
    if config.is_openai_endpoint:
        config = replace(
            config, organization=env.get("OPENAI_ORG_ID"), project=env.get("OPENAI_PROJECT_ID")
        )
    return config


def _no_retry_when_permanent(response: httpx2.Response) -> None:
    """A response hook: an error no wait will cure gets the ``x-should-retry: false`` header,
    which the ``openai`` SDK obeys (``_should_retry``): an error of
    :data:`helpers.models.replies.ERROR_RULES` that a retry cannot fix (a spent daily quota, a server
    started without ``--jinja``), and a 500 that says the context is full (llama.cpp's server:
    :func:`helpers.models.replies.is_context_overflow`), which the SDK would otherwise send twice more."""
    if response.status_code not in (429, 500, 502, 503):
        return
    response.read()
    try:
        body = response.json()
    except ValueError:
        return
    error = body.get("error") if isinstance(body, dict) else None
    codes = {error.get("code"), error.get("type")} if isinstance(error, dict) else set()
    text = f"{codes} {error_message(body)}"
    rule = error_rule(response.status_code, text)
    if (rule is not None and not rule.retry) or is_context_overflow(response.status_code, text):
        response.headers["x-should-retry"] = "false"


def make_client(
    config: ModelConfig,
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
    timeout_s: float | None = None,
    offline_model: OfflineModel | None = None,
) -> openai.OpenAI:
    """An ``openai.OpenAI`` client for ``config`` (the offline model needs no network).

    Args:
        config: from :func:`resolve_model`.
        max_retries: the SDK's own retry count for connection errors, 408/409/429 and 5xx
            responses (with its backoff, honouring ``Retry-After``); 0 disables retries. An
            error that waiting cannot cure (:data:`helpers.models.replies.ERROR_RULES`) is never
            retried.
        timeout_s: seconds to wait for one response; default ``config.timeout_s``.
        offline_model: the offline model to answer (default: one with every case's plan).

    Organization and project headers, and the SDK's ``OPENAI_CUSTOM_HEADERS``, are sent only
    when the endpoint is OpenAI's own. The client remembers ``config.provider_profile``
    (:func:`helpers.models.providers.remember_profile`), so every turn through it follows those rules.
    """
    if config.offline:
        if offline_model is None and config.context_window_tokens:
            offline_model = OfflineModel(context_window_tokens=config.context_window_tokens)
        elif offline_model is not None and config.context_window_tokens:
            offline_model.context_window_tokens = config.context_window_tokens
        client = offline_client(offline_model, max_retries=max_retries)
        remember_profile(client, config.provider_profile)
        return client
    headers: dict[str, str] = {}
    if not config.is_openai_endpoint:
        # the SDK adds these from the environment; they belong to OpenAI, not to this endpoint
        custom = os.environ.get("OPENAI_CUSTOM_HEADERS") or ""
        for line in custom.splitlines():
            if ":" in line:
                headers[line.split(":", 1)[0].strip()] = openai.Omit()  # type: ignore[assignment]
        if config.provider != "azure":  # Azure's client sends the key as api-key
            headers["Authorization"] = f"Bearer {config.api_key}"
    headers.update(config.extra_headers)
    common: dict[str, Any] = {
        "api_key": config.api_key,
        "max_retries": max_retries,
        "timeout": timeout_s if timeout_s is not None else config.timeout_s,
        "default_headers": headers or None,
        "http_client": openai.DefaultHttpxClient(
            event_hooks={"response": [_no_retry_when_permanent]}
        ),
    }
    client: openai.OpenAI
    if config.provider == "azure":  # the model is the deployment: /openai/deployments/<model>/…
        client = openai.AzureOpenAI(
            azure_endpoint=str(config.base_url), api_version=config.api_version, **common
        )
    else:
        client = openai.OpenAI(
            base_url=config.base_url,
            organization=config.organization,
            project=config.project,
            **common,
        )
    if not config.is_openai_endpoint:
        client.organization = client.project = None
        client.admin_api_key = None
    remember_profile(client, config.provider_profile)
    return client
