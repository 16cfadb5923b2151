"""The settings: ``.env`` read into the environment beside what the shell set, each with where it
came from, and the profiles they name. Its own module, apart from the model client, so a command
that needs the settings and no model (``workbook mcp-server``, ``workbook models --names``,
which tab completion runs at each press) does not import the ``openai`` package (0.5 s of
CPU)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from dotenv import load_dotenv

from helpers.base.paths import workspace_dir
from helpers.text.redaction import warn_if_env_file_shared


class Settings(dict[str, str]):
    """The settings :func:`load_env` read (name → value), and where each came from:
    :attr:`from_file` names the ``.env`` file of each that came from one (the rest came from
    the shell)."""

    def __init__(self, values: Mapping[str, str], from_file: Mapping[str, Path]):
        super().__init__(values)
        self.from_file = dict(from_file)


def load_env(env_file: str | Path | None = None) -> Settings:
    """Load ``.env`` (in :func:`helpers.base.paths.workspace_dir` by default) into the environment,
    without overriding what is already set there, and return the settings, each with where it
    came from (:class:`Settings`). Empty values count as unset.

    Warns (:class:`helpers.text.redaction.EnvFileWarning`, once per file and process) when the file
    can be read by other users; the fix is ``chmod 600 .env``.
    """
    path = Path(env_file) if env_file else workspace_dir() / ".env"
    from_file: dict[str, Path] = {}
    if path.is_file():
        warn_if_env_file_shared(path)
        before = {k for k, v in os.environ.items() if v != ""}
        load_dotenv(path, override=False)
        from_file = {k: path for k, v in os.environ.items() if v != "" and k not in before}
    return Settings({k: v for k, v in os.environ.items() if v != ""}, from_file)


#: The providers a profile runs on (``<NAME>_PROVIDER``); each is a profile of its own name too.
PROVIDERS = ("openai", "openrouter", "azure", "local", "offline")


#: A profile's name: what can name its settings in ``.env`` (``<NAME>_BASE_URL``, in capitals
#: with ``-`` as ``_``: :func:`settings_prefix`). The one rule for a name given
#: (:func:`helpers.models.llm.resolve_model`) and a name read from the settings (:func:`configured_profiles`).
PROFILE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def settings_prefix(profile: str) -> str:
    """The prefix of a profile's settings in ``.env``: its name in capitals, ``-`` as ``_``
    (``"q-w"`` → ``"Q_W"``, so ``Q_W_BASE_URL``, ``Q_W_MODEL``…)."""
    return profile.upper().replace("-", "_")


def configured_profiles(env: Mapping[str, str] | None = None) -> list[str]:
    """The profiles the settings name (default :func:`load_env`): ``offline`` first; then each
    provider whose block is set (``OPENAI_API_KEY``, ``OPENROUTER_API_KEY``,
    ``LOCAL_BASE_URL``); then, sorted, each profile of its own (``<NAME>_PROVIDER`` or
    ``<NAME>_BASE_URL``). Whether each is usable is
    :func:`helpers.models.llm.resolve_model`'s to say."""
    env = {k: v for k, v in (load_env() if env is None else env).items() if v and v.strip()}
    names = ["offline"]
    names += [
        p
        for p in PROVIDERS
        if p != "offline" and (f"{p.upper()}_API_KEY" in env or f"{p.upper()}_BASE_URL" in env)
    ]
    prefixes = {
        key.rsplit("_", 2 if key.endswith("_BASE_URL") else 1)[0]
        for key in env
        if key.endswith(("_PROVIDER", "_BASE_URL")) and not key.startswith("WORKBOOK_")
    }
    # only a prefix a name leads back to (settings_prefix): `q-w_BASE_URL` names no profile
    own = {
        name
        for p in prefixes
        if PROFILE_NAME_RE.fullmatch(name := p.lower().replace("_", "-"))
        and settings_prefix(name) == p
    }
    return names + sorted(own - set(PROVIDERS))
