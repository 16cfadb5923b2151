"""Strategies by name: one registry of what can happen to a tool's result.

A *strategy* is a name a user types (``workbook ask --strategy box-json``, ``run_case(case,
"truncate")``) standing for a :class:`~helpers.context.policies.ResultPolicy` built with the
run's options. Every strategy lives here as one :class:`Strategy` (its name, its family, a line
for people, the factory that builds its policy from :class:`StrategyOptions`, its role in the
comparison and its read-back; its policy brings its instructions), so no other module turns a
name into a policy, or branches on a name (the comparison asks :func:`strategy_in_role`; a test
reads every module):

- the workbook's own: ``inline``, ``truncate``, ``middle`` (head + tail, the reference point),
  ``box`` (the workbook's box design, opaque references) and ``box-json`` (the same, MCP
  resource links);
- one ``box-<design>`` per other box design (:data:`~helpers.context.policies.BOX_DESIGNS`;
  ``box-tcr`` is *tool-context-relay*'s);
- ``code``, code mode (:mod:`helpers.context.code_mode`): the tools called from a program;
- the anchors, production agents' own policies (:data:`~helpers.context.anchors.ANCHORS`).

To add a strategy, write its policy (a :class:`~helpers.context.policies.ResultPolicy`
subclass) and call :func:`register_strategy` once; ``workbook ask``, ``workbook cases`` and
:func:`build_policy` know it from then on.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from helpers.cases.case_files import STRATEGY_NAME
from helpers.context.anchors import ANCHORS
from helpers.context.code_mode import CodePolicy
from helpers.context.policies import (
    BOX_DESIGNS,
    DEFAULT_BOX_DESIGN,
    BoxPolicy,
    InlinePolicy,
    MiddleTruncatePolicy,
    ResultPolicy,
    TruncatePolicy,
)
from helpers.context.preview import DEFAULT_PREVIEW_LIMIT_CHARS
from helpers.context.read_back import ReadBack, Seen

Family = Literal["inline", "truncate", "box", "code", "anchor", "other"]

#: A strategy's part in the comparison (``workbook compare``, the report, the README's figures):
#:
#: - ``baseline``: every result in full; ``× inline`` is measured against it, and it is a rival
#:   in the box goal (exactly one).
#: - ``rival``: what the subject must beat: the box goal takes the cheaper of the baseline and
#:   the rivals that passed.
#: - ``subject``: the design the workbook argues for: the box goal is judged on it, the floor is
#:   counted from its passed runs, and the CLI runs it by default (exactly one).
#: - ``variant``: the subject in another presentation (MCP resource links), compared in full.
#: - ``origin``: the design the subject grew from (tool-context-relay's); the design steps run
#:   from it to the subject (exactly one).
#: - ``reference``: a point of reference with no way back (head and tail).
#: - ``candidate``: a strategy under study (one of your own, by default): compared in full, with
#:   no part in the box goal.
#: - ``anchor``: a production agent's own policy, with its own parameters.
#: - ``design-step``: one step between the origin and the subject, run only with
#:   ``workbook compare --design-steps``.
#: - ``field``: where the field is now, taught after the comparison of notebook 05 (``code``,
#:   notebook 08): ``workbook compare`` runs it in full (:func:`field_strategies`), notebook
#:   05's comparison does not.
Role = Literal[
    "baseline",
    "rival",
    "subject",
    "variant",
    "origin",
    "reference",
    "candidate",
    "anchor",
    "design-step",
    "field",
]
#: The roles only one strategy may hold.
SINGLE_ROLES: tuple[Role, ...] = ("baseline", "subject", "origin")
#: The roles of the strategies notebooks 01-04 build (``workbook cases --strategy all``).
LESSON_ROLES: tuple[Role, ...] = ("baseline", "rival", "subject")


#: The run options a strategy may honour, as :class:`StrategyOptions` names them; the command
#: line's flags for each (``workbook ask/cases/compare``).
Option = Literal["threshold", "limit", "boxing"]
OPTION_FLAGS: dict[str, str] = {
    "threshold": "-t/--threshold",
    "limit": "-l/--limit",
    "boxing": "--boxing",
}


@dataclass(frozen=True)
class StrategyOptions:
    """What a run may set, the same for every strategy; each strategy takes what applies to it.

    Attributes:
        threshold: box strategies: the longest result kept inline, in characters (tokens under
            a token-threshold design); ``None``: the design's own.
        limit_chars: ``truncate`` and ``middle``: the preview's length, in characters.
        boxing: box strategies: ``"opaque"`` (``internal://<id>``) or ``"json"`` (an MCP
            resource link); ``None``: the strategy's own.
    """

    threshold: int | None = None
    limit_chars: int = DEFAULT_PREVIEW_LIMIT_CHARS
    boxing: str | None = None


@dataclass(frozen=True)
class Strategy:
    """One strategy: everything its name stands for, so no other module branches on the name.

    Its instructions (the system message) come with its policy (``ResultPolicy.instructions``,
    :mod:`helpers.context.instructions`).

    Attributes:
        name: what users type, e.g. ``"box-json"``.
        family: ``inline``, ``truncate`` (previews, however cut), ``box`` (references and
            resolve tools), ``code`` (tools called from a program the model writes),
            ``anchor`` (a production agent's policy) or ``other``.
        summary: one line for people (``--help``, reports).
        build: the factory: the policy for a run's :class:`StrategyOptions`; it raises
            ``ValueError`` for an option it cannot take (a negative size, an unknown boxing).
        role: its part in the comparison (:data:`Role`; a new strategy is a ``candidate``).
        design: the box design it runs (:data:`~helpers.context.policies.BOX_DESIGNS`), if any.
        read_back: reads a ``tool`` message back as a model sees it, when the message is this
            strategy's presentation of a long result; ``None``: its policy's own ``read_back``
            (:func:`register_strategy` takes it from the policy the factory builds).
        options: the :data:`Option` names its factory reads (``limit`` for a preview's length);
            a run that sets another is refused, not ignored (:func:`unhonoured_options`).
    """

    name: str
    family: Family
    summary: str
    build: Callable[[StrategyOptions], ResultPolicy]
    role: Role = "candidate"
    design: str | None = None
    read_back: ReadBack | None = None
    options: frozenset[Option] = frozenset()


#: Every strategy by name, in the order ``--help`` and the comparison list them.
STRATEGY_REGISTRY: dict[str, Strategy] = {}


def register_strategy(strategy: Strategy, *, replace: bool = False) -> Strategy:
    """Add ``strategy`` to :data:`STRATEGY_REGISTRY` and return it.

    Raises:
        ValueError: the name is taken (unless ``replace``), or is not
            :data:`~helpers.cases.case_files.STRATEGY_NAME`
            (lower-case ASCII letters and digits, parts joined by ``-``); an
            unknown role, or a role of :data:`SINGLE_ROLES` another strategy holds.
    """
    name = strategy.name
    if not STRATEGY_NAME.fullmatch(name):
        raise ValueError(
            f"a strategy name is lower-case ASCII letters and digits, parts joined by '-' "
            f"(e.g. 'head-tail'), not {name!r}"
        )
    unknown = set(strategy.options) - set(get_args(Option))
    if unknown:
        raise ValueError(f"options must be of {', '.join(get_args(Option))}, got {sorted(unknown)}")
    if name in STRATEGY_REGISTRY and not replace:
        raise ValueError(f"a strategy called {name!r} is registered already")
    if strategy.role not in _ROLE_NAMES:
        raise ValueError(f"role must be one of {', '.join(_ROLE_NAMES)}, got {strategy.role!r}")
    holder = next(
        (s.name for s in STRATEGY_REGISTRY.values() if s.role == strategy.role and s.name != name),
        None,
    )
    if strategy.role in SINGLE_ROLES and holder is not None:
        raise ValueError(f"only one strategy is the {strategy.role}, and {holder!r} is")
    if strategy.read_back is None:  # the policy's own reader, declared once, on the policy
        reader = type(strategy.build(StrategyOptions())).read_back
        if reader is not ResultPolicy.read_back:
            strategy = dataclasses.replace(strategy, read_back=reader)
    STRATEGY_REGISTRY[name] = strategy
    return strategy


def strategy_named(name: str) -> Strategy:
    """The strategy called ``name``.

    Raises:
        ValueError: no such strategy; the message lists the known ones.
    """
    try:
        return STRATEGY_REGISTRY[name]
    except KeyError:
        known = ", ".join(STRATEGY_REGISTRY)
        raise ValueError(f"strategy must be one of {known}, got {name!r}") from None


def build_policy(
    name: str,
    *,
    threshold: int | None = None,
    limit_chars: int = DEFAULT_PREVIEW_LIMIT_CHARS,
    boxing: str | None = None,
) -> ResultPolicy:
    """The policy strategy ``name`` stands for: the one way from a name to a policy, the same
    in every notebook, the CLI and the docs (``"box"`` is the workbook's box design wherever it
    is typed; ``"box-tcr"`` is tool-context-relay's).

    Args:
        name: a strategy of :data:`STRATEGY_REGISTRY` (``inline``, ``truncate``, ``box``,
            ``box-json``, ``box-tcr``, an anchor such as ``codex``…).
        threshold: box strategies: the longest result kept inline, in characters (tokens under
            a token-threshold design such as ``box``); ``None``: the design's own.
        limit_chars: ``truncate`` and ``middle``: the preview's length, in characters.
        boxing: box strategies: ``"opaque"`` or ``"json"``; ``None``: the strategy's own.

    Raises:
        ValueError: an unknown strategy, or an option it cannot take (a negative size, an
            unknown boxing).
    """
    strategy = strategy_named(name)
    policy = strategy.build(StrategyOptions(threshold, limit_chars, boxing))
    policy.name = strategy.name  # a turn's record names the strategy run, box-json as box-json
    return policy


def unhonoured_options(names: Iterable[str], given: Iterable[str]) -> str | None:
    """Why a run of the strategies ``names`` may not take the options ``given`` (a subset of
    :data:`Option`), or ``None``: an option none of them honours would be silently ignored, so it
    is refused, naming the flag and what each strategy does take (issue 50)."""
    names = list(names)
    strategies = [strategy_named(name) for name in names]
    for option in given:
        if not any(option in s.options for s in strategies):
            takes = "; ".join(
                f"{s.name} takes "
                + (", ".join(OPTION_FLAGS[o] for o in sorted(s.options)) or "none of them")
                for s in strategies
            )
            return f"{OPTION_FLAGS[option]} does nothing for {', '.join(names)} ({takes})"
    return None


def strategy_family(name: str) -> str | None:
    """The family of the strategy called ``name`` (``box`` for ``box-json``), or ``None`` for a
    name no strategy has (a policy built by hand names itself)."""
    strategy = STRATEGY_REGISTRY.get(name)
    return strategy.family if strategy else None


def strategy_families() -> tuple[str, ...]:
    """Every family a strategy may belong to (:data:`Family`)."""
    return get_args(Family)


def design_strategy(design: str) -> str | None:
    """The name of the first strategy that runs box design ``design``, e.g. ``box`` for
    ``workbook`` and ``box-tcr`` for ``tcr``; ``None`` if none does."""
    return next((n for n, s in STRATEGY_REGISTRY.items() if s.design == design), None)


def read_back(call_id: str, content: str, strategy: str | None = None) -> Seen:
    """A ``tool`` message as a model sees it: read by the reader of ``strategy``, the one that
    presented it, when named (a turn's record names it: the validation reads a run's results
    so); else, as a model that knows no strategy reads it, by the first reader that recognises
    it, the most recently registered first (a strategy built on another's presentation, such as
    a preview of its own, is read by its own reader); else an error result (``{"error": …}``, as
    the agent writes one), else the value inline.

    Args:
        call_id: the message's ``tool_call_id``.
        content: its text.
        strategy: the registered strategy that presented it, or ``None``; a name no strategy
            has (a policy built by hand) reads as ``None`` does.
    """
    named = STRATEGY_REGISTRY.get(strategy or "")
    if named is not None:
        readers = [named.read_back] if named.read_back else []
    else:
        registered = reversed(list(STRATEGY_REGISTRY.values()))
        readers = list(dict.fromkeys(s.read_back for s in registered if s.read_back))
    for reader in readers:
        seen = reader(call_id, content)
        if seen is not None:
            return seen
    stripped = content.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict) and set(data) == {"error"}:
            return Seen(call_id, content, "error")
    return Seen(call_id, content, "inline")


def strategy_names() -> tuple[str, ...]:
    """Every registered strategy's name, in registration order."""
    return tuple(STRATEGY_REGISTRY)


def rivals_text() -> str:
    """The box goal's rivals in words: the baseline and the rivals, e.g. "inline and truncate"."""
    names = strategies_in_role("baseline", "rival")
    return " and ".join(names) if len(names) < 3 else f"{', '.join(names[:-1])} and {names[-1]}"


def compared_strategies() -> tuple[str, ...]:
    """What notebook 05 compares, as registered now: every strategy but the design steps and
    the field's (a strategy registered in a notebook cell is compared from then on);
    ``workbook compare`` adds :func:`field_strategies`."""
    return tuple(n for n, s in STRATEGY_REGISTRY.items() if s.role not in ("design-step", "field"))


def field_strategies() -> tuple[str, ...]:
    """The strategies of role ``field`` (code mode), as registered now: ``workbook compare``
    runs them after :func:`compared_strategies`."""
    return strategies_in_role("field")


def design_step_strategies() -> tuple[str, ...]:
    """The box designs between the origin (``box-tcr``) and the subject (``box``), one step
    each, as registered now (``workbook compare --design-steps``)."""
    return strategies_in_role("design-step")


def strategies_in_role(*roles: Role) -> tuple[str, ...]:
    """The names of the strategies whose role is one of ``roles``, in registration order."""
    return tuple(n for n, s in STRATEGY_REGISTRY.items() if s.role in roles)


def strategy_in_role(role: Role) -> str:
    """The name of the one strategy in ``role`` (one of :data:`SINGLE_ROLES`).

    Raises:
        LookupError: no strategy holds it.
    """
    for name, strategy in STRATEGY_REGISTRY.items():
        if strategy.role == role:
            return name
    raise LookupError(f"no strategy is the {role}")


_ROLE_NAMES: tuple[str, ...] = get_args(Role)


#: What every box strategy honours: the threshold and the reference's form.
_BOX_OPTIONS: frozenset[Option] = frozenset({"threshold", "boxing"})


def _box(design: str, boxing: str) -> Callable[[StrategyOptions], ResultPolicy]:
    def build(options: StrategyOptions) -> ResultPolicy:
        return BoxPolicy(options.threshold, options.boxing or boxing, design)

    return build


def _register_builtins() -> None:
    """The workbook's strategies, in the order ``--help`` lists them: the lessons' first."""
    register_strategy(
        Strategy("inline", "inline", "every result in full", lambda o: InlinePolicy(), "baseline")
    )
    register_strategy(
        Strategy(
            "truncate",
            "truncate",
            "a preview and a truncation marker; fetch_tool_output brings the rest",
            lambda o: TruncatePolicy(o.limit_chars),
            "rival",
            options=frozenset({"limit"}),
        )
    )
    register_strategy(
        Strategy(
            "box",
            "box",
            "long results as opaque references, unboxed in tool arguments (the workbook's design)",
            _box(DEFAULT_BOX_DESIGN, "opaque"),
            "subject",
            design=DEFAULT_BOX_DESIGN,
            options=_BOX_OPTIONS,
        )
    )
    register_strategy(
        Strategy(
            "box-json",
            "box",
            "box with MCP resource links instead of internal:// references",
            _box(DEFAULT_BOX_DESIGN, "json"),
            "variant",
            design=DEFAULT_BOX_DESIGN,
            options=_BOX_OPTIONS,
        )
    )
    register_strategy(
        Strategy(
            "box-tcr",
            "box",
            "tool-context-relay's box design",
            _box("tcr", "opaque"),
            "origin",
            design="tcr",
            options=_BOX_OPTIONS,
        )
    )
    _register_the_others()


def _register_the_others() -> None:
    """The reference point, code mode, the anchors and the box design steps."""
    register_strategy(
        Strategy(
            "middle",
            "truncate",
            "head and tail, no way back (the reference point)",
            lambda o: MiddleTruncatePolicy(o.limit_chars),
            "reference",
            options=frozenset({"limit"}),
        )
    )
    register_strategy(
        Strategy(
            "code",
            "code",
            "code mode: one run_program tool; the model's program calls the tools in a V8 "
            "isolate, and only what it returns enters the context (boxed when long)",
            lambda o: CodePolicy(o.threshold, o.boxing or "opaque"),
            "field",
            options=_BOX_OPTIONS,
        )
    )
    for name, policy in ANCHORS.items():
        summary = (policy.__doc__ or name).strip().splitlines()[0]
        build = lambda o, p=policy: p()  # noqa: E731 - the anchors take no options
        register_strategy(Strategy(name, "anchor", summary, build, "anchor"))
    for design in BOX_DESIGNS.values():  # the steps from tool-context-relay's design to ours
        if design.name not in (DEFAULT_BOX_DESIGN, "tcr"):
            summary = f"a box design step: {design.step}" if design.step else "a box design"
            build = _box(design.name, "opaque")
            register_strategy(
                Strategy(
                    f"box-{design.name}",
                    "box",
                    summary,
                    build,
                    "design-step",
                    design=design.name,
                    options=_BOX_OPTIONS,
                )
            )


_register_builtins()
