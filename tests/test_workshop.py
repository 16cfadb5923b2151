"""The workshop around the notebooks: model choice, spending, hints, restoring a notebook, the
threshold notes of notebook 05, and a case file of your own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat
import pytest
from hang import HANG_GUARD_S

from helpers.base.paths import PROJECT_ROOT
from helpers.cases.case_files import load_cases
from helpers.course.budget import SpendNotApproved, approve_spend
from helpers.course.hints import hint
from helpers.course.student_notebooks import SOLUTIONS_DIR, restore, student_text
from helpers.evaluation.runs import run_case
from helpers.models.llm import resolve_model


def test_one_rule_picks_the_model_and_says_why() -> None:
    """The same settings choose the same model in the CLI and in the notebooks: a key alone
    (shell or .env) runs the default model, WORKBOOK_PROFILE or a name overrides it, and each
    choice says why it was made."""
    key = {"OPENAI_API_KEY": "sk-in-the-shell"}
    alone = resolve_model(env=key)
    assert (alone.provider, alone.model) == ("openai", "gpt-4o-mini")
    assert "OPENAI_API_KEY is set" in alone.describe() and "WORKBOOK_PROFILE=offline" in (
        alone.describe()
    )
    assert "sk-in-the-shell" not in alone.describe()
    stay = resolve_model(env={**key, "WORKBOOK_PROFILE": "offline"})
    assert stay.offline and stay.chosen_by == "WORKBOOK_PROFILE=offline"
    named = resolve_model("offline", env=key)
    assert named.offline and named.chosen_by == "named"
    assert len(f"Model: {named.describe()}") <= 80  # ask's first line, unwrapped when piped
    nothing = resolve_model(env={})
    assert nothing.offline and "no OPENAI_API_KEY" in nothing.describe()


def test_a_notebook_kernel_and_the_cli_choose_the_same_model(tmp_path) -> None:
    """A key in the shell, no .env: notebook 00's model cell, run in a real kernel, names the
    model ``workbook models`` marks as the default."""
    from nbclient import NotebookClient

    env = {k: v for k, v in os.environ.items() if k != "WORKBOOK_PROFILE"}
    env["OPENAI_API_KEY"] = "sk-in-the-shell-0123456789"
    listed = subprocess.run(
        [sys.executable, "-m", "helpers.cli", "models", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    default = next(r for r in json.loads(listed.stdout)["profiles"] if r["default"])
    solution = next(SOLUTIONS_DIR.glob("00_*.ipynb"))
    notebook = nbformat.read(solution, as_version=4)
    model_cell = next(
        c for c in notebook.cells if c.cell_type == "code" and "resolve_model()" in c.source
    )
    notebook.cells = [model_cell]
    NotebookClient(notebook, timeout=HANG_GUARD_S, kernel_name="python3").execute(
        cwd=str(tmp_path), env=env
    )
    printed = "".join(o.get("text", "") for o in model_cell.outputs)
    assert f"{default['model']} via {default['provider']}" in printed, printed
    assert "sk-in-the-shell" not in printed
    if not (PROJECT_ROOT / ".env").exists():  # a .env of yours may name another profile
        assert (default["profile"], default["model"]) == ("openai", "gpt-4o-mini")


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
    hint(4, 2)  # a notebook's number as a number, as one types it
    assert capsys.readouterr().out == one


def test_a_kernel_that_imports_the_notebooks_names_and_asks_for_hints_skips_jsonschema() -> None:
    """What a notebook's first cells import (its helpers, hint and why), and hint() when it is
    called, leave nbformat and jsonschema out: their import costs 1.3 s of CPU per kernel
    (jsonschema's IRI checker building its parsers), so hints are read as JSON
    (:func:`helpers.course.student_notebooks.code_cell_sources`)."""
    probe = (
        "import sys\n"
        "from helpers import ToolOutputStore, check_log_tool, hint, why\n"
        "print(sorted(m for m in ('nbformat', 'jsonschema') if m in sys.modules))\n"
        "hint('04', 2, level=3)\n"
        "print(sorted(m for m in ('nbformat', 'jsonschema') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    lines = done.stdout.splitlines()
    assert lines[0] == lines[-1] == "[]", done.stdout + done.stderr
    assert "close to code" in done.stdout


def test_copy_notebooks_writes_the_student_notebooks_without_the_iri_grammars(tmp_path) -> None:
    """``workbook copy-notebooks`` runs nbformat without jsonschema's IRI checker (1.1 s of
    CPU to import, and no notebook check uses it), and writes exactly the student notebooks."""
    from helpers.course.student_notebooks import pairs, student_text

    probe = (
        "import sys\n"
        "from helpers.cli import main\n"
        f"assert main(['copy-notebooks', {str(tmp_path / 'w')!r}]) == 0\n"
        "print(sorted(m for m in ('jsonschema', 'rfc3987_syntax') if sys.modules.get(m)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.stdout.splitlines()[-1] == "['jsonschema']", done.stdout + done.stderr
    for solution, student in pairs():
        written = (tmp_path / "w" / student.name).read_text(encoding="utf-8")
        assert written == student_text(solution)


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
    with pytest.raises(LookupError, match="no notebook starts with"):
        restore("42", notebooks_dir=tmp_path)
    assert restore(3, notebooks_dir=tmp_path) == (path, None)  # a number, as hint() takes it


def test_a_prefix_of_several_notebooks_is_refused_naming_them(monkeypatch) -> None:
    """``workbook restore`` and ``hint()`` take the one notebook a prefix names, never the
    first of several."""
    from helpers.course import student_notebooks
    from helpers.course.hints import hints_for

    two = [SOLUTIONS_DIR / "04_a.ipynb", SOLUTIONS_DIR / "04_b.ipynb"]
    monkeypatch.setattr(student_notebooks, "solution_notebooks", lambda: two)
    for ask in (lambda: restore("04"), lambda: hints_for(4, 1)):
        with pytest.raises(LookupError, match=r"'04' starts 2 notebooks \(04_a, 04_b\)"):
            ask()


def test_copy_notebooks_and_restore_never_write_through_a_symlink(tmp_path, monkeypatch) -> None:
    """Links planted in the target folder (pointing outside it, or nowhere yet) are neither
    followed nor written through: the files they name outside stay as they were, or unmade."""
    from helpers.course.student_notebooks import copy_notebooks

    monkeypatch.setenv("WORKBOOK_VAR_DIR", str(tmp_path / "var"))
    outside = tmp_path / "outside"
    outside.mkdir()
    precious = outside / "precious.txt"
    precious.write_text("mine", encoding="utf-8")
    folder = tmp_path / "workbook"
    folder.mkdir()
    first = sorted(SOLUTIONS_DIR.glob("*.ipynb"))[0].name
    (folder / first).symlink_to(outside / "made-by-the-link.ipynb")  # dangling
    (folder / ".env.example").symlink_to(precious)
    written, kept = copy_notebooks(folder)
    assert folder / first in kept and folder / first not in written
    assert not (outside / "made-by-the-link.ipynb").exists()
    assert precious.read_text(encoding="utf-8") == "mine"
    (folder / "solutions").symlink_to(outside, target_is_directory=True)
    with pytest.raises(OSError, match="is a symlink"):
        copy_notebooks(folder, solutions=True)
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    # restore: a notebook that is a link to a file outside is replaced, the file untouched
    solution = next(SOLUTIONS_DIR.glob("03_*.ipynb"))
    (folder / solution.name).unlink()
    (folder / solution.name).symlink_to(precious)
    restored, backup = restore("03", notebooks_dir=folder)
    assert not restored.is_symlink() and backup is None
    assert restored.read_text(encoding="utf-8") == student_text(solution)
    assert precious.read_text(encoding="utf-8") == "mine"


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
            "helpers.cli",
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
    """Each notebook ends with a recap; the guide has its minutes, tokens, talking points, an
    answer to its stretch exercise, and a row for each of its wrong answers."""
    import nbformat
    from wrong_answers import WRONG_ANSWERS

    from devtools.instructor_guide import GUIDE
    from helpers.course.student_notebooks import solution_notebooks

    guide = GUIDE.read_text(encoding="utf-8")
    for path in solution_notebooks():
        cells = nbformat.read(path, as_version=4).cells
        assert cells[-1].source.startswith("## Recap") and "<details>" in cells[-1].source, path
        assert f"**{path.stem}** | **in all**" in guide, f"the guide has no minutes for {path.stem}"
        assert f"| {path.stem} |" in guide.split("guide:tokens")[1], f"no tokens for {path.stem}"
        talk = guide.split("## Notebook by notebook")[1]
        assert f"### {path.stem[:2]} · " in talk, f"no talking points for {path.stem}"
        if any(c.source.startswith("## Stretch") for c in cells):
            answers = talk.split("### Stretch exercises: what to look for")[1]
            assert f"- **{path.stem[:2]}**: " in answers, f"no stretch answer for {path.stem}"
    for (notebook, todo), entries in WRONG_ANSWERS.items():
        for label, _code in entries:
            assert f"| {notebook} | {todo} | {label} |" in guide, f"the guide lacks {label!r}"
    assert "(run `make guide`)" not in guide


def test_restore_in_a_copied_folder_restores_there(tmp_path, monkeypatch) -> None:
    """From inside a folder workbook copy-notebooks made, restore puts that folder's notebook
    back, never the checkout's."""
    from helpers.course.student_notebooks import NOTEBOOKS_DIR, copy_notebooks

    copy_notebooks(tmp_path / "my relay")
    mine = tmp_path / "my relay" / next(SOLUTIONS_DIR.glob("04_*.ipynb")).name
    mine.write_text('{"mine": 1}', encoding="utf-8")
    checkout = (NOTEBOOKS_DIR / mine.name).stat().st_mtime_ns
    monkeypatch.chdir(tmp_path / "my relay")
    path, backup = restore("04")
    assert path == mine and mine.read_text("utf-8") == student_text(SOLUTIONS_DIR / mine.name)
    assert backup is not None and (NOTEBOOKS_DIR / mine.name).stat().st_mtime_ns == checkout


def test_the_rooms_mistakes_table_is_the_full_tables_short_form() -> None:
    """The guide's short table (one row per TODO) says what its full table says: the same
    mistakes counted, the properties they break in a few words, each with how many it stops."""
    from devtools.instructor_guide import GUIDE, SHORT_PROPERTY_CHARS, short_property

    guide = GUIDE.read_text(encoding="utf-8")

    def rows(block: str) -> list[list[str]]:
        body = guide.split(f"<!-- guide:{block} -->")[1].split(f"<!-- /guide:{block} -->")[0]
        return [
            [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            for line in body.splitlines()
            if line.startswith("| 0")
        ]

    full: dict[str, list[str]] = {}
    for notebook, todo, _label, prop in rows("mistakes"):
        full.setdefault(f"{notebook} · {todo}", []).append(short_property(prop))
    short = {todo: (int(count), broken) for todo, count, broken in rows("mistakes_short")}
    assert set(short) == set(full)
    for todo, props in full.items():
        count, broken = short[todo]
        assert count == len(props), todo
        for prop in set(props):
            assert f"{prop} ({props.count(prop)})" in broken, (todo, prop)
            assert len(prop) <= SHORT_PROPERTY_CHARS + 1, prop
    assert short_property("✗ TODO 2 failed · check_x: your code raised KeyError: 'a'\nmore") == (
        "it raises KeyError"
    )


def test_the_guides_minutes_match_the_notebooks_as_they_are() -> None:
    """The instructor guide's minutes table states, per section, the words, the code lines to read
    and the lines to write of the solution notebooks as they are now: a notebook edited without
    ``make guide`` fails here (the run times are the machine's, measured by ``make guide``, and
    not compared)."""
    from devtools.instructor_guide import GUIDE, notebook_sections
    from helpers.course.student_notebooks import solution_notebooks

    block = GUIDE.read_text(encoding="utf-8").split("<!-- guide:minutes -->", 1)[1]
    rows = (line.strip("|").split("|") for line in block.split("<!-- /guide:")[0].splitlines())
    stated = [
        tuple(cell.strip() for cell in row[:5])
        for row in rows
        if len(row) == 7 and row[0].strip()[:2].isdigit() and row[1].strip() != "recap discussion"
    ]
    now = [
        (path.stem, s["title"], str(s["words"]), str(s["read"] or ""), str(s["lines"] or ""))
        for path in solution_notebooks()
        for s in notebook_sections(nbformat.read(path, as_version=4))
    ]
    assert stated == now, "docs/instructor-guide.md's minutes are stale: run `make guide`"
