"""The workshop around the notebooks: model choice, spending, hints, restoring a notebook, the
threshold notes of notebook 05, and a case file of your own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hang import HANG_GUARD_S

from helpers.cases import load_cases
from helpers.course.budget import SpendNotApproved, approve_spend
from helpers.course.hints import hint
from helpers.course.student_notebooks import SOLUTIONS_DIR, restore, student_text
from helpers.evaluation.runs import run_case
from helpers.models.llm import resolve_model


def test_the_lab_stays_offline_until_a_profile_is_chosen() -> None:
    key = {"OPENAI_API_KEY": "sk-in-the-shell", "OPENAI_MODEL": "gpt-4o-mini"}
    assert resolve_model(env=key).provider == "openai"  # the CLI: a key means openai
    assert resolve_model(env={**key, "WORKBOOK_LAB": "1"}).offline  # the lab: offline
    chosen = resolve_model(env={**key, "WORKBOOK_LAB": "1", "WORKBOOK_PROFILE": "openai"})
    assert chosen.provider == "openai"


def test_paid_turns_wait_for_a_go_ahead(monkeypatch, capsys) -> None:
    spend = {
        "what": "13 cases",
        "model_calls": 51,
        "prompt_tokens": 326_000,
        "completion_tokens": 1,
    }
    approve_spend(resolve_model("offline", env={}), **spend)  # offline: nothing asked
    paid = resolve_model("openai", env={"OPENAI_API_KEY": "sk-x", "OPENAI_MODEL": "gpt-4o-mini"})
    monkeypatch.delenv("WORKBOOK_APPROVE_SPEND", raising=False)
    with pytest.raises(SpendNotApproved, match=r"326,000 prompt tokens.*approve=True"):
        approve_spend(paid, **spend)
    approve_spend(paid, **spend, approve=True)
    assert "Going ahead" in capsys.readouterr().out
    monkeypatch.setenv("WORKBOOK_APPROVE_SPEND", "1")
    approve_spend(paid, **spend)


def test_hints_come_in_three_levels(capsys) -> None:
    hint("04", 2)
    one = capsys.readouterr().out
    hint("04", 2, level=3)
    three = capsys.readouterr().out
    assert "Hint 1 (the idea)" in one and "Hint 2" not in one and "level=2" in one
    assert "Hint 3 (close to code)" in three and "reference_id" in three
    with pytest.raises(LookupError, match="no notebook"):
        hint("99", 1)
    with pytest.raises(LookupError, match="has no TODO 9"):
        hint("04", 9)


def test_restore_puts_a_notebook_back_and_keeps_yours(tmp_path) -> None:
    solution = next(SOLUTIONS_DIR.glob("03_*.ipynb"))
    pristine = student_text(solution)
    path = tmp_path / solution.name
    path.write_text(pristine.replace("TODO 1", "TODO 1 (my attempt)"), encoding="utf-8")
    restored, backup = restore("03", notebooks_dir=tmp_path)
    assert restored == path and path.read_text(encoding="utf-8") == pristine
    assert backup is not None and "my attempt" in backup.read_text(encoding="utf-8")
    assert restore("03", notebooks_dir=tmp_path)[1] is None  # already pristine: nothing to keep
    path.unlink()
    assert restore("03", notebooks_dir=tmp_path) == (path, None)  # deleted: made again
    assert path.read_text(encoding="utf-8") == pristine
    with pytest.raises(FileNotFoundError, match="no notebook starts with"):
        restore("42", notebooks_dir=tmp_path)


def test_a_threshold_change_explains_itself(store, client) -> None:
    case3 = next(c for c in load_cases() if c.id == "case3")
    run = run_case(case3, "box", client=client, model="m", store=store, threshold=12_000)
    assert run.passed and run.validation.notes
    assert "default threshold of 256" in run.validation.summary()
    default = run_case(case3, "box", client=client, model="m", store=store)
    assert default.passed and not default.validation.notes


def test_your_own_case_from_anywhere(tmp_path) -> None:
    case = tmp_path / "my_case.md"
    case.write_text(
        """---
id: mine1
tool_calls:
  - tool_name: run_sql
    opaque_id_result: true
  - tool_name: google_drive_write_file
    opaque_id_input: true
strategies: [box]
sink_exact:
  - {tool_name: google_drive_write_file, argument: file_content, source: run_sql}
answer_contains: ["norway.json"]
offline_plan:
  - call: run_sql
    args: {query: "SELECT code, name, type FROM subdivisions WHERE country_alpha_2 = 'NO'"}
  - call: google_drive_write_file
    args: {file_name: "norway.json", file_content: {result: 1}}
  - answer: "Saved: {result2}"
---
Using run_sql, list Norway's ISO 3166-2 subdivisions and save the result to a file named 'norway.json'.
""",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.course.cli",
            "cases",
            str(case),
            "--strategy",
            "all",
            "--json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "WORKBOOK_PROFILE": "offline"},
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert [(r["strategy"], r["passed"]) for r in runs] == [
        ("inline", True),
        ("truncate", True),
        ("box", True),
    ]


def test_every_notebook_ends_with_a_recap_and_the_guide_covers_them() -> None:
    import nbformat
    from wrong_answers import WRONG_ANSWERS

    from helpers.course.instructor_guide import GUIDE
    from helpers.course.student_notebooks import solution_notebooks

    guide = GUIDE.read_text(encoding="utf-8")
    for path in solution_notebooks():
        cells = nbformat.read(path, as_version=4).cells
        assert cells[-1].source.startswith("## Recap") and "<details>" in cells[-1].source, path
        assert f"**{path.stem}** | **in all**" in guide, f"the guide has no minutes for {path.stem}"
        assert f"| {path.stem} |" in guide.split("guide:tokens")[1], f"no tokens for {path.stem}"
    for (notebook, todo), entries in WRONG_ANSWERS.items():
        for label, _code in entries:
            assert f"| {notebook} | {todo} | {label} |" in guide, f"the guide lacks {label!r}"
    assert "(run `make guide`)" not in guide
