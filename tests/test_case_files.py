"""Case files are untrusted input: a YAML alias bomb or an oversized file is refused quickly with a
:class:`CaseError`, and every normal case still loads."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hang import HANG_GUARD_S

from helpers.base.paths import CASES_DIR
from helpers.cases.case_files import MAX_CASE_FILE_BYTES, CaseError, load_case, load_cases

#: How long refusing a hostile file may take, in seconds of CPU time (the bomb below, unrefused,
#: takes minutes and gigabytes).
QUICK_S = 2.0


def _billion_laughs(levels: int = 9, width: int = 9) -> str:
    """A case file of a few hundred bytes whose frontmatter expands to width**levels items."""
    parts = ["&a [" + ",".join(['"x"'] * width) + "]"]
    previous = "a"
    for name in "bcdefghijklmnop"[: levels - 1]:
        parts.append(f"&{name} [" + ",".join([f"*{previous}"] * width) + "]")
        previous = name
    return "---\nid: bomb\ndescription: [" + ", ".join(parts) + "]\n---\nA prompt.\n"


def _write(folder: Path, text: str, name: str = "case.md") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_an_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    text = _billion_laughs()
    assert len(text.encode()) < 1_300
    path = _write(tmp_path, text)
    started = time.process_time()
    with pytest.raises(CaseError) as err:
        load_case(path)
    assert time.process_time() - started < QUICK_S
    message = str(err.value)
    assert str(path) in message and "aliases are not allowed" in message and "*a" in message
    assert "line 3" in message and "\n" not in message
    with pytest.raises(CaseError):
        load_cases(tmp_path / "*.md")


def test_a_single_alias_is_refused_too_and_an_anchor_alone_is_fine(tmp_path: Path) -> None:
    aliased = "---\nid: &name twice\ndescription: *name\n---\nA prompt.\n"
    with pytest.raises(CaseError, match=r"found the alias \*name"):
        load_case(_write(tmp_path, aliased, "aliased.md"))
    anchored = "---\nid: &name once\n---\nA prompt.\n"
    assert load_case(_write(tmp_path, anchored, "anchored.md")).id == "once"


def test_workbook_cases_refuses_an_alias_bomb_without_hanging(tmp_path: Path) -> None:
    path = _write(tmp_path, _billion_laughs())
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    env["WORKBOOK_VAR_DIR"] = str(tmp_path / "var")
    done = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "cases", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode != 0
    assert "aliases are not allowed" in done.stderr + done.stdout


def test_an_oversized_case_file_is_refused_before_parsing(tmp_path: Path) -> None:
    head = "---\nid: big\n---\n"
    at_limit = head + "p" * (MAX_CASE_FILE_BYTES - len(head))
    assert load_case(_write(tmp_path, at_limit, "at_limit.md")).id == "big"
    # one byte more, and invalid YAML besides: the size is checked first
    over = "---\nid: [unclosed\n---\n" + "p" * MAX_CASE_FILE_BYTES
    path = _write(tmp_path, over, "over.md")
    started = time.process_time()
    with pytest.raises(CaseError) as err:
        load_case(path)
    assert time.process_time() - started < QUICK_S
    assert str(path) in str(err.value) and f"{MAX_CASE_FILE_BYTES:,} bytes" in str(err.value)


def test_unreadable_and_non_utf8_files_are_case_errors(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="cannot read"):
        load_case(tmp_path / "missing.md")
    path = tmp_path / "latin1.md"
    path.write_bytes(b"---\nid: x\n---\ncaf\xe9\n")
    with pytest.raises(CaseError, match="cannot read"):
        load_case(path)


def test_normal_cases_still_load(tmp_path: Path) -> None:
    case1 = load_case(CASES_DIR / "case1.md")
    assert case1.id == "case1" and case1.prompt and case1.offline_plan
    written = _write(
        tmp_path,
        "---\nid: mine\nanswer_contains: [done]\ntool_calls:\n  - tool_name: yt_transcribe\n"
        "---\nTranscribe video 1.\n",
    )
    mine = load_case(written)
    assert (mine.id, mine.answer_contains, mine.prompt) == ("mine", ["done"], "Transcribe video 1.")
    assert mine.tool_calls == [{"tool_name": "yt_transcribe"}]
    shipped = load_cases(CASES_DIR / "**" / "*.md")
    assert len(shipped) == len(list(CASES_DIR.rglob("*.md")))


def test_deep_nesting_is_a_case_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.md"
    path.write_text("---\nid: deep\nx: " + "[" * 50_000 + "\n---\nTranscribe video 123.\n")
    with pytest.raises(CaseError, match=r"nests too deeply|bad YAML"):
        load_case(path)
