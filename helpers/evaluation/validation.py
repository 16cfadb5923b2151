"""Checking a turn against its prompt case.

Semantics of *tool-context-relay* by grzegorz-aniol:

- ``tool_calls`` is the ordered list of expected calls. Only calls of tools named there are
  matched against it; other calls (a ``fetch_tool_output``, a resolve tool nobody asked about)
  are ignored.
- Ordered mode (the default): those calls, in order, must be exactly the expected ones.
- Count mode (any entry has ``allow_multiple: true``): order does not matter; each tool must run
  as often as listed, and a flagged tool may run more often.
- ``opaque_id_result: true``: the result the model saw was a reference (``false``: it was not).
  ``opaque_id_input: true``: some argument was, whole, a reference an earlier call of this turn
  returned (``false``: none was).
- ``forbidden_tools`` must not run. A case with no expectations allows no tool calls.

Extensions: ``strategies`` limits the checks above to those strategies, each named or by its
family (``box``: every box strategy; the others check only
``answer_contains`` and ``sink_exact``); ``answer_contains`` lists strings the answer must hold;
``sink_exact`` entries ``{tool_name, argument, source}`` require that the value ``tool_name``
really received in ``argument`` (after unboxing) is byte for byte the full output of the earlier
``source`` call (compared by SHA-256 of the UTF-8 bytes). ``name#N`` names the N-th call of a
tool (from 1), when a case calls it more than once.

The reference flags assume the default boxing threshold (256 characters). When a run uses another
threshold and that is why a result was or was not boxed (a 10,244-character transcript is not
boxed under a threshold of 12,000), the flag does not apply: it is skipped and a note says why.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from helpers.cases.case_files import Case
from helpers.context.boxing import ReferenceRefused, find_references, reference_id
from helpers.context.policies import DEFAULT_BOX_THRESHOLD_CHARS
from helpers.context.resolve_tools import as_five_tool_name
from helpers.context.strategies import read_back, strategy_family
from helpers.display.marks import FAIL_MARK, PASS_MARK
from helpers.loop.records import ToolCallRecord, TurnRecord, output_limit_reason

#: A verdict as people read it: the mark (:mod:`helpers.display.marks`, drawn by every desktop font),
#: then the word, which carries the verdict; a no-break space joins them, so a narrow table cell
#: wraps before the mark, never between the mark and its word.
PASSED = f"{PASS_MARK}\u00a0passed"
FAILED = f"{FAIL_MARK}\u00a0failed"
#: The same in a cell of a table of many columns (``compare.md``'s cases × strategies), whose
#: legend says what they mean: as narrow as the numbers beside them, so the table fits 1280×720.
PASS = f"{PASS_MARK}\u00a0pass"
FAIL = f"{FAIL_MARK}\u00a0fail"


def verdict_text(passed: bool, *, short: bool = False) -> str:
    """:data:`PASSED` or :data:`FAILED` (``short``: :data:`PASS` or :data:`FAIL`): a verdict
    in words, for a title or a table cell."""
    if short:
        return PASS if passed else FAIL
    return PASSED if passed else FAILED


@dataclass
class Validation:
    """The verdict on one run: ``passed`` and, if not, every reason."""

    passed: bool
    reasons: list[str] = field(default_factory=list)
    sinks_exact: bool | None = None  # None: the case has no sink checks
    notes: list[str] = field(default_factory=list)  # expectations that did not apply, and why

    def summary(self) -> str:
        if not self.passed:
            return "; ".join(self.reasons)
        return "pass" + (f" ({'; '.join(self.notes)})" if self.notes else "")

    def verdict(self) -> str:
        """The verdict for a title, in words: ``✓ passed`` (with any notes in brackets) or
        ``✗ failed: `` and the reasons (see :data:`PASSED`)."""
        if not self.passed:
            return f"{FAILED}: " + "; ".join(self.reasons)
        return PASSED + (f" ({'; '.join(self.notes)})" if self.notes else "")


def _returned_refs(calls: list[ToolCallRecord], strategy: str) -> list[set[str]]:
    """For each call, the reference ids returned by the calls before it (each result read by
    ``strategy``'s reader, the strategy that presented it)."""
    seen: set[str] = set()
    before: list[set[str]] = []
    for call in calls:
        before.append(set(seen))
        shown = read_back(call.id, call.result, strategy)
        if shown.kind == "boxed" and shown.uri:
            try:
                ref = reference_id(shown.uri)
            except ReferenceRefused:
                ref = None
            if ref:
                seen.add(ref)
    return before


def _input_refs(call: ToolCallRecord, earlier: set[str]) -> bool:
    try:
        args = json.loads(call.arguments or "{}")
        return any(ref in earlier for ref in find_references(args))
    except (ValueError, ReferenceRefused):
        return False


def _is_resolve(tool_name: str) -> bool:
    return tool_name.startswith("internal_resource")


#: ``internal_resource(op=...)`` (the one resolve tool) under the name of the five-tool form the
#: cases are written with.
def case_tool_name(call: ToolCallRecord) -> str:
    """The tool name a case's expectations use for ``call``: a call to the one resolve tool is
    named after its operation (``internal_resource`` with ``op="grep"`` is
    ``internal_resource_grep``)."""
    return as_five_tool_name(call.name, call.arguments)


def _at(threshold: int | None) -> str:
    return "under a token threshold" if threshold is None or threshold < 0 else f"at {threshold:,}"


def _threshold_moved(call: ToolCallRecord, threshold: int | None) -> bool:
    """The box design's rule, not the 256-character threshold the cases are written for,
    decided whether this output was boxed. ``threshold`` is the design's threshold in characters,
    or ``-1`` for a design that counts tokens (then any real tool's output may have moved)."""
    if threshold is None or threshold == DEFAULT_BOX_THRESHOLD_CHARS or call.output_chars is None:
        return False
    if threshold < 0:
        if _is_resolve(call.name) or call.result_kind not in ("boxed", "inline"):
            return False
        return (call.output_chars > DEFAULT_BOX_THRESHOLD_CHARS) != (call.result_kind == "boxed")
    low, high = sorted((threshold, DEFAULT_BOX_THRESHOLD_CHARS))
    return low < call.output_chars <= high


def _flag_problems(
    expected: dict[str, Any],
    call: ToolCallRecord,
    earlier: set[str],
    *,
    threshold: int | None = None,
    sources: list[ToolCallRecord] | None = None,
    notes: list[str] | None = None,
) -> list[str]:
    problems = []
    want_result = expected.get("opaque_id_result")
    if want_result is not None and (call.result_kind == "boxed") != bool(want_result):
        if _threshold_moved(call, threshold):
            if notes is not None:
                notes.append(
                    f"{call.name}: its {call.output_chars:,}-char result would "
                    f"{'' if want_result else 'not '}be boxed at the default threshold of "
                    f"{DEFAULT_BOX_THRESHOLD_CHARS}; {_at(threshold)} the reference check does "
                    "not apply"
                )
        else:
            seen = "a reference" if call.result_kind == "boxed" else f"a {call.result_kind} value"
            problems.append(
                f"{call.name}: expected its result to be {'a' if want_result else 'no'} "
                f"reference, the model saw {seen}"
            )
    want_input = expected.get("opaque_id_input")
    if want_input is not None and _input_refs(call, earlier) != bool(want_input):
        if any(_threshold_moved(s, threshold) for s in sources or []):
            if notes is not None:
                notes.append(
                    f"{call.name}: its input would {'' if want_input else 'not '}be a reference "
                    f"at the default threshold; {_at(threshold)} the check does not apply"
                )
        else:
            problems.append(
                f"{call.name}: expected {'a reference' if want_input else 'plain values'} as "
                f"input, got {'a reference' if not want_input else 'plain values'}"
            )
    return problems


@dataclass
class _Context:
    """What flag checks need besides the call: the threshold in force and where notes go."""

    threshold: int | None
    notes: list[str]
    sources: dict[int, list[ToolCallRecord]]  # id(call) -> the calls that ran before it

    def problems(self, entry: dict[str, Any], call: ToolCallRecord, refs: set[str]) -> list[str]:
        return _flag_problems(
            entry,
            call,
            refs,
            threshold=self.threshold,
            sources=self.sources.get(id(call), []),
            notes=self.notes,
        )


def _check_ordered(
    expected: list[dict[str, Any]],
    calls: list[ToolCallRecord],
    earlier: list[set[str]],
    context: _Context,
) -> list[str]:
    names = [case_tool_name(c) for c in calls]
    want = [e["tool_name"] for e in expected]
    if names != want:
        return [f"expected calls {want}, got {names}"]
    problems: list[str] = []
    for entry, call, refs in zip(expected, calls, earlier, strict=True):
        problems += context.problems(entry, call, refs)
    return problems


def _check_counts(
    expected: list[dict[str, Any]],
    calls: list[ToolCallRecord],
    earlier: list[set[str]],
    context: _Context,
) -> list[str]:
    problems: list[str] = []
    want = Counter(e["tool_name"] for e in expected)
    flexible = {e["tool_name"] for e in expected if e.get("allow_multiple")}
    got = Counter(case_tool_name(c) for c in calls)
    for name, count in want.items():
        if got[name] < count or (name not in flexible and got[name] != count):
            problems.append(
                f"expected {name} {count}{'+' if name in flexible else ''} time(s), got {got[name]}"
            )
    pool = list(zip(calls, earlier, strict=True))
    quiet = _Context(context.threshold, [], context.sources)  # trying matches: no notes yet
    for entry in expected:  # each expectation needs its own call that satisfies its flags
        match = next(
            (
                i
                for i, (c, refs) in enumerate(pool)
                if case_tool_name(c) == entry["tool_name"] and not quiet.problems(entry, c, refs)
            ),
            None,
        )
        if match is None:
            candidates = [(c, refs) for c, refs in pool if case_tool_name(c) == entry["tool_name"]]
            if candidates:
                problems += context.problems(entry, *candidates[0])
        else:
            context.problems(entry, *pool[match])  # for its notes
            pool.pop(match)
    return problems


def _calls_named(calls: list[ToolCallRecord], spec: str) -> list[ToolCallRecord]:
    """Calls matching ``name`` (all of them) or ``name#N`` (the N-th, from 1)."""
    name, _, nth = spec.partition("#")
    named = [c for c in calls if case_tool_name(c) == name]
    if not nth:
        return named
    index = int(nth) - 1
    return named[index : index + 1]


def _check_sinks(case: Case, calls: list[ToolCallRecord]) -> tuple[list[str], bool | None]:
    if not case.sink_exact:
        return [], None
    problems = []
    for sink in case.sink_exact:
        tool, argument, source = sink["tool_name"], sink["argument"], sink["source"]
        source_call = next((c for c in _calls_named(calls, source) if c.output_sha256), None)
        if source_call is None:
            problems.append(f"sink check: no successful {source} call to compare with")
            continue
        sinks = [c for c in _calls_named(calls, tool) if argument in c.received_sha256]
        if not any(c.received_sha256[argument] == source_call.output_sha256 for c in sinks):
            trimmed = source_call.output_sha256_trimmed
            if not sinks:
                what = "was never called"
            elif trimmed and any(c.received_sha256_trimmed.get(argument) == trimmed for c in sinks):
                what = "received the same text but for its final newline(s)"
            else:
                what = "received other bytes"
            problems.append(
                f"sink check: {tool}.{argument} is not byte-exact {source} output ({what})"
            )
    return problems, not problems


def validate(case: Case, record: TurnRecord) -> Validation:
    """Check ``record`` (a turn run on ``case.prompt``) against the case's expectations."""
    reasons: list[str] = []
    notes: list[str] = []
    limit = output_limit_reason(record.model_calls)
    if limit and record.ok:  # the limit comes first: it is why the calls went wrong
        reasons.append(limit)  # (a turn it ended says so in its error)
    if not record.ok:
        reasons.append(f"no answer: {record.error or record.status}")
    calls = [c for c in record.tool_calls if c.ran]
    run_as = {record.strategy, strategy_family(record.strategy)}
    applies = case.strategies is None or bool(run_as & set(case.strategies))
    expected_calls, forbidden_tools = case.tool_calls, case.forbidden_tools
    threshold = record.box_threshold_chars
    if threshold is None and record.box_rule:  # a design that counts tokens
        threshold = -1
    moved = [c for c in calls if _threshold_moved(c, threshold)]
    if applies and moved:  # what the case says about resolve tools assumes the default threshold
        expected_calls = [e for e in expected_calls if not _is_resolve(e["tool_name"])]
        forbidden_tools = [t for t in forbidden_tools if not _is_resolve(t)]
        if expected_calls != case.tool_calls or forbidden_tools != case.forbidden_tools:
            notes.append(
                f"the case's expectations about resolve tools assume the default threshold of "
                f"{DEFAULT_BOX_THRESHOLD_CHARS}; {_at(threshold)} they do not apply"
            )
    if applies:
        forbidden = sorted({case_tool_name(c) for c in record.tool_calls} & set(forbidden_tools))
        if forbidden:
            reasons.append(f"forbidden tool(s) called: {', '.join(forbidden)}")
        if not case.tool_calls:
            if record.tool_calls:
                reasons.append(
                    f"no tool calls allowed, got {[case_tool_name(c) for c in record.tool_calls]}"
                )
        else:
            named = {e["tool_name"] for e in expected_calls}
            if moved:
                named = {n for n in named if not _is_resolve(n)}
            earlier_all = _returned_refs(record.tool_calls, record.strategy)
            relevant = [
                (c, e)
                for c, e in zip(record.tool_calls, earlier_all, strict=True)
                if case_tool_name(c) in named and c.ran
            ]
            matched, earlier = [c for c, _ in relevant], [e for _, e in relevant]
            ran = [c for c in record.tool_calls if c.ran]
            context = _Context(
                threshold,
                notes,
                {id(c): ran[: ran.index(c)] for c in matched},
            )
            if moved:  # the model may also have read what it would not have had to at 256
                kept = [i for i, c in enumerate(matched) if not _is_resolve(c.name)]
                matched, earlier = [matched[i] for i in kept], [earlier[i] for i in kept]
            if any(e.get("allow_multiple") for e in expected_calls):
                reasons += _check_counts(expected_calls, matched, earlier, context)
            else:
                reasons += _check_ordered(expected_calls, matched, earlier, context)
    answer = record.answer or ""
    for needle in case.answer_contains:
        if needle not in answer:
            reasons.append(f"answer lacks {needle!r}")
    sink_problems, sinks_exact = _check_sinks(case, calls)
    reasons += sink_problems
    return Validation(
        passed=not reasons,
        reasons=reasons,
        sinks_exact=sinks_exact,
        notes=list(dict.fromkeys(notes)),
    )
