"""The tool-output store: every tool dispatch, persisted through SQLAlchemy.

:class:`ToolOutputStore` is one object made of the store's jobs, each in a module of its own:

- :mod:`helpers.store.schema`: the tables (tool outputs and their chunks, threads and their
  messages, checkpoint results) and the constants their columns are sized by;
- :mod:`helpers.store.database`: opening a database safely (the URL, the engine, the checks and
  modes of a SQLite file, the tables created or migrated);
- :mod:`helpers.store.writing`: outputs logged, threads and their messages, checkpoint runs,
  pruning and giving disk space back;
- :mod:`helpers.store.reading`: rows and values read back, whole or in character ranges;
- :mod:`helpers.store.quotas`: the bytes a thread holds, checked against its quota as it writes.
"""

from __future__ import annotations

from helpers.store.database import DEFAULT_BUSY_TIMEOUT_MS, default_db_url, open_engine
from helpers.store.quotas import StoreQuotas
from helpers.store.reading import StoreReading
from helpers.store.writing import StoreWriting


class ToolOutputStore(StoreWriting, StoreReading, StoreQuotas):
    """Persist tool outputs and read them back, whole or in character ranges.

    Args:
        url: a SQLAlchemy database URL; default :func:`~helpers.store.database.default_db_url`.
            A SQLite file's folder is created if missing (mode 0700), the file itself with mode
            0600; an existing file of the current user, and its ``-wal``/``-shm``/``-journal``
            files, are made 0600.
        busy_timeout_ms: how long a SQLite writer waits for a lock before raising
            ``sqlalchemy.exc.OperationalError`` ("database is locked").

    The tables are created if they do not exist, so a store opened again on the same file (a
    kernel restart, a new process) sees every row written before; a database made by an earlier
    version is upgraded through Alembic (:mod:`helpers.store.migrations`), and ``migrated`` says what
    was done (``current``, ``created`` or ``upgraded from <revision>``).

    Where each job lives: opening the database in :mod:`helpers.store.database`
    (:func:`~helpers.store.database.open_engine`); the methods that write (``log_tool``,
    ``ensure_thread``, ``append_message``, ``log_checkpoint``, ``prune``, ``reclaim_disk``) in
    :class:`~helpers.store.writing.StoreWriting`; those that read (``get…``, ``list…``,
    ``read…``, ``count``, ``ref_ids``, the threads' and checkpoints' readers, ``disk_bytes``) in
    :class:`~helpers.store.reading.StoreReading`; ``thread_bytes`` and the quota a write is
    checked against in :class:`~helpers.store.quotas.StoreQuotas`; the tables in
    :mod:`helpers.store.schema`.

    Raises:
        ValueError: a SQLite URL names a file that is not a SQLite database, or another
            application's database (it is left as it was, mode included:
            :func:`~helpers.store.database.refuse_non_sqlite_file`).
    """

    def __init__(
        self, url: str | None = None, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS
    ) -> None:
        self.url = url or default_db_url()
        self.engine, self.migrated = open_engine(self.url, busy_timeout_ms=busy_timeout_ms)

    def __repr__(self) -> str:
        return f"ToolOutputStore({self.engine.url.render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        """Release the connection pool (the data stays on disk)."""
        self.engine.dispose()
