"""The notebooks as pages a room reads: goals and time at the top, a diagram of the mechanism, a
stretch exercise and a recap; no measured figure typed into the prose; the cited sources linked;
and the instructor guide's schedules adding up to the notebooks' own minutes."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import nbformat
import pytest

from devtools.instructor_guide import (
    CELL_MAX_LINES,
    CELL_MEDIAN_LINES,
    GUIDE,
    READ_LINES_PER_NOTEBOOK,
    cell_figures,
)
from helpers.context import anchors, compaction, policies
from helpers.course.student_notebooks import solution_notebooks
from helpers.display.theme import MERMAID_FRONTMATTER
from helpers.store import schema

SOLUTIONS = solution_notebooks()

#: The numbers notebook prose may state without a code cell of the same notebook setting them:
#: the library's parameters, each checked against the constants the prose states it for.
PARAMETERS: dict[int, tuple[int, ...]] = {
    16_384: (schema.CHUNK_CHARS,),
    256: (policies.DEFAULT_BOX_THRESHOLD_CHARS,),
    120: (policies.BOX_PREVIEW_CHARS,),
    12_000: (anchors.CodexPolicy().budget.bytes,),  # gpt-4o's, the model the run stands for
    20_000: (anchors.DEEPAGENTS_EVICT_TOKENS,),
    50_000: (anchors.CLAUDE_CODE_MAX_OUTPUT_CHARS,),
    200: (anchors.AGENTS_SDK_PREVIEW_CHARS, compaction.MAX_SUMMARY_ITEM_CHARS),
}
#: Names that carry a number that is not a figure: a standard, an RFC, an HTTP status.
NAMED_NUMBER = re.compile(r"(ISO|RFC|HTTP) \d+|\d{4}-\d\d-\d\d")
NUMBER = re.compile(r"(?<![\w.:/-])(\d{1,3}(?:,\d{3})+|\d{3,})(?!\w)")
#: Sources the notebooks cite, and the address each must link to where it is named.
SOURCES = {
    "tool-context-relay": "https://github.com/grzegorz-aniol/tool-context-relay",
    "tool-bridge.ts": "https://github.com/ritovision/ritoswap-mirror/blob/",
    "Oracle AI Developer Hub": "https://github.com/oracle-devrel/oracle-ai-developer-hub",
    "Codex CLI": "https://github.com/openai/codex",
    "deepagents": "https://github.com/langchain-ai/deepagents",
}


def _cells(path: Path) -> list[nbformat.NotebookNode]:
    return nbformat.read(path, as_version=4).cells


def _prose(markdown: str) -> str:
    """Markdown without code (fenced or inline), comments and link targets."""
    for pattern in (r"```.*?```", r"<!--.*?-->", r"`[^`]*`", r"\]\([^)]*\)"):
        markdown = re.sub(pattern, " ", markdown, flags=re.S)
    return NAMED_NUMBER.sub(" ", markdown)


def test_the_parameters_prose_may_state_are_the_librarys() -> None:
    for number, constants in PARAMETERS.items():
        for constant in constants:
            assert number == constant, (
                f"prose says {number:,}; the library's constant is {constant:,}"
            )


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem[:2])
def test_every_diagram_follows_the_theme(path: Path) -> None:
    """Each Mermaid diagram starts with the front matter whose colours follow JupyterLab's light
    or dark theme (helpers.display.theme.MERMAID_FRONTMATTER says why; make e2e measures the result)."""
    blocks = [
        block
        for cell in _cells(path)
        if cell.cell_type == "markdown"
        for block in re.findall(r"```mermaid\n(.*?)```", cell.source, flags=re.S)
    ]
    assert blocks, f"{path.name}: no diagram"
    for block in blocks:
        assert block.startswith(MERMAID_FRONTMATTER), (
            f"{path.name}: a diagram without helpers.display.theme.MERMAID_FRONTMATTER (copy it in whole)"
        )


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem[:2])
def test_each_notebook_opens_with_goals_and_time_and_shows_its_mechanism(path: Path) -> None:
    cells = _cells(path)
    top = cells[0].source
    assert "**In this notebook you will**" in top, f"{path.name}: no goals at the top"
    time = re.search(r"<!-- guide:time -->\n(.+)\n<!-- /guide:time -->", top)
    assert time and re.match(r"about \d+ minutes", time[1]), f"{path.name}: no time (make guide)"
    markdown = [c.source for c in cells if c.cell_type == "markdown"]
    assert any("```mermaid" in m for m in markdown), f"{path.name}: no diagram"
    assert cells[-1].source.startswith("## Recap") and "<details>" in cells[-1].source
    if not path.name.startswith("00"):
        assert any(m.startswith("## Stretch") for m in markdown), f"{path.name}: no stretch"
    guide = GUIDE.read_text(encoding="utf-8")
    minutes = re.search(r"about (\d+) minutes", time[1])[1]
    total = re.search(
        rf"^\| \*\*{path.stem}\*\* \| \*\*in all\*\* \|.*\*\*(\d+)\*\* \|$", guide, re.M
    )
    assert total and total[1] == minutes, (
        f"{path.name} says {minutes} minutes and the guide does not: run `make guide`"
    )


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem[:2])
def test_no_figure_is_typed_into_the_prose(path: Path) -> None:
    """A number of three digits or more in a Markdown cell is a parameter the notebook sets in a
    code cell, or one of the library's :data:`PARAMETERS`; a measured figure is printed by code."""
    cells = _cells(path)
    code = "\n".join(c.source for c in cells if c.cell_type == "code")
    set_in_code = {int(n.replace("_", "")) for n in re.findall(r"\d[\d_]*", code)}
    typed = [
        (m[1], _prose(c.source)[max(0, m.start() - 50) : m.end() + 10].replace("\n", " "))
        for c in cells
        if c.cell_type == "markdown"
        for m in NUMBER.finditer(_prose(c.source))
        if int(m[1].replace(",", "")) not in set_in_code | set(PARAMETERS)
    ]
    assert not typed, f"{path.name}: figures typed into the prose (print them from code): {typed}"


#: A verdict about what a measurement shows: which strategy wins, is cheapest, costs more or less
#: than another, a typed ratio. The cell that measured it prints it (issue 35: the page said
#: "truncation wins" on web3 beside a cell that measured box at less than half its tokens).
VERDICT = re.compile(
    r"\b(?:cheapest|wins?|cheaper than|dearer than|costs? (?:more|less) than|more expensive"
    r"|never costs|the only strategy|several times)\b|\d+(?:\.\d+)?×",
    re.IGNORECASE,
)
#: Sentences that name a verdict without stating one: the cell beside them prints it.
VERDICT_ALLOWED = ("can look cheapest and be wrong",)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem[:2])
def test_no_verdict_is_typed_into_the_prose(path: Path) -> None:
    """Which strategy wins where, and by how much, depends on the model and the cases: the
    prose explains the mechanism and asks; the cell that measured it says which and how much
    (``comparison_verdicts``, ``explain_choice``). A question may name a verdict."""
    said = [
        sentence
        for c in _cells(path)
        if c.cell_type == "markdown"
        for sentence in re.split(r"(?<=[.!?:])\s+", " ".join(_prose(c.source).split()))
        if VERDICT.search(sentence)
        and not sentence.rstrip(" *)").endswith("?")
        and not any(allowed in sentence for allowed in VERDICT_ALLOWED)
    ]
    assert not said, f"{path.name}: verdicts typed into the prose (print them from code): {said}"


def test_the_cited_sources_are_linked_where_they_are_named() -> None:
    for path in SOLUTIONS:
        text = "\n".join(c.source for c in _cells(path) if c.cell_type == "markdown")
        for name, address in SOURCES.items():
            if name in text:
                assert address in text, f"{path.name} names {name} without a link to {address}"


def _tables(block: str) -> list[list[list[str]]]:
    tables, rows = [], []
    for line in [*block.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def test_the_guides_schedules_add_up() -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    block = guide.split("<!-- guide:schedules -->")[1].split("<!-- /guide:schedules -->")[0]
    days = _tables(block)
    assert len(days) == 3, "a half day, a half day on the newest material, and a full day"
    minutes_of = {
        m[1]: int(m[2])
        for m in re.finditer(r"\| \*\*(\d\d_\w+)\*\* \| \*\*in all\*\* .*?(\d+)\*\* \|", guide)
    }
    for rows in days:
        slots, total = rows[2:-1], int(rows[-1][3].strip("*"))
        assert sum(int(r[3]) for r in slots) == total
        for before, after in itertools.pairwise(slots):
            assert before[1] == after[0], f"a gap or an overlap between {before} and {after}"
        placed: dict[str, int] = {}
        for _start, _end, what, minutes in slots:
            name = what.removesuffix(" (continued)")
            placed[name] = placed.get(name, 0) + int(minutes)
        for name, minutes in placed.items():
            if name in minutes_of:
                assert minutes == minutes_of[name], (
                    f"{name}: {minutes} scheduled, {minutes_of[name]} estimated"
                )


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem[:2])
def test_a_notebook_imports_only_the_public_api(path: Path) -> None:
    """Every name a notebook takes from the library comes from ``helpers`` itself and is in
    ``helpers.__all__`` (the public API), never from a submodule."""
    import ast

    import helpers

    for cell in _cells(path):
        if cell.cell_type != "code":
            continue
        source = "\n".join(line for line in cell.source.splitlines() if line[:1] not in "%!")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("helpers") for a in node.names), cell.source
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers"):
                assert node.module == "helpers", f"{path.name}: from {node.module} import …"
                missing = {a.name for a in node.names} - set(helpers.__all__)
                assert not missing, f"{path.name}: {missing} not in helpers.__all__"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem[:2])
def test_an_attendee_reads_small_cells(path: Path) -> None:
    """In the attendee's copy (the solution's cells but the TODOs', which her copy holds as
    stubs), the code she runs but does not write comes in small cells: the
    median at most :data:`CELL_MEDIAN_LINES` non-blank lines, none over :data:`CELL_MAX_LINES`,
    at most :data:`READ_LINES_PER_NOTEBOOK` in all (harnesses live in ``helpers``)."""
    figures = cell_figures(nbformat.read(path, as_version=4))  # her cells, TODOs apart
    large = [(index, lines) for index, lines in figures["cells"] if lines > CELL_MAX_LINES]
    assert figures["median"] <= CELL_MEDIAN_LINES, f"median cell {figures['median']} lines"
    assert not large, f"cells over {CELL_MAX_LINES} lines (index, lines): {large}"
    assert figures["read"] <= READ_LINES_PER_NOTEBOOK, f"{figures['read']} lines to read"
