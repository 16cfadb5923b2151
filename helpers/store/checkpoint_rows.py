"""Checkpoint runs summed up per attendee: what the store's ``checkpoint_progress`` and the
room's reader processes (:mod:`helpers.course.room_reader`) both report.

A module of its own, with no SQLAlchemy: each reader process of the instructor's view imports it,
and its start is part of what the instructor waits for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any


def as_utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime (SQLite hands back naive ones; the store only ever
    writes UTC)."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def checkpoint_summary(rows: Iterable[Sequence[Any]]) -> dict[str, dict[str, Any]]:
    """``checkpoint_results`` rows ``(attendee, notebook, todo, passed, created_at)``, oldest
    first, summed up per attendee: ``passed`` (the ``"NN.T"`` TODOs passed at least once,
    sorted), ``runs`` and ``last`` (the newest run's time, UTC; ``None`` when no row has one).

    Rows are read as they are, never trusted: a row without a time still counts as a run, and
    a pass counts only with a notebook (text) and a TODO number (an int)."""
    progress: dict[str, dict[str, Any]] = {}
    for attendee, notebook, todo, passed, at in rows:
        entry = progress.setdefault(attendee, {"passed": set(), "runs": 0, "last": None})
        entry["runs"] += 1
        if isinstance(at, datetime):
            when = as_utc(at)
            entry["last"] = when if entry["last"] is None else max(entry["last"], when)
        if passed is True and isinstance(notebook, str) and type(todo) is int:
            entry["passed"].add(f"{notebook}.{todo}")
    for entry in progress.values():
        entry["passed"] = sorted(entry["passed"])
    return progress
