"""HTML views of a turn for the notebooks: the messages the model saw, with token counts.

Pure functions from a :class:`~helpers.loop.records.TurnRecord` to an HTML string (displayed with
``IPython.display.HTML`` or inside an ``ipywidgets.HTML``); long contents are shortened for the
eye, and the view says by how many characters. Every view is an element MathJax skips
(:func:`helpers.text.escaping.for_notebook_html`), and :func:`markdown_view` shows a Markdown report
the same way: JupyterLab would otherwise typeset any ``$…$`` in the text, a model's included.
"""

from __future__ import annotations

import json
from typing import Any

from helpers.context.compaction import is_summary
from helpers.display.charts import ThemedChart
from helpers.display.theme import BORDER, KIND_TINTS, ROLE_BACKGROUNDS, TEXT, badge
from helpers.loop.records import TurnRecord
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import for_html, for_notebook_html, for_notebook_markdown
from helpers.text.tokens import count_message_tokens

#: The class of the message view's table and of the side-by-side view (the e2e test finds them).
MESSAGES_CLASS = "crw-messages"
SIDE_BY_SIDE_CLASS = "crw-side-by-side"


def _shorten(text: str, max_chars: int) -> str:
    """Head and tail of a long text (the tail keeps a truncation marker in view)."""
    if len(text) <= max_chars:
        return for_html(text)
    head, tail = max_chars * 2 // 3, max_chars // 3
    hidden = len(text) - head - tail
    note = f"<i style='opacity:0.8'> … ({hidden:,} chars not shown here) … </i>"
    return for_html(text[:head]) + note + for_html(text[len(text) - tail :])


def _message_text(message: dict[str, Any]) -> str:
    parts = [str(message.get("content") or "")]
    for call in message.get("tool_calls") or []:
        function = call["function"]
        parts.append(f"→ {function['name']}({function['arguments']})")
    return "\n".join(p for p in parts if p)


def messages_html(record: TurnRecord, *, max_chars: int = 400, title: str | None = None) -> str:
    """The turn's messages as an HTML table: role, tokens of that message, content."""
    kinds = {t.id: t.result_kind for t in record.tool_calls}
    usage = record.usage()
    heading = title or f"{record.strategy} ({record.boxing})"
    rows = []
    # JupyterLab right-aligns a table cell of an output unless told otherwise: text reads left
    cell = f"vertical-align:top;text-align:left;padding:2px 4px;border-top:1px solid {BORDER}"
    for message in record.messages:
        role = str(message.get("role"))
        kind = kinds.get(str(message.get("tool_call_id")), "")
        label = "compacted" if is_summary(message) else kind
        shown = "⟲ compacted history" if label == "compacted" else label
        mark = f" {badge(f'[{for_html(shown)}]', KIND_TINTS[label])}" if label in KIND_TINTS else ""
        background = ROLE_BACKGROUNDS.get(role, "transparent")
        rows.append(
            f"<tr style='background:{background};color:{TEXT}'>"
            f"<td style='{cell}'><b>{for_html(role)}</b>{mark}</td>"
            f"<td style='{cell};text-align:right'>{count_message_tokens(message):,}</td>"
            f"<td style='{cell};white-space:pre-wrap;overflow-wrap:anywhere;"
            "font-family:var(--jp-code-font-family, monospace);font-size:85%'>"
            f"{_shorten(_message_text(message), max_chars)}</td></tr>"
        )
    per_call = ", ".join(f"{c.prompt_tokens:,}" for c in record.model_calls)
    return for_notebook_html(
        f"<h4 style='margin:4px 0'>{for_html(heading)}</h4>"
        f"<p style='margin:2px 0'>{usage['prompt_tokens']:,} prompt tokens over {usage['calls']} "
        f"model calls ({per_call}); {usage['completion_tokens']:,} completion tokens; "
        f"{len(record.tool_calls)} tool calls; status <b>{record.status}</b></p>"
        f"<table class='{MESSAGES_CLASS}' style='border-collapse:collapse;width:100%;"
        f"table-layout:fixed;color:{TEXT}'>"
        "<colgroup><col style='width:9em'><col style='width:4.5em'><col></colgroup>"
        "<tr><th style='text-align:left'>role</th><th>tokens</th>"
        "<th style='text-align:left'>content (as the model saw it)</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def side_by_side(left: str, right: str) -> str:
    """Two HTML fragments in two columns, side by side when the output is wide enough for two
    of at least 380 pixels each, else one above the other (never cut off at the right)."""
    cell = "<div style='flex:1 1 380px;min-width:0;padding:0 6px'>{}</div>"
    return for_notebook_html(
        f"<div class='{SIDE_BY_SIDE_CLASS}' style='display:flex;flex-wrap:wrap;gap:8px'>"
        f"{cell.format(left)}{cell.format(right)}</div>"
    )


def answer_html(record: TurnRecord) -> str:
    """The answer (or the failure) as an HTML paragraph."""
    text = record.answer if record.ok else f"no answer: {record.error}"
    return for_notebook_html(
        f"<p><b>answer:</b> {for_html(json.dumps(text, ensure_ascii=False)[1:-1])}</p>"
    )


def markdown_view(markdown: str) -> Any:
    """A Markdown report (``compare.md``'s text, a table) as an ``IPython.display.Markdown``
    object, inside an element MathJax skips (:func:`helpers.text.escaping.for_notebook_markdown`)."""
    from IPython.display import Markdown

    return Markdown(for_notebook_markdown(markdown))


#: The width of an image in :func:`full_result_widget`, in CSS pixels (a themed chart shows at
#: the size it was drawn, never wider than the output).
CHART_WIDTH_PX = 420


def _themed_pair(parts: list[Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The light and dark PNG image parts of one chart (MCP image content whose ``_meta`` names
    its theme, as :meth:`helpers.display.charts.ThemedChart.as_mcp_content` writes them), or ``None``."""
    themed: dict[str, dict[str, Any]] = {}
    for part in parts:
        meta = part.get("_meta") if isinstance(part, dict) else None
        if (
            isinstance(meta, dict)
            and part.get("type") == "image"
            and part.get("mimeType") == "image/png"
            and meta.get("theme") in ("light", "dark")
        ):
            themed.setdefault(meta["theme"], part)
    if {"light", "dark"} <= set(themed):
        return themed["light"], themed["dark"]
    return None


def full_result_widget(record: TurnRecord, store: ToolOutputStore) -> Any:
    """The interface side of the dual stream: every tool's *full* result, read from the store,
    rendered for a person (a table for SQL rows, a page preview, an image), never sent to the
    model. Returns an ``ipywidgets.VBox``; its ``.full_results`` maps ``tool_call_id`` to the
    full text, for checks.

    A chart drawn for both JupyterLab themes (two PNG image parts whose ``_meta.theme`` is
    ``light`` and ``dark``: :meth:`helpers.display.charts.ThemedChart.as_mcp_content`) is shown as one
    image, the one of the page's theme (:mod:`helpers.display.charts`); any other image as it is."""
    import base64

    import ipywidgets as widgets

    children: list[Any] = []
    full_results: dict[str, str] = {}
    for call in record.tool_calls:
        row = store.get(record.thread_id, call.id, with_content=True)
        if row is None or row.content is None:
            continue
        full = row.content
        full_results[call.id] = full
        title = widgets.HTML(
            for_notebook_html(
                f"<b>{for_html(call.name)}</b> <i>({len(full):,} chars, full result)</i>"
            )
        )
        children.append(title)
        try:
            data = json.loads(full)
        except ValueError:
            data = None
        if isinstance(data, dict) and {"columns", "rows"} <= set(data):
            # a widget's HTML has no table style of its own: a gap between columns, text left
            gap = "style='padding:1px 12px 1px 0;text-align:left;vertical-align:top'"
            head = "".join(f"<th {gap}>{for_html(str(c))}</th>" for c in data["columns"])
            body = "".join(
                "<tr>" + "".join(f"<td {gap}>{for_html(str(v))}</td>" for v in r) + "</tr>"
                for r in data["rows"]
            )
            children.append(
                widgets.HTML(
                    for_notebook_html(f"<table class='full-result'><tr>{head}</tr>{body}</table>")
                )
            )
        elif isinstance(data, dict) and isinstance(data.get("content"), list):
            themed = _themed_pair(data["content"])
            for part in data["content"]:
                if themed is not None and part is themed[0]:
                    chart = ThemedChart(
                        light_png=base64.b64decode(themed[0]["data"]),
                        dark_png=base64.b64decode(themed[1]["data"]),
                        alt=f"the image {call.name} returned",
                    )
                    children.append(widgets.HTML(chart.html()))  # as drawn, at most the width
                elif themed is not None and part is themed[1]:
                    continue
                elif part.get("type") == "image":
                    children.append(
                        widgets.Image(
                            value=base64.b64decode(part["data"]), format="png", width=CHART_WIDTH_PX
                        )
                    )
                elif part.get("type") == "text":
                    children.append(
                        widgets.HTML(for_notebook_html(for_html(str(part.get("text")))))
                    )
        elif full.lstrip().lower().startswith(("<!doctype html", "<html")):
            children.append(
                widgets.HTML(
                    f"<iframe sandbox srcdoc='{for_html(full)}' "
                    f"style='width:100%;height:260px;border:1px solid {BORDER}'></iframe>"
                )
            )
        else:
            children.append(widgets.HTML(for_notebook_html(f"<pre>{for_html(full[:2000])}</pre>")))
    box = widgets.VBox(children)
    box.full_results = full_results
    return box
