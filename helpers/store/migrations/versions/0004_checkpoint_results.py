"""Each checkpoint run's result (``checkpoint_results``): who ran which TODO's checkpoint, and
whether it passed, so an instructor sees a room's progress from the store
(``workbook room progress``).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if sa.inspect(op.get_bind()).has_table("checkpoint_results"):
        return
    op.create_table(
        "checkpoint_results",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("attendee", sa.Text, nullable=False),
        sa.Column("notebook", sa.String(8), nullable=False),
        sa.Column("todo", sa.Integer, nullable=False),
        sa.Column("passed", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, index=True),
    )


def downgrade() -> None:
    op.drop_table("checkpoint_results")
