"""The comparison in words: ``compare.md``, notebook 05's headline cards and notebook 06's
table of one session's histories (:func:`session_costs_markdown`).

Both read a :class:`helpers.evaluation.metrics.ComparisonMetrics`. Text from a model, a provider
or a case file (case ids, strategy and model names, failure reasons) reaches Markdown through
:func:`helpers.text.escaping.for_markdown` and HTML through :func:`helpers.text.escaping.for_html`; the
report's own dollar amounts are written as ``\\$`` (:func:`helpers.text.escaping.dollars_as_text`), so
a notebook's MathJax never reads two of them as a formula.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from helpers.base.guards import GUARDS
from helpers.context.strategies import rivals_text, strategy_in_role
from helpers.display.marks import FAIL_MARK, PASS_MARK
from helpers.display.theme import BORDER, MUTED, TEXT, VERDICT_TINTS, badge
from helpers.evaluation.metrics import ComparisonMetrics, PersonaRow, RunMetrics
from helpers.evaluation.pricing import DEFAULT_PRICE_MODEL, PriceTable, SentRequest, session_cost
from helpers.evaluation.validation import FAIL, PASS, verdict_text
from helpers.text.escaping import dollars_as_text, for_html, for_markdown, for_notebook_html

#: The box goal's verdict, the word beside the mark
#: (why: :data:`helpers.evaluation.validation.PASSED`).
GOAL_MET = f"{PASS_MARK}\u00a0met"
GOAL_MISSED = f"{FAIL_MARK}\u00a0missed"


def usd(value: float | None) -> str:
    """Dollars to the hundredth of a cent under $1, to the cent above: ``-$0.0407``, ``$1.21``;
    ``–`` for no figure."""
    if value is None:
        return "–"
    sign, amount = ("-" if value < 0 else ""), abs(value)
    return f"{sign}${amount:,.4f}" if amount < 1 else f"{sign}${amount:,.2f}"


def times(ratio: float | None) -> str:
    """A ratio as every view writes it, cards, table lines and charts alike: ``7.04×``; ``–``
    for no figure."""
    return "–" if ratio is None else f"{ratio:.2f}×"


def _or_dash(value: object) -> str:
    return "–" if value is None else str(value)


def comparison_markdown(metrics: ComparisonMetrics) -> str:
    """``compare.md``: per-case tokens side by side with the floor and the box goal, where box
    missed its goal, totals, the design steps, what caching changes, other models, why runs
    failed, then the scaling and the personas."""
    from helpers.evaluation.scaling import scaling_markdown

    lines, failures = _cases_markdown(metrics)
    lines += _box_goal_markdown(metrics)
    lines += _totals_markdown(metrics)
    lines += _design_steps_markdown(metrics)
    lines += caching_markdown(metrics)
    lines += _other_models_markdown(metrics)
    if failures:
        lines += ["", "## Why runs failed", "", *failures]
    if metrics.scaling is not None:
        lines += scaling_markdown(metrics.scaling)
    lines += persona_markdown(metrics.personas)
    return dollars_as_text("\n".join(lines) + "\n")


def strategies_side_by_side_markdown(metrics: ComparisonMetrics, strategies: Sequence[str]) -> str:
    """A table of ``strategies`` case by case (notebook 08's ``box`` beside ``code``): per
    strategy, the prompt tokens (o200k_base, from ``usage``), the model calls and tool calls,
    and the verdict; then the totals over the runs that passed.

    Raises:
        KeyError: a strategy ``metrics`` did not run.
    """
    names = [for_markdown(s) for s in strategies]
    lines = [
        "| case | "
        + " | ".join(f"{n}: prompt tokens | {n}: model / tool calls" for n in names)
        + " |",
        "|---|" + "---:|---:|" * len(names),
    ]
    for case_id, entry in metrics.cases.items():
        cells = []
        for strategy in strategies:
            m = entry.runs[strategy]
            cells += [_cell(m), f"{m.model_calls} / {m.tool_calls}"]
        lines.append(f"| {for_markdown(case_id)} | " + " | ".join(cells) + " |")
    totals = []
    for strategy in strategies:
        t = metrics.totals[strategy]
        totals += [f"**{t.prompt_tokens:,}** ({t.passed}/{t.cases} passed)", ""]
    lines.append("| **in all** | " + " | ".join(totals) + " |")
    return "\n".join(lines)


def _cell(m: RunMetrics) -> str:
    if m.context_overflow:
        refused = m.refused_prompt_tokens
        return f"overflow ({refused:,}) {FAIL}" if refused else f"overflow {FAIL}"
    return f"{m.prompt_tokens:,} {verdict_text(m.passed, short=True)}"


def _cases_markdown(metrics: ComparisonMetrics) -> tuple[list[str], list[str]]:
    """The per-case table, and a line for each run that failed (for "Why runs failed")."""
    strategies = metrics.strategies()
    lines = [
        f"# Truncation vs boxing, side by side ({for_markdown(metrics.model)})",
        "",
        "Prompt tokens summed over every model call of the turn (o200k_base, from `usage`). "
        f"Preview limit {metrics.limit_chars} chars. *{PASS}*: the run passed the case's "
        f"checks, *{FAIL}*: it did not (reason below); *overflow (N)*: a request of N tokens "
        "was refused for the context window. The floor is a lower bound for a model that calls "
        "the tools itself: the prompt, the tools the task calls, one bare reference per long "
        "result, the looks inside it needs, the answer. Code mode calls them from a program, "
        "with no reference per result in its context, and can go below it.",
        "",
        "| case | " + " | ".join(for_markdown(v) for v in strategies) + " | floor | box goal |",
        "|---|" + "---:|" * (len(strategies) + 1) + "---|",
    ]
    failures = []
    for case_id, entry in metrics.cases.items():
        cells = []
        for strategy in strategies:
            m = entry.runs.get(strategy)
            if m is None:
                cells.append("–")
                continue
            cells.append(_cell(m))
            if not m.passed:
                reasons = for_markdown("; ".join(m.reasons))
                failures.append(f"- {for_markdown(case_id)} / {for_markdown(strategy)}: {reasons}")
        floor = entry.floor.prompt_tokens if entry.floor else None
        goal = entry.box_goal
        if goal is None:
            goal_cell = "–"
        elif goal.ratio is None:
            goal_cell = f"{GOAL_MET}: only box passes" if goal.met else f"{GOAL_MISSED}: box failed"
        else:
            goal_cell = (
                f"{GOAL_MET if goal.met else GOAL_MISSED} {goal.ratio:.2f}× "
                f"{for_markdown(goal.against or '')}"
            )
        lines.append(
            f"| {for_markdown(case_id)} | "
            + " | ".join(cells)
            + f" | {f'{floor:,}' if floor else '–'} | {goal_cell} |"
        )
    return lines, failures


def _box_goal_markdown(metrics: ComparisonMetrics) -> list[str]:
    """Whether box met its goal on every case, else where and why not."""
    missed = {c: g for c, g in metrics.box_goals().items() if not g.met}
    lines = [
        "",
        f"**Box goal** (≤ {metrics.box_goal_ratio}× the cheaper of {rivals_text()}): ",
    ]
    if missed:
        lines[-1] += f"missed on {len(missed)} case(s):"
        lines += [""] + [
            f"- {for_markdown(c)}: {for_markdown(g.why or '')}" for c, g in missed.items()
        ]
    else:
        lines[-1] += "met on every case."
    return lines


def _read_write(read_tokens: int | None, write_tokens: int | None) -> str:
    """``read / write`` prompt tokens of the cache, or a dash when unpriced."""
    if read_tokens is None or write_tokens is None:
        return "–"
    return f"{read_tokens:,} / {write_tokens:,}"


def _totals_markdown(metrics: ComparisonMetrics) -> list[str]:
    """Totals per strategy over the runs that passed, the floor, and box's gap to it."""
    pricing = metrics.pricing
    lines = [
        "",
        "## Totals (runs that passed)",
        "",
        f"Dollars at {for_markdown(pricing.model)} list prices (input "
        f"${pricing.input_usd_per_mtok}, cached input ${pricing.cached_input_usd_per_mtok}, "
        f"output ${pricing.output_usd_per_mtok} per million tokens; checked {for_markdown(pricing.checked)}, "
        "data/pricing.yaml); *cached*: from a cold cache (each case's first request finds nothing "
        "cached), each later call's prefix shared with the call before it at the cached price, "
        "the rest written to the cache at the provider's write price (*cache read / write*: those "
        "prompt tokens)"
        + (
            f" ({for_markdown(pricing.model)} is not cached by this client: its provider caches only "
            "at cache_control breakpoints, which this client does not send)."
            if pricing.model in metrics.caching.not_cached_by_client
            else "."
        ),
        "",
        "| strategy | passed | context overflows | prompt tokens | × inline | × floor | $ uncached | $ cached | cached share | cache read / write tokens | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    share = metrics.caching.cached_share
    for strategy, t in metrics.totals.items():
        cached_share = share.get(strategy)
        lines.append(
            f"| {for_markdown(strategy)} | {t.passed}/{t.cases} | {t.context_overflows} | "
            f"{t.prompt_tokens:,} | {_or_dash(t.ratio_to_inline)} | {_or_dash(t.ratio_to_floor)} | "
            f"{usd(t.usd_uncached)} | {usd(t.usd_cached)} | "
            f"{f'{cached_share:.0%}' if cached_share is not None else '–'} | "
            f"{_read_write(t.cached_tokens, t.cache_write_tokens)} | {t.seconds} |"
        )
    floor = metrics.floor
    lines.append(f"| floor | – | – | {floor.prompt_tokens:,} | | 1.0 | | | | | |")
    subject = strategy_in_role("subject")
    box = metrics.totals.get(subject)
    if box and floor.prompt_tokens and box.ratio_to_floor:
        gap = box.prompt_tokens - floor.prompt_tokens
        tools = floor.prompt_tokens_all_tools - floor.prompt_tokens
        lines += [
            "",
            f"{subject.capitalize()} is {box.ratio_to_floor}× the floor. Of the {gap:,} tokens "
            "between them, "
            f"{tools:,} are the schemas of tools offered in every call that the task never calls "
            "(a tool whitelist per mode, notebook 07, removes them); the rest is the system "
            "message, the preview under each reference and the note with it.",
        ]
    return lines


def _design_steps_markdown(metrics: ComparisonMetrics) -> list[str]:
    """Each box design step between tool-context-relay's and the workbook's, and what it saved."""
    if not metrics.design_steps:
        return []
    lines = [
        "",
        "## From tool-context-relay's box to the workbook's, one step at a time",
        "",
        "| design | what the step changes | passed | prompt tokens | saved | $ uncached saved | $ cached saved |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in metrics.design_steps:
        saved = row.tokens_saved
        lines.append(
            f"| {for_markdown(row.strategy)} | {for_markdown(row.step)} | {row.totals.passed}/{row.totals.cases} | "
            f"{row.totals.prompt_tokens:,} | {f'{saved:,}' if saved is not None else '–'} | "
            f"{usd(row.usd_uncached_saved)} | {usd(row.usd_cached_saved)} |"
        )
    return lines


def _other_models_markdown(metrics: ComparisonMetrics) -> list[str]:
    """The same runs priced at other models' list prices."""
    if not metrics.other_models:
        return []
    strategies = metrics.strategies()
    lines = [
        "",
        "## The same runs on other models (cached dollars, runs that passed)",
        "",
        "| model | " + " | ".join(for_markdown(v) for v in strategies) + " |",
        "|---|" + "---:|" * len(strategies),
    ]
    uncached = metrics.caching.not_cached_by_client
    for name, row in metrics.other_models.items():
        cells = " | ".join(usd(row.get(v)) for v in strategies)
        mark = " (not cached by this client)" if name in uncached else ""
        lines.append(f"| {for_markdown(name)}{mark} | {cells} |")
    if uncached:
        lines += [
            "",
            "Cold cache. A model marked *not cached by this client* caches only at `cache_control` "
            'breakpoints (Anthropic\'s guide "Prompt caching"; the same through OpenRouter), '
            "which this client does not send: its figures are uncached dollars.",
        ]
    return lines


def _origin_wins(models: dict[str, dict[str, float]], skip: list[str]) -> list[str]:
    """The models on which the origin's cached dollars (box-tcr's) are below the subject's
    (box's)."""
    origin, subject = strategy_in_role("origin"), strategy_in_role("subject")
    return [
        m
        for m, row in models.items()
        if m not in skip and origin in row and subject in row and row[origin] < row[subject]
    ]


def _stable_prefix_lines(metrics: ComparisonMetrics) -> list[str]:
    """Box-tcr against box once cached, cold and warm, on the models this client is cached by;
    the warm totals of the main table; the models it is not cached by."""
    caching = metrics.caching
    skip = caching.not_cached_by_client
    priced = [m for m in metrics.other_models if m not in skip]
    if not priced:
        return []
    cold = _origin_wins(metrics.other_models, skip)
    warm = _origin_wins(caching.other_models_warm, skip)
    origin, subject = strategy_in_role("origin"), strategy_in_role("subject")

    def where(models: list[str]) -> str:
        return "on no model" if not models else f"on {for_markdown(', '.join(models))}"

    lines = [
        f"- From a cold cache (each case a session of its own), {origin} costs less than "
        f"{subject} {where(cold)} of the {len(priced)} this client is cached by; warm (the "
        f"system message and tools already cached by an earlier turn), {where(warm)}. "
        f"{origin.capitalize()}'s prompt is larger but its tool list never changes, so once warm "
        "most of it is billed at the cached price: count tokens uncached, and dollars with "
        "caching, cold and warm."
    ]
    warm_totals = [
        f"{for_markdown(v)} {usd(t.usd_cached_warm)}"
        for v, t in metrics.totals.items()
        if t.usd_cached_warm is not None
    ]
    if warm_totals:
        lines.append(
            f"- Warm, at {for_markdown(metrics.pricing.model)} (the main table is cold): "
            + ", ".join(warm_totals)
            + "."
        )
    if skip:
        lines.append(
            f"- Not cached by this client: {for_markdown(', '.join(skip))}. Their provider "
            "caches only at `cache_control` breakpoints, which this client does not send, so "
            "their cached dollars are their uncached ones."
        )
    reported = {
        v: t.cached_tokens_reported
        for v, t in metrics.totals.items()
        if t.cached_tokens_reported is not None
    }
    if reported:
        lines.append(
            "- Cached prompt tokens the provider reported in `usage`, beside this model's "
            "estimate: "
            + ", ".join(
                f"{for_markdown(v)} {n:,} (estimated {metrics.totals[v].cached_tokens or 0:,})"
                for v, n in reported.items()
            )
            + "."
        )
    return lines


def caching_markdown(metrics: ComparisonMetrics) -> list[str]:
    """What caching changes, in words, from the figures: the lazy-tools step, where a stable
    prefix beats a small one (cold and warm), the warm totals, the models this client is not
    cached by, the cached tokens a real provider reported, each strategy's cached share, and the
    cases whose cheapest strategy changes."""
    lines = ["", "## What prompt caching changes", ""]
    lazy = next((row for row in metrics.design_steps if row.design == "lazy-tools"), None)
    if lazy and lazy.usd_cached_saved is not None:
        cached = lazy.usd_cached_saved
        effect = f"saves {usd(cached)}" if cached >= 0 else f"costs {usd(-cached)} more"
        lines.append(
            f"- Offering the resolve tool only once a reference exists saves "
            f"{lazy.tokens_saved or 0:,} prompt tokens ({usd(lazy.usd_uncached_saved)} "
            f"uncached) but {effect} once cached: the tool list changes mid-turn, and a provider "
            "reuses nothing of a request whose tools changed."
        )
    lines += _stable_prefix_lines(metrics)
    ranked = sorted(
        ((v, s) for v, s in metrics.caching.cached_share.items() if s is not None),
        key=lambda item: -item[1],
    )
    if ranked:
        lines.append(
            "- Share of prompt tokens served from the cache: "
            + ", ".join(f"{for_markdown(v)} {s:.0%}" for v, s in ranked)
            + ". A stable system message and tool list, and a conversation that only grows, "
            "are what a cache reuses."
        )
    changes = metrics.caching.cheapest_changes
    if not changes:
        lines.append("- No case's cheapest passing strategy changes once caching is counted.")
        return lines
    lines.append(
        "- Cases whose cheapest passing strategy changes once caching is counted (a request "
        "under the provider's minimum, 1,024 tokens for OpenAI, is not cached at all, so a "
        "smaller conversation can cost more than a larger one that is):"
    )
    for change in changes:
        a, b = change.cheapest_uncached, change.cheapest_cached
        a_text, b_text = for_markdown(a), for_markdown(b)
        share = change.cached_share
        lines.append(
            f"  - {for_markdown(change.case)}: {a_text} uncached; cached, {b_text} "
            f"({usd(change.usd_cached[b])}, {share[b]:.0%} of its prompt cached) beats "
            f"{a_text} ({usd(change.usd_cached[a])}, {share[a]:.0%} cached)"
        )
    return lines


def persona_markdown(personas: dict[str, PersonaRow]) -> list[str]:
    """The "When the model gets it wrong" section of ``compare.md`` (no lines without personas)."""
    if not personas:
        return []
    lines = [
        "",
        "## When the model gets it wrong",
        "",
        "Each offline persona makes one mistake real models make, on every case, under the "
        "strategy where it can happen. *Guard* is the client check meant to catch it; *fired* "
        "counts what fired; tokens are prompt tokens against the ideal model on the same runs.",
        "",
        "| persona | strategy | mistake | guard | fired | passed | prompt tokens | × ideal | "
        "model calls (ideal) |",
        "|---|---|---|---|---|---:|---:|---:|---:|",
    ]
    for name, row in personas.items():
        lines.append(
            f"| {for_markdown(name)} | {for_markdown(row.strategy)} | "
            f"{for_markdown(row.mistake)} | {guard_cell(row.guard)} | "
            f"{guard_hits_text(row)} | {row.passed}/{row.cases} | {row.prompt_tokens:,} | "
            f"{row.ratio_to_ideal} | {row.model_calls} ({row.ideal_model_calls}) |"
        )
    failing = [(n, f) for n, row in personas.items() for f in row.failures]
    if failing:
        lines += ["", "Why persona runs failed:", ""]
        lines += [f"- {for_markdown(name)}, {for_markdown(failure)}" for name, failure in failing]
    return lines


def guard_cell(guard: str | None) -> str:
    """A guard's name as code when it is one of the workbook's (:data:`helpers.base.guards.GUARDS`),
    else as text from a file (a code span would show an escape as written)."""
    if guard is None:
        return "none"
    return f"`{guard}`" if guard in GUARDS else for_markdown(guard)


def guard_hits_text(row: PersonaRow) -> str:
    """How often each guard fired on a persona's runs, for Markdown: ``unbox ×3, repeat ×1``,
    or ``–`` (guard names through :func:`helpers.text.escaping.for_markdown`)."""
    return ", ".join(f"{for_markdown(g)} ×{n}" for g, n in row.guard_hits.items()) or "–"


def headline_html(metrics: ComparisonMetrics) -> str:
    """The headline numbers, large, for a notebook: per strategy its prompt tokens against the
    floor, its cached dollars and how many cases it passed, a failing strategy in red however
    cheap.

    Every text field reaches the HTML through :func:`helpers.text.escaping.for_html`, and the whole
    through :func:`helpers.text.escaping.for_notebook_html` (out of MathJax's reach); numbers are
    numbers (:class:`~helpers.evaluation.metrics.ComparisonMetrics` refuses anything else)."""
    cells = []
    for strategy, total in metrics.totals.items():
        ratio = times(total.ratio_to_floor)
        label = f"style='font-size:13px;color:{MUTED}'"
        cells.append(
            f"<div style='padding:8px 14px;border:1px solid {BORDER};border-radius:8px;"
            f"min-width:120px;color:{TEXT}'>"
            f"<div {label}>{for_html(strategy)}</div>"
            f"<div style='font-size:30px;font-weight:bold'>{for_html(ratio)}</div>"
            f"<div {label}>prompt tokens of the floor</div>"
            f"<div {label}>{for_html(usd(total.usd_cached))} cached</div>"
            "<div style='font-size:18px'>"
            f"{badge(for_html(f'{total.passed}/{total.cases} passed'), VERDICT_TINTS[total.passed_all()])}"
            "</div></div>"
        )
    return for_notebook_html(
        "<div style='display:flex;gap:10px;flex-wrap:wrap'>" + "".join(cells) + "</div>"
    )


def comparison_verdicts(metrics: ComparisonMetrics) -> list[str]:
    """What the comparison says, as sentences a notebook prints under its table (plain text:
    print each through :func:`helpers.text.escaping.for_terminal`, case ids come from case files):
    the strategies that passed every case, fewest prompt tokens first; those that passed only
    some (whose totals count only the cases passed, so they look cheaper than they are); and
    box against inline, the floor and its goal, case by case where it missed.

    Every figure is one of ``metrics``' own; "× the floor" is a strategy's prompt tokens over
    the cases it passed, divided by the floor of those same cases
    (:attr:`~helpers.evaluation.metrics.StrategyTotals.ratio_to_floor`).
    """
    totals = metrics.totals
    whole = sorted((t.prompt_tokens, s) for s, t in totals.items() if t.passed_all())
    lines = [
        "Of the strategies that passed every case, the fewest prompt tokens: "
        + ", then ".join(f"{s} ({tokens:,})" for tokens, s in whole[:3])
        + "."
        if whole
        else "No strategy passed every case."
    ]
    partial = sorted((t.passed, s) for s, t in totals.items() if not t.passed_all())
    if partial:
        lines.append(
            "Passed only some cases (a total counts only the cases passed, so it looks cheaper "
            "than it is): " + "; ".join(f"{s} {n}/{totals[s].cases}" for n, s in partial) + "."
        )
    subject = strategy_in_role("subject")
    box = totals.get(subject)
    if box is not None:
        goals = metrics.box_goals()
        missed = {c: g for c, g in goals.items() if not g.met}
        lines.append(
            f"{subject} passed {box.passed}/{box.cases} cases, at {times(box.ratio_to_inline)} "
            f"inline's prompt tokens (on the cases both passed) and {times(box.ratio_to_floor)} "
            "the floor; "
            f"its goal (at most {metrics.box_goal_ratio}× the cheaper of {rivals_text()}) "
            f"held on {len(goals) - len(missed)} of {len(goals)} cases"
            + (
                ": missed on " + "; ".join(f"{c} ({g.why})" for c, g in missed.items()) + "."
                if missed
                else "."
            )
        )
    return lines


def session_costs_markdown(
    sessions: Mapping[str, tuple[int, Sequence[SentRequest]]],
    prices: PriceTable,
    models: Sequence[str] = (DEFAULT_PRICE_MODEL, "claude-sonnet-4.5"),
) -> str:
    """One long session under several ways of keeping its history, as a Markdown table.

    Args:
        sessions: ``{name: (turns that fit, the requests of those turns)}`` (the requests as
            :func:`helpers.evaluation.pricing.session_requests` gives them), names as data.
        prices: the price table; ``models`` the models priced, each with caching from a cold
            cache (:func:`helpers.evaluation.pricing.session_cost`): the first one's cache read
            and write tokens and its rewrites are shown, and a model whose provider caches only at
            ``cache_control`` breakpoints is priced as if each request marked one at its end,
            its writes at the five-minute price.

    Returns:
        The table: turns, peak and total prompt tokens, the first model's cache read / write
        tokens, the edits that made the provider write a cached prefix again (and the tokens
        rewritten), and per model the dollars with caching, writes included, and what the
        rewrites cost of them (their tokens × write price − cached-input price).

    Raises:
        ValueError: a model not in ``prices``.
    """
    priced = [prices.get(m) for m in models]
    head = " | ".join(f"$ {for_markdown(p.model)} cached (rewrites)" for p in priced)
    lines = [
        f"| history | turns | peak prompt tokens | prompt tokens | cache read / write tokens "
        f"({for_markdown(priced[0].model)}) | edits rewriting the cache (tokens) | {head} |",
        "|---|---:|---:|---:|---:|---:|" + "---:|" * len(priced),
    ]
    for name, (turns, requests) in sessions.items():
        costs = [session_cost(requests, p, sends_breakpoints=True) for p in priced]
        first = costs[0]
        rewritten = sum(r.rewritten_tokens for r in first.rewrites)
        dollars = " | ".join(f"{usd(c.cost.cached_usd)} ({usd(c.rewrite_usd)})" for c in costs)
        lines.append(
            f"| {for_markdown(name)} | {turns} | "
            f"{max((r.prompt_tokens for r in requests), default=0):,} | "
            f"{first.cost.prompt_tokens:,} | "
            f"{_read_write(first.cost.cached_tokens, first.cost.cache_write_tokens)} | "
            f"{len(first.rewrites)} ({rewritten:,}) | {dollars} |"
        )
    return dollars_as_text("\n".join(lines))
