"""Model access: ``.env`` profiles and the ``openai`` client.

Settings come from the environment and a ``.env`` file in the project root (python-dotenv;
the environment wins). Three provider blocks, each ``<P>_API_KEY``, ``<P>_BASE_URL``,
``<P>_MODEL``:

- ``OPENAI`` (base URL optional), ``OPENROUTER`` (base URL defaults to OpenRouter's),
  ``LOCAL`` (any OpenAI-compatible server; base URL required, key optional);
- plus the built-in ``OFFLINE`` provider, the offline reference model (:mod:`helpers.offline`).

A profile ``<NAME>`` picks a provider and may override the model and temperature:
``<NAME>_PROVIDER``, ``<NAME>_MODEL``, ``<NAME>_TEMPERATURE``. Choose one with ``--profile`` or
``WORKBOOK_PROFILE``; a provider's own name works as a profile too. With no profile chosen, the
default is ``openai`` when ``OPENAI_API_KEY`` is set, else the offline reference model. Every run
says which model it uses (:meth:`ModelConfig.describe`). API keys are never printed: ``repr``
hides them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import openai
from dotenv import load_dotenv

from helpers.offline import OFFLINE_MODEL_NAME, OfflineModel, offline_client
from helpers.paths import PROJECT_ROOT

PROVIDERS = ("openai", "openrouter", "local", "offline")
OPENROUTER_DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_MAX_RETRIES = 2


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

    @property
    def offline(self) -> bool:
        return self.provider == "offline"

    def describe(self) -> str:
        """A line for the user, e.g. ``offline reference model (offline-reference; no network)``."""
        if self.offline:
            return f"offline reference model ({self.model}; no network, no key)"
        where = self.base_url or "api.openai.com"
        return f"{self.model} via {self.provider} ({where}), profile {self.profile}"


def load_env(env_file: str | Path | None = None) -> dict[str, str]:
    """Load ``.env`` (project root by default) into the environment, without overriding what is
    already set there, and return the settings. Empty values count as unset."""
    path = Path(env_file) if env_file else PROJECT_ROOT / ".env"
    if path.is_file():
        load_dotenv(path, override=False)
    return {k: v for k, v in os.environ.items() if v != ""}


def resolve_model(
    profile: str | None = None,
    model: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> ModelConfig:
    """Work out provider, model, URL, key and temperature for a profile.

    Args:
        profile: profile name (case-insensitive); default ``WORKBOOK_PROFILE``, else ``openai``
            if ``OPENAI_API_KEY`` is set, else ``offline``.
        model: a model name that overrides the profile's.
        env: the settings (default :func:`load_env`).

    Raises:
        ConfigError: unknown provider, missing key or base URL, no model, bad temperature.
    """
    env = {k: v for k, v in (load_env() if env is None else env).items() if v != ""}
    name = (profile or env.get("WORKBOOK_PROFILE") or "").strip()
    if not name:
        name = "openai" if env.get("OPENAI_API_KEY") else "offline"
    prefix = name.upper().replace("-", "_")
    provider = (env.get(f"{prefix}_PROVIDER") or "").strip().lower()
    if not provider:
        if name.lower() not in PROVIDERS:
            raise ConfigError(
                f"profile {name!r} has no {prefix}_PROVIDER; set it to one of {', '.join(PROVIDERS)}"
            )
        provider = name.lower()
    if provider not in PROVIDERS:
        raise ConfigError(f"{prefix}_PROVIDER={provider!r} is not one of {', '.join(PROVIDERS)}")
    temperature = None
    raw_temperature = env.get(f"{prefix}_TEMPERATURE")
    if raw_temperature:
        try:
            temperature = float(raw_temperature)
        except ValueError:
            raise ConfigError(f"{prefix}_TEMPERATURE={raw_temperature!r} is not a number") from None
    if provider == "offline":
        return ModelConfig(
            name.lower(), "offline", model or OFFLINE_MODEL_NAME, None, None, temperature
        )
    block = provider.upper()
    chosen = model or env.get(f"{prefix}_MODEL") or env.get(f"{block}_MODEL")
    if not chosen:
        raise ConfigError(
            f"no model for profile {name!r}: set {prefix}_MODEL or {block}_MODEL, or pass --model"
        )
    api_key = env.get(f"{block}_API_KEY")
    base_url = env.get(f"{block}_BASE_URL") or None
    if provider == "openrouter":
        base_url = base_url or OPENROUTER_DEFAULT_BASE_URL
    if provider == "local":
        if not base_url:
            raise ConfigError(
                "the local provider needs LOCAL_BASE_URL, e.g. http://127.0.0.1:1234/v1"
            )
        api_key = api_key or "not-needed"
    if not api_key:
        raise ConfigError(f"profile {name!r} uses {provider}, which needs {block}_API_KEY")
    return ModelConfig(name.lower(), provider, chosen, base_url, api_key, temperature)


def make_client(
    config: ModelConfig,
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
    timeout_s: float = 120.0,
    offline_model: OfflineModel | None = None,
) -> openai.OpenAI:
    """An ``openai.OpenAI`` client for ``config`` (the offline model needs no network).

    ``max_retries`` is the SDK's own retry count for connection errors, 408/409/429 and 5xx
    responses (with its backoff, honouring ``Retry-After``); 0 disables retries.
    """
    if config.offline:
        return offline_client(offline_model, max_retries=max_retries)
    return openai.OpenAI(
        api_key=config.api_key,
        base_url=config.base_url,
        max_retries=max_retries,
        timeout=timeout_s,
    )
