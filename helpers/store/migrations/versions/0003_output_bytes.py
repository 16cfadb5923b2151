"""The size of each output in UTF-8 bytes (``n_bytes``), beside its size in characters, so
``workbook outputs list`` can show both without reading the outputs.

Existing rows are measured once, in batches, from their content (or their chunks).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_BATCH = 500


def upgrade() -> None:
    bind = op.get_bind()
    if "n_bytes" in {c["name"] for c in sa.inspect(bind).get_columns("tool_outputs")}:
        return
    op.add_column("tool_outputs", sa.Column("n_bytes", sa.Integer, nullable=True))
    outputs = sa.table(
        "tool_outputs",
        sa.column("id", sa.Integer),
        sa.column("content", sa.Text),
        sa.column("n_chunks", sa.Integer),
        sa.column("n_bytes", sa.Integer),
    )
    chunks = sa.table(
        "tool_output_chunks",
        sa.column("output_id", sa.Integer),
        sa.column("seq", sa.Integer),
        sa.column("content", sa.Text),
    )
    last = 0
    while True:
        rows = bind.execute(
            sa.select(outputs.c.id, outputs.c.content, outputs.c.n_chunks)
            .where(outputs.c.id > last)
            .order_by(outputs.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            break
        for row_id, content, n_chunks in rows:
            if n_chunks:
                parts = bind.execute(
                    sa.select(chunks.c.content).where(chunks.c.output_id == row_id)
                ).scalars()
                size = sum(len(p.encode("utf-8", "surrogatepass")) for p in parts)
            else:
                size = len((content or "").encode("utf-8", "surrogatepass"))
            bind.execute(outputs.update().where(outputs.c.id == row_id).values(n_bytes=size))
        last = rows[-1][0]


def downgrade() -> None:
    op.drop_column("tool_outputs", "n_bytes")
