"""The offline model's plan language: the steps a case's ``offline_plan`` may hold, checked.

A plan is a list of steps, each with exactly one of ``call``, ``tail``, ``find``, ``first``,
``read`` or ``answer`` (see :mod:`helpers.models.offline_plan` for what each means), ending in an answer.
Cases (:mod:`helpers.cases.case_files`) check their plans with :func:`check_plan` when they are loaded; the
offline model carries them out.
"""

from __future__ import annotations

from typing import Any

Plan = list[dict[str, Any]]


class PlanError(ValueError):
    """A plan step is malformed (unknown intent, missing key, result number out of range)."""


def check_plan(plan: Any) -> Plan:
    """``plan`` if it is a list of known steps with their keys; else raise :class:`PlanError`."""
    required = {
        "call": (),
        "tail": ("as",),
        "find": ("pattern", "as"),
        "first": ("pattern", "as"),
        "read": ("as",),
        "answer": (),
    }
    if not isinstance(plan, list) or not plan:
        raise PlanError("offline_plan must be a non-empty list of steps")
    for number, step in enumerate(plan, 1):
        kinds = [k for k in required if isinstance(step, dict) and k in step]
        if len(kinds) != 1:
            raise PlanError(
                f"step {number} must have exactly one of {', '.join(required)}: {step!r}"
            )
        missing = [k for k in required[kinds[0]] if k not in step]
        if missing:
            raise PlanError(f"step {number} ({kinds[0]}) is missing {', '.join(missing)}")
    if "answer" not in plan[-1]:
        raise PlanError("the last step of offline_plan must be an answer")
    return plan
