"""Untrusted text is data at every sink: one escaping function per place text is shown.

What a model writes (answers, refusals, reasoning, tool-call arguments), what a tool returns, what
a provider sends in an error body and what a case file says are all untrusted: a model repeats
whatever it read, and an endpoint can send anything. Shown raw, such text is code: HTML in a
notebook output runs as script in JupyterLab's origin (an ``<img onerror=…>`` can call the Lab's
REST API and open a terminal); Markdown makes links and images, and JupyterLab renders its HTML;
ANSI escapes clear a terminal, retitle the window or write the clipboard (OSC 52); bidi overrides
and invisible characters make what is shown differ from the bytes (*Trojan Source*,
CVE-2021-42574).

So such text reaches a sink only through the function made for it:

=====================  ===================================================================
:func:`for_html`       an HTML text node or quoted attribute (notebook views, widgets)
:func:`for_markdown`   inline Markdown, one line (compare.md, notebook Markdown output)
:func:`for_terminal`   plain text for a terminal, stderr or a log file
:func:`for_cell`       one cell of a CLI table or of tab-separated lines (tabs, line breaks shown)
:func:`for_rich`       text inside ``rich`` console markup (the CLI's tables and panels)
:func:`for_json`       JSON text on a terminal or in a pipe (``--json`` output), ASCII only
=====================  ===================================================================

Each first applies :func:`visible`: every control character (C0 but tab and newline, DEL, C1, so
ESC/CSI/OSC too), every bidi and invisible formatting character (Unicode category Cf, line and
paragraph separators, Hangul fillers) and every unpaired surrogate is shown as an escape such as
``\\x1b`` or ``\\u202e``, in time linear in the text. No call site escapes by hand (a test checks
that ``html.escape`` and ``rich.markup.escape`` are called nowhere in the library).

Our own Markdown has one rule of its own: GitHub and JupyterLab read a pair of ``$`` as TeX math,
so a report's dollar amounts go through :func:`dollars_as_text`. And JupyterLab typesets math
again after rendering, in the text of every Markdown and HTML output, where ``&#36;`` and
``&#92;`` are a ``$`` and a ``\\`` once more: so what a notebook displays goes inside an element
MathJax skips, :func:`for_notebook_html` and :func:`for_notebook_markdown`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from helpers.text.unicode import valid_text

#: Ranges of code points shown as escapes by :func:`visible` (besides tab and newline, which are
#: kept): C0 and DEL and C1 controls, every format character (Unicode category ``Cf``, which a
#: test checks against :mod:`unicodedata`: bidi embeddings, overrides and isolates, zero-width
#: spaces and joiners, the BOM, tag characters), the line and paragraph separators, the
#: Hangul fillers (letters that draw nothing), and the variation selectors and the combining
#: grapheme joiner (marks that draw nothing: 256 selectors can carry a byte each after any
#: character, the trick known as emoji smuggling).
INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0008),
    (0x000B, 0x001F),
    (0x007F, 0x009F),
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
    (0xE0100, 0xE01EF),
)
_ZWJ = "\u200d"
#: The text and emoji presentation selectors, kept right after a pictograph or a keycap base
#: (❤️, 1️⃣): one bit a character, no byte.
_PRESENTATION = frozenset("\ufe0e\ufe0f")
_KEYCAP_BASES = frozenset("0123456789#*")


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    def one(code: int) -> str:
        return f"\\x{code:02x}" if code < 0x100 else f"\\U{code:08x}"

    return "".join(one(a) if a == b else f"{one(a)}-{one(b)}" for a, b in ranges)


_INVISIBLE_RE = re.compile(f"[{_char_class(INVISIBLE_RANGES)}]")
_INVISIBLE_OR_NEWLINE_RE = re.compile(f"[{_char_class(INVISIBLE_RANGES)}\\n]")


def _notation(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _is_pictograph(char: str) -> bool:
    """An arrow, a symbol or an emoji (a symbol from U+2190 on), never an invisible character."""
    return bool(char) and ord(char) >= 0x2190 and unicodedata.category(char).startswith("S")


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every character that is invisible or acts on the display shown as an escape.

    Args:
        text: any string (unpaired surrogates included).
        keep_newlines: keep ``\\n`` as a line break; else it is shown as ``\\x0a`` too.

    Returns:
        The text in which each character of :data:`INVISIBLE_RANGES` is replaced by its escape
        (an unpaired surrogate becomes U+FFFD, the replacement character): ``\\x1b`` (ESC),
        ``\\u202e`` (RIGHT-TO-LEFT OVERRIDE), ``\\U000e0041`` (TAG LATIN CAPITAL LETTER A). Tab
        is kept; a zero-width joiner between two pictographs (an emoji sequence such as 👩‍💻) is
        kept, and so is an emoji or text presentation selector after a pictograph or a keycap
        base (❤️, 1️⃣). Linear in the length of ``text``.
    """
    text = valid_text(text)
    pattern = _INVISIBLE_RE if keep_newlines else _INVISIBLE_OR_NEWLINE_RE

    def replace(match: re.Match[str]) -> str:
        char = match[0]
        start = match.start()
        before = text[start - 1] if start > 0 else ""
        if char == _ZWJ and _is_pictograph(before) and _is_pictograph(text[start + 1 : start + 2]):
            return char
        if char in _PRESENTATION and (_is_pictograph(before) or before in _KEYCAP_BASES):
            return char
        return _notation(char)

    return pattern.sub(replace, text)


def for_terminal(text: str) -> str:
    """``text`` for a terminal, stderr or a log file: :func:`visible` (line breaks kept, carriage
    returns and every escape sequence shown, never sent)."""
    return visible(text)


def for_cell(text: str) -> str:
    """``text`` as one cell of a terminal table or of tab-separated lines: :func:`for_terminal`,
    then tabs and line breaks shown as ``\\t`` and ``\\n`` (a raw one would add a column or
    split the row)."""
    return for_terminal(text).replace("\t", "\\t").replace("\n", "\\n")


#: What may follow ``[`` in a rich markup tag (``rich.markup.RE_TAGS``).
_RICH_TAG_START = frozenset("abcdefghijklmnopqrstuvwxyz#/@")


def for_rich(text: str) -> str:
    """``text`` inside ``rich`` console markup, followed by anything: :func:`for_terminal`, then
    every ``[`` that would open a tag (a style, a ``[link=…]``) escaped, with the backslashes
    before it doubled, and a trailing run of backslashes doubled, so it cannot escape the markup
    that follows. (``rich.markup.escape`` drops a backslash of a trailing ``\\\\``.) Linear.
    """
    parts = for_terminal(text).split("[")
    out = [parts[0]]
    for part in parts[1:]:
        if part[:1] in _RICH_TAG_START and part[:1] and "]" in part:
            previous = out[-1]
            out[-1] = previous + "\\" * (len(previous) - len(previous.rstrip("\\"))) + "\\"
        out.append(part)
    escaped = "[".join(out)
    return escaped + "\\" * (len(escaped) - len(escaped.rstrip("\\")))


def for_html(text: str) -> str:
    """``text`` as an HTML text node or a quoted attribute value: :func:`visible` (line breaks
    kept), then ``& < > " '`` as character references, so no tag, attribute or entity of the
    text is ever parsed."""
    return (
        visible(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


#: Characters :func:`for_markdown` writes as numeric character references: CommonMark never
#: reads a character reference as markup, so none of them can open a code span, emphasis, a
#: link, an image, raw HTML, an autolink (``:`` and ``@``), a table cell (``|``), a
#: strikethrough (``~``) or TeX math (``$``, ``\\``, braces), which JupyterLab renders too.
MARKDOWN_SPECIAL = frozenset("\\`*_[]<>&|~$:@{}#!")
_MARKDOWN_LINE_START = frozenset("-+=>0123456789")
_MARKDOWN_RE = re.compile(
    "[" + "".join(re.escape(c) for c in sorted(MARKDOWN_SPECIAL)) + "]|(?<=[wW])\\."
)


def for_markdown(text: str) -> str:
    """``text`` as inline Markdown: one line that renders as exactly these characters.

    :func:`visible`, line breaks turned to spaces, then each character of
    :data:`MARKDOWN_SPECIAL` as a character reference (``&#42;`` for ``*``), a ``.`` after ``w``
    too (so ``www.example.com`` is no autolink), and a first character that could start a list,
    a heading or a quote likewise. Safe in a paragraph, a list item or a GFM table cell.
    """
    flat = " ".join(visible(text).split("\n"))
    escaped = _MARKDOWN_RE.sub(lambda m: f"&#{ord(m[0])};", flat)
    if escaped[:1] in _MARKDOWN_LINE_START:  # none of these is in MARKDOWN_SPECIAL
        escaped = f"&#{ord(escaped[0])};{escaped[1:]}"
    return escaped


_BACKTICK_RUN = re.compile(r"`+")
_DOLLAR = re.compile(r"(?<!\\)\$")


def dollars_as_text(markdown: str) -> str:
    """Our own Markdown (a report, a README block) with each ``$`` outside code written ``\\$``.

    JupyterLab typesets text between two ``$`` as TeX (MathJax with ``inlineMath`` ``$…$`` and
    ``processEscapes``), before Markdown is parsed, so ``| $1.21 | $1.05 |`` becomes a formula;
    GitHub renders ``$…$`` as math too. Both show ``\\$`` as a plain ``$`` (a CommonMark
    backslash escape). Code spans and fences (a run of backticks up to the next run of the same
    length) are left as they are: no math is read there, and a backslash would show. A ``$``
    already escaped stays as it is. Linear in the text. Untrusted text needs no call:
    :func:`for_markdown` already writes its ``$`` as ``&#36;``.
    """
    out: list[str] = []
    position = 0
    opening = 0  # the length of the open code span's backtick run, 0 outside code
    for run in _BACKTICK_RUN.finditer(markdown):
        start, length = run.start(), len(run[0])
        if not opening:
            backslashes = 0
            while start - backslashes > 0 and markdown[start - backslashes - 1] == "\\":
                backslashes += 1
            if backslashes % 2:  # an escaped first backtick is a literal one
                start, length = start + 1, length - 1
                if not length:
                    continue
            out.append(_DOLLAR.sub(r"\\$", markdown[position:start]))
            opening, position = length, start
        elif length == opening:  # backslashes escape nothing inside code
            out.append(markdown[position : run.end()])
            opening, position = 0, run.end()
    out.append(_DOLLAR.sub(r"\\$", markdown[position:]))  # an unclosed run is literal text
    return "".join(out)


#: The class whose elements MathJax leaves alone (its ``ignoreHtmlClass``; ``mathjax_ignore`` is
#: MathJax 3's default, and JupyterLab 4 keeps it).
NO_MATH_CLASS = "mathjax_ignore"


def for_notebook_html(html: str) -> str:
    """HTML made for a notebook output (its untrusted parts already through :func:`for_html`)
    inside one ``<div>`` of :data:`NO_MATH_CLASS`.

    JupyterLab typesets every HTML output with MathJax (``$…$``, ``\\(…\\)``, ``$$…$$``,
    ``\\begin{…}``), reading the page's text, where character references are already decoded: a
    model's ``$\\href{https://…}{\\Huge …}$`` escaped as text would still become a link drawn
    over the page. Inside this element MathJax reads nothing."""
    return f'<div class="{NO_MATH_CLASS}">{html}</div>'


def for_notebook_markdown(markdown: str) -> str:
    """Markdown made for a notebook output (untrusted parts through :func:`for_markdown`, dollar
    amounts through :func:`dollars_as_text`) inside an HTML block of :data:`NO_MATH_CLASS`: the
    ``<div>`` and a blank line, the Markdown, a blank line and ``</div>`` (CommonMark renders the
    Markdown between them as Markdown). JupyterLab looks for math twice: in the source, where
    ``\\$`` is not a delimiter, and after rendering, in the page, which this element hides from
    it (jupyterlab/jupyterlab#8645: there a ``\\$`` alone is read as math again)."""
    return f'<div class="{NO_MATH_CLASS}">\n\n{markdown}\n\n</div>'


def for_json(data: Any, **dumps_options: Any) -> str:
    """``data`` as JSON text for a terminal, a pipe or a log line: ``json.dumps`` with
    ``ensure_ascii=True``, so every control, bidi, invisible and non-ASCII character of every
    string is a ``\\uXXXX`` escape and the line is plain ASCII (valid whatever the strings hold,
    unpaired surrogates included). ``dumps_options`` go to :func:`json.dumps` (``default``,
    ``indent``)."""
    return json.dumps(data, ensure_ascii=True, **dumps_options)
