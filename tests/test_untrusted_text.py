"""Untrusted text is data at every sink (helpers/escaping.py).

A canary set (script and event-handler HTML, Markdown images and links, autolinks, TeX, ANSI /
OSC 8 / OSC 52 escapes, C1 controls, bidi overrides and invisible characters, rich markup) is
pushed through every producer a hostile model or endpoint controls (a refusal, an answer, the
reasoning, a tool-call name and arguments, a tool's output, a provider's error body in a 4xx, in a
200 and as an HTML page, a case file's id and prompt) into every sink (the terminal of ``ask``,
``cases``, ``compare`` and ``outputs show``; ``compare.md`` and ``compare.json``; the notebook
views' HTML), and each sink is checked for what would make the text act instead of show.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from provider import (
    CANARIES,
    HOSTILE,
    HOSTILE_REPLIES,
    ScriptedProvider,
    completion,
    hostile_replies,
    tool_call,
)
from rich.markup import render

import helpers
from helpers.course.cli import main
from helpers.course.views import answer_html, messages_html
from helpers.escaping import (
    INVISIBLE_RANGES,
    for_html,
    for_json,
    for_markdown,
    for_rich,
    for_terminal,
    visible,
)
from helpers.evaluation.compare import headline_html, to_markdown
from helpers.loop.agent import TurnRecord
from helpers.tooling.store import ToolOutputStore

SECRET = "sk-live-Zq8Xv2Lp9Rt4Wm6Kc1Hy3Nb5Df7Gj0Ts"
_EMOJI_ZWJ = re.compile("(?<=[\u2190-\U0010ffff])\u200d(?=[\u2190-\U0010ffff])")


def _raw_invisible(text: str) -> list[str]:
    """Characters of ``text`` that act on a display instead of showing (tab, newline and an
    emoji's zero-width joiner excepted)."""
    text = _EMOJI_ZWJ.sub("", text)
    return sorted(
        {
            f"U+{ord(c):04X}"
            for c in text
            if c not in "\n\t" and any(a <= ord(c) <= b for a, b in INVISIBLE_RANGES)
        }
    )


def assert_terminal_safe(text: str, where: str) -> None:
    found = _raw_invisible(text)
    assert not found, f"{where}: raw control/bidi/invisible characters {found} reach the terminal"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def assert_html_inert(page: str, where: str) -> None:
    """No script, image, link or event handler; no raw control or bidi character."""
    parser = _Tags()
    parser.feed(page)
    for tag, attrs in parser.tags:
        assert tag not in ("script", "img", "a", "svg", "object", "embed"), f"{where}: <{tag}>"
        handlers = [name for name, _ in attrs if name.lower().startswith("on")]
        assert not handlers, f"{where}: <{tag}> has event handlers {handlers}"
    assert_terminal_safe(page, where)


_MARKDOWN = MarkdownIt("commonmark").enable("table").enable("strikethrough")


def assert_markdown_inert(text: str, where: str) -> None:
    """Rendered as CommonMark with GFM tables: no raw HTML, image or link comes out, no autolink
    form is left for a GFM renderer (JupyterLab's) to find, and no TeX math delimiter."""
    assert_html_inert(_MARKDOWN.render(text), where)
    for form in ("https://evil", "www.evil", "a@evil", "$\\href", "<img", "<script"):
        assert form not in text, f"{where}: {form!r} stays active in the Markdown source"


# -- the escaping functions, on generated text --------------------------------------------------


def test_the_invisible_ranges_cover_every_format_character_of_this_python() -> None:
    covered = {c for a, b in INVISIBLE_RANGES for c in range(a, b + 1)}
    format_chars = {c for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cf", "Cc")}
    missing = sorted(format_chars - covered - {0x09, 0x0A})
    assert not missing, f"format/control characters not made visible: {[hex(c) for c in missing]}"


TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list("<>&\"'`*_[]()!|~$\\:@#{}\n\r\t\x1b\x07\x9b\u202e\u2066\u200b")),
    ),
    max_size=200,
)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(TEXT)
def test_every_sink_shows_exactly_the_visible_text(text: str) -> None:
    shown = visible(text)
    assert not _raw_invisible(shown)
    assert for_terminal(text) == shown
    assert render(for_rich(text) + "[bold]end[/bold]").plain == shown + "end", "rich markup"
    assert html.unescape(for_html(text)) == shown
    assert not re.search(r"[<>\"']", for_html(text))
    flat = " ".join(shown.split("\n"))
    rendered = _MARKDOWN.render(f"| a |\n|---|\n| {for_markdown(text)} |")
    cell = re.search(r"<tbody>\n<tr>\n<td>(.*)</td>\n</tr>", rendered, re.S)
    assert cell is not None, f"the text broke out of its table cell: {rendered!r}"
    assert html.unescape(cell[1]).strip() == flat.strip(), (
        "Markdown changed or interpreted the text"
    )
    assert json.loads(for_json(text)) == text and for_json(text).isascii()


def test_canaries_in_every_sink_function() -> None:
    for name, canary in CANARIES.items():
        assert_terminal_safe(for_terminal(canary), name)
        assert_html_inert(f"<p>{for_html(canary)}</p>", name)
        assert_markdown_inert(for_markdown(canary), name)
    assert for_terminal("a\u202eb") == "a\\u202eb" and for_terminal("\x1b[2J") == "\\x1b[2J"
    assert for_terminal("👩\u200d💻 ok") == "👩\u200d💻 ok"  # an emoji sequence stays whole


def test_no_call_site_escapes_by_hand() -> None:
    """No module of the library escapes by hand (html.escape, rich.markup.escape): every sink goes
    through the function of helpers/escaping.py made for it."""
    root = Path(helpers.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "escaping.py":
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in (r"\bhtml\.escape\(", r"markup import escape", r"markup\.escape\("):
            if re.search(pattern, text):
                offenders.append(f"{path.relative_to(root)}: {pattern}")
    assert not offenders, offenders


# -- every producer, through the CLI, into the terminal ----------------------------------------

REFUSAL, ANSWER, REASONING_ONLY, ERROR_400, ERROR_IN_200, HTML_PAGE = HOSTILE_REPLIES


def say(reply: Any) -> Any:
    """A provider step that answers every request with ``reply``."""
    return lambda _request: reply


PRODUCERS: dict[str, list[Any]] = {
    "refusal": [REFUSAL],
    "answer": [ANSWER],
    "reasoning": [REASONING_ONLY],
    "error 4xx": [ERROR_400],
    "error in a 200": [ERROR_IN_200],
    "HTML error page": [HTML_PAGE],
    "tool name and arguments": [
        completion(tool_calls=[tool_call(HOSTILE, {"x": HOSTILE})]),
        ANSWER,
    ],
    "tool output": [
        completion(
            tool_calls=[tool_call("run_sql", {"query": f"SELECT {json.dumps(HOSTILE)} AS x"})]
        ),
        ANSWER,
    ],
}


@pytest.fixture
def hostile_env(monkeypatch, tmp_path):
    def use(provider: ScriptedProvider) -> str:
        monkeypatch.setenv("WORKBOOK_PROFILE", "local")
        monkeypatch.setenv("LOCAL_MODEL", "hostile-model")
        monkeypatch.setenv("LOCAL_API_KEY", SECRET)
        monkeypatch.setenv("LOCAL_BASE_URL", provider.base_url)
        return f"sqlite:///{tmp_path / 'store.sqlite'}"

    return use


@pytest.mark.parametrize("producer", list(PRODUCERS))
@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
def test_ask_shows_every_producer_as_data(producer, as_json, hostile_env, capsys) -> None:
    with ScriptedProvider([say(step) for step in PRODUCERS[producer]]) as provider:
        db = hostile_env(provider)
        flags = ["--json"] if as_json else ["--color", "never"]
        main(["ask", "hi", "--db", db, "--max-retries", "0", *flags])
    out, err = capsys.readouterr()
    if as_json:
        assert out.isascii() and json.loads(out)["status"]
    else:  # no colour: every escape character on the screen would be the model's
        assert "window.__pwned=1" in out + err, "the producer's text reached the screen"
        assert_terminal_safe(out, f"ask ({producer})")
        assert "[bold red]" not in out or "[bold red]markup[/]" in out  # markup shown, not run
    assert_terminal_safe(err, f"ask stderr ({producer})")
    assert SECRET not in out + err


def test_a_key_in_a_provider_tool_call_id_reaches_no_output_and_no_store(
    hostile_env, capsys, tmp_path
) -> None:
    call = tool_call("yt_transcribe", {"video_id": "999"}, f"call_{SECRET}")
    with ScriptedProvider([say(completion(tool_calls=[call])), say(ANSWER)]) as provider:
        db = hostile_env(provider)
        main(["ask", "hi", "--db", db, "--max-retries", "0", "--json"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["tool_calls"][0]["provider_id"] != f"call_{SECRET}"
    assert SECRET not in out and SECRET not in err
    for path in tmp_path.glob("store.sqlite*"):
        assert SECRET.encode() not in path.read_bytes(), path


def _hostile_case(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.md"
    path.write_text(
        "---\n"
        f"id: {json.dumps('hostile ' + CANARIES['onerror'] + CANARIES['bidi'])}\n"
        "tool_calls:\n  - tool_name: yt_transcribe\n"
        "answer_contains: ['never said']\n"
        "---\n"
        f"Transcribe video 123. {CANARIES['md_image']} {CANARIES['script']}\n",
        encoding="utf-8",
    )
    return path


def test_cases_and_compare_show_model_text_as_data(hostile_env, capsys, tmp_path) -> None:
    case = _hostile_case(tmp_path)
    with ScriptedProvider([hostile_replies()]) as provider:
        db = hostile_env(provider)
        main(["cases", str(case), "-s", "all", "--db", db, "--color", "never"])
        cases_out, cases_err = capsys.readouterr()
        report = tmp_path / "report"
        main(
            ["compare", "--cases", str(case), "--db", db, "--color", "never", "--out", str(report)]
        )
        compare_out, compare_err = capsys.readouterr()
    for where, text in {
        "cases stdout": cases_out,
        "cases stderr": cases_err,
        "compare stdout": compare_out,
        "compare stderr": compare_err,
    }.items():
        assert_terminal_safe(text, where)
    markdown = (report / "compare.md").read_text(encoding="utf-8")
    assert "never said" in markdown or "refused" in markdown  # the failures are reported
    assert_markdown_inert(markdown, "compare.md")
    assert_terminal_safe(markdown, "compare.md")
    raw_json = (report / "compare.json").read_text(encoding="utf-8")
    assert raw_json.isascii() and json.loads(raw_json)["cases"]
    data = json.loads(raw_json)
    assert_markdown_inert(to_markdown(data), "to_markdown (notebook 05)")
    assert_html_inert(headline_html(data), "headline_html (notebook 05)")


def test_outputs_show_writes_stored_text_as_data_unless_raw(hostile_env, capsys, tmp_path) -> None:
    store = ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    row = store.log_tool("t-hostile", "call_h1", "get_page", "{}", HOSTILE)
    db = store.url
    store.close()
    main(["outputs", "show", row.ref_id, "--db", db, "--color", "never"])
    shown = capsys.readouterr().out
    assert_terminal_safe(shown, "outputs show")
    assert "\\x1b]52;" in shown and "\\u202e" in shown
    main(["outputs", "show", row.ref_id, "--db", db, "--raw"])
    assert HOSTILE in capsys.readouterr().out  # --raw: exactly, for a file or a pipe
    main(["outputs", "show", row.ref_id, "--db", db, "--json"])
    out = capsys.readouterr().out
    assert out.isascii() and json.loads(out)["content"] == HOSTILE


def test_notebook_views_show_model_text_as_data() -> None:
    record = TurnRecord(
        model=HOSTILE,
        strategy="box",
        boxing="opaque",
        thread_id="t",
        prompt=HOSTILE,
        messages=[
            {"role": "system", "content": "rules"},
            {"role": "user", "content": HOSTILE},
            {
                "role": "assistant",
                "content": HOSTILE,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": HOSTILE, "arguments": HOSTILE},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": HOSTILE},
            {"role": HOSTILE, "content": HOSTILE},
        ],
    )
    record.status, record.error = "incomplete", f"the model refused: {HOSTILE}"
    assert_html_inert(messages_html(record, max_chars=10_000, title=HOSTILE), "messages_html")
    assert_html_inert(answer_html(record), "answer_html")
    record.status, record.answer = "ok", HOSTILE
    assert_html_inert(answer_html(record), "answer_html")
