"""From the first release to the current schema: long values in chunks (``n_chunks``,
``tool_output_chunks``), the provider's call id, thread keys (thread ids of any length), and
the ``threads`` and ``thread_messages`` tables.

Each change is made only where it is missing, so a store from any version between the first
release and this one (some columns already added by the hand-written checks this migration
replaces) ends up the same.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from helpers.store.schema import MAX_TOOL_CALL_ID_CHARS, thread_key

    bind = op.get_bind()
    inspector = sa.inspect(bind)
    columns = {c["name"] for c in inspector.get_columns("tool_outputs")}
    indexes = {i["name"] for i in inspector.get_indexes("tool_outputs")}
    postgres = bind.dialect.name == "postgresql"
    if "n_chunks" not in columns:
        op.add_column(
            "tool_outputs", sa.Column("n_chunks", sa.Integer, nullable=False, server_default="0")
        )
    if "provider_call_id" not in columns:
        op.add_column("tool_outputs", sa.Column("provider_call_id", sa.Text, nullable=True))
    if "thread_key" not in columns:
        op.add_column("tool_outputs", sa.Column("thread_key", sa.String(64), nullable=True))
        outputs = sa.table(
            "tool_outputs", sa.column("thread_id", sa.Text), sa.column("thread_key", sa.Text)
        )
        threads = bind.execute(sa.select(outputs.c.thread_id).distinct()).scalars().all()
        for thread_id in threads:
            bind.execute(
                outputs.update()
                .where(outputs.c.thread_id == thread_id)
                .values(thread_key=thread_key(thread_id))
            )
    if "ix_tool_outputs_thread_key" not in indexes:
        op.create_index("ix_tool_outputs_thread_key", "tool_outputs", ["thread_key"])
    if "uq_thread_key_call" not in indexes:
        op.create_index(
            "uq_thread_key_call", "tool_outputs", ["thread_key", "tool_call_id"], unique=True
        )
    if postgres:  # SQLite does not enforce lengths; PostgreSQL needs wider columns
        op.alter_column("tool_outputs", "thread_id", type_=sa.Text)
        op.alter_column("tool_outputs", "tool_name", type_=sa.Text)
        op.alter_column("tool_outputs", "tool_call_id", type_=sa.String(MAX_TOOL_CALL_ID_CHARS))
        op.execute("ALTER TABLE tool_outputs DROP CONSTRAINT IF EXISTS uq_thread_call")
        op.execute("DROP INDEX IF EXISTS ix_tool_outputs_thread_id")
    for table in _tables_as_at_0002().values():
        table.create(bind, checkfirst=True)


def _tables_as_at_0002() -> dict[str, sa.Table]:
    """The tables this revision adds, as they were at it (a revision never reads the current
    schema, which later revisions change: ``0005`` moved the chunks' characters out)."""
    metadata = sa.MetaData()
    sa.Table("tool_outputs", metadata, sa.Column("id", sa.Integer, primary_key=True))  # for the FK
    return {
        "tool_output_chunks": sa.Table(
            "tool_output_chunks",
            metadata,
            sa.Column("output_id", sa.Integer, sa.ForeignKey("tool_outputs.id"), primary_key=True),
            sa.Column("seq", sa.Integer, primary_key=True),
            sa.Column("content", sa.Text, nullable=False),
        ),
        "threads": sa.Table(
            "threads",
            metadata,
            sa.Column("thread_key", sa.String(64), primary_key=True),
            sa.Column("thread_id", sa.Text, nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        ),
        "thread_messages": sa.Table(
            "thread_messages",
            metadata,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("thread_key", sa.String(64), nullable=False, index=True),
            sa.Column("role", sa.String(16), nullable=False),
            sa.Column("body", sa.Text, nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        ),
    }


def downgrade() -> None:
    raise NotImplementedError(
        "the store is not downgraded: restore a copy of the database made before the upgrade"
    )
