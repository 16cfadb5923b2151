"""The programs the offline model writes in code mode: a plan's calls and notes as JavaScript.

In code mode (:mod:`helpers.context.code_mode`) the offline model does not call the tools one
model call at a time: it writes one program that carries out the whole plan (:mod:`helpers.cases.plans`)
and returns only what the plan's answer uses, as an ideal model would. Each step becomes
statements:

- ``{call: TOOL, args: {...}}`` (the N-th call): ``const resultN = await tools.TOOL({...})``, an
  argument ``{result: M}`` passing the variable ``resultM`` (the value itself, never read into
  the context);
- ``{tail: N, chars: K, as: NAME}``: ``const NAME = resultN.slice(-K)``;
- ``{find: N, pattern: P, window: W, as: NAME}``: the matching lines, each with ``W`` lines
  around it;
- ``{first: N, pattern: P, as: NAME}``: the first matching line, or ``(no match)``;
- ``{read: N, as: NAME}``: ``const NAME = resultN``;
- ``{answer: TEXT}``: ``return {...}``: every ``resultN`` and ``NAME`` the answer names.

Lines are split as Python's ``str.splitlines`` splits them, and patterns are JavaScript regular
expressions (the cases' patterns mean the same in both).
"""

from __future__ import annotations

import json
import re
from typing import Any

from helpers.cases.plans import Plan, PlanError

#: The line breaks of Python's ``str.splitlines``, as a JavaScript regular expression.
_LINE_BREAK_JS = r"/\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/"

_HELPERS = {
    "lines": (
        "const lines = (text) => {\n"
        f"  const parts = String(text).split({_LINE_BREAK_JS});\n"
        "  if (parts.length && parts[parts.length - 1] === '') parts.pop();\n"
        "  return parts;\n"
        "};"
    ),
    "matchingLines": (
        "const matchingLines = (text, regex, window) => {\n"
        "  const all = lines(text), keep = new Set();\n"
        "  all.forEach((line, i) => {\n"
        "    if (!regex.test(line)) return;\n"
        "    for (let j = Math.max(0, i - window); j <= Math.min(all.length - 1, i + window); j++)"
        " keep.add(j);\n"
        "  });\n"
        "  return [...keep].sort((a, b) => a - b).map((i) => all[i]);\n"
        "};"
    ),
    "firstLine": (
        "const firstLine = (text, regex) => "
        "lines(text).find((line) => regex.test(line)) ?? '(no match)';"
    ),
}

_PLACEHOLDER_RE = re.compile(r"\{(\w+)(?:\|\w+)?\}")


def _js_value(value: Any, calls_so_far: int) -> str:
    """A plan argument as a JavaScript expression: ``{result: N}`` is the variable ``resultN``."""
    if isinstance(value, dict) and set(value) == {"result"}:
        number = value["result"]
        if not isinstance(number, int) or not 1 <= number <= calls_so_far:
            raise PlanError(f"result {number!r} does not exist yet (calls so far: {calls_so_far})")
        return f"result{number}"
    if isinstance(value, dict):
        items = (f"{json.dumps(str(k))}: {_js_value(v, calls_so_far)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_js_value(v, calls_so_far) for v in value) + "]"
    return json.dumps(value)


def _regex(pattern: str) -> str:
    return f"new RegExp({json.dumps(pattern)})"


def _note(step: dict[str, Any], calls: int) -> tuple[str, str]:
    """A note step as ``(statement, the helper it uses or "")``."""
    name = step["as"]
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise PlanError(f"a note's name must be an identifier, got {name!r}")
    for key in ("tail", "find", "first", "read"):
        if key in step:
            source = _js_value({"result": step[key]}, calls)
            break
    if "tail" in step:
        return f"const {name} = {source}.slice(-{int(step.get('chars', 200))});", ""
    if "find" in step:
        window = int(step.get("window", 0))
        expr = f"matchingLines({source}, {_regex(step['pattern'])}, {window})"
        return f"const {name} = {expr};", "matchingLines"
    if "first" in step:
        return f"const {name} = firstLine({source}, {_regex(step['pattern'])});", "firstLine"
    return f"const {name} = {source};", ""


def program_for(plan: Plan) -> str:
    """The JavaScript program (an async function's body, for ``run_program``) that carries out
    ``plan``'s calls and notes and returns an object of what its answer names.

    Raises:
        PlanError: the plan names a result no call made, a note that is not an identifier, or
            has no answer step.
    """
    statements: list[str] = []
    used: list[str] = []
    calls = 0
    for step in plan:
        if "call" in step:
            calls += 1
            args = _js_value(step.get("args", {}), calls - 1)
            statements.append(f"const result{calls} = await tools.{step['call']}({args});")
        elif "answer" in step:
            names = list(dict.fromkeys(m[1] for m in _PLACEHOLDER_RE.finditer(step["answer"])))
            statements.append("return {" + ", ".join(names) + "};")
            break
        else:
            statement, helper = _note(step, calls)
            if helper and helper not in used:
                used += [h for h in ("lines", helper) if h not in used]
            statements.append(statement)
    else:
        raise PlanError("the plan ends without an answer step")
    return "\n".join([*(_HELPERS[h] for h in used), *statements])
