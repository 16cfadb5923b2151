"""Student notebooks, generated from the solution notebooks (the one source of truth).

A TODO cell starts with ``# TODO N: …``; its answer stands between nbgrader's markers, and our
additions to nbgrader's syntax carry a one-line pointer and three hints::

    # TODO 1: append one tool message per call
    def handle_tool_calls(...):
        ### BEGIN SOLUTION
        ### POINTER: the API needs the assistant message back, then one answer per call
        ### HINT 1: the idea, in words
        ### HINT 2: the approach, step by step
        ### HINT 3: close to code
        ...
        ### END SOLUTION

The student version replaces everything from ``### BEGIN SOLUTION`` to ``### END SOLUTION``
with ``raise NotImplementedError("TODO 1: <pointer> (for a hint: hint('01', 1))")`` at the same
indentation, the message folded into lines that fit a cell (:func:`stub_lines`): the pointer
says where to look, never how (no code). Run before it is written, the checkpoint turns the
stub's exception into one line (:class:`helpers.course.checkpoint.TodoNotWritten`). The hints stay in the solution
notebook and are shown on demand, one level at a time, by :func:`helpers.course.hints.hint`. The cell
after each TODO cell is its checkpoint, headed ``# Hard-stop checkpoint: TODO N``.

``python -m helpers.course.student_notebooks`` (``make student``) writes ``notebooks/NN_*.ipynb``
from ``solutions/NN_*.ipynb``; ``--check`` exits 1 when the committed student notebooks differ
from what it would write. :func:`restore` puts one student notebook back as it was
(``workbook restore NN``), keeping the attendee's copy in ``var/backups/``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from helpers.base.paths import INSTALLED, PROJECT_ROOT, WORKSPACE_MARKER, workspace_dir

if TYPE_CHECKING:  # imported where a notebook is read or written: nbformat imports jsonschema,
    # whose optional IRI checker (rfc3987_syntax) builds its parsers on import, 1.3 s of CPU
    # on a quiet machine (python-jsonschema/jsonschema#1428), which a kernel that lists the
    # notebooks or asks for a hint (code_cell_sources) should not pay
    import nbformat

NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
SOLUTIONS_DIR = PROJECT_ROOT / "solutions"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
POINTER = "### POINTER:"
HINT_RE = re.compile(r"^### HINT ([123]):\s*(.*)$")
#: Characters a pointer may not hold: a pointer says where to look, not the code to write.
CODE_CHARACTERS = set('()[]{}=<>"`')
#: A course notebook's name: two digits, an underscore, a title (``04_opaque_reference_boxing``).
COURSE_NOTEBOOK_RE = re.compile(r"^\d\d_\w+\.ipynb$")
TODO_RE = re.compile(r"^# TODO (\d+):", re.MULTILINE)
CHECKPOINT_RE = re.compile(r"^# Hard-stop checkpoint: TODO (\d+)\b")


class NotebookFormatError(ValueError):
    """A solution notebook breaks the conventions above (unbalanced markers, no checkpoint…)."""


def todo_number(cell: nbformat.NotebookNode) -> int | None:
    """N if ``cell`` is the code cell of TODO N (it holds solution markers), else ``None``."""
    return todo_in_code(cell.source) if cell.cell_type == "code" else None


def todo_in_code(source: str) -> int | None:
    """N if a code cell's ``source`` is TODO N's (it holds solution markers), else ``None``."""
    match = TODO_RE.search(source) if BEGIN in source else None
    return int(match[1]) if match else None


def code_cell_sources(path: Path) -> list[str]:
    """The source of each code cell of the notebook at ``path``, in order, read as the JSON it
    is: in nbformat 4 a cell's ``source`` is a string or a list of strings, joined as they are
    (nbformat's docs, "The Notebook file format"). For a kernel that asks for a hint: reading
    it through nbformat would import jsonschema (see the note on ``nbformat`` above), 1.3 s of
    CPU on a quiet machine.

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not a notebook (not JSON, no list of cells, a source of another type).
    """
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name}: not a notebook (not JSON: {exc})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ValueError(f"{path.name}: not a notebook (no list of cells)")
    sources = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            if isinstance(source, list) and all(isinstance(line, str) for line in source):
                source = "".join(source)
            if not isinstance(source, str):
                raise ValueError(f"{path.name}: a code cell's source is neither text nor lines")
            sources.append(source)
    return sources


def checkpoint_number(cell: nbformat.NotebookNode) -> int | None:
    """N if ``cell`` is the hard-stop checkpoint of TODO N, else ``None``."""
    match = CHECKPOINT_RE.match(cell.source) if cell.cell_type == "code" else None
    return int(match[1]) if match else None


def solution_parts(source: str, *, label: str) -> tuple[str, dict[int, str]]:
    """The pointer and the hints (``{1: …, 2: …, 3: …}``) of a TODO cell's solution block.

    Raises:
        NotebookFormatError: the pointer or a hint is missing, or the pointer holds code.
    """
    pointer, hints = "", {}
    for line in source.split("\n"):
        stripped = line.strip()
        if stripped.startswith(POINTER):
            pointer = stripped[len(POINTER) :].strip()
        elif match := HINT_RE.match(stripped):
            hints[int(match[1])] = match[2].strip()
    if not pointer:
        raise NotebookFormatError(f"{label}: the solution has no '{POINTER}' line")
    if CODE_CHARACTERS & set(pointer):
        raise NotebookFormatError(
            f"{label}: the pointer holds code characters ({''.join(sorted(CODE_CHARACTERS & set(pointer)))}); "
            "say where to look, in words"
        )
    missing = [n for n in (1, 2, 3) if not hints.get(n)]
    if missing:
        raise NotebookFormatError(f"{label}: the solution lacks '### HINT {missing[0]}:'")
    return pointer, hints


#: The longest line of a stub, in characters: a code cell at 1280×720 in JupyterLab shows about
#: 100 with the file browser open, and an editor does not wrap (the e2e test measures it).
STUB_LINE_CHARS = 88
#: A stub message's words, with ``(for a hint: hint('04', 2))`` as one word.
HINT_CALL_RE = re.compile(r"\(for a hint: hint\([^)]*\)\)|\S+")


def stub_lines(message: str, indent: str) -> list[str]:
    """The stub's lines: ``raise NotImplementedError(`` and ``message`` as string literals of at
    most :data:`STUB_LINE_CHARS` characters a line, so it reads without scrolling sideways.

    Raises:
        NotebookFormatError: the message holds a double quote or a backslash (a pointer is
            words, and a hint call's quotes are single).
    """
    if '"' in message or "\\" in message:
        raise NotebookFormatError(
            f"a stub message cannot hold a double quote or backslash: {message}"
        )
    one_line = f'{indent}raise NotImplementedError("{message}")'
    if len(one_line) <= STUB_LINE_CHARS:
        return [one_line]
    inner = indent + " " * 4
    width = STUB_LINE_CHARS - len(inner) - 3  # the two quotes and a trailing space
    pieces: list[str] = []
    for word in HINT_CALL_RE.findall(message):  # words, and the hint call kept whole
        if pieces and len(pieces[-1]) + 1 + len(word) <= width:
            pieces[-1] += " " + word
        else:
            pieces.append(word)
    # each piece but the last keeps the space that followed it, so the joined text is the message
    last = len(pieces) - 1
    literals = [f'{inner}"{piece}{" " if i < last else ""}"' for i, piece in enumerate(pieces)]
    return [f"{indent}raise NotImplementedError(", *literals, f"{indent})"]


def strip_solution(source: str, *, label: str, notebook: str = "NN") -> str:
    """``source`` with each solution block replaced by a ``NotImplementedError`` stub that
    holds the block's pointer and says how to ask for a hint.

    Raises:
        NotebookFormatError: markers are unbalanced or nested, or the pointer or a hint is
            missing.
    """
    out: list[str] = []
    inside = False
    block: list[str] = []
    indent = ""
    number = label.removeprefix("TODO ").strip()
    for line in source.split("\n"):
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise NotebookFormatError(f"{label}: nested {BEGIN}")
            inside, block, indent = True, [], line[: len(line) - len(line.lstrip())]
        elif stripped == END:
            if not inside:
                raise NotebookFormatError(f"{label}: {END} without {BEGIN}")
            pointer, _ = solution_parts("\n".join(block), label=label)
            message = f"{label}: {pointer} (for a hint: hint('{notebook}', {number}))"
            out.extend(stub_lines(message, indent))
            inside = False
        elif inside:
            block.append(line)
        else:
            out.append(line)
    if inside:
        raise NotebookFormatError(f"{label}: {BEGIN} without {END}")
    return "\n".join(out)


#: Metadata a run or a JupyterLab session leaves in a notebook (nbstripout's default extra keys,
#: nbstripout/_nbstripout.py): the student version holds none of it.
RUN_STATE_KEYS = ("signature", "widgets")
RUN_STATE_CELL_KEYS = ("collapsed", "ExecuteTime", "execution", "heading_collapsed", "hidden")
RUN_STATE_CELL_KEYS += ("scrolled",)


def _without_run_state(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``notebook`` (changed in place) as if never run: no outputs, execution counts or run
    metadata, and the kernel's language named without its version (a solution an instructor ran
    gives the same student notebook as one never run)."""
    for key in RUN_STATE_KEYS:
        notebook.metadata.pop(key, None)
    language = notebook.metadata.get("language_info")
    if language is not None:
        notebook.metadata["language_info"] = {"name": language.get("name", "python")}
    for cell in notebook.cells:
        for key in RUN_STATE_CELL_KEYS:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return notebook


def make_student(
    solution: nbformat.NotebookNode, *, name: str = "notebook"
) -> nbformat.NotebookNode:
    """The student version of a solution notebook (never run: outputs, counts and run metadata
    cleared; solutions stubbed).

    Raises:
        NotebookFormatError: a TODO cell is not followed by its checkpoint.
    """
    import nbformat

    student = _without_run_state(nbformat.from_dict(solution))
    cells = student.cells
    for index, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        number = todo_number(cell)
        if number is None:
            if BEGIN in cell.source:
                raise NotebookFormatError(f"{name}: a cell with {BEGIN} has no '# TODO N:' line")
            continue
        following = cells[index + 1] if index + 1 < len(cells) else None
        if following is None or checkpoint_number(following) != number:
            raise NotebookFormatError(
                f"{name}: TODO {number} is not followed by its checkpoint cell"
            )
        cell.source = strip_solution(
            cell.source, label=f"TODO {number}", notebook=name.split("_", 1)[0]
        )
    return student


def fill_todos(
    student: nbformat.NotebookNode, solution: nbformat.NotebookNode, numbers: set[int]
) -> nbformat.NotebookNode:
    """A copy of ``student`` whose TODO cells in ``numbers`` hold the solution's answer."""
    import nbformat

    filled = nbformat.from_dict(student)
    answers = {todo_number(c): c.source for c in solution.cells if todo_number(c) is not None}
    for cell in filled.cells:
        match = TODO_RE.search(cell.source) if cell.cell_type == "code" else None
        if match and int(match[1]) in numbers and "NotImplementedError" in cell.source:
            cell.source = answers[int(match[1])]
    return filled


def todo_numbers(notebook: nbformat.NotebookNode) -> list[int]:
    """The TODO numbers of a solution notebook, in order."""
    return [n for n in (todo_number(c) for c in notebook.cells) if n is not None]


def solution_notebooks(folder: Path = SOLUTIONS_DIR) -> list[Path]:
    """The course's numbered notebooks in ``folder`` (``NN_title.ipynb``), sorted: a scratch
    notebook saved beside them (``Untitled.ipynb``) is not the course."""
    return [p for p in sorted(folder.glob("*.ipynb")) if COURSE_NOTEBOOK_RE.match(p.name)]


def notebook_key(notebook: str | int) -> str:
    """``notebook`` as the start of a notebook's file name: a number (``9``, ``"9"``) as its
    two digits (``"09"``), a name as it is."""
    text = str(notebook).strip()
    return text.zfill(2) if text.isdigit() and len(text) < 2 else text


def solution_named(notebook: str | int) -> Path:
    """The one solution notebook whose name starts with ``notebook`` (:func:`notebook_key`:
    ``4``, ``"04"`` or ``"04_opaque"``).

    Raises:
        LookupError: none does, or several do (``"0"``: each is named, never the first taken).
    """
    key = notebook_key(notebook)
    matches = [p for p in solution_notebooks() if p.name.startswith(key)] if key else []
    if len(matches) == 1:
        return matches[0]
    names = ", ".join(p.stem for p in matches or solution_notebooks())
    if matches:
        raise LookupError(f"{key!r} starts {len(matches)} notebooks ({names}); give its number")
    raise LookupError(f"no notebook starts with {key!r}; the notebooks: {names}")


def pairs() -> list[tuple[Path, Path]]:
    """(solution, student) paths of every solution notebook."""
    return [(p, NOTEBOOKS_DIR / p.name) for p in solution_notebooks()]


def render(notebook: nbformat.NotebookNode) -> str:
    """A notebook as the text ``nbformat.write`` stores."""
    import nbformat

    return nbformat.writes(notebook) + "\n"


def student_text(solution_path: Path) -> str:
    """The student notebook generated from the solution notebook at ``solution_path``, as the
    text ``make student`` writes: what an attendee starts from, whatever their copy now holds."""
    import nbformat

    solution = nbformat.read(solution_path, as_version=4)
    return render(make_student(solution, name=solution_path.name))


def attendee_notebooks_dir() -> Path:
    """Where the attendee's notebooks are: the folder ``workbook copy-notebooks`` made, when the
    current folder is in one (:data:`helpers.base.paths.WORKSPACE_MARKER`), whether the workbook is
    a checkout or an installed wheel; else ``notebooks/`` of a checkout, or the current folder."""
    here = Path.cwd()
    marked = next((p for p in (here, *here.parents) if (p / WORKSPACE_MARKER).is_file()), None)
    if marked is not None:
        return marked
    return workspace_dir() if INSTALLED else NOTEBOOKS_DIR


def write_beside(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, or bytes as they are) as the regular file ``path``, never through a symlink: into a new
    temporary file in the same folder (``O_CREAT | O_EXCL | O_NOFOLLOW``, so no planted name is
    followed), then renamed onto ``path``, which replaces a symlink there instead of writing to
    what it points at.

    Raises:
        OSError: the folder cannot be written.
    """
    import secrets

    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(temporary, flags, 0o644)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _symlink_between(folder: Path, path: Path) -> Path | None:
    """The first symlink among ``path``'s folders below ``folder`` (``None``: none)."""
    for parent in reversed(path.relative_to(folder).parents):
        if parent != Path(".") and (folder / parent).is_symlink():
            return folder / parent
    return None


def copy_notebooks(folder: Path, *, solutions: bool = False) -> tuple[list[Path], list[Path]]:
    """Write the attendee notebooks (generated afresh) into ``folder``, and with ``solutions``
    the solution notebooks into ``folder/solutions``; a notebook already there is the attendee's
    and is left alone, and so is any name there that is a symlink (even one pointing nowhere:
    nothing is written through it). ``folder`` is marked as the workspace
    (:data:`helpers.base.paths.WORKSPACE_MARKER`: its ``.env`` and ``var/`` serve every notebook under
    it) and gets ``.env.example``. Every file is written by :func:`write_beside`.

    Returns:
        (the notebooks written, the notebooks kept as they were).

    Raises:
        OSError: ``folder`` cannot be written, or a folder inside it is a symlink.
    """
    folder.mkdir(parents=True, exist_ok=True)
    write_beside(
        folder / WORKSPACE_MARKER,
        "The Context Relay Workbook's folder: its .env and var/ are here.\n",
    )
    written, kept = [], []
    example = PROJECT_ROOT / ".env.example"
    if example.is_file() and not os.path.lexists(folder / ".env.example"):
        write_beside(folder / ".env.example", example.read_text("utf-8"))
    for solution in solution_notebooks():
        targets = [(folder / solution.name, student_text(solution))]
        if solutions:
            targets.append((folder / "solutions" / solution.name, solution.read_text("utf-8")))
        for path, text in targets:
            linked = _symlink_between(folder, path)
            if linked is not None:
                raise OSError(f"{linked} is a symlink: copy-notebooks writes nothing through it")
            if os.path.lexists(path):
                kept.append(path)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            write_beside(path, text)
            written.append(path)
    return written, kept


def restore(prefix: str, notebooks_dir: Path | None = None) -> tuple[Path, Path | None]:
    """Put the student notebook ``prefix`` (``"04"`` or ``"04_opaque_reference_boxing"``) in
    ``notebooks_dir`` (default :func:`attendee_notebooks_dir`) back as it was generated; the
    attendee's copy, if it differs, is kept in ``var/backups/``. A symlink where the notebook
    was is replaced by the notebook (:func:`write_beside`), never written through, and what it
    points at is not read.

    Returns:
        (the notebook's path, the backup's path or ``None``).

    Raises:
        LookupError: no solution notebook, or more than one, starts with ``prefix``
            (:func:`solution_named`).
    """
    from datetime import datetime

    from helpers.base.paths import var_dir

    solution_path = solution_named(prefix)
    student_path = (notebooks_dir or attendee_notebooks_dir()) / solution_path.name
    text = student_text(solution_path)
    backup = None
    if (
        not student_path.is_symlink()
        and student_path.is_file()
        and student_path.read_text(encoding="utf-8", errors="replace") != text
    ):
        folder = var_dir() / "backups"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        backup = folder / f"{student_path.stem}.{stamp}.ipynb"
        write_beside(backup, student_path.read_bytes())
    write_beside(student_path, text)
    return student_path, backup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the committed ones")
    args = parser.parse_args(argv)
    stale = []
    for solution_path, student_path in pairs():
        text = student_text(solution_path)
        current = student_path.read_text(encoding="utf-8") if student_path.exists() else None
        if current != text:
            if args.check:
                stale.append(student_path.name)
            else:
                student_path.write_text(text, encoding="utf-8")
                print(f"wrote {student_path.relative_to(PROJECT_ROOT)}")
    if stale:
        print(f"student notebooks out of date: {', '.join(stale)} (run `make student`)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
