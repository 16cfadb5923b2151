"""The settings: ``.env`` read into the environment beside what the shell set, each with where it
came from. Its own module, apart from the model client, so a command that needs the settings and
no model (``workbook mcp-server``) does not import the ``openai`` package (0.5 s of CPU)."""

from __future__ import annotations

import os
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
