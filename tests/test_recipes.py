"""CONTRIBUTING.md's recipes, carried out: each test copies the project (the files git tracks or
would track, and the built data), makes the change a recipe describes, in the files it names,
runs the commands it names (``make figures``: ``python -m devtools.readme_figures``), and then
the checks that change must pass, in the copy, with the copy's own ``helpers`` first on the path.

A recipe that leaves out a file the checks demand fails here, not in a contributor's hands.
These run in ``make test-recipes`` (a few minutes: apart from ``make test``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hang import HANG_GUARD_S

from helpers.cases.case_files import load_case
from helpers.text.escaping import for_markdown

ROOT = Path(__file__).resolve().parent.parent
CASE1_PROMPT = load_case(ROOT / "data/cases/case1.md").prompt


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the working tree as git sees it (untracked files included, ignored ones not),
    with the built data of ``var/``."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    copy = tmp_path / "project"
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    shutil.copytree(ROOT / "var", copy / "var", ignore=shutil.ignore_patterns("*.sqlite-*"))
    return copy


def run(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``python *args`` in the copy, its ``helpers`` and ``devtools`` first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "WORKBOOK_"))}
    env |= {"PYTHONPATH": str(project), "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    if check:
        assert done.returncode == 0, f"{args[:4]}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def pytest_in(project: Path, *args: str) -> None:
    """The copy's own tests, as ``make test`` runs them."""
    run(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args)


def edit(path: Path, anchor: str, text: str) -> None:
    """Insert ``text`` before ``anchor``, which must be in ``path`` once."""
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"{path.name}: the recipe's anchor {anchor!r} moved"
    path.write_text(source.replace(anchor, text + anchor), encoding="utf-8")


def workbook_json(project: Path, *args: str) -> dict:
    done = run(project, "-m", "helpers.cli", *args, "--json", check=False)
    return json.loads(done.stdout)


SHORT_PREVIEW = '''"""A strategy of one's own: a preview a fifth of the usual length (CONTRIBUTING's recipe)."""

from __future__ import annotations

from helpers.context.policies import TruncatePolicy
from helpers.context.instructions import TRUNCATE, Instructions

SHORT_RULES = TRUNCATE + "\\nPreviews here are short: fetch the rest whenever a detail matters."


class ShortPreviewPolicy(TruncatePolicy):
    """A truncated preview of a fifth of the run's limit; fetch_tool_output brings the rest."""

    name = "short-preview"

    def instructions(self, *, few_shot: bool = True) -> str:
        return Instructions(SHORT_RULES).text(few_shot=few_shot)

    def describe(self) -> str:
        return f"short-preview ({self.limit} chars)"
'''


def test_the_strategy_recipe(project: Path) -> None:
    """A policy in its own module, registered once in strategies.py, then ``make figures``: the
    CLI runs it, cases pass under it, its system message is its own, the docs list it, no other
    row of the figures moves, the figures are current, and no module branches on its name."""
    pages = [project / "README.md", project / "docs/comparison.md"]
    rows_before = {
        line for page in pages for line in page.read_text().splitlines() if line[:1] == "|"
    }
    (project / "helpers/context/short_preview.py").write_text(SHORT_PREVIEW, encoding="utf-8")
    edit(
        project / "helpers/context/strategies.py",
        "\n\n_register_builtins()",
        """

def _register_short_preview() -> None:
    from helpers.context.short_preview import ShortPreviewPolicy

    register_strategy(
        Strategy(
            "short-preview",
            "truncate",
            "a preview a fifth of the usual length; fetch_tool_output brings the rest",
            lambda o: ShortPreviewPolicy(max(1, o.limit_chars // 5)),
            read_back=ShortPreviewPolicy.read_back,
            options=frozenset({"limit"}),
        )
    )
""",
    )
    path = project / "helpers/context/strategies.py"
    path.write_text(path.read_text() + "_register_short_preview()\n", encoding="utf-8")
    edit(
        project / "docs/library.md",
        "    strategies.py",
        "    short_preview.py  the short-preview strategy (CONTRIBUTING's recipe)\n",
    )
    run(project, "-m", "devtools.readme_figures")
    rows_after = {
        line for page in pages for line in page.read_text().splitlines() if line[:1] == "|"
    }
    moved = sorted(rows_before - rows_after)  # ids seeded per (case, strategy): none moves
    assert not moved, "rows the new strategy changed:\n" + "\n".join(moved)

    asked = workbook_json(project, "ask", "-s", "short-preview", "-l", "3000", CASE1_PROMPT)
    assert asked["status"] == "ok" and asked["strategy"] == "short-preview", asked
    cases = workbook_json(project, "cases", "data/cases/case[1-3].md", "-s", "short-preview")
    assert [r["passed"] for r in cases["runs"]] == [True] * 3, cases
    ignored = run(
        project,
        "-m",
        "helpers.cli",
        "ask",
        "-s",
        "short-preview",
        "-t",
        "9",
        CASE1_PROMPT,
        check=False,
    )
    assert ignored.returncode == 2 and "-t/--threshold does nothing" in ignored.stderr
    prompt = run(
        project,
        "-c",
        "from helpers import build_policy; print(build_policy('short-preview').instructions())",
    ).stdout
    assert "Previews here are short" in prompt
    row = f"| {for_markdown('short-preview')} | truncate | candidate |"
    assert row in (project / "docs/cli.md").read_text()
    pytest_in(
        project,
        "tests/test_strategies.py",
        "tests/test_readme.py",
        "tests/test_public_api.py",
    )


COUNT_WORDS = '''

@registry.register(read_only=True, category="query")
def count_words(text: str) -> str:
    """Count the words of a text.

    Args:
        text: any text.
    """
    return str(len(text.split()))
'''


def test_the_tool_recipe(project: Path) -> None:
    """A typed, documented function registered read-only in tools.py, then ``make figures``:
    the model gets its schema, ``explore`` offers it, compaction files it by its category,
    the docs list it, and notebook 06 (whose category table comes from the registry) still
    passes its checkpoint with no prose edit."""
    tools = project / "helpers/tooling/tools.py"
    source = tools.read_text(encoding="utf-8")
    anchor = "\n\n@registry.register"
    at = source.index(anchor)
    tools.write_text(source[:at] + COUNT_WORDS + source[at:], encoding="utf-8")
    run(project, "-m", "devtools.readme_figures")

    shown = run(
        project,
        "-c",
        "from helpers.context.compaction import categorize\n"
        "from helpers.context.modes import for_mode\n"
        "from helpers.tooling.tools import default_registry\n"
        "schema = default_registry().get('count_words').schema()\n"
        "print(schema['function']['parameters']['required'], categorize('count_words'),\n"
        "      'count_words' in for_mode(default_registry(), 'explore').names())",
    ).stdout
    assert shown.split() == ["['text']", "query", "True"], shown
    assert (
        f"| {for_markdown('count_words(text)')} | query | explore, operate |"
        in (project / "docs/tools.md").read_text()
    )
    pytest_in(
        project,
        "tests/test_tools.py",
        "tests/test_modes.py",
        "tests/test_checkpoints.py",
        "tests/test_readme.py",
        "solutions/06_tool_history_compaction.ipynb",
        "--nbval-lax",
        "--nbval-current-env",
        "-k",
        "not figures_are_current",
    )


ACME_PROFILE = """    ProviderProfile(
        "acme",
        "Acme Inference",
        hosts=("api.acme-inference.example",),
        tool_call_ids=ToolCallIdFormat(
            "12 hex digits",
            re.compile(r"[0-9a-f]{12}"),
            lambda: ids.token_hex(6),
            "Acme's API reference (the recipe's example): tool-call ids are 12 hex digits",
        ),
        completion_limit_field="max_completion_tokens",
        completion_limit_tokens=2_048,
        sources=("Acme's API reference (the recipe's example): max_completion_tokens, 2,048",),
    ),
"""

ACME_TEST = '''"""Acme's rules on loopback: its own id form, or HTTP 400 (the provider recipe's test)."""

from provider import PROMPT, TRANSCRIBE, ScriptedProvider, completion, last_tool, tool_call

from helpers.cli.exits import EXIT_FAILED, EXIT_OK
from helpers.models.providers import profile_named

ACME_IDS = profile_named("acme").tool_call_ids
BAD_ID = "tool_call_id {id} is not 12 hex digits"


def steps():
    def pass_on(request):
        return completion(tool_calls=[tool_call("deep_check", {"text": last_tool(request)})])

    return [lambda r: TRANSCRIBE, pass_on, lambda r: completion("Deep Check is done.")]


def test_acme_gets_ids_of_its_own_form_and_the_turn_completes(ask) -> None:
    with ScriptedProvider(steps(), ids=ACME_IDS, bad_id=BAD_ID) as provider:
        run = ask(provider, env={"LOCAL_PROVIDER_PROFILE": "acme"}, prompt=PROMPT)
        body = provider.chat_bodies[-1]
    assert run.code == EXIT_OK, run.data.get("error")
    assert all(ACME_IDS.accepts(c["id"]) for c in run.calls), run.calls
    assert body["max_completion_tokens"] <= 2048 and "max_tokens" not in body


def test_without_its_profile_acme_refuses_the_clients_ids(ask) -> None:
    with ScriptedProvider(steps(), ids=ACME_IDS, bad_id=BAD_ID) as provider:
        run = ask(provider, prompt=PROMPT)
    assert run.code == EXIT_FAILED and "is not 12 hex digits" in run.data["error"]
'''


def test_the_provider_recipe(project: Path) -> None:
    """One profile in _PROVIDER_PROFILES with its sources and a loopback test that the scripted provider
    plays (its id rule read from the profile), then ``make figures``: a turn completes under
    it, the client's ids take its form, the docs list it, and every provider test passes."""
    edit(
        project / "helpers/models/providers.py",
        '    ProviderProfile(\n        "azure",',
        ACME_PROFILE,
    )
    (project / "tests/test_acme_provider.py").write_text(ACME_TEST, encoding="utf-8")
    run(project, "-m", "devtools.readme_figures")

    assert (
        "| "
        + " | ".join(
            map(
                for_markdown,
                ["acme", "Acme Inference", "api.acme-inference.example", "12 hex digits"],
            )
        )
        + " |"
        in (project / "docs/models.md").read_text()
    )
    pytest_in(
        project,
        "tests/test_acme_provider.py",
        "tests/test_providers.py",
        "tests/test_readme.py",
        "-k",
        "not figures_are_current",
    )


SAVED_CHECK = '''"""Notebook 09's checkpoint (the notebook recipe's): the characters a preview keeps out.

Reference: :func:`helpers.context.preview.make_preview`.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import strategies as st

from helpers.context.preview import make_preview
from helpers.course.checkpoint import Checkpoint, Property, attempt, expect, short
from helpers.course.checks.inputs import texts

CALL_ID = "call_" + "0" * 24


def check_saved_chars(saved_chars: Callable[[str, str], int]) -> None:
    """Notebook 10, TODO 1: ``saved_chars(output, preview)`` against the reference.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """

    def same(case: tuple[str, int]) -> None:
        output, limit = case
        preview = make_preview(output, CALL_ID, limit)
        want = max(0, len(output) - len(preview))
        got = attempt(saved_chars, output, preview)
        expect(got == want, repr(want), short(got))

    return Checkpoint(
        "10",
        1,
        "saved_chars",
        [
            Property(
                "the characters kept out are the output's length less the preview's, "
                "never below zero",
                st.tuples(texts(300), st.integers(0, 400)),
                same,
                lambda c: f"output of {len(c[0])} characters, preview limit {c[1]}",
                terms=("characters", "never below zero"),
                always=(("", 0), ("é" * 50, 0), ("x" * 300, 10)),
            )
        ],
    ).run()
'''

SAVED_WRONG_DICT = """WRONG_ANSWERS[("10", 1)] = [
        ("bytes, not characters", '''def saved_chars(output, preview):
    return max(0, len(output.encode()) - len(preview.encode()))
'''),
        ("below zero when the preview is longer", '''def saved_chars(output, preview):
    return len(output) - len(preview)
'''),
        ("the preview's length instead", '''def saved_chars(output, preview):
    return len(preview)
'''),
        ("the output's length, the preview forgotten", '''def saved_chars(output, preview):
    return len(output)
'''),
        ("the marker left out of the preview's length", '''def saved_chars(output, preview):
    return max(0, len(output) - len(preview.split(" ...[")[0]))
'''),
    ]

"""


SAVED_CORRECT = """    ("10", 1): [
        ("a conditional expression on the difference", '''def saved_chars(output, preview):
    kept_out = len(output) - len(preview)
    return kept_out if kept_out > 0 else 0
'''),
    ],
"""


def _notebook_10() -> str:
    import nbformat

    from helpers.display.theme import MERMAID_FRONTMATTER

    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [
        md(
            "# 10 · What a preview keeps out\n\n**In this notebook you will**\n\n"
            "- count the characters a truncated preview keeps out of the context.\n\n"
            "<!-- guide:time -->\nabout 1 minutes\n<!-- /guide:time -->"
        ),
        md(
            "### A preview, and what stays out\n\n```mermaid\n"
            + MERMAID_FRONTMATTER
            + "flowchart LR\n  output[tool output] --> preview[preview] --> context[context]\n"
            "  output -. kept out .-> store[(store)]\n```"
        ),
        code(
            "from helpers import (\n    check_saved_chars,\n    hint,  # noqa: F401\n"
            "    make_preview,\n    why,  # noqa: F401\n)"
        ),
        md(
            "## TODO 1: the characters kept out\n\n`saved_chars(output, preview)` returns how "
            "many characters of `output` the preview keeps out of the context: the output's "
            "length less the preview's, in characters, never below zero (a short output's "
            "preview is the output itself, and a preview with its marker can be longer)."
        ),
        code(
            "# TODO 1: the characters a preview keeps out\n"
            "def saved_chars(output: str, preview: str) -> int:\n"
            '    """Characters of output not in the preview; never below zero."""\n'
            "    ### BEGIN SOLUTION\n"
            "    ### POINTER: the output's length less the preview's, in characters, floored at zero\n"
            "    ### HINT 1: len() counts characters; encode() would count bytes.\n"
            "    ### HINT 2: A preview with its marker can be longer than a short output.\n"
            "    ### HINT 3: return max(0, len(output) - len(preview))\n"
            "    return max(0, len(output) - len(preview))\n"
            "    ### END SOLUTION"
        ),
        code("# Hard-stop checkpoint: TODO 1\ncheck_saved_chars(saved_chars)"),
        code(
            'output = "word " * 2_000\n'
            'preview = make_preview(output, "call_" + "0" * 24)\n'
            'print(f"{saved_chars(output, preview):,} characters kept out")'
        ),
        md("## Stretch\n\nCount the tokens kept out instead: where do characters and tokens part?"),
        md(
            "## Recap\n\n1. Why floor the count at zero?\n\n<details><summary>Answers</summary>"
            "\n\n1. A preview carries a marker: for a short output it can be longer than the "
            "output.\n\n</details>"
        ),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return nbformat.writes(notebook)


def test_the_notebook_recipe(project: Path) -> None:
    """A solution notebook with one TODO, its checkpoint in checks/ (and todos.py), its name in
    _PUBLIC, five wrong answers and a correct one in another style, its talking points and
    stretch answer in the guide, then ``make student``, ``make guide`` and ``make figures``: every notebook
    test passes on it, its checkpoint stops each wrong answer, and it runs top to bottom."""
    (project / "solutions/10_what_a_preview_keeps_out.ipynb").write_text(
        _notebook_10(), encoding="utf-8"
    )
    (project / "helpers/course/checks/saved.py").write_text(SAVED_CHECK, encoding="utf-8")
    todos = project / "helpers/course/checks/todos.py"
    edit(todos, ")\n\n#: Each TODO's checkpoint", "    saved,\n")  # the last of the imports
    edit(todos, "}\n", '    ("10", 1): saved.check_saved_chars,\n')
    edit(
        project / "helpers/__init__.py",
        '    "check_categorize":',
        '    "check_saved_chars": "helpers.course.checks.saved",\n'
        '    "make_preview": "helpers.context.preview",\n',
    )
    edit(project / "tests/wrong_answers.py", "_MORE: dict[", SAVED_WRONG_DICT)
    edit(project / "tests/correct_answers.py", '    ("08", 1): [', SAVED_CORRECT)
    edit(
        project / "docs/library.md",
        "                      boxing.py (04)",
        "                      saved.py (10, the recipe's)\n",
    )
    guide = project / "docs/instructor-guide.md"  # the talking points and the stretch's answer
    edit(
        guide,
        "### Stretch exercises: what to look for",
        "### 10 · What a preview keeps out\n\n- **Say**: what a preview keeps out is counted, "
        "never guessed.\n\n",
    )
    edit(
        guide,
        "\nEach notebook ends with a recap",
        "- **10**: characters and tokens part where one character is several tokens.\n",
    )
    edit(
        project / "README.md",
        "| `01_inline_tool_results` |",
        "| `10_what_a_preview_keeps_out` | TODO 1: the characters a preview keeps out |\n",
    )
    run(project, "tests/public_api.py", "--write")
    run(project, "-m", "helpers.course.install_cell")  # make student: the install cell,
    run(project, "-m", "helpers.course.student_notebooks")  # then the attendee copy
    run(project, "-m", "devtools.instructor_guide")
    run(project, "-m", "devtools.readme_figures")

    pytest_in(
        project,
        "tests/test_notebooks.py",
        "tests/test_checkpoints.py",
        "tests/test_checkpoint_answers.py",
        "tests/test_notebook_pages.py",
        "tests/test_workshop.py",
        "tests/test_public_api.py",
        "tests/test_stored_notebooks.py",
        "tests/test_readme.py",
        "solutions/10_what_a_preview_keeps_out.ipynb",
        "--nbval-lax",
        "--nbval-current-env",
        "-k",
        "10 or not (notebooks or answers) or every_todo_has",
    )
