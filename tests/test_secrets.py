"""API keys never appear in CLI output, --dump-context, stored rows or notebook outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
from hang import HANG_GUARD_S
from nbclient import NotebookClient

from helpers.course.student_notebooks import NOTEBOOKS_DIR, SOLUTIONS_DIR
from helpers.models.offline_server import OfflineServer

SECRET = "sk-test-SECRET-0123456789abcdefABCDEF"
CASE1 = "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep Check for analysis."


def test_a_real_key_is_used_but_never_shown_or_stored(tmp_path) -> None:
    db = tmp_path / "store.sqlite"
    with OfflineServer() as server:  # a keyed "local" provider that is really the offline model
        env = {
            **os.environ,
            "WORKBOOK_PROFILE": "local",
            "LOCAL_BASE_URL": server.base_url,
            "LOCAL_MODEL": "offline-reference",
            "LOCAL_API_KEY": SECRET,
            "OPENAI_API_KEY": SECRET,
            "WORKBOOK_DB_URL": f"sqlite:///{db}",
        }
        runs = [
            subprocess.run(
                [sys.executable, "-m", "helpers.cli", "ask", CASE1, *flags],
                capture_output=True,
                text=True,
                env=env,
                timeout=HANG_GUARD_S,
            )
            for flags in (
                ["--json", "--dump-context"],
                ["--dump-context", "--print-tools", "--color", "never"],
            )
        ]
        requests = server.chat_requests
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert SECRET not in run.stdout and SECRET not in run.stderr
    assert json.loads(runs[0].stdout)["model"] == "offline-reference"
    assert "via local" in runs[1].stdout and requests == 6  # both turns went over HTTP
    assert SECRET.encode() not in db.read_bytes()
    for extra in db.parent.glob("store.sqlite-*"):  # the WAL and shared-memory files too
        assert SECRET.encode() not in extra.read_bytes()


def test_notebook_outputs_hold_no_key(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("WORKBOOK_PROFILE", "offline")
    notebook = nbformat.read(SOLUTIONS_DIR / "00_setup.ipynb", as_version=4)
    NotebookClient(
        notebook,
        timeout=HANG_GUARD_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    ).execute()
    text = nbformat.writes(notebook)
    assert "offline reference model" in text and SECRET not in text


def test_no_secret_files_are_tracked() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], capture_output=True, text=True, cwd=Path(__file__).parent.parent
    ).stdout.split()
    assert ".env" not in tracked and ".env.example" in tracked


def test_redaction_forms_and_placeholders() -> None:
    from helpers.text.redaction import redact

    key = "sk-proj-Abc123Def456Ghi789Jkl0"
    text = (
        f"full {key}; url {key.replace('-', '%2D')}; masked sk-proj-Abc123De***Jkl0; "
        f"fragment Def456Ghi789Jkl0; placeholder k and none stay"
    )
    out = redact(text, [key, "k", "none", None])
    assert "Abc123" not in out and "Def456Ghi789" not in out
    assert out.count("[redacted]") >= 3 and "placeholder k and none stay" in out


def test_secret_settings_are_named_by_a_word_of_their_name() -> None:
    """A setting is secret when a word of its name (split at ``_``) says so: a folder or a switch
    whose name only contains such a word is not (TIKTOKEN_CACHE_DIR was redacted from every tool
    output, and searched for in each, before this rule)."""
    from helpers.text.redaction import configured_secrets

    env = {
        "OPENAI_API_KEY": "sk-openai-0123456789",
        "HF_TOKEN": "hf_0123456789abcdef",
        "DB_PASSWORD": "hunter2-but-longer",
        "AWS_SECRET_ACCESS_KEY": "aws-0123456789abcdef",
        "MY_APIKEY": "apikey-0123456789",
        "TIKTOKEN_CACHE_DIR": "/work/main/var/tiktoken",
        "TOKENIZERS_PARALLELISM": "false-but-long",
        "KEYBOARD_LAYOUT": "us-international",
        "PASSAGE_FOLDER": "/srv/passages/here",
    }
    found = set(configured_secrets(env))
    assert found == {
        "sk-openai-0123456789",
        "hf_0123456789abcdef",
        "hunter2-but-longer",
        "aws-0123456789abcdef",
        "apikey-0123456789",
    }
