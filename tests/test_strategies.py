"""Strategies as one registry (helpers/context/strategies.py): a name stands for a spec whose
factory builds the policy from the run's options; ``workbook`` and ``run_case`` know every
registered strategy, one registered here included, and no name is rewritten on the way."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from helpers.cases.case_files import load_cases
from helpers.cli import main
from helpers.context.boxing import make_reference, presented_reference_id
from helpers.context.policies import BoxPolicy, Presented, ResultPolicy, TruncatePolicy
from helpers.context.read_back import Seen
from helpers.context.strategies import (
    LESSON_ROLES,
    SINGLE_ROLES,
    STRATEGY_REGISTRY,
    Strategy,
    StrategyOptions,
    build_policy,
    compared_strategies,
    design_step_strategies,
    design_strategy,
    register_strategy,
    strategies_in_role,
    strategy_families,
    strategy_in_role,
    strategy_named,
)
from helpers.evaluation.runs import (
    client_for_cases,
    run_case,
)
from helpers.models.llm import resolve_model
from helpers.store.tool_outputs import ToolOutputStore


class HeadPreviewPolicy(TruncatePolicy):
    """A toy strategy: a short preview (a fifth of the run's limit), the rest fetched."""

    name = "head-preview"  # its system message is TruncatePolicy's (instructions()), not a name's

    def describe(self) -> str:
        return f"head-preview ({self.limit} chars)"


@pytest.fixture
def toy():
    strategy = register_strategy(
        Strategy(
            "head-preview",
            "truncate",
            "a preview a fifth of the usual length",
            lambda o: HeadPreviewPolicy(max(1, o.limit_chars // 5)),
        )
    )
    yield strategy
    del STRATEGY_REGISTRY[strategy.name]


def test_a_registered_strategy_runs_a_case_through_run_case_and_the_cli(
    toy, tmp_path, capsys
) -> None:
    [case] = load_cases("data/cases/case1.md")
    store = ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    config = resolve_model("offline", env={})
    run = run_case(
        case,
        "head-preview",
        client=client_for_cases(config, [case]),
        model=config.model,
        store=store,
        limit=1000,
    )
    store.close()
    assert run.validation.passed, run.validation
    first = run.record.tool_calls[0]
    assert first.result_kind == "truncated" and len(first.result) < 400  # 200 chars + marker
    code = main(
        [
            "cases",
            "data/cases/case1.md",
            "-s",
            "head-preview",
            "-j",
            "--db",
            f"sqlite:///{tmp_path / 'cli.sqlite'}",
        ]
    )
    [row] = json.loads(capsys.readouterr().out)["runs"]
    assert code == 0 and (row["strategy"], row["passed"]) == ("head-preview", True)


class SentenceBoxPolicy(BoxPolicy):
    """A toy strategy the model must look inside: a long result is boxed, and the reference is
    told in a sentence; only this policy's read_back finds it there."""

    def __init__(self, options: StrategyOptions):
        super().__init__(options.threshold, "opaque", "tcr")

    def present(self, ctx, tool, tool_call_id, output, row) -> Presented:
        shown = super().present(ctx, tool, tool_call_id, output, row)
        ref_id = presented_reference_id(shown.content)
        if shown.kind != "boxed" or ref_id is None:
            return shown
        sentence = f"The result ({len(output):,} characters) is kept as {make_reference(ref_id)} ."
        return Presented(sentence, "boxed")

    @staticmethod
    def read_back(call_id: str, content: str) -> Seen | None:
        match = re.fullmatch(r"The result \(.*\) is kept as (internal://\S+) \.", content)
        return Seen(call_id, content, "boxed", match[1]) if match else None


class SentenceNoReaderPolicy(SentenceBoxPolicy):
    """The same presentation, its policy declaring no reader of its own."""

    read_back = staticmethod(ResultPolicy.read_back)


@pytest.mark.parametrize("with_reader", [True, False], ids=["read-back", "no-read-back"])
def test_a_strategy_the_model_looks_inside_needs_only_its_own_reader(tmp_path, with_reader):
    """With its policy's reader (registration takes it from the policy), the offline model
    passes the reference on and the case passes; a policy without one leaves the model taking
    the sentence for the value, and the case fails."""
    policy = SentenceBoxPolicy if with_reader else SentenceNoReaderPolicy
    strategy = register_strategy(Strategy("box-sentence", "box", "told in a sentence", policy))
    assert (strategy.read_back is SentenceBoxPolicy.read_back) is with_reader
    try:
        [case] = load_cases("data/cases/case1.md")
        store = ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
        config = resolve_model("offline", env={})
        client = client_for_cases(config, [case])
        run = run_case(case, "box-sentence", client=client, model=config.model, store=store)
        store.close()
    finally:
        del STRATEGY_REGISTRY[strategy.name]
    transcript, check = run.record.tool_calls[0], run.record.tool_calls[-1]
    assert transcript.result.startswith("The result (10,244 characters) is kept as internal://")
    assert run.validation.passed is with_reader, run.validation
    if with_reader:  # deep_check ran on the byte-exact transcript, unboxed by the client
        assert check.name == "deep_check" and check.ran
        assert check.received_sha256["text"] == transcript.output_sha256


def test_options_reach_the_policy_and_nothing_else_changes_the_name() -> None:
    box = build_policy("box", threshold=500, boxing="json")
    assert isinstance(box, BoxPolicy) and box.boxing == "json"
    assert build_policy("box-json").boxing == "json" and build_policy("box-tcr").boxing == "opaque"
    assert build_policy("box-tcr", boxing="json").boxing == "json"
    assert build_policy("truncate", limit_chars=321).limit == 321
    assert build_policy("box", boxing="json").describe() == build_policy("box-json").describe()
    with pytest.raises(ValueError, match="threshold"):
        build_policy("box", threshold=-1)


def test_every_strategy_builds_a_policy_and_the_lists_come_from_the_registry() -> None:
    for name, strategy in STRATEGY_REGISTRY.items():
        assert isinstance(strategy.build(StrategyOptions()), ResultPolicy), name
        assert strategy.summary and strategy.family in strategy_families()
        assert strategy.family != "other"  # each built-in strategy names its own family
    compared, steps = compared_strategies(), design_step_strategies()
    field = set(strategies_in_role("field"))
    assert set(compared) | set(steps) | field == set(STRATEGY_REGISTRY)
    assert not set(compared) & set(steps) and not set(compared) & field and "code" in field
    assert design_strategy("workbook") == "box" and design_strategy("tcr") == "box-tcr"


def test_roles_say_each_strategys_part_in_the_comparison() -> None:
    """The comparison reads a strategy's part from its role, never from its name: one baseline,
    one subject and one origin; a new strategy is a candidate; a role taken by another strategy
    or an unknown one is refused."""
    assert [strategy_in_role(r) for r in SINGLE_ROLES] == ["inline", "box", "box-tcr"]
    assert strategies_in_role(*LESSON_ROLES) == ("inline", "truncate", "box")
    assert set(strategies_in_role("anchor")) == {"codex", "deepagents", "claude-code", "agents-sdk"}
    assert strategies_in_role("design-step") == design_step_strategies()

    def build(_options: StrategyOptions) -> ResultPolicy:
        return ResultPolicy()

    assert Strategy("mine", "other", "x", build).role == "candidate"
    with pytest.raises(ValueError, match="only one strategy is the subject, and 'box' is"):
        register_strategy(Strategy("mine", "box", "x", build, "subject"))
    with pytest.raises(ValueError, match="role must be one of baseline, rival"):
        register_strategy(Strategy("mine", "box", "x", build, "hero"))  # type: ignore[arg-type]
    assert "mine" not in STRATEGY_REGISTRY
    # replacing the subject with itself keeps the one subject
    register_strategy(STRATEGY_REGISTRY["box"], replace=True)
    assert strategy_in_role("subject") == "box"


def test_a_new_strategys_policy_brings_its_own_system_message(toy) -> None:
    """Instructions are the policy's (``instructions()``), not a table keyed by name: the
    head-preview policy, named for itself, is told the truncate rules it inherits."""
    head = build_policy("head-preview")
    assert head.name == "head-preview"
    assert head.instructions() == build_policy("truncate").instructions()
    assert "fetch_tool_output" in head.instructions()


#: The strategies' own modules: the registry, and the policies that name themselves.
OWNERS = {
    "helpers/context/strategies.py",
    "helpers/context/policies.py",
    "helpers/context/anchors.py",
}


#: The notebooks' plumbing (one module per notebook): a lesson names the strategies its prose
#: compares ("case3 with truncate vs box"), as the notebook's own cells did before it moved there.
LESSONS = "helpers/course/lessons/"


def _name_branches(path: Path, names: set[str]) -> list[str]:
    """Where ``path`` branches on a strategy's name: a name compared, used as an index, given to
    ``.get``/``.run``/``run_case``, a hand-written list of names, or a default. A comparison with a
    result kind (``…kind``) is not one ("inline" and "middle" are result kinds too), nor is a
    type's ``Literal[…]``, a notebook cell's type (``cell_type == "code"``) or a provider error's
    field (``error.get("code")``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def constants(node: ast.AST) -> list[ast.Constant]:
        items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return [i for i in items if isinstance(i, ast.Constant) and i.value in names]

    exempt = {
        id(c)
        for node in ast.walk(tree)
        if (isinstance(node, ast.Compare) and ("kind" in (text := ast.unparse(node))))
        or (isinstance(node, ast.Compare) and "cell_type" in text)
        or (isinstance(node, ast.Subscript) and ast.unparse(node.value) == "Literal")
        or (isinstance(node, ast.Call) and ast.unparse(node.func) == "error.get")
        for c in ast.walk(node)
    }
    hits: dict[int, ast.Constant] = {}
    for node in ast.walk(tree):
        found: list[ast.Constant] = []
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found += constants(operand)
        elif isinstance(node, ast.Subscript):
            found += constants(node.slice)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("get", "run", "pop", "run_case", "run_cases"):
                found += [c for arg in node.args for c in constants(arg)]
            found += [c for k in node.keywords if k.arg == "default" for c in constants(k.value)]
        elif isinstance(node, ast.arguments):
            found += [c for d in (*node.defaults, *node.kw_defaults) if d for c in constants(d)]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(constants(node)) >= 2:
            found += constants(node)
        hits |= {id(c): c for c in found if id(c) not in exempt}
    ordered = sorted(hits.values(), key=lambda c: (c.lineno, c.col_offset))
    return [f"{path}:{c.lineno}: {c.value!r}" for c in ordered]


def test_no_module_outside_a_strategys_own_branches_on_its_name() -> None:
    """A strategy's family, instructions, read-back and role live in its :class:`Strategy` (and
    its policy), so the CLI, the comparison, the report, the charts and the project's tooling
    ask the registry (``strategy_in_role("subject")``), never ``"box"`` (issue 38)."""
    root = Path(__file__).resolve().parent.parent
    names = set(STRATEGY_REGISTRY)
    files = [*root.glob("helpers/**/*.py"), *root.glob("devtools/*.py")]
    found = [
        line
        for path in sorted(files)
        if path.relative_to(root).as_posix() not in OWNERS
        and not path.relative_to(root).as_posix().startswith(LESSONS)
        for line in _name_branches(path.relative_to(root), names)
    ]
    assert not found, "branches on a strategy's name:\n" + "\n".join(found)


def test_the_name_check_finds_each_kind_of_branch(tmp_path) -> None:
    """The check above is not blind: each way of branching on a name is found, result kinds
    and type literals are not."""
    source = tmp_path / "m.py"
    source.write_text(
        "\n".join(
            [
                'a = totals.get("box")',
                'b = v in ("box", "box-tcr")',
                'c = runs["inline"].prompt_tokens',
                'd = [s for s in ("inline", "truncate")]',
                'e = parser.add_argument("-s", default="box")',
                'f = call.result_kind not in ("boxed", "inline")',
                'K = Literal["inline", "middle"]',
                'g = build_policy("truncate")',
                'h = self.run(case_id, "box")',
                'def i(runs, strategy="box"): ...',
            ]
        )
    )
    import os

    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        found = _name_branches(Path("m.py"), set(STRATEGY_REGISTRY))
    finally:
        os.chdir(here)
    assert [line.split(":")[1] for line in found] == [
        "1",
        "2",
        "2",
        "3",
        "4",
        "4",
        "5",
        "9",
        "10",
    ], found


def test_a_bad_or_taken_name_is_refused() -> None:
    def build(_options: StrategyOptions) -> ResultPolicy:
        return ResultPolicy()

    for bad in ("", "Box", "box json", "box/json", " box", "head_tail", "-box", "box-", "bö"):
        with pytest.raises(ValueError, match="lower-case ASCII letters and digits, parts joined"):
            register_strategy(Strategy(bad, "other", "x", build))
    with pytest.raises(ValueError, match="registered already"):
        register_strategy(Strategy("box", "other", "x", build))
    with pytest.raises(ValueError, match="must be one of inline, truncate, box"):
        strategy_named("boxx")


def test_one_vocabulary_of_result_kinds_every_display_knows() -> None:
    """What the agent presents and what a model reads back use one complete type."""
    from typing import get_args

    from helpers.cli.common import KIND_STYLE
    from helpers.context.read_back import ResultKind
    from helpers.display.theme import KIND_TINTS

    assert set(KIND_STYLE) == set(get_args(ResultKind))
    assert set(KIND_TINTS) - {"compacted"} == set(get_args(ResultKind)) - {
        "inline"
    }  # inline: unmarked


def test_one_way_from_a_name_to_a_policy() -> None:
    """``build_policy`` is the only factory: the old two (``make_policy``, whose "box" was
    tool-context-relay's design, and ``policy_for``) are gone from the library, the notebooks
    and the docs, so "box" is one design wherever it is typed (issue 38)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    places = [*root.glob("helpers/**/*.py"), *root.glob("notebooks/*.ipynb")]
    places += [*root.glob("solutions/*.ipynb"), *root.glob("docs/*.md"), root / "README.md"]
    old = re.compile(r"\b(make_policy|policy_for)\b")
    assert not [str(p.relative_to(root)) for p in places if old.search(p.read_text("utf-8"))]
    assert type(build_policy("box")).__name__ == "BoxPolicy"
    assert build_policy("box").describe() != build_policy("box-tcr").describe()
