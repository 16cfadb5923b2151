"""The notebooks as attendees live them.

Student versions are generated from the solutions and hold no answer code; every TODO has three
levels of hints. For every TODO, a kernel (nbclient) runs the notebook up to it, the earlier TODOs
answered, and then proves that its hard-stop checkpoint

- stops the unanswered stub with one line naming the TODO (never a traceback through the
  checker);
- stops each plausible wrong answer of ``tests/wrong_answers.py`` with a message of its own (a
  short report (``CheckpointFailed``: at most ten lines, the smallest failing input), never a
  traceback from inside ``helpers/``);
- gives pointers that work: every ``hint(…)`` and ``why()`` a message names runs in the kernel
  and prints what it promises;
- passes the right answer, right after those failures in the same kernel, and again when rerun.

As an attendee does, the kernel then goes on to the notebook's next TODO (one kernel per notebook,
not one per TODO): in the state a fresh kernel would reach by running the notebook up to there.
The only names the wrong answers may leave behind (their own imports and helpers) are removed
first, and a kernel where anything else differs (a name the stub, a wrong answer or a pointer
rebound or removed) is replaced by a fresh one that runs the notebook from the top.
"""

from __future__ import annotations

import contextlib
import json
import re
import symtable
from pathlib import Path

import nbformat
import pytest
from hang import HANG_GUARD_S
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from wrong_answers import WRONG_ANSWERS

from devtools.stored_notebooks import stored_text
from helpers.course.hints import hints_for
from helpers.course.student_notebooks import (
    BEGIN,
    END,
    HINT_RE,
    NOTEBOOKS_DIR,
    POINTER,
    checkpoint_number,
    code_cell_sources,
    fill_todos,
    pairs,
    student_text,
    todo_number,
    todo_numbers,
)

PAIRS = pairs()
TODOS = [
    (solution, student, n)
    for solution, student in PAIRS
    for n in todo_numbers(nbformat.read(solution, as_version=4))
]


def test_there_are_notebooks_with_todos_and_wrong_answers_for_each() -> None:
    assert len(PAIRS) >= 8 and len(TODOS) >= 15
    for solution, _student, n in TODOS:
        wrong = WRONG_ANSWERS.get((solution.name[:2], n), [])
        assert len(wrong) >= 5, f"{solution.stem} TODO {n} needs five plausible wrong answers"


@pytest.mark.parametrize(("solution", "student"), PAIRS, ids=[p[0].name for p in PAIRS])
def test_committed_student_notebook_is_generated_and_holds_no_solution(solution, student) -> None:
    """What git stores is what ``make student`` writes; an attendee's edits to their own copy
    (answers, outputs) are theirs, and fail nothing, as long as the stored one is right."""
    solution_nb = nbformat.read(solution, as_version=4)
    expected = student_text(solution)
    on_disk = student.read_text(encoding="utf-8") if student.exists() else None
    try:
        text = expected if on_disk == expected else stored_text(student)
    except FileNotFoundError:
        pytest.fail(f"{student.name} is missing: run `make student`")
    assert text == expected, f"{student.name} differs from its solution: run `make student`"
    for marker in (BEGIN, END, POINTER, "### HINT"):
        assert marker not in text
    student_nb = nbformat.reads(text, as_version=4)
    for cell, answer in zip(student_nb.cells, solution_nb.cells, strict=True):
        if todo_number(answer) is None:
            continue
        code = answer.source.split(BEGIN, 1)[1].split(END, 1)[0]
        for line in code.splitlines():
            line = line.strip()
            if len(line) > 12 and not line.startswith("###"):
                assert line not in cell.source, f"{student.name}: a stub holds answer code: {line}"


@pytest.mark.parametrize(("solution", "student"), PAIRS, ids=[p[0].name for p in PAIRS])
def test_every_notebook_opens_with_the_install_cell(solution, student) -> None:
    """Colab opens one notebook on its own: each one's first code cell, right after its
    introduction, is the install cell of today (``make student`` writes it), in the solution
    and in the attendee copy, and writing it again changes nothing."""
    from helpers.course.install_cell import INSTALL_CELL_SOURCE, INSTALL_CELL_TAG, with_install_cell

    for notebook in (
        nbformat.read(solution, as_version=4),
        nbformat.reads(student_text(solution), as_version=4),
    ):
        code = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
        first = notebook.cells[code[0]]
        assert code[0] == 1 and notebook.cells[0].cell_type == "markdown", "run `make student`"
        assert first.source == INSTALL_CELL_SOURCE, f"{solution.name}: run `make student`"
        assert first.metadata.get("tags") == [INSTALL_CELL_TAG]
        tagged = [c for c in notebook.cells if INSTALL_CELL_TAG in c.metadata.get("tags", [])]
        assert len(tagged) == 1
        assert not with_install_cell(notebook)


def test_the_install_cell_is_put_after_the_introduction_and_never_doubled() -> None:
    from helpers.course.install_cell import INSTALL_CELL_TAG, with_install_cell

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# 09 · New"), nbformat.v4.new_code_cell("1")]
    assert with_install_cell(notebook) and not with_install_cell(notebook)
    notebook.cells[1].source = "an old version of the cell"
    notebook.cells.append(notebook.cells.pop(1))  # and moved to the end by hand
    assert with_install_cell(notebook)
    tags = [INSTALL_CELL_TAG in c.metadata.get("tags", []) for c in notebook.cells]
    assert tags == [False, True, False] and notebook.cells[2].source == "1"
    bare = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    assert with_install_cell(bare) and INSTALL_CELL_TAG in bare.cells[0].metadata["tags"]


@pytest.mark.parametrize(
    ("solution", "student", "n"), TODOS, ids=[f"{s.stem}-TODO{n}" for s, _, n in TODOS]
)
def test_every_todo_has_three_levels_of_hints(solution, student, n) -> None:
    hints = hints_for(solution.name[:2], n)
    assert sorted(hints) == [1, 2, 3] and all(len(h) > 40 for h in hints.values())
    cell = next(c for c in nbformat.read(solution, as_version=4).cells if todo_number(c) == n)
    assert len([line for line in cell.source.splitlines() if HINT_RE.match(line.strip())]) == 3


@pytest.mark.parametrize("path", [p for pair in PAIRS for p in pair], ids=lambda p: p.name)
def test_code_cell_sources_are_what_nbformat_reads(path) -> None:
    """What hint() reads without nbformat is what nbformat reads, for every notebook."""
    read = nbformat.read(path, as_version=4)
    assert code_cell_sources(path) == [c.source for c in read.cells if c.cell_type == "code"]


@pytest.mark.parametrize(
    "text", ["not json", "[]", '{"cells": 3}', '{"cells": [{"cell_type": "code", "source": 7}]}']
)
def test_a_file_that_is_no_notebook_is_a_value_error_naming_it(tmp_path, text) -> None:
    path = tmp_path / "odd.ipynb"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"^odd\.ipynb: "):
        code_cell_sources(path)


def _error(cell: nbformat.NotebookNode) -> dict | None:
    return next((o for o in cell.outputs if o.get("output_type") == "error"), None)


def _shown(error: dict) -> str:
    """What the attendee sees of an error: its traceback's lines, without terminal colours."""
    return ANSI_RE.sub("", "\n".join(error.get("traceback", [])))


#: The calls a checkpoint's message points to: ``hint('04', 2)``, ``why()``.
POINTER_CALL_RE = re.compile(r"\b(?:hint\('\d\d', \d+\)|why\(\))")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


#: Where the kernel keeps what its user names held before a TODO's stub ran: in IPython's dict of
#: hidden names, so it binds no user name, and holding the objects, so none of them is freed.
HELD = "__checkpoint_test_held__"
_HELD_AT = f"get_ipython().user_ns_hidden[{HELD!r}]"
#: Run in the kernel: keep what every user name holds now (IPython's own names left out).
HOLD_PROBE = (
    _HELD_AT + " = {k: v for k, v in get_ipython().user_ns.items() "
    "if k not in get_ipython().user_ns_hidden}"
)
#: Run in the kernel: the held names that no longer hold the very same object (``is``), and
#: the user names that are new since; printed as JSON, binding no name.
COMPARE_PROBE = (
    "print(__import__('json').dumps((lambda ns, held, hidden: {"
    "'changed': [k for k in held if k not in ns or ns[k] is not held[k]], "
    "'new': [k for k in ns if k not in held and k not in hidden]})"
    "(get_ipython().user_ns, " + _HELD_AT + ", get_ipython().user_ns_hidden)))"
)
#: IPython's own history names (``_``, ``_i3``, ``_7``): they change with every cell.
IPYTHON_HISTORY_RE = re.compile(r"_{1,3}|_i{1,3}|_i?\d+")


def _bound(source: str) -> set[str]:
    """The names a cell binds at its top level (definitions, assignments, imports)."""
    return {
        s.get_name()
        for s in symtable.symtable(source, "<cell>", "exec").get_symbols()
        if s.is_assigned() or s.is_imported()
    }


class _Kernel:
    """One kernel running a notebook's cells one by one, reporting each cell's error.

    ``history``: the cells (their sources, in order) a fresh kernel would have run to reach
    this kernel's state, once :meth:`back_to_fresh` has said it is that state.
    """

    def __init__(self, notebook: nbformat.NotebookNode):
        self.client = NotebookClient(
            notebook,
            timeout=HANG_GUARD_S,
            kernel_name="python3",
            resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
            # once its checks are done, as nbval ends its kernels: its process group killed,
            # without waiting seconds for a kernel's run_sql pool to wind down
            shutdown_kernel="immediate",
        )
        self.history: list[str] = []
        self._running = contextlib.ExitStack()

    def start(self) -> _Kernel:
        self._running.enter_context(self.client.setup_kernel())
        return self

    def stop(self) -> None:
        self._running.close()

    def run(self, source: str, index: int) -> dict | None:
        cell = nbformat.v4.new_code_cell(source)
        with contextlib.suppress(CellExecutionError):
            self.client.execute_cell(cell, index)
        error = _error(cell)
        self.last_output = "".join(o.get("text", "") for o in cell.outputs)
        self.last_outputs = cell.outputs
        return error

    def hold(self, index: int) -> bool:
        """Keep, in the kernel, what each user name holds now; whether that worked."""
        return self.run(HOLD_PROBE, index) is None

    def differences(self, index: int) -> tuple[set[str], set[str]] | None:
        """Since :meth:`hold`: the user names that no longer hold the very object they held
        (rebound or removed), and the user names that are new (IPython's history names left
        out); ``None`` when they cannot be read."""
        if self.run(COMPARE_PROBE, index) is not None:
            return None
        lines = [x for x in self.last_output.splitlines() if x.startswith("{")]
        if not lines:
            return None
        found = json.loads(lines[-1])
        changed, new = (
            {k for k in found[key] if not IPYTHON_HISTORY_RE.fullmatch(k)}
            for key in ("changed", "new")
        )
        return changed, new

    def back_to_fresh(self, answer: str, checkpoint: str, index: int) -> bool:
        """After a TODO's checks, whether the kernel's user names are what a fresh kernel's are
        once it ran the notebook up to the TODO, then the answer and the checkpoint: every name
        :meth:`hold` saw holds the very same object (``is``) unless those two cells bind it, and
        no other name is new. Names that only the wrong answers bound (their own imports and
        helpers) are removed first.

        What this cannot see: a change made inside an object a name still holds, or to a
        module's state. Every checkpoint is given the answer alone (``check_log_tool(log_tool)``)
        and calls it on inputs it generates, so an answer reaches the notebook's own objects
        only through the globals it reads; and nbval runs each solution notebook top to bottom
        in a fresh kernel."""
        bound = _bound(answer) | _bound(checkpoint)
        found = self.differences(index)
        if found is None or found[0] - bound:
            return False  # a name rebound or removed: only a fresh kernel is sure to be right
        left = sorted(found[1] - bound)
        if left and self.run(f"list(map(get_ipython().user_ns.pop, {left!r}));", index):
            return False
        found = self.differences(index)
        if self.run(f"get_ipython().user_ns_hidden.pop({HELD!r}, None);", index) is not None:
            return False  # the held objects would outlive what a fresh kernel holds
        return found is not None and not found[0] - bound and found[1] <= bound

    def follow_pointers(self, message: str, *, notebook: str, todo: int, index: int) -> None:
        """Run every call a checkpoint's message points to (``hint('04', 2)``, ``why()``), as
        the attendee would, in the same kernel: each runs, and prints what it promises."""
        pointers = POINTER_CALL_RE.findall(message)
        assert f"hint({notebook!r}, {todo})" in pointers, message
        for call in pointers:
            error = self.run(call, index)
            assert error is None, f"{call} from the message failed: {error}"
            assert self.last_output.strip(), f"{call} printed nothing"
            if call.startswith("hint("):
                assert "Hint 1 (the idea)" in self.last_output, self.last_output
            else:  # why(): the whole of the last stop
                assert f"TODO {todo}" in self.last_output, self.last_output


class _NotebookKernels:
    """The kernel a notebook's TODO left, kept for its next TODO (at most one at a time)."""

    def __init__(self) -> None:
        self._kept: tuple[Path, int, _Kernel] | None = None

    def take(self, solution: Path, n: int, notebook: nbformat.NotebookNode) -> tuple[_Kernel, int]:
        """A running kernel for TODO ``n`` of ``notebook`` and the index of the first cell it
        has still to run: the kernel TODO ``n - 1`` left when the cells it ran are this
        notebook's first cells, else a fresh kernel that runs them all."""
        kept, self._kept = self._kept, None
        if kept is not None:
            path, todo, kernel = kept
            ran = [cell.source for cell in notebook.cells[: len(kernel.history)]]
            if (path, todo) == (solution, n - 1) and ran == kernel.history:
                kernel.client.nb = notebook
                return kernel, len(kernel.history)
            kernel.stop()
        return _Kernel(notebook).start(), 0

    def keep(self, solution: Path, n: int, kernel: _Kernel) -> None:
        self.close()
        self._kept = (solution, n, kernel)

    def close(self) -> None:
        if self._kept is not None:
            self._kept[2].stop()
            self._kept = None


@pytest.fixture(scope="module")
def notebook_kernels():
    kernels = _NotebookKernels()
    yield kernels
    kernels.close()


# a notebook's TODOs run in order on one worker (tests/conftest.py's work_unit): each goes on in
# the kernel the last one left
@pytest.mark.parametrize(
    ("solution", "student", "n"), TODOS, ids=[f"{s.stem}-TODO{n}" for s, _, n in TODOS]
)
def test_checkpoint_stops_stub_and_wrong_answers_then_passes_and_reruns(
    solution, student, n, notebook_kernels
) -> None:
    solution_nb = nbformat.read(solution, as_version=4)
    student_nb = nbformat.reads(student_text(solution), as_version=4)  # pristine, never yours
    todo_at = next(i for i, c in enumerate(solution_nb.cells) if todo_number(c) == n)
    checkpoint_at = todo_at + 1
    assert checkpoint_number(student_nb.cells[checkpoint_at]) == n
    notebook = fill_todos(student_nb, solution_nb, set(range(1, n)))
    stub, checkpoint = notebook.cells[todo_at].source, notebook.cells[checkpoint_at].source
    answer = solution_nb.cells[todo_at].source
    # the checkpoint is given the answer alone (what lets the next TODO go on in this kernel)
    given = re.fullmatch(
        rf"# Hard-stop checkpoint: TODO {n}\n(?:from helpers import (check_\w+)\n\n)?"
        r"(check_(\w+))\(\3\)\s*",
        checkpoint,
    )
    assert given and given[1] in (None, given[2]) and given[3] in _bound(answer), checkpoint
    prefix = [cell.source for cell in notebook.cells[:todo_at]]
    kernel, first = notebook_kernels.take(solution, n, notebook)
    try:
        for index, cell in enumerate(notebook.cells[:todo_at]):
            if cell.cell_type == "code" and index >= first:
                assert kernel.run(cell.source, index) is None, (
                    f"cell {index} failed before TODO {n}"
                )
        held = kernel.hold(todo_at)

        # the stub, run before it is written: one line naming the TODO, and a hint that works
        assert kernel.run(stub, todo_at) is None
        error = kernel.run(checkpoint, checkpoint_at)
        assert error and error["ename"] == "TodoNotWritten", error
        trace = _shown(error)
        assert len(trace.splitlines()) == 1 and f"TODO {n} (" in trace, trace
        assert "not written yet" in trace and "NotImplementedError" in trace, trace
        kernel.follow_pointers(trace, notebook=solution.name[:2], todo=n, index=checkpoint_at)

        # each plausible wrong answer: stopped by the checkpoint, with a message of its own
        for label, wrong in WRONG_ANSWERS[(solution.name[:2], n)]:
            assert kernel.run(wrong, todo_at) is None, f"{label}: the wrong answer did not define"
            error = kernel.run(checkpoint, checkpoint_at)
            assert error is not None, f"TODO {n}: the wrong answer ({label}) passed the checkpoint"
            trace = _shown(error)
            assert error["ename"] == "CheckpointFailed" and error["evalue"].strip(), (
                f"TODO {n}, {label}: stopped by {error['ename']}: {error['evalue'][:200]} "
                "instead of a checkpoint message"
            )
            assert "/helpers/" not in trace, f"TODO {n}, {label}: a traceback from helpers/"
            # short: what failed (a property, or "your code raised"), the smallest input, then
            # expected and got (or the property being checked), and where to look next
            assert len(trace.splitlines()) <= 10 and "input" in trace, trace
            assert trace.startswith(f"✗ TODO {n} failed · "), trace
            assert ("got" in trace) != ("your code raised" in trace), trace
            kernel.follow_pointers(trace, notebook=solution.name[:2], todo=n, index=checkpoint_at)

        # the right answer passes, after those failures, and again when the checkpoint reruns
        for attempt in (1, 2):
            assert kernel.run(answer, todo_at) is None
            error = kernel.run(checkpoint, checkpoint_at)
            assert error is None, f"TODO {n}, run {attempt}: {error and error['evalue'][:300]}"
            assert f"✓ TODO {n} passed" in kernel.last_output

        # the next TODO goes on here if this kernel holds what a fresh one would at this point
        last = n == max(todo_numbers(solution_nb))
        if not last and held and kernel.back_to_fresh(answer, checkpoint, checkpoint_at):
            kernel.history = [*prefix, answer, checkpoint]
            notebook_kernels.keep(solution, n, kernel)
            kernel = None
    finally:
        if kernel is not None:
            kernel.stop()


def test_the_install_cell_installs_only_the_one_wheel_and_says_when_pip_fails(
    tmp_path, monkeypatch
) -> None:
    """Run the cell's own code where the workbook seems missing and pip fails: with several
    wheels in the folder (one may be planted, with a higher version) it installs none and names
    them; with one, it runs pip on it under ``python -P`` (a planted ``pip/`` beside the notebook
    is not imported), never a browser's ``(1)`` copy, and the failure is one sentence naming it;
    with no wheel, the folder is named."""
    import importlib.metadata
    import subprocess

    from helpers.course.install_cell import INSTALL_CELL_SOURCE

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: [])
    calls = []
    monkeypatch.setattr(
        subprocess,
        "run",
        lambda args, **_: calls.append(args) or subprocess.CompletedProcess(args, 1),
    )
    with pytest.raises(RuntimeError, match=f"upload context_relay_workbook-.*to {tmp_path}"):
        exec(INSTALL_CELL_SOURCE, {})
    copy = "context_relay_workbook-0.1.0-py3-none-any (1).whl"
    (tmp_path / copy).touch()  # a browser's second download: pip refuses such a name
    with pytest.raises(RuntimeError, match=re.escape(f"({copy}: a renamed copy")):
        exec(INSTALL_CELL_SOURCE, {})
    with pytest.raises(RuntimeError, match="restart the session"):  # said once: still true
        exec(INSTALL_CELL_SOURCE, {"RESTART_NEEDED": True})
    assert calls == []
    shared = "context_relay_workbook-0.1.0-py3-none-any.whl"
    (tmp_path / shared).touch()
    with pytest.raises(RuntimeError, match=f"pip could not install {shared}: its message is above"):
        exec(INSTALL_CELL_SOURCE, {})
    assert calls[-1][1:] == ["-P", "-m", "pip", "install", "--quiet", shared]
    planted = "context_relay_workbook-9.9.9-py3-none-any.whl"
    (tmp_path / planted).touch()
    calls.clear()
    with pytest.raises(RuntimeError, match=re.escape(f"several wheels in {tmp_path} ({shared}, ")):
        exec(INSTALL_CELL_SOURCE, {})
    assert calls == []  # neither installed
    with pytest.raises(RuntimeError, match=f"pip could not install {shared}"):
        exec(INSTALL_CELL_SOURCE.replace('WHEEL_URL = ""', f'WHEEL_URL = "{shared}"'), {})
