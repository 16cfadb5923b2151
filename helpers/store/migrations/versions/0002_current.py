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
    from helpers.store.schema import MAX_TOOL_CALL_ID_CHARS, Base, thread_key

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
    for name in ("tool_output_chunks", "threads", "thread_messages"):
        Base.metadata.tables[name].create(bind, checkfirst=True)


def downgrade() -> None:
    raise NotImplementedError(
        "the store is not downgraded: restore a copy of the database made before the upgrade"
    )
