"""The store's quotas: the bytes a thread holds, and the check that a write stays within the
thread's quota, made in the write's own transaction so writers at once cannot pass it together.
"""

from __future__ import annotations

from functools import cache

from sqlalchemy import Connection, LargeBinary, Select, bindparam, cast, func, select

from helpers.store.database import StoreDatabase
from helpers.store.schema import ToolOutput, thread_key


class StoreQuotaExceeded(ValueError):
    """A thread's calls and outputs would pass its quota of bytes (``max_thread_bytes`` of
    :meth:`helpers.store.writing.StoreWriting.log_tool`); nothing of the call was stored."""


class StoreQuotas(StoreDatabase):
    """The store's quotas: a thread's bytes held, and the check a write makes against its quota
    (:meth:`~helpers.store.writing.StoreWriting.log_tool`'s ``max_thread_bytes``)."""

    def _check_quota(self, connection: Connection, thread_id: str, adding: int, quota: int) -> None:
        """Raise :class:`StoreQuotaExceeded` if ``adding`` more bytes would pass the thread's
        ``quota`` (UTF-8 bytes of arguments and outputs), in the write's own transaction.

        The check and the write are one serialised step, so writers at once (six kernels on
        one thread) cannot each see room for their output and pass the quota together: on
        SQLite the transaction begins ``IMMEDIATE`` (it holds the database's write lock before
        it reads the total; sqlite.org/lang_transaction.html), on PostgreSQL it locks the
        store's ``tool_outputs`` table against other writers until it commits (``SHARE ROW
        EXCLUSIVE``; readers go on). Not an advisory lock: its key is open to every role of the
        database, so another attendee of a room could hold it."""
        if connection.dialect.name == "sqlite":
            if not connection.connection.dbapi_connection.in_transaction:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
        elif connection.dialect.name == "postgresql":
            table = connection.dialect.identifier_preparer.format_table(ToolOutput.__table__)
            connection.exec_driver_sql(f"LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE")

        held = self._bytes_held(connection, thread_id)
        if held + adding > quota:
            raise StoreQuotaExceeded(
                f"the thread holds {held:,} bytes of tool calls and outputs; {adding:,} more "
                f"would pass its quota of {quota:,} bytes, so this call and its output were not "
                "stored"
            )

    @staticmethod
    def _bytes_held(connection: Connection, thread_id: str) -> int:
        query = _bytes_held_query(connection.dialect.name)
        return int(connection.scalar(query, {"key": thread_key(thread_id)}) or 0)

    def thread_bytes(self, thread_id: str) -> int:
        """UTF-8 bytes the thread holds: its calls' arguments and their outputs (the rows'
        ``n_bytes``; rows from before that column count their characters)."""
        with self.engine.connect() as connection:
            return self._bytes_held(connection, thread_id)


@cache
def _bytes_held_query(dialect: str) -> Select[tuple[int]]:
    """The sum of a thread's bytes (its ``key`` a bound parameter) in ``dialect``'s SQL, built
    once: every logged call runs it, and building the expression cost more than running it."""
    if dialect == "sqlite":  # length() of a BLOB counts bytes
        args_bytes = func.length(cast(ToolOutput.tool_args, LargeBinary))
    else:  # PostgreSQL (and SQL's standard name)
        args_bytes = func.octet_length(ToolOutput.tool_args)
    output_bytes = func.coalesce(ToolOutput.n_bytes, ToolOutput.n_chars)
    total = func.coalesce(func.sum(output_bytes + func.coalesce(args_bytes, 0)), 0)
    return select(total).where(ToolOutput.thread_key == bindparam("key"))
