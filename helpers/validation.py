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

Extensions: ``strategies`` limits the checks above to those strategies (the others check only
``answer_contains`` and ``sink_exact``); ``answer_contains`` lists strings the answer must hold;
``sink_exact`` entries ``{tool_name, argument, source}`` require that the value ``tool_name``
really received in ``argument`` (after unboxing) is byte for byte the full output of the earlier
``source`` call (compared by SHA-256 of the UTF-8 bytes). ``name#N`` names the N-th call of a
tool (from 1), when a case calls it more than once.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from helpers.agent import ToolCallRecord, TurnRecord
from helpers.boxing import ReferenceRefused, find_references, reference_id
from helpers.cases import Case


@dataclass
class Validation:
    """The verdict on one run: ``passed`` and, if not, every reason."""

    passed: bool
    reasons: list[str] = field(default_factory=list)
    sinks_exact: bool | None = None  # None: the case has no sink checks

    def summary(self) -> str:
        return "pass" if self.passed else "; ".join(self.reasons)


def _returned_refs(calls: list[ToolCallRecord]) -> list[set[str]]:
    """For each call, the reference ids returned by the calls before it."""
    seen: set[str] = set()
    before: list[set[str]] = []
    for call in calls:
        before.append(set(seen))
        if call.result_kind == "boxed":
            try:
                ref = reference_id(call.result)
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


def _flag_problems(expected: dict[str, Any], call: ToolCallRecord, earlier: set[str]) -> list[str]:
    problems = []
    want_result = expected.get("opaque_id_result")
    if want_result is not None and (call.result_kind == "boxed") != bool(want_result):
        seen = "a reference" if call.result_kind == "boxed" else f"a {call.result_kind} value"
        problems.append(
            f"{call.name}: expected its result to be {'a' if want_result else 'no'} reference, "
            f"the model saw {seen}"
        )
    want_input = expected.get("opaque_id_input")
    if want_input is not None and _input_refs(call, earlier) != bool(want_input):
        problems.append(
            f"{call.name}: expected {'a reference' if want_input else 'plain values'} as input, "
            f"got {'a reference' if not want_input else 'plain values'}"
        )
    return problems


def _check_ordered(
    expected: list[dict[str, Any]], calls: list[ToolCallRecord], earlier: list[set[str]]
) -> list[str]:
    names = [c.name for c in calls]
    want = [e["tool_name"] for e in expected]
    if names != want:
        return [f"expected calls {want}, got {names}"]
    problems: list[str] = []
    for entry, call, refs in zip(expected, calls, earlier, strict=True):
        problems += _flag_problems(entry, call, refs)
    return problems


def _check_counts(
    expected: list[dict[str, Any]], calls: list[ToolCallRecord], earlier: list[set[str]]
) -> list[str]:
    problems: list[str] = []
    want = Counter(e["tool_name"] for e in expected)
    flexible = {e["tool_name"] for e in expected if e.get("allow_multiple")}
    got = Counter(c.name for c in calls)
    for name, count in want.items():
        if got[name] < count or (name not in flexible and got[name] != count):
            problems.append(
                f"expected {name} {count}{'+' if name in flexible else ''} time(s), got {got[name]}"
            )
    pool = list(zip(calls, earlier, strict=True))
    for entry in expected:  # each expectation needs its own call that satisfies its flags
        match = next(
            (
                i
                for i, (c, refs) in enumerate(pool)
                if c.name == entry["tool_name"] and not _flag_problems(entry, c, refs)
            ),
            None,
        )
        if match is None:
            candidates = [(c, refs) for c, refs in pool if c.name == entry["tool_name"]]
            if candidates:
                problems += _flag_problems(entry, *candidates[0])
        else:
            pool.pop(match)
    return problems


def _calls_named(calls: list[ToolCallRecord], spec: str) -> list[ToolCallRecord]:
    """Calls matching ``name`` (all of them) or ``name#N`` (the N-th, from 1)."""
    name, _, nth = spec.partition("#")
    named = [c for c in calls if c.name == name]
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
            what = "was never called" if not sinks else "received other bytes"
            problems.append(
                f"sink check: {tool}.{argument} is not byte-exact {source} output ({what})"
            )
    return problems, not problems


def validate(case: Case, record: TurnRecord) -> Validation:
    """Check ``record`` (a turn run on ``case.prompt``) against the case's expectations."""
    reasons: list[str] = []
    if not record.ok:
        reasons.append(f"no answer: {record.error or record.status}")
    calls = [c for c in record.tool_calls if c.ran]
    applies = case.strategies is None or record.strategy in case.strategies
    if applies:
        forbidden = sorted({c.name for c in record.tool_calls} & set(case.forbidden_tools))
        if forbidden:
            reasons.append(f"forbidden tool(s) called: {', '.join(forbidden)}")
        if not case.tool_calls:
            if record.tool_calls:
                reasons.append(f"no tool calls allowed, got {[c.name for c in record.tool_calls]}")
        else:
            named = {e["tool_name"] for e in case.tool_calls}
            earlier_all = _returned_refs(record.tool_calls)
            relevant = [
                (c, e)
                for c, e in zip(record.tool_calls, earlier_all, strict=True)
                if c.name in named and c.ran
            ]
            matched, earlier = [c for c, _ in relevant], [e for _, e in relevant]
            if any(e.get("allow_multiple") for e in case.tool_calls):
                reasons += _check_counts(case.tool_calls, matched, earlier)
            else:
                reasons += _check_ordered(case.tool_calls, matched, earlier)
    answer = record.answer or ""
    for needle in case.answer_contains:
        if needle not in answer:
            reasons.append(f"answer lacks {needle!r}")
    sink_problems, sinks_exact = _check_sinks(case, calls)
    reasons += sink_problems
    return Validation(passed=not reasons, reasons=reasons, sinks_exact=sinks_exact)
