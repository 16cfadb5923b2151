"""Notebook 05's plumbing (truncation vs boxing, side by side): the comparison run, the case
explorer, the scaling run, your own case, the personas and their guards, and the thinking-mode
demonstration.

The notebook keeps in view what the lesson is about (``Comparison``, the cards, the table, the
charts, ``Agent`` and ``run_turn``); each function here is one of its cells' harness, run and read
but not written. Every model text, tool output and provider error reaches the page through
:mod:`helpers.text.escaping` (directly, or through :mod:`helpers.course.views`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from helpers.base.guards import GUARDS
from helpers.context.strategies import compared_strategies
from helpers.course.choices import explain_choice
from helpers.course.progress import progress
from helpers.course.views import answer_html, markdown_view, messages_html, side_by_side
from helpers.evaluation.report import comparison_verdicts, guard_cell, persona_markdown
from helpers.evaluation.runs import CaseRun, run_case, run_cases
from helpers.models.personas import MISTAKE_PERSONAS, PERSONAS
from helpers.text.escaping import for_markdown, for_terminal

if TYPE_CHECKING:
    import openai

    from helpers.cases.case_files import Case
    from helpers.evaluation.metrics import ComparisonMetrics, PersonaRow, ScalingResult
    from helpers.models.llm import ModelConfig
    from helpers.store.tool_outputs import ToolOutputStore

#: What every case under every strategy costs on a paid model (measured with the offline model
#: on the same tasks), for :func:`helpers.course.budget.approve_spend`.
COMPARISON_SPEND = {"model_calls": 420, "prompt_tokens": 1_969_000, "completion_tokens": 281_000}
#: The explorer's first view: ``case3``, truncate on the left, box on the right.
EXPLORER_START = ("case3", "truncate", "box")
#: The cases the personas run (the transcript cases), and the strategies the ideal model runs
#: them under beside the personas.
PERSONA_CASES = ("case1", "case3")
IDEAL_STRATEGIES = ("box", "truncate")
#: How many times the ideal model's prompt tokens reading what it only routes must cost at least.
READS_EVERYTHING_MIN_RATIO = 1.5


def run_every_case(
    cases: Mapping[str, Case],
    config: ModelConfig,
    client: openai.OpenAI,
    store: ToolOutputStore,
    *,
    approve: bool = False,
) -> list[CaseRun]:
    """Every case of ``cases`` (id → case) under every compared strategy
    (:func:`helpers.context.strategies.compared_strategies`) on ``config``'s model, with a
    progress bar; what ``workbook compare`` runs.

    Returns:
        The runs, case-major (:func:`helpers.evaluation.runs.run_cases`).

    Raises:
        helpers.course.budget.SpendNotApproved: a paid model, and no go-ahead (``approve=True``
            or ``WORKBOOK_APPROVE_SPEND=1``); the message gives the estimate
            (:data:`COMPARISON_SPEND`).
    """
    from helpers.course.budget import approve_spend

    strategies = compared_strategies()
    approve_spend(
        config,
        what=f"{len(cases)} cases × {len(strategies)} strategies",
        approve=approve,
        **COMPARISON_SPEND,
    )
    return run_cases(
        cases.values(),
        strategies,
        client=client,
        model=config.model,
        store=store,
        on_done=progress(len(cases) * len(strategies), "runs"),
    )


def print_comparison_verdicts(metrics: ComparisonMetrics) -> None:
    """Print the comparison's measured verdicts
    (:func:`helpers.evaluation.report.comparison_verdicts`, escaped for the page), then whether
    ``box`` passed every case and held its goal on each
    (:func:`helpers.course.choices.explain_choice`).

    Raises:
        AssertionError: box failed a case or missed its goal while
            ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``.
    """
    for line in comparison_verdicts(metrics):  # measured: the figures of the table
        print(for_terminal(line))
    box = metrics.totals["box"]
    explain_choice(
        box.passed_all() and all(goal.met for goal in metrics.box_goals().values()),
        expected="box passed every case and held its goal on each.",
        otherwise="box failed a case or missed its goal (above): the table's failures say what "
        "the model did on each.",
    )


def case_explorer(
    cases: Mapping[str, Case], client: openai.OpenAI, model: str, store: ToolOutputStore
) -> Any:
    """A widget to look at one case: a case, two strategies, the threshold (tokens for ``box``,
    characters for ``box-tcr``) and the preview limit (characters), and below them what the
    model saw under each strategy, message by message with each message's tokens
    (:func:`helpers.course.views.messages_html`, side by side), each titled with its verdict.
    Every change of a control runs the case again under both strategies.

    Returns:
        An ``ipywidgets.VBox`` (the notebook shows it), first on :data:`EXPLORER_START`.
    """
    import ipywidgets as widgets

    first_case, left, right = EXPLORER_START
    strategies = compared_strategies()
    case_picker = widgets.Dropdown(options=list(cases), value=first_case, description="case")
    left_pick = widgets.Dropdown(options=strategies, value=left, description="left")
    right_pick = widgets.Dropdown(options=strategies, value=right, description="right")
    threshold = widgets.IntSlider(  # tokens for box, characters for box-tcr
        value=1_000, min=0, max=12_000, step=50, description="threshold", continuous_update=False
    )
    limit = widgets.IntSlider(
        value=600, min=100, max=12_000, step=100, description="limit", continuous_update=False
    )
    view = widgets.HTML()

    def show(*_: object) -> None:
        case = cases[case_picker.value]
        panes = []
        for pick in (left_pick, right_pick):
            run = run_case(
                case,
                pick.value,
                client=client,
                model=model,
                store=store,
                threshold=threshold.value,
                limit=limit.value,
            )
            title = f"{pick.value}: {run.validation.verdict()}"  # ✓ passed, or ✗ failed: why
            panes.append(messages_html(run.record, title=title) + answer_html(run.record))
        view.value = side_by_side(*panes)

    for control in (case_picker, left_pick, right_pick, threshold, limit):
        control.observe(show, names="value")
    show()
    return widgets.VBox(
        [widgets.HBox([case_picker, left_pick, right_pick]), widgets.HBox([threshold, limit]), view]
    )


def grow_one_result(sizes: Iterable[int], store: ToolOutputStore) -> ScalingResult:
    """Run the scaling task (:func:`helpers.evaluation.scaling.run_scaling`, the offline model)
    at each of ``sizes`` (bytes) under every compared strategy, with a progress bar, and return
    what it measured; it shows nothing else.

    Returns:
        The measurement, for :func:`helpers.evaluation.scaling.scaling_markdown`,
        :func:`helpers.evaluation.room_charts.plot_scaling_room` and :func:`scaling_verdict`.
    """
    from helpers.evaluation.scaling import run_scaling

    sizes, strategies = list(sizes), compared_strategies()
    return run_scaling(
        sizes, strategies, store=store, on_done=progress(len(sizes) * len(strategies), "runs")
    )


def scaling_verdict(scaling: ScalingResult) -> None:
    """Say whether ``box`` passed at every size (:func:`helpers.course.choices.explain_choice`).

    Raises:
        AssertionError: it did not while ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``.
    """
    explain_choice(
        scaling.breaks["box"].startswith("passes at every size"),
        expected="box passes at every size: the model passes a reference of the same few "
        "characters whatever the result's size, and inline breaks once the result outgrows "
        "the window (the lines above say where).",
        otherwise=f"box {scaling.breaks['box']}: this model reads or copies what it only had "
        "to route, so the result's size reaches the context after all.",
    )


def run_your_case(text: str, config: ModelConfig, store: ToolOutputStore) -> None:
    """Your own case: ``text`` (a case file: YAML frontmatter, then the prompt) written to
    ``var/my_case.md`` and run under ``inline``, ``truncate`` and ``box`` (offline, the model
    learns its ``offline_plan``); per strategy its prompt tokens, then whether it passed the
    case's checks (:func:`helpers.course.choices.explain_choice`).

    Raises:
        helpers.cases.case_files.CaseError: ``text`` is not a valid case (the message says which field).
        AssertionError: a strategy failed the case while ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``.
    """
    from helpers.base.paths import var_dir
    from helpers.cases.case_files import load_case
    from helpers.evaluation.runs import client_for_cases

    path = var_dir() / "my_case.md"
    path.write_text(text, encoding="utf-8")
    case = load_case(path)
    client = client_for_cases(config, [case])  # offline, the model learns your plan
    for strategy in ("inline", "truncate", "box"):
        run = run_case(case, strategy, client=client, model=config.model, store=store)
        print(f"{strategy:9} {run.record.usage()['prompt_tokens']:>6,} prompt tokens")
        explain_choice(
            run.passed,
            expected=f"{strategy} passed your case's checks.",
            otherwise=f"{strategy} failed your case's checks: {run.validation.summary()}. Read "
            "which expectation the model's run broke: a plan, or a model, that does otherwise.",
        )


def persona_table() -> Any:
    """Every mistake persona (:data:`helpers.models.personas.PERSONAS` but the ideal model) as a
    Markdown table: its mistake, where real models or servers make it, and the guard that
    catches it (:data:`helpers.base.guards.GUARDS`, with what it does) or none. Every text reaches
    the table through :func:`helpers.text.escaping.for_markdown`, a guard's name as the comparison
    report writes it.

    Returns:
        An ``IPython.display.Markdown`` (:func:`helpers.course.views.markdown_view`)."""
    rows = [
        f"| {for_markdown(p.name)} | {for_markdown(p.mistake)} | {for_markdown(p.seen_in)} | "
        + (
            f"{guard_cell(p.guard)}: {for_markdown(GUARDS.get(p.guard, ''))}"
            if p.guard
            else "no guard: it costs tokens"
        )
        + " |"
        for p in PERSONAS.values()
        if p.name != "ideal"
    ]
    return markdown_view(
        "| persona | its mistake | seen in | caught by |\n|---|---|---|---|\n" + "\n".join(rows)
    )


def run_mistakes(
    cases: Mapping[str, Case], client: openai.OpenAI, store: ToolOutputStore
) -> dict[str, PersonaRow]:
    """Every mistake persona on the transcript cases (:data:`PERSONA_CASES`), each under the
    strategy where its mistake can happen, beside the ideal model on the same cases
    (:data:`IDEAL_STRATEGIES`); ``client`` must reach the offline model.

    Returns:
        One row per persona (:meth:`helpers.evaluation.compare.Comparison.persona_rows`): the
        guard that fired, what passed, its prompt tokens and model calls against the ideal's.
    """
    from helpers.evaluation.compare import Comparison
    from helpers.evaluation.runs import run_personas

    chosen = [cases[case_id] for case_id in PERSONA_CASES]
    personas = [PERSONAS[name] for name in MISTAKE_PERSONAS]
    persona_runs = run_personas(chosen, personas, client=client, store=store)
    ideal = PERSONAS["ideal"].model_name  # the reference model itself, whatever .env chose
    ideal_runs = run_cases(chosen, IDEAL_STRATEGIES, client=client, model=ideal, store=store)
    mistakes = Comparison(ideal_runs + persona_runs, ideal, threshold=256, limit=600)
    return mistakes.persona_rows()


def mistakes_table(rows: Mapping[str, PersonaRow]) -> Any:
    """The persona runs of :func:`run_mistakes` as the table of ``compare.md``'s personas
    section (:func:`helpers.evaluation.report.persona_markdown`, escaped there): per persona its
    strategy, mistake, guard, the guards that fired, cases passed, prompt tokens, × the ideal
    model's and model calls (the ideal model's). The section's heading, text and failures are
    left out (the next cell prints the failures).

    Returns:
        An ``IPython.display.Markdown`` (:func:`helpers.course.views.markdown_view`)."""
    section = persona_markdown(dict(rows))
    return markdown_view("\n".join(line for line in section if line.startswith("|")))


def confirm_guards_caught_every_mistake(rows: Mapping[str, PersonaRow]) -> None:
    """Confirm (assert) that every guarded persona's guard caught its mistake and every case
    still passed, and that ``reads-everything`` (no guard) cost more than
    :data:`READS_EVERYTHING_MIN_RATIO` × the ideal model's prompt tokens; then print it, and why
    ``reads-everything``'s runs failed (escaped for the page).

    Raises:
        AssertionError: a guard missed its mistake, a guarded case failed, or reading what it
            only routes cost too little.
    """
    for name, row in rows.items():
        if row.guard:
            assert row.caught and row.passed == row.cases, (
                f"{for_terminal(name)}: its guard should catch it and every case pass; "
                f"failures: {for_terminal('; '.join(row.failures))}"
            )
    reader = rows["reads-everything"]
    ratio = reader.ratio_to_ideal or 0.0
    assert ratio > READS_EVERYTHING_MIN_RATIO, "reading what you only route is costly"
    print("Every guarded mistake was caught and the tasks still came out byte-exact.")
    print(
        f"reads-everything: {reader.passed}/{reader.cases} passed, at "
        f"{reader.ratio_to_ideal}× the ideal model's tokens; why its runs failed:"
    )
    for failure in reader.failures:
        print("  -", for_terminal(failure))


def ideal_beside_embeds(case: Case, client: openai.OpenAI, store: ToolOutputStore) -> Any:
    """``case`` under ``box`` run by the ideal model and by the ``embeds`` persona (it writes its
    reference inside a sentence), their messages side by side
    (:func:`helpers.course.views.side_by_side`); ``client`` must reach the offline model.

    Returns:
        An ``ipywidgets.HTML`` (the notebook shows it)."""
    import ipywidgets as widgets

    panes = []
    for name in ("ideal", "embeds"):
        run = run_case(case, "box", client=client, model=PERSONAS[name].model_name, store=store)
        panes.append(messages_html(run.record, title=name) + answer_html(run.record))
    return widgets.HTML(side_by_side(*panes))


def show_naive_loop_refused(prompt: str, client: openai.OpenAI, model: str) -> None:
    """Show (print) the loop of notebook 01 refused by a thinking model (``model``, e.g. the
    ``deepseek-thinking`` persona): ask ``prompt`` with the box strategy's tools, echo back only
    ``role``, ``content`` and ``tool_calls`` of the reply (a reference as each tool's result), and
    print the ``reasoning_content`` the reply carried and the error the second request got (a
    provider's text, escaped for the page).

    Raises:
        AssertionError: the second request was not refused (HTTP 400).
    """
    import openai

    from helpers.context.strategies import build_policy
    from helpers.tooling.tools import default_registry

    tools = default_registry().merged(build_policy("box").internal_tools()).schemas()
    naive: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    first = client.chat.completions.create(model=model, messages=naive, tools=tools)
    message = first.choices[0].message
    extra = message.model_extra or {}
    print("reasoning_content:", for_terminal(str(extra.get("reasoning_content"))))
    calls = message.tool_calls or []
    naive.append(
        {
            "role": "assistant",
            "content": message.content,
            "tool_calls": [call.model_dump() for call in calls],
        }
    )
    for call in calls:
        naive.append(
            {"role": "tool", "tool_call_id": call.id, "content": "internal://AbCdEfGh12345678"}
        )
    try:
        client.chat.completions.create(model=model, messages=naive, tools=tools)
    except openai.BadRequestError as exc:
        said = exc.body["message"] if isinstance(exc.body, dict) else exc
        print("the naive loop:", for_terminal(str(said)))  # a provider's error text is untrusted
        return
    raise AssertionError("the persona should have refused the request")
