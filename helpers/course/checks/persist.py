"""Notebook 02's checkpoints: ``log_tool`` writes one row a reader finds whole, and ``prune``
deletes exactly the rows its filters name.

The reader is the library's :class:`~helpers.store.tool_outputs.ToolOutputStore` on the same SQLite
file, and ``prune`` is compared with :meth:`ToolOutputStore.prune` on the same rows.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st
from sqlalchemy import event, insert, select
from sqlalchemy.exc import IntegrityError

from helpers.base import ids
from helpers.course.checkpoint import (
    Broken,
    Checkpoint,
    Property,
    Raised,
    attempt,
    attempt_or,
    expect,
    local_time_zone,
    short,
)
from helpers.course.checks.inputs import arguments, nonce, outputs, scratch_store, texts
from helpers.store.schema import ToolOutput
from helpers.store.tool_outputs import ToolOutputStore

#: Local time zones a checkpoint runs in: a naive local time is 14 hours off in the second.
ZONES = ("UTC", "Pacific/Kiritimati", "Etc/GMT+12", "Asia/Kathmandu")
#: A ref_id as the library makes it: URL-safe, at least 16 characters (12 random bytes).
REF_ID_RE = re.compile(r"[A-Za-z0-9_-]{16,}")
#: How far ``created_at`` may be from the moment of the call.
CLOCK_SLACK = timedelta(seconds=5)


@dataclass(frozen=True)
class LogCase:
    """One dispatch to log, and the local time zone of the machine."""

    thread_id: str
    tool_call_id: str
    tool_name: str
    tool_args: dict[str, Any]
    tool_output: str
    zone: str

    def shown(self) -> str:
        return (
            f"log_tool(engine, {short(self.thread_id, 30)}, {self.tool_call_id!r}, "
            f"{self.tool_name!r}, {short(self.tool_args, 40)}, "
            f"{short(self.tool_output, 40)} [{len(self.tool_output):,} chars]) in TZ={self.zone}"
        )


log_cases = st.builds(
    LogCase,
    thread_id=texts(30, min_size=1),
    tool_call_id=st.from_regex(r"call_[A-Za-z0-9]{1,24}", fullmatch=True),
    tool_name=st.sampled_from(["yt_transcribe", "get_page", "run_sql", "deep_check"]),
    tool_args=arguments(),
    tool_output=outputs(),
    zone=st.sampled_from(ZONES),
)


class _LogToolChecks:
    """The properties of notebook 02's ``log_tool``, each run on one generated :class:`LogCase`
    against a scratch store (and a second one, where the same call must get another ref_id)."""

    def __init__(
        self, log_tool: Callable[..., Any], store: ToolOutputStore, other: ToolOutputStore
    ):
        self.log_tool = log_tool
        self.store = store
        self.other = other
        #: ``created_at`` as the attendee's code set it, before the database stored it
        self.given_times: list[datetime] = []

    def fresh(self) -> None:
        """Empty both stores: each input starts from what its shown line says, nothing logged
        by an earlier input (code that looks a tool_call_id up in every thread would trip over
        an earlier input's row, where no one could see it)."""
        for store in (self.store, self.other):
            store.clear_outputs()
        self.given_times.clear()

    def logged(self, case: LogCase, thread: str | None = None) -> tuple[str, Any, Any]:
        thread = thread or f"{case.thread_id}·{nonce()}"
        with local_time_zone(case.zone), times_given(self.given_times):
            row_id = attempt(
                self.log_tool,
                self.store.engine,
                thread,
                case.tool_call_id,
                case.tool_name,
                copy.deepcopy(case.tool_args),
                case.tool_output,
            )
        row = self.store.get(thread, case.tool_call_id, with_content=True)
        expect(
            row is not None,
            "a row found by (thread_id, tool_call_id) after log_tool returns",
            "no row: was the session committed, with this thread_id and tool_call_id?",
        )
        return thread, row_id, row

    def read_back_whole(self, case: LogCase) -> None:
        self.fresh()
        _, _, row = self.logged(case)
        try:
            args = json.loads(row.tool_args)
        except ValueError:
            args = None
        for field, want, got in (
            ("tool_name", case.tool_name, row.tool_name),
            ("kind", "tool_output", row.kind),
            ("tool_args (parsed back with json.loads)", case.tool_args, args),
            ("content (the full output)", case.tool_output, row.content),
        ):
            expect(want == got, f"{field} = {short(want, 60)}", f"{field} = {short(got, 60)}")

    def units(self, case: LogCase) -> None:
        self.fresh()
        _, _, row = self.logged(case)
        data = case.tool_output.encode("utf-8")
        for field, want, got in (
            ("n_chars (characters)", len(case.tool_output), row.n_chars),
            ("n_bytes (UTF-8 bytes)", len(data), row.n_bytes),
            ("sha256 (of the UTF-8 bytes)", ids.content_sha256(case.tool_output), row.sha256),
        ):
            expect(want == got, f"{field} = {want!r}", f"{field} = {got!r}")

    def utc_now(self, case: LogCase) -> None:
        self.fresh()
        before = datetime.now(UTC)
        _, _, row = self.logged(case)
        after = datetime.now(UTC)
        for given in self.given_times:  # SQLite drops the zone: look at what the code gave
            expect(
                given.tzinfo is not None,
                "an aware datetime in UTC, datetime.now(UTC)",
                f"a naive datetime, {given:%Y-%m-%d %H:%M:%S} (datetime.utcnow() or "
                "datetime.now() give one)",
            )
        ok = before - CLOCK_SLACK <= row.created_at <= after + CLOCK_SLACK
        expect(
            ok,
            f"created_at ≈ {before:%Y-%m-%d %H:%M:%S} UTC (datetime.now(UTC))",
            f"{row.created_at:%Y-%m-%d %H:%M:%S} UTC, "
            f"{(row.created_at - before).total_seconds() / 3600:+.1f} hours off",
        )

    def returns_id(self, case: LogCase) -> None:
        self.fresh()
        _, row_id, row = self.logged(case)
        expect(
            type(row_id) is int and row_id == row.id,
            f"the new row's id, the int {row.id}",
            short(row_id),
        )

    def unguessable(self, case: LogCase) -> None:
        self.fresh()
        thread, _, first = self.logged(case)
        # a second call, the same arguments and output (another id: ids are the next rule's)
        twin = dataclasses.replace(case, tool_call_id=f"{case.tool_call_id}b")
        try:
            _, _, second = self.logged(twin)
        except Raised as raised:
            if not (isinstance(raised.exc, IntegrityError) and "ref_id" in str(raised.exc)):
                raise
            raise Broken(
                "two different ref_ids for two calls with the same arguments and output",
                "the same ref_id twice: the database refused the second row (ref_id is unique)",
            ) from None
        with local_time_zone(case.zone):  # the same call, logged in another store
            attempt(
                self.log_tool,
                self.other.engine,
                thread,
                case.tool_call_id,
                case.tool_name,
                copy.deepcopy(case.tool_args),
                case.tool_output,
            )
        elsewhere = self.other.get(thread, case.tool_call_id)
        for ref in (first.ref_id, second.ref_id):
            expect(
                bool(REF_ID_RE.fullmatch(ref or "")),
                "a ref_id of at least 16 URL-safe characters (secrets.token_urlsafe(12))",
                short(ref),
            )
            expect(
                case.tool_call_id not in ref and ref not in first.sha256,
                "a random ref_id, not made from the call or its output",
                short(ref),
            )
        expect(
            first.ref_id != second.ref_id,
            "two different ref_ids for two calls with the same arguments and output",
            f"{first.ref_id!r} twice",
        )
        expect(
            elsewhere is not None and elsewhere.ref_id != first.ref_id,
            "another ref_id for the same call logged in another store (random, not made from "
            "the thread, the call or its output)",
            f"{first.ref_id!r} in both stores" if elsewhere else "no row in the other store",
        )

    def unique_per_thread(self, case: LogCase) -> None:
        self.fresh()
        thread, _, _ = self.logged(case)
        with local_time_zone(case.zone):
            again = attempt_or(
                IntegrityError,
                self.log_tool,
                self.store.engine,
                thread,
                case.tool_call_id,
                case.tool_name,
                {},
                "again",
            )
        if not isinstance(again, IntegrityError):
            raise Broken(
                "IntegrityError for a tool_call_id already logged in the thread",
                "a second row was stored",
            )
        expect(self.store.count(thread) == 1, "1 row in the thread", self.store.count(thread))
        other = f"{thread}·other"  # the same id in another thread: a new row
        with local_time_zone(case.zone):
            elsewhere = attempt_or(
                IntegrityError,
                self.log_tool,
                self.store.engine,
                other,
                case.tool_call_id,
                case.tool_name,
                {},
                "elsewhere",
            )
        expect(
            not isinstance(elsewhere, IntegrityError) and self.store.count(other) == 1,
            f"a new row for {case.tool_call_id!r} in another thread",
            f"IntegrityError: {short(str(elsewhere), 80)}"
            if isinstance(elsewhere, IntegrityError)
            else f"{self.store.count(other)} rows in the other thread",
        )


@contextlib.contextmanager
def times_given(seen: list[datetime]) -> Iterator[None]:
    """Collect, while the block runs, the ``created_at`` of every ``ToolOutput`` row the ORM
    inserts, as the code gave it (SQLAlchemy's mapper event ``before_insert``): a naive time
    and an aware one read back the same from SQLite, so only this shows which it was. A row
    inserted through Core (``insert(ToolOutput)``) is not seen."""

    def note(mapper: Any, connection: Any, target: ToolOutput) -> None:
        if isinstance(target.created_at, datetime):
            seen.append(target.created_at)

    event.listen(ToolOutput, "before_insert", note)
    try:
        yield
    finally:
        event.remove(ToolOutput, "before_insert", note)


def check_log_tool(log_tool: Callable[..., Any]) -> None:
    """Notebook 02, TODO 1: run the checkpoint of the attendee's ``log_tool(engine, thread_id,
    tool_call_id, tool_name, tool_args, tool_output) -> int``.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """
    with scratch_store("log_tool") as store, scratch_store("log_tool_other") as other:
        checks = _LogToolChecks(log_tool, store, other)

        def prop(statement: str, check: Callable[[LogCase], None], *terms: str) -> Property:
            return Property(statement, log_cases, check, LogCase.shown, terms=terms, examples=20)

        return Checkpoint(
            "02",
            1,
            "log_tool",
            [
                prop(
                    "the row is found by (thread_id, tool_call_id) and reads back whole: "
                    "tool_name, kind 'tool_output', the arguments as JSON text, the full output",
                    checks.read_back_whole,
                    "JSON text",
                    "kind",
                    "commit",
                ),
                prop(
                    "n_chars counts characters; n_bytes and sha256 are about the UTF-8 bytes",
                    checks.units,
                    "n_chars",
                    "n_bytes",
                    "UTF-8",
                ),
                prop(
                    "created_at is the moment of the call, an aware datetime in UTC, whatever "
                    "the local time zone",
                    checks.utc_now,
                    "UTC",
                    "time zone",
                    "aware",
                ),
                prop("log_tool returns the new row's integer id", checks.returns_id, "row's id"),
                prop(
                    "ref_id is unguessable: 16 or more random URL-safe characters, new each call, "
                    "never made from the call (the same call in another store gets another)",
                    checks.unguessable,
                    "secrets.token_urlsafe",
                    "never made from the call",
                ),
                prop(
                    "a tool_call_id is unique per thread: a second log in the same thread "
                    "raises IntegrityError; in another thread it is a new row",
                    checks.unique_per_thread,
                    "IntegrityError",
                    "another thread",
                ),
            ],
        ).run()


# -- prune ------------------------------------------------------------------------------------

#: Threads of the rows: the empty thread id is a thread like any other (code that tests a
#: filter by truth, ``if thread_id:``, takes it for no filter).
THREADS = ("t0", "t1", "")
AGES = (
    timedelta(seconds=30),
    timedelta(minutes=10),
    timedelta(hours=5),
    timedelta(hours=23),
    timedelta(hours=25),
    timedelta(days=3),
    timedelta(days=10),
)
#: Cut-offs at least 4 minutes above every younger age, so no row crosses one while the check
#: runs, however busy the machine (time only makes a row older: the margins that count are those
#: of the rows younger than a cut-off); ``timedelta(0)`` (every row older than now) is a filter,
#: not its absence.
CUTOFFS = (
    timedelta(0),
    timedelta(minutes=5),
    timedelta(hours=1),
    timedelta(days=1),
    timedelta(days=7),
)


def _age(age: timedelta) -> str:
    seconds = int(age.total_seconds())
    if not seconds:
        return "0"
    for unit, size in (("day", 86_400), ("hour", 3_600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' * (n != 1 and unit != 'min')}"
    return f"{seconds} s"


@dataclass(frozen=True)
class PruneCase:
    """Rows (thread, age) in the store, and one call of ``prune``."""

    rows: tuple[tuple[str, timedelta], ...]
    older_than: timedelta | None
    thread_id: str | None
    zone: str

    def call(self) -> str:
        older = "None" if self.older_than is None else f"timedelta({_age(self.older_than)})"
        return f"prune(engine, older_than={older}, thread_id={self.thread_id!r})"

    def matches(self) -> int:
        """How many rows the call's filters name (both filters: rows old AND in the thread)."""
        return sum(
            (self.older_than is None or age > self.older_than)
            and (self.thread_id is None or thread == self.thread_id)
            for thread, age in self.rows
        )

    def shown(self) -> str:
        rows = ", ".join(f"{t} {_age(a)} old" for t, a in self.rows) or "(none)"
        return f"{self.call()} in TZ={self.zone} over rows: {rows}"

    def describe(self, kept: set[int]) -> str:
        left = [f"{t} {_age(a)} old" for i, (t, a) in enumerate(self.rows) if i in kept]
        return ", ".join(left) or "(none)"


def prune_cases(
    older: st.SearchStrategy[Any], thread: st.SearchStrategy[Any], *, min_matches: int = 0
) -> Any:
    """Rows of :data:`THREADS` at :data:`AGES`, and a call; ``min_matches``: at least that many
    rows match the call's filters."""
    cases = st.builds(
        PruneCase,
        rows=st.lists(
            st.tuples(st.sampled_from(THREADS), st.sampled_from(AGES)), min_size=1, max_size=6
        ).map(tuple),
        older_than=older,
        thread_id=thread,
        zone=st.sampled_from(ZONES),
    )
    return cases.filter(lambda c: c.matches() >= min_matches) if min_matches else cases


def _fill(store: ToolOutputStore, case: PruneCase) -> None:
    now = datetime.now(UTC)
    store.clear_outputs()
    with store.engine.begin() as db:
        db.execute(
            insert(ToolOutput),
            [
                {
                    "id": i + 1,
                    "ref_id": ids.token_urlsafe(12),
                    "thread_id": thread,
                    "tool_call_id": f"call_{i}",
                    "tool_name": "run_sql",
                    "tool_args": "{}",
                    "content": "[]",
                    "n_chars": 2,
                    "n_bytes": 2,
                    "sha256": ids.content_sha256("[]"),
                    "kind": "tool_output",
                    "created_at": now - age,
                }
                for i, (thread, age) in enumerate(case.rows)
            ],
        )


@contextlib.contextmanager
def deletes_counted(store: ToolOutputStore) -> Iterator[list[int]]:
    """Count, while the block runs, the DELETE statements the engine sends for ``tool_outputs``:
    the list holds one number, each row-set an ``executemany`` sends counting as a statement
    (the ORM's ``session.delete(row)`` sends one row per parameter set). SQLAlchemy's
    ``before_cursor_execute`` event (docs: Core Events)."""
    seen = [0]

    def count(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool):
        words = statement.split()
        if len(words) > 2 and words[0].upper() == "DELETE" and "tool_outputs" in words[2]:
            seen[0] += len(parameters) if many else 1

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", count)


def _kept(store: ToolOutputStore) -> set[int]:
    with store.engine.connect() as db:
        return {row_id - 1 for row_id in db.scalars(select(ToolOutput.id))}


class _PruneChecks:
    """The properties of notebook 02's ``prune``, each run on one generated :class:`PruneCase`:
    the attendee's function and :meth:`ToolOutputStore.prune` on the same rows."""

    def __init__(self, prune: Callable[..., Any], store: ToolOutputStore):
        self.prune = prune
        self.store = store

    def outcome(self, case: PruneCase, yours: bool) -> tuple[int | str, set[int]]:
        gone, kept, _ = self.counted(case, yours)
        return gone, kept

    def counted(self, case: PruneCase, yours: bool) -> tuple[int | str, set[int], int]:
        """What a prune returned (``"ValueError"`` when it raised that), the rows left, and the
        DELETE statements it sent."""
        _fill(self.store, case)
        with deletes_counted(self.store) as deletes:
            if yours:
                with local_time_zone(case.zone):
                    got = attempt_or(
                        ValueError,
                        self.prune,
                        self.store.engine,
                        older_than=case.older_than,
                        thread_id=case.thread_id,
                    )
                gone = "ValueError" if isinstance(got, ValueError) else got
            else:
                try:
                    gone = self.store.prune(older_than=case.older_than, thread_id=case.thread_id)
                except ValueError:
                    gone = "ValueError"
        return gone, _kept(self.store), deletes[0]

    def same_rows(self, case: PruneCase) -> None:
        want_gone, want_kept = self.outcome(case, yours=False)
        got_gone, got_kept = self.outcome(case, yours=True)
        what = "raises ValueError" if want_gone == "ValueError" else f"{want_gone} deleted"
        said = "raised ValueError" if got_gone == "ValueError" else f"returned {short(got_gone)}"
        expect(
            got_kept == want_kept and (got_gone == "ValueError") == (want_gone == "ValueError"),
            f"{what}; left: {case.describe(want_kept)}",
            f"{said}; left: {case.describe(got_kept)}",
        )

    def one_delete(self, case: PruneCase) -> None:
        gone, _, deletes = self.counted(case, yours=True)
        expect(
            deletes == 1,
            f"one DELETE statement for the {case.matches()} matching rows",
            f"{deletes} DELETE statements ({short(gone)} returned)",
        )

    def returns_count(self, case: PruneCase) -> None:
        want_gone, _ = self.outcome(case, yours=False)
        got_gone, _ = self.outcome(case, yours=True)
        expect(
            got_gone == want_gone,
            f"{want_gone} (the number of rows deleted)",
            short(got_gone),
        )


def check_prune(prune: Callable[..., Any]) -> None:
    """Notebook 02, TODO 2: run the checkpoint of the attendee's ``prune(engine, older_than=None,
    thread_id=None) -> int`` against :meth:`ToolOutputStore.prune` on the same rows.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """
    with scratch_store("prune") as store:
        checks = _PruneChecks(prune, store)
        ages = st.sampled_from(CUTOFFS)
        threads = st.sampled_from(("t0", "t1", "", "T0", "t9"))

        def prop(statement: str, older: Any, thread: Any, check: Any, *terms: str) -> Property:
            return Property(
                statement,
                prune_cases(older, thread),
                check,
                PruneCase.shown,
                terms=terms,
                examples=25,
            )

        return Checkpoint(
            "02",
            2,
            "prune",
            [
                prop(
                    "with no filter, prune raises ValueError and deletes nothing",
                    st.none(),
                    st.none(),
                    checks.same_rows,
                    "ValueError",
                ),
                prop(
                    "by age alone: exactly the rows older than older_than go (timedelta(0): "
                    "every row older than now), in any time zone",
                    ages,
                    st.none(),
                    checks.same_rows,
                    "older than",
                    "UTC",
                    "timedelta(0)",
                ),
                prop(
                    "by thread alone: every row of that thread goes, and only those (the thread "
                    "'' too: a filter is given when it is not None)",
                    st.none(),
                    threads,
                    checks.same_rows,
                    "thread",
                    "is not None",
                ),
                prop(
                    "with both filters: only rows that are old AND in the thread go",
                    ages,
                    threads,
                    checks.same_rows,
                    "AND",
                ),
                Property(
                    "one DELETE statement deletes every matching row (never a row at a time)",
                    prune_cases(st.one_of(st.none(), ages), threads, min_matches=2),
                    checks.one_delete,
                    PruneCase.shown,
                    terms=("one `DELETE` statement",),
                    examples=15,
                ),
                prop(
                    "prune returns how many rows it deleted",
                    st.one_of(st.none(), ages),
                    threads,
                    checks.returns_count,
                    "how many",
                ),
            ],
        ).run()
