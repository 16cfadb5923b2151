"""The checkpoints themselves: each TODO's text states what its checkpoint checks, a failure is
short and names its smallest input, and the checks are deterministic."""

from __future__ import annotations

import re

import nbformat
import pytest

from helpers.context.compaction import tool_categories
from helpers.course import checkpoint
from helpers.course.checks.todos import CHECKS
from helpers.course.student_notebooks import SOLUTIONS_DIR, checkpoint_number, student_text


def _stub(*_args, **_kwargs):
    raise NotImplementedError("TODO")


def _todo_text(notebook: str, todo: int) -> str:
    """What an attendee reads for a TODO: the Markdown since the previous checkpoint (or the
    top), and the TODO cell of the generated student notebook."""
    solution = next(SOLUTIONS_DIR.glob(f"{notebook}_*.ipynb"))
    cells = nbformat.reads(student_text(solution), as_version=4).cells  # pristine, never yours
    at = next(i for i, c in enumerate(cells) if checkpoint_number(c) == todo) - 1  # its stub
    start = max(
        [i for i, c in enumerate(cells[:at]) if checkpoint_number(c) is not None], default=-1
    )
    prose = [c.source for c in cells[start + 1 : at] if c.cell_type == "markdown"]
    return "\n".join([*prose, cells[at].source])


@pytest.mark.parametrize(("notebook", "todo"), sorted(CHECKS), ids=lambda v: str(v))
def test_every_property_a_checkpoint_tests_is_named_in_its_todo_text(notebook, todo) -> None:
    with pytest.raises(checkpoint.TodoNotWritten):
        CHECKS[(notebook, todo)](_stub)
    text = " ".join(_todo_text(notebook, todo).lower().split())
    missing = [
        (prop.statement, term)
        for prop in checkpoint.REGISTERED[(notebook, todo)].properties
        for term in prop.terms
        if " ".join(term.lower().split()) not in text
    ]
    assert not missing, f"{notebook} TODO {todo}: the page never says {missing}"
    assert all(p.terms for p in checkpoint.REGISTERED[(notebook, todo)].properties)


def test_a_failure_is_short_and_shows_the_smallest_input() -> None:
    def make_preview(output, tool_call_id, limit=600):  # counts bytes
        if len(output.encode()) <= limit:
            return output
        return output[:limit] + f" ...[+{len(output) - limit} chars. full output: "
        f"fetch_tool_output(tool_call_id='{tool_call_id}')]"

    with pytest.raises(checkpoint.CheckpointFailed) as failed:
        CHECKS[("03", 1)](make_preview)
    lines = str(failed.value).splitlines()
    assert len(lines) <= 6 and all(len(line) <= 170 for line in lines)
    assert lines[0].startswith("✗ TODO 1 failed · make_preview: ")
    assert [line.split()[0] for line in lines[1:4]] == ["input", "expected", "got"]
    assert "hint('03', 1)" in lines[-1] and "why()" in lines[-1]
    # the smallest failing input: one non-ASCII character at a limit of one
    assert re.search(r"make_preview\('[^']+' \[1 chars\], 'call_0', limit=1\)", lines[1]), lines[1]


def test_a_checkpoint_is_deterministic() -> None:
    def categorize(name):
        return "query" if name.startswith("internal_resource_") else "execution"

    reports = []
    for _ in range(2):
        with pytest.raises(checkpoint.CheckpointFailed) as failed:
            CHECKS[("06", 1)](categorize)
        reports.append(str(failed.value))
    assert reports[0] == reports[1]


def test_an_exception_in_the_attendees_code_is_reported_with_its_traceback(capsys) -> None:
    def guarded_call(registry, mode, name, arguments):
        return {}["boom"]

    with pytest.raises(checkpoint.CheckpointFailed) as failed:
        CHECKS[("07", 2)](guarded_call)
    lines = str(failed.value).splitlines()
    assert lines[0] == "✗ TODO 2 failed · guarded_call: your code raised KeyError: 'boom'"
    assert [line.split()[0] for line in lines[1:3]] == ["input", "checking"]
    assert "your traceback: why()" in lines[-1]
    checkpoint.why()
    shown = capsys.readouterr().out
    assert "your code raised KeyError: 'boom'; its traceback:" in shown
    assert 'return {}["boom"]' in shown  # the attendee's own line, in the traceback


def test_a_checkpoint_run_before_its_todo_says_so_in_one_line(capsys) -> None:
    def prune(engine, older_than=None, thread_id=None):
        raise NotImplementedError("TODO 2: one delete statement (for a hint: hint('02', 2))")

    with pytest.raises(checkpoint.TodoNotWritten) as stopped:
        CHECKS[("02", 2)](prune)
    assert str(stopped.value).splitlines() == [
        "TODO 2 (prune) is not written yet: replace the raise NotImplementedError in the TODO 2 "
        "cell above with your code, run that cell, then this one · stuck? hint('02', 2)"
    ]
    checkpoint.why()  # the pointer after a stop for a missing answer says the same, not more
    assert "TODO 2 (prune) is not written yet" in capsys.readouterr().out


def test_a_checkpoint_that_passes_prints_its_line_once_and_returns_nothing(capsys) -> None:
    table = tool_categories()  # the registry's, as notebook 06 shows it

    def categorize(name):
        return next((c for c, names in table.items() if name in names), "execution")

    assert CHECKS[("06", 1)](categorize) is None  # nothing for a cell to echo as Out[n]
    out = capsys.readouterr().out
    assert out.count("✓ TODO 1 passed") == 1 and len(out.splitlines()) == 1


def test_a_failure_is_filed_under_the_rule_it_breaks() -> None:
    """A tool's exception that escapes the attendee's dispatch is "your code raised", checked
    against the rule about bad calls (not the echo's); a summary with no cap on one path fails
    the cap's rule (not the rule of that path's shape)."""
    import json

    def handle_tool_calls(messages, message, registry):  # no error handling
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in message.tool_calls
                ],
            }
        )
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments or "{}")
            content = registry.get(call.function.name).call(arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})

    with pytest.raises(checkpoint.CheckpointFailed) as failed:
        CHECKS[("01", 1)](handle_tool_calls)
    lines = str(failed.value).splitlines()
    assert "your code raised" in lines[0], lines
    assert lines[2].split()[0] == "checking" and "a bad call" in lines[2], lines

    from helpers.course.checks.modes import reference_summary

    def summarize(result, max_chars=300):  # the content parts' path is not cut
        try:
            data = json.loads(result)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("content"), list):
            return reference_summary(result, 10**9)
        return reference_summary(result, max_chars)

    with pytest.raises(checkpoint.CheckpointFailed) as failed:
        CHECKS[("07", 3)](summarize)
    assert "is cut to its first max_chars characters" in str(failed.value).splitlines()[0]


#: Wrong programs for notebook 08's TODO 2 (tests/wrong_answers.py, and one that calls a method
#: of a promise), and what the "got" line of the stop must show: the part that is wrong.
_NO_AWAIT_SPLIT = """def error_report_program(url):
    return (
        f"const page = tools.get_page({{url: {json.dumps(url)}}});\\n"
        "const hits = page.split('\\\\n').filter((l) => l.includes('ERROR'));\\n"
        "return {count: hits.length, first: hits.length ? hits[0] : null};"
    )
"""
_WRONG_PROGRAMS = {
    "the URL pasted between quotes": ("'https://example.com/it's.log'", "SyntaxError"),
    "the URL escaped by hand (a line break breaks it)": ("line\\x0abreak",),
    "the URL cleaned up first": ('["https://example.com/spaces around.log"]',),
    "case ignored (error and Error counted)": ('{"count": 2, "first": "an error"}',),
    "the first line cut to 200 characters": ('long long"}',),
    "a method of the promise": (
        "TypeError: page.split is not a function, at its line 2: const hits = page.split(",
    ),
}


@pytest.mark.parametrize("wrong", sorted(_WRONG_PROGRAMS))
def test_a_wrong_program_is_shown_where_it_is_wrong(wrong: str) -> None:
    """08 TODO 2: the stop of a wrong program shows the part that differs (not elided), in
    JSON as the program sees its values (no Python repr), in finished sentences."""
    import json

    from wrong_answers import WRONG_ANSWERS

    answers = dict(WRONG_ANSWERS[("08", 2)], **{"a method of the promise": _NO_AWAIT_SPLIT})
    namespace: dict = {"json": json}
    exec(answers[wrong], namespace)
    with pytest.raises(checkpoint.CheckpointFailed) as failed:
        CHECKS[("08", 2)](namespace["error_report_program"])
    lines = str(failed.value).splitlines()
    got = next(line for line in lines if line.split()[0] == "got")
    assert all(part in got for part in _WRONG_PROGRAMS[wrong]), lines
    assert len(lines) <= 6 and all(len(line) <= 170 for line in lines[1:]), lines
    assert not re.search(r"\{'|': |None\b|expected\s+the program returns$", "\n".join(lines))
