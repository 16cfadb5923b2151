"""Shared fixtures: every test session gets its own run-time folder, with a real reference
database and a real SQLite store file in it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_VAR = Path(tempfile.mkdtemp(prefix="workbook-test-var-"))
os.environ["WORKBOOK_VAR_DIR"] = str(_VAR)
os.environ["WORKBOOK_PROFILE"] = "offline"
os.environ.pop("WORKBOOK_DB_URL", None)

import pytest  # noqa: E402

from helpers.models.offline import offline_client  # noqa: E402
from helpers.store.tool_outputs import ToolOutputStore  # noqa: E402
from helpers.tooling.dataset import build_reference_db  # noqa: E402
from helpers.tooling.tools import default_registry  # noqa: E402

build_reference_db()


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh SQLite file for one test."""
    return f"sqlite:///{tmp_path / 'store.sqlite'}"


@pytest.fixture
def store(db_url: str):
    s = ToolOutputStore(db_url)
    yield s
    s.close()


@pytest.fixture(scope="session")
def client():
    """The offline reference model behind the real openai client (mock transport)."""
    return offline_client()


@pytest.fixture
def registry():
    return default_registry()


@pytest.fixture
def ask(tmp_path, monkeypatch, capsys):
    """``workbook ask PROMPT --json`` in-process against a scripted provider, its invariants
    checked (:func:`provider.ask_runner`)."""
    from provider import ask_runner

    return ask_runner(tmp_path, monkeypatch, capsys)
