"""The first release's schema: one ``tool_outputs`` table.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tool_outputs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("ref_id", sa.String(64), nullable=False),
        sa.Column("thread_id", sa.String(128), nullable=False),
        sa.Column("tool_call_id", sa.String(128), nullable=False),
        sa.Column("tool_name", sa.String(128), nullable=False),
        sa.Column("tool_args", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("n_chars", sa.Integer, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("thread_id", "tool_call_id", name="uq_thread_call"),
    )
    op.create_index("ix_tool_outputs_ref_id", "tool_outputs", ["ref_id"], unique=True)
    op.create_index("ix_tool_outputs_thread_id", "tool_outputs", ["thread_id"])
    op.create_index("ix_tool_outputs_tool_call_id", "tool_outputs", ["tool_call_id"])
    op.create_index("ix_tool_outputs_kind", "tool_outputs", ["kind"])
    op.create_index("ix_tool_outputs_created_at", "tool_outputs", ["created_at"])


def downgrade() -> None:
    op.drop_table("tool_outputs")
