"""Untrusted text is data at every sink (helpers/text/escaping.py).

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

import nbformat
import pytest
from hang import HANG_GUARD_S
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from nbclient import NotebookClient
from provider import (
    CANARIES,
    HOSTILE,
    HOSTILE_REPLIES,
    ScriptedProvider,
    completion,
    hostile_replies,
    tool_call,
)
from pydantic import BaseModel
from rich.markup import render

import helpers
from helpers.cli import main
from helpers.course.student_notebooks import SOLUTIONS_DIR
from helpers.course.views import answer_html, markdown_view, messages_html, side_by_side
from helpers.evaluation import metrics as metrics_module
from helpers.evaluation.compare import Comparison
from helpers.evaluation.metrics import ScalingPoint, ScalingResult, load_comparison
from helpers.evaluation.report import comparison_markdown, headline_html
from helpers.evaluation.scaling import breaks_markdown, scaling_markdown
from helpers.loop.records import TurnRecord
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import (
    INVISIBLE_RANGES,
    NO_MATH_CLASS,
    dollars_as_text,
    for_html,
    for_json,
    for_markdown,
    for_rich,
    for_terminal,
    visible,
)

SECRET = "sk-live-Zq8Xv2Lp9Rt4Wm6Kc1Hy3Nb5Df7Gj0Ts"


def _symbol(char: str) -> bool:
    """An arrow, a symbol or an emoji (Unicode category S*, from U+2190 on)."""
    return bool(char) and ord(char) >= 0x2190 and unicodedata.category(char)[0] == "S"


def _shows(text: str, i: int) -> bool:
    """Whether the character at ``text[i]`` may reach a display raw: anything visible, tab and
    newline, a zero-width joiner between two symbols (an emoji sequence) and a text or emoji
    presentation selector after a symbol or a keycap base 0-9, # and * ("0\ufe0e", "\u2764\ufe0f";
    Unicode's emoji-variation-sequences.txt)."""
    char, before, after = text[i], text[i - 1 : i], text[i + 1 : i + 2]
    if char == "\u200d":
        return _symbol(before) and _symbol(after)
    if char in "\ufe0e\ufe0f":
        return _symbol(before) or (before != "" and before in "0123456789#*")
    return char in "\n\t" or not any(a <= ord(char) <= b for a, b in INVISIBLE_RANGES)


def _raw_invisible(text: str) -> list[str]:
    """Characters of ``text`` that act on a display instead of showing."""
    return sorted({f"U+{ord(c):04X}" for i, c in enumerate(text) if not _shows(text, i)})


def assert_terminal_safe(text: str, where: str) -> None:
    found = _raw_invisible(text)
    assert not found, f"{where}: raw control/bidi/invisible characters {found} reach the terminal"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


#: The one image an HTML output may hold: a PNG inside its own ``data:`` URI (a themed chart,
#: ``helpers/display/charts.py``), which fetches nothing and runs nothing.
_INLINE_PNG = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")


def assert_html_inert(page: str, where: str) -> None:
    """No script, link, event handler or image that fetches anything (only an inline PNG, a
    chart); no raw control or bidi character."""
    parser = _Tags()
    parser.feed(page)
    for tag, attrs in parser.tags:
        if tag == "img":
            source = dict(attrs).get("src") or ""
            assert _INLINE_PNG.fullmatch(source), f"{where}: <img src={source[:60]!r}>"
        else:
            assert tag not in ("script", "a", "svg", "object", "embed"), f"{where}: <{tag}>"
        handlers = [name for name, _ in attrs if name.lower().startswith("on")]
        assert not handlers, f"{where}: <{tag}> has event handlers {handlers}"
    assert_terminal_safe(page, where)


_MARKDOWN = MarkdownIt("commonmark").enable("table").enable("strikethrough")
# JupyterLab's own rule for where no math is read (jupyterlab/jupyterlab,
# packages/rendermime/src/latex.ts, ``removeMath``): fences, then inline code on one line
_LAB_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})[^`\n]*\n[\s\S]*?^(?P=fence)`*$", re.M)
_LAB_INLINE_CODE = re.compile(r"(^|[^\\])(`+)([^\n]*?[^`\n])\2(?!`)", re.M)


def tex_delimiters(markdown: str) -> list[str]:
    """The ``$`` that JupyterLab's Markdown renderer takes for TeX delimiters (MathJax, ``$…$``
    inline, a ``\\$`` escaped), each with what follows it: those outside code, as JupyterLab finds
    code before it looks for math."""
    no_code = _LAB_FENCE.sub(lambda m: m[0].replace("$", "~D"), markdown)
    no_code = _LAB_INLINE_CODE.sub(lambda m: m[0].replace("$", "~D"), no_code)
    return re.findall(r"(?<!\\)\$.{0,12}", no_code)


_VOID = {"br", "wbr", "img", "hr", "input", "meta", "link", "col", "area", "base", "source"}


class _MathText(HTMLParser):
    """The text MathJax would read for TeX: text outside every ``mathjax_ignore`` element and
    outside the tags it skips (script, style, pre, code, textarea…)."""

    SKIPPED = frozenset({"script", "noscript", "style", "textarea", "pre", "code"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[bool] = []
        self.exposed: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            return
        classes = dict(attrs).get("class") or ""
        hidden = tag in self.SKIPPED or NO_MATH_CLASS in classes.split()
        self.stack.append(hidden or (bool(self.stack) and self.stack[-1]))

    def handle_endtag(self, tag: str) -> None:
        if tag not in _VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if not (self.stack and self.stack[-1]):
            self.exposed.append(data)


def assert_hidden_from_mathjax(page: str, where: str) -> None:
    """No ``$``, ``\\`` (``\\(``, ``\\[``, ``\\begin``) in text JupyterLab's MathJax reads."""
    parser = _MathText()
    parser.feed(page)
    exposed = [t for t in parser.exposed if "$" in t or "\\" in t]
    assert not exposed, f"{where}: MathJax would read {exposed[:3]}"


def assert_markdown_inert(text: str, where: str) -> None:
    """Rendered as CommonMark with GFM tables: no raw HTML, image or link comes out, no autolink
    form is left for a GFM renderer (JupyterLab's) to find, and no TeX math delimiter."""
    assert_html_inert(_MARKDOWN.render(text), where)
    assert not tex_delimiters(text), f"{where}: TeX math delimiters {tex_delimiters(text)}"
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


MARKDOWN_WITH_DOLLARS = st.text(alphabet=st.sampled_from(list("ab1 $|`*\\-")), max_size=80)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(MARKDOWN_WITH_DOLLARS)
def test_our_dollars_render_as_dollars_and_never_as_math(markdown: str) -> None:
    """Our own Markdown, on one line (a code span across lines is code to CommonMark and not to
    JupyterLab: the report writes none)."""
    escaped = dollars_as_text(markdown)
    assert _MARKDOWN.render(escaped) == _MARKDOWN.render(markdown), "the rendering changed"
    assert not tex_delimiters(escaped)
    assert dollars_as_text(escaped) == escaped, "escaping twice changed the text"


def test_dollars_in_code_stay_as_written() -> None:
    source = "| $1.21 | `$HOME` |\n```\n$ make lab\n```\ncosts $0.02"
    assert dollars_as_text(source) == "| \\$1.21 | `$HOME` |\n```\n$ make lab\n```\ncosts \\$0.02"


def test_a_scaling_failure_reason_from_a_model_is_quoted_as_data() -> None:
    """A reason the sentence cannot name in its own words is the run's (a refusal, an error
    body): the scaling section of compare.md and the README quote it."""

    def point(size_bytes: int, tokens: int, reason: str) -> ScalingPoint:
        return ScalingPoint(
            size_bytes=size_bytes,
            prompt_tokens=tokens,
            usd_cached=0.0,
            seconds=0.0,
            passed=not reason,
            status="failed" if reason else "ok",
            reason=reason,
            looks_inside=0,
            cut_at_output_tokens=0,
        )

    reason = f"refused: {CANARIES['onerror']} {CANARIES['md_image']} $\\href{{x}}$"
    points = [point(1_000, 900, ""), point(3_000, 2_000, reason)]
    data = ScalingResult(
        sizes_bytes=[1_000, 3_000],
        context_window_tokens=12_000,
        price_model="gpt-4o",
        runs={"inline": points},
        breaks={},
    )
    for where, text in {
        "breaks_markdown": "\n".join(breaks_markdown(data)),
        "scaling_markdown": "\n".join(scaling_markdown(data)),
    }.items():
        assert "breaks at 3 KB" in text, text
        assert_markdown_inert(text, where)


def test_canaries_in_every_sink_function() -> None:
    for name, canary in CANARIES.items():
        assert_terminal_safe(for_terminal(canary), name)
        assert_html_inert(f"<p>{for_html(canary)}</p>", name)
        assert_markdown_inert(for_markdown(canary), name)
    assert for_terminal("a\u202eb") == "a\\u202eb" and for_terminal("\x1b[2J") == "\\x1b[2J"
    assert for_terminal("👩\u200d💻 ok") == "👩\u200d💻 ok"  # an emoji sequence stays whole
    assert for_terminal("❤\ufe0f 1\ufe0f\u20e3") == "❤\ufe0f 1\ufe0f\u20e3"  # presentation kept
    # a selector or joiner after an invisible character is shown, not taken for an emoji's
    assert for_terminal("\u202e\ufe0e\ufe0e") == "\\u202e\\ufe0e\\ufe0e"
    assert for_terminal("\ufeff\u200d\ufeff") == "\\ufeff\\u200d\\ufeff"
    # bytes hidden in variation selectors after an emoji (emoji smuggling) are shown
    smuggled = "😀" + "".join(chr(0xE0100 + b - 16) for b in b"rm -rf ~")
    assert for_terminal(smuggled) == "😀" + "".join(
        f"\\U{0xE0100 + b - 16:08x}" for b in b"rm -rf ~"
    )


def test_no_call_site_escapes_by_hand() -> None:
    """No module of the library escapes by hand (html.escape, rich.markup.escape): every sink goes
    through the function of helpers/text/escaping.py made for it."""
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
    data = load_comparison(report / "compare.json")
    assert_markdown_inert(comparison_markdown(data), "comparison_markdown (notebook 05)")
    assert_html_inert(headline_html(data), "headline_html (notebook 05)")
    assert_hidden_from_mathjax(headline_html(data), "headline_html (notebook 05)")
    assert_hidden_from_mathjax(
        _MARKDOWN.render(markdown_view(comparison_markdown(data)).data), "compare.md (notebook 05)"
    )


def test_outputs_show_writes_stored_text_as_data_unless_raw(hostile_env, capsys, tmp_path) -> None:
    store = ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    row = store.log_tool("t-hostile", "call_h1", "get_page", "{}", HOSTILE)
    db = store.url
    store.close()
    code = main(["outputs", "show", row.ref_id, "--db", db, "--color", "never"])
    shown, err = capsys.readouterr()
    assert code == 0, err
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
    views = {
        "messages_html": messages_html(record, max_chars=10_000, title=HOSTILE),
        "answer_html (failed)": answer_html(record),
    }
    record.status, record.answer = "ok", HOSTILE
    views["answer_html"] = answer_html(record)
    views["side_by_side"] = side_by_side(views["messages_html"], views["answer_html"])
    views["markdown_view"] = _MARKDOWN.render(
        markdown_view(f"| {for_markdown(HOSTILE)} | \\$1.21 |\n|---|---|\n").data
    )
    for where, page in views.items():
        assert_html_inert(page, where)
        assert_hidden_from_mathjax(page, where)
    assert "$" in HOSTILE and "\\" in HOSTILE  # so the check above has something to find


def test_the_headline_cards_escape_every_field_even_of_a_hand_edited_report(tmp_path) -> None:
    """notebook 05's cards and compare.md, from a ``compare.json`` whose every text field is
    hostile; hostile text where a number belongs is refused when the file is read."""
    hostile = "<img src=x onerror=alert(1)> $\\href{https://evil}{x}$"
    document = json.loads(Comparison([], hostile, None, 600).metrics().as_json_text())
    total = {
        "prompt_tokens": 1,
        "completion_tokens": 1,
        "passed": 0,
        "cases": 1,
        "context_overflows": 0,
        "ratio_to_inline": None,
        "ratio_to_floor": 1.5,
        "seconds": 0.0,
        "usd_cached": 0.5,
    }
    document["totals"] = {hostile: total}
    document["caching"]["cached_share"] = {hostile: 0.5}
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    metrics = load_comparison(path)
    html = headline_html(metrics)
    assert_html_inert(html, "headline_html of a hand-edited compare.json")
    assert_hidden_from_mathjax(html, "headline_html of a hand-edited compare.json")
    assert "&lt;img" in html
    assert_markdown_inert(comparison_markdown(metrics), "compare.md of a hand-edited compare.json")
    for field in ("ratio_to_floor", "usd_cached", "passed", "cases", "prompt_tokens"):
        path.write_text(json.dumps({**document, "totals": {"box": {**total, field: hostile}}}))
        with pytest.raises(ValueError, match=field):
            load_comparison(path)


# -- every notebook that prints a model's text, against a hostile model -------------------------


def _hostile_model(request: dict[str, Any]) -> Any:
    """A tool call whose name, arguments and output (``run_sql`` echoes the query's text) are
    hostile, then a hostile answer once a tool result has come back."""
    if request["messages"][-1]["role"] == "tool":
        return ANSWER
    quoted = HOSTILE.replace("'", "''")  # an SQL string literal: the output is the text itself
    return completion(tool_calls=[tool_call("run_sql", {"query": f"SELECT '{quoted}' AS x"})])


@pytest.mark.parametrize(
    "name",
    [
        "00_setup",
        "01_inline_tool_results",
        "03_truncated_preview",
        "04_opaque_reference_boxing",
        "07_modes_and_dual_stream",
    ],
)
def test_a_notebook_shows_a_hostile_models_text_as_data(name, hostile_env, monkeypatch) -> None:
    """The solution notebook runs against a model whose every answer and tool call is hostile;
    every stream and display output it prints (its lessons' asserts fail, as they should) holds
    the hostile text only as escapes, and no HTML output runs anything."""
    notebook = nbformat.read(SOLUTIONS_DIR / f"{name}.ipynb", as_version=4)
    with ScriptedProvider([_hostile_model]) as provider:
        monkeypatch.setenv("WORKBOOK_DB_URL", hostile_env(provider))
        NotebookClient(
            notebook,
            timeout=HANG_GUARD_S,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(SOLUTIONS_DIR)}},
            shutdown_kernel="immediate",  # as nbval ends its kernels: the outputs are all in
        ).execute()
        asked = len(provider.requests)
    assert asked, f"{name} never asked the hostile model"
    shown = 0
    for number, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            where = f"{name} cell {number} ({output.output_type})"
            if output.output_type == "stream":
                texts = [output.text]
            elif output.output_type in ("display_data", "execute_result"):
                texts = [output.data.get("text/plain", "")]
                if "text/html" in output.data:
                    assert_html_inert(output.data["text/html"], where)
            else:  # an error: the lesson's assert, its message a repr()
                texts = [output.evalue]
            for text in texts:
                assert_terminal_safe(text, where)
                shown += "window.__pwned=1" in text
    assert SECRET not in nbformat.writes(notebook)
    assert shown, f"{name} printed none of the hostile model's text"


def _hostile_strings(value: Any, names: dict[str, str]) -> Any:
    """``value`` (a compare.json document) with every string, keys included, replaced by a
    hostile one: the same string always by the same hostile text, so references between fields
    (a strategy named in totals, in a box goal, in a caching change) still agree."""
    if isinstance(value, str):
        return names.setdefault(
            value, f"{CANARIES['onerror']} {CANARIES['md_image']} #{len(names)}"
        )
    if isinstance(value, dict):
        return {
            k if k in _FIELD_NAMES else _hostile_strings(k, names): _hostile_strings(v, names)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hostile_strings(v, names) for v in value]
    return value


#: The field names of compare.json's models (kept: they are the schema, not text).
_FIELD_NAMES = {
    name
    for model in vars(metrics_module).values()
    if isinstance(model, type) and issubclass(model, BaseModel)
    for name in model.model_fields
}


def test_every_text_field_of_a_report_reaches_markdown_and_html_escaped(
    client, store, tmp_path
) -> None:
    """A real comparison (runs, design steps, personas, a scaling run) whose every string in
    compare.json, keys included, is replaced by hostile text: compare.md and the cards are
    inert however the file was edited."""
    from helpers.cases.case_files import load_cases
    from helpers.evaluation.runs import run_cases, run_personas
    from helpers.evaluation.scaling import run_scaling
    from helpers.models.personas import PERSONAS

    cases = [c for c in load_cases() if c.id in ("case1", "case3")]
    strategies = ["inline", "truncate", "box", "box-tcr", "box-one-tool"]
    runs = run_cases(cases, strategies, client=client, model="m", store=store)
    runs += run_personas(cases, [PERSONAS["embeds"]], client=client, store=store)
    scaling = run_scaling([1_000], ["inline", "box"], store=store)
    document = json.loads(
        Comparison(runs, "m", None, 600, scaling=scaling).metrics().as_json_text()
    )
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(_hostile_strings(document, {})), encoding="utf-8")
    metrics = load_comparison(path)
    markdown = comparison_markdown(metrics)
    assert_markdown_inert(markdown, "compare.md, every text field hostile")
    assert_hidden_from_mathjax(
        _MARKDOWN.render(markdown_view(markdown).data), "compare.md, every text field hostile"
    )
    html = headline_html(metrics)
    assert_html_inert(html, "headline_html, every text field hostile")
    assert html.count("&lt;img") == len(metrics.totals)
