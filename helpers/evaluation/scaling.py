"""How cost grows: one task, one result growing from 1 KB to 10 MB, under every strategy.

The task needs the whole result routed to a tool (``deep_check`` must receive it byte-exact)
and one detail read from it (its last line): the two things a long result is for. The result
is real text available offline (the large documents of :mod:`helpers.tooling.pages`: UnicodeData.txt,
the ISO JSON files and the language reference, 8.3 MB, repeated as needed), cut to whole lines. For each size and strategy the offline model runs the turn through the real client;
the figures are prompt tokens (the refused request's size for a context overflow), dollars with
caching at the price model's list prices, wall time, and whether the run passed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

from helpers.cases.case_files import Case
from helpers.context.strategies import compared_strategies, strategy_in_role
from helpers.display.charts import chart_style
from helpers.display.theme import LIGHT_CHART
from helpers.evaluation.metrics import ScalingPoint, ScalingResult
from helpers.evaluation.pricing import DEFAULT_PRICE_MODEL, load_prices, turn_cost
from helpers.evaluation.runs import (
    RunOptions,
    refused_prompt_tokens,
    run_case,
)
from helpers.evaluation.validation import FAILED
from helpers.models.llm import make_client, resolve_model
from helpers.models.offline import OfflineModel
from helpers.store.tool_outputs import ToolOutputStore
from helpers.text.escaping import for_markdown
from helpers.tooling.pages import DOCUMENTS, serve_document
from helpers.tooling.registry import ToolRegistry, tool_from_function
from helpers.tooling.tools import default_registry

#: The result sizes of the scaling run, in bytes (UTF-8).
SCALING_SIZES_BYTES = (
    1_000,
    3_000,
    10_000,
    30_000,
    100_000,
    300_000,
    1_000_000,
    3_000_000,
    10_000_000,
)
#: The largest document ``get_document`` returns, in bytes.
MAX_DOCUMENT_BYTES = 16_000_000
PROMPT = (
    "Fetch the document of {size} bytes, run deep_check on the whole of it, and tell me its "
    "last line."
)
#: The characters of the document's end the answer must quote.
_TAIL_CHARS = 60


@lru_cache(maxsize=1)
def _corpus() -> bytes:
    """The large documents (built on first use), UnicodeData.txt first, in UTF-8, each ending
    in a line break (the language reference has none of its own): so no line of one runs into
    the next one's, nor the last into the first where the corpus repeats."""
    first_url = {}  # one URL per document (UnicodeData.txt is served at two)
    for url, (file_name, _build) in DOCUMENTS.items():
        first_url.setdefault(file_name, url)
    texts = (serve_document(url) or "" for url in first_url.values())
    return "".join(text if text.endswith("\n") else text + "\n" for text in texts if text).encode()


def document(size_bytes: int) -> str:
    """The whole lines of real text that fit in ``size_bytes`` bytes of UTF-8: the corpus
    (:func:`_corpus`, 8.2 MB) from its start, repeated as needed, cut back to the last line
    break. Never part of a line: below the first line's length (25 bytes) it is that line.

    Raises:
        TypeError: ``size_bytes`` is not an int (``True`` is not a size).
        ValueError: ``size_bytes`` is not between 1 and :data:`MAX_DOCUMENT_BYTES`.
    """
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, int):
        raise TypeError(f"size_bytes must be an int, got {type(size_bytes).__name__}")
    if not 1 <= size_bytes <= MAX_DOCUMENT_BYTES:
        raise ValueError(
            f"size_bytes must be between 1 and {MAX_DOCUMENT_BYTES:,}, got {size_bytes}"
        )
    corpus = _corpus()
    data = (corpus * (size_bytes // len(corpus) + 1))[:size_bytes]
    end = data.rfind(b"\n") + 1
    if end == 0:  # not even the first line fits: that line, whole
        data, end = corpus, corpus.index(b"\n") + 1
    return data[:end].decode("utf-8")


def get_document(size_bytes: int) -> str:
    """Return a plain-text document of about size_bytes bytes.

    Args:
        size_bytes: its size in bytes (1 to 16000000).
    """
    return document(size_bytes)


def scaling_registry() -> ToolRegistry:
    """The default tools and ``get_document``."""
    registry = default_registry()
    registry.add(tool_from_function(get_document))
    return registry


def scaling_case(size_bytes: int) -> Case:
    """The scaling task at one size: a case with its plan, sink check and expected answer."""
    doc = document(size_bytes)
    prompt = PROMPT.format(size=size_bytes)
    return Case(
        id=f"scale-{size_bytes}",
        path=None,
        prompt=prompt,
        tool_calls=[{"tool_name": "get_document"}, {"tool_name": "deep_check"}],
        answer_contains=[doc.rstrip("\n")[-30:]],
        sink_exact=[{"tool_name": "deep_check", "argument": "text", "source": "get_document"}],
        offline_plan=[
            {"call": "get_document", "args": {"size_bytes": size_bytes}},
            {"call": "deep_check", "args": {"text": {"result": 1}}},
            {"tail": 1, "chars": _TAIL_CHARS, "as": "end"},
            {"answer": "deep_check is done. The document ends with: {end}"},
        ],
    )


def run_scaling(
    sizes: Iterable[int] = SCALING_SIZES_BYTES,
    strategies: Iterable[str] | None = None,
    *,
    price_model: str = DEFAULT_PRICE_MODEL,
    store: ToolOutputStore | None = None,
    context_window_tokens: int | None = None,
    on_done: Callable[[int, str], None] | None = None,
) -> ScalingResult:
    """Run the scaling task at every size (bytes) under every strategy with the offline model.

    Returns:
        Each strategy's :class:`~helpers.evaluation.metrics.ScalingPoint` per size, smallest
        first, and where each breaks (:func:`where_it_breaks`).
    """
    sizes = list(sizes)
    strategies = list(compared_strategies() if strategies is None else strategies)
    price = load_prices().get(price_model)
    cases = [scaling_case(size) for size in sizes]
    model = OfflineModel({c.prompt: c.offline_plan for c in cases if c.offline_plan})
    if context_window_tokens is not None:
        model.context_window_tokens = context_window_tokens
    config = resolve_model("offline", None)
    client = make_client(config, offline_model=model)
    registry = scaling_registry()
    own_store = store is None
    store = store or ToolOutputStore("sqlite://")
    runs: dict[str, list[ScalingPoint]] = {v: [] for v in strategies}
    common = RunOptions(client=client, model=config.model, store=store, registry=registry)
    try:
        warm_up = scaling_case(1_000)  # the first turn of a process pays for imports and caches
        model.add_plan(warm_up.prompt, warm_up.offline_plan or [])
        run_case(warm_up, strategy_in_role("baseline"), **common)
        for case in cases:
            size = int(case.id.split("-")[1])
            for strategy in strategies:
                run = run_case(case, strategy, **common)
                record = run.record
                runs[strategy].append(
                    ScalingPoint(
                        size_bytes=size,
                        prompt_tokens=refused_prompt_tokens(record)
                        or record.usage()["prompt_tokens"],
                        usd_cached=round(turn_cost(record, price).cached_usd, 6),
                        seconds=round(run.seconds, 3),
                        passed=run.passed,
                        status=record.status,
                        reason="" if run.passed else run.validation.reasons[0],
                        looks_inside=sum(1 for t in record.tool_calls if t.name not in registry),
                        cut_at_output_tokens=max(
                            (c.completion_tokens for c in record.model_calls if c.cut_in_call),
                            default=0,
                        ),
                    )
                )
                if on_done:
                    on_done(size, strategy)
    finally:
        if own_store:
            store.close()
    return ScalingResult(
        sizes_bytes=sizes,
        price_model=price_model,
        context_window_tokens=model.context_window_tokens,
        runs=runs,
        breaks={v: where_it_breaks(points) for v, points in runs.items()},
    )


def _size(n_bytes: int) -> str:
    for unit, factor in (("MB", 1_000_000), ("KB", 1_000)):
        if n_bytes >= factor:
            return f"{n_bytes / factor:g} {unit}"
    return f"{n_bytes} bytes"


def where_it_breaks(
    points: list[ScalingPoint], *, quote: Callable[[str], str] = lambda text: text
) -> str:
    """One sentence: the first size at which the strategy fails, and how.

    ``points`` are one strategy's runs, smallest size first. A failure reason the
    sentence cannot name in its own words is quoted from the run, and it can hold a model's or a
    provider's text, so it goes through ``quote``: the escaping function of the sink the
    sentence is written to (for ``compare.json``, none).
    """
    failed = next((p for p in points if not p.passed), None)
    if failed is None:
        top = points[-1] if points else None
        if top is None:
            return "not run"
        return (
            f"passes at every size up to {_size(top.size_bytes)} "
            f"({top.prompt_tokens:,} prompt tokens there)"
        )
    size = _size(failed.size_bytes)
    if failed.status == "context_exceeded":
        how = f"the request ({failed.prompt_tokens:,} tokens) overflows the context window"
    elif failed.cut_at_output_tokens:
        how = (
            "the model must write the whole result into one tool call, and a response stops at "
            f"its output limit ({failed.cut_at_output_tokens:,} tokens)"
        )
    elif failed.status == "max_iterations":
        how = "it runs out of model calls reading the result page by page"
    elif "byte-exact" in failed.reason and failed.looks_inside:
        how = (
            f"the tool receives a copy the model rebuilt from {failed.looks_inside} reads of "
            "the saved file, not the document's bytes"
        )
    elif "byte-exact" in failed.reason:
        how = "the tool receives the cut text the model saw (no way back to the whole)"
    else:
        how = quote(failed.reason or failed.status)
    return f"breaks at {size}: {how}"


def breaks_markdown(scaling: ScalingResult) -> list[str]:
    """Where each strategy of a scaling run breaks, one Markdown list item per strategy, any
    quoted failure reason written with :func:`helpers.text.escaping.for_markdown`."""
    return [
        f"- **{for_markdown(v)}** {where_it_breaks(points, quote=for_markdown)}."
        for v, points in scaling.runs.items()
    ]


def scaling_markdown(scaling: ScalingResult) -> list[str]:
    """The scaling section of ``compare.md``: where each strategy breaks, and the figures."""
    sizes = scaling.sizes_bytes
    lines = [
        "",
        f"## How cost grows with one result ({_size(min(sizes))} to {_size(max(sizes))})",
        "",
        f"Task: route the whole result to a tool byte-exact and quote its last line. Context "
        f"window {scaling.context_window_tokens:,} tokens; dollars at {for_markdown(scaling.price_model)} "
        f"with caching. *{FAILED}*: the run failed (an overflow shows the refused request's size).",
        "",
        *breaks_markdown(scaling),
        "",
        "| strategy | " + " | ".join(_size(s) for s in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for strategy, points in scaling.runs.items():
        cells = [f"{p.prompt_tokens:,}{'' if p.passed else ' ' + FAILED}" for p in points]
        lines.append(f"| {for_markdown(strategy)} | " + " | ".join(cells) + " |")
    return lines


def plot_scaling(scaling: ScalingResult, path: Path) -> Path:
    """``scaling.png``: prompt tokens, cached dollars and wall time against the result's size,
    log-log, one line per strategy; a failed run is an open red-edged marker, and the context
    window is a dashed line on the tokens panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # a file for a desk: JupyterLab's light theme's colours (helpers.display.charts.chart_style)
    with matplotlib.rc_context(chart_style(LIGHT_CHART)):
        fig, panels = plt.subplots(1, 3, figsize=(18, 5.6))
        metrics = (
            ("prompt_tokens", "prompt tokens per turn"),
            ("usd_cached", f"dollars per turn ({scaling.price_model}, cached)"),
            ("seconds", "wall time per turn (s)"),
        )
        for index, (strategy, points) in enumerate(scaling.runs.items()):
            colour = f"C{index % 10}"
            marker = "osD^v<>ph*"[index % 10]
            for panel, (key, _label) in zip(panels, metrics, strict=True):
                good = [(p.size_bytes, max(getattr(p, key), 1e-9)) for p in points if p.passed]
                bad = [(p.size_bytes, max(getattr(p, key), 1e-9)) for p in points if not p.passed]
                if good:
                    panel.plot(
                        *zip(*good, strict=True),
                        color=colour,
                        marker=marker,
                        label=strategy,
                        linewidth=1.4,
                    )
                if bad:  # a failed run: an open marker, not joined to the line
                    panel.scatter(
                        *zip(*bad, strict=True),
                        s=70,
                        marker=marker,
                        facecolors=LIGHT_CHART.background,
                        edgecolors=colour,
                        linewidths=1.5,
                        zorder=3,
                        label=None if good else strategy,
                    )
        for panel, (_key, label) in zip(panels, metrics, strict=True):
            panel.set_xscale("log")
            panel.set_yscale("log")
            panel.set_xlabel("size of the result (bytes, log scale)")
            panel.set_ylabel(f"{label} (log scale)")
            panel.grid(alpha=0.3, which="both")
        panels[0].axhline(
            scaling.context_window_tokens, color=LIGHT_CHART.error, linestyle="--", linewidth=1
        )
        panels[0].annotate(
            f"context window {scaling.context_window_tokens:,}",
            (scaling.sizes_bytes[0], scaling.context_window_tokens),
            color=LIGHT_CHART.error,
            fontsize=9,
            va="bottom",
        )
        panels[0].legend(fontsize="small", ncols=2)
        fig.suptitle(
            "How cost grows as one tool result grows (open marker: the run failed; tokens of an "
            "overflow are the refused request's; dollars and time are what a failed run spent)"
        )
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100)
        plt.close(fig)
    return path
