"""Each distinct chunk's characters stored once (``chunk_contents``, keyed by their SHA-256),
each chunk row naming them (``tool_output_chunks.content_hash``): agents fetch the same pages
again and again, and each copy cost the disk its whole size. Outputs are indexed by their
SHA-256, so an output stored again takes the chunk hashes of the one before.

Existing chunks are hashed once, output by output; the downgrade puts each chunk's characters
back in its row. The space the old column held is given back to the file system by
``workbook outputs prune`` (SQLite's ``VACUUM``) or PostgreSQL's ``VACUUM FULL``.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from collections.abc import Iterator

import sqlalchemy as sa
from alembic import op

from helpers.base import ids

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_outputs = sa.table("tool_outputs", sa.column("id", sa.Integer), sa.column("n_chunks", sa.Integer))
_chunks = sa.table(
    "tool_output_chunks",
    sa.column("output_id", sa.Integer),
    sa.column("seq", sa.Integer),
    sa.column("content", sa.Text),
    sa.column("content_hash", sa.String(64)),
)
_contents = sa.table(
    "chunk_contents", sa.column("hash", sa.String(64)), sa.column("content", sa.Text)
)


def _each_chunk(
    bind: sa.Connection, value: sa.ColumnElement[str]
) -> Iterator[tuple[int, int, str]]:
    """``(output_id, seq, value)`` of every chunk, one output's chunks read at a time (an
    output may be tens of megabytes)."""
    outputs = bind.execute(sa.select(_chunks.c.output_id).distinct()).scalars().all()
    query = sa.select(_chunks.c.seq, value)
    if value.table is _contents:
        query = query.join(_contents, _contents.c.hash == _chunks.c.content_hash)
    for output_id in outputs:
        for seq, text in bind.execute(query.where(_chunks.c.output_id == output_id)).all():
            yield output_id, seq, text


def _set(bind: sa.Connection, output_id: int, seq: int, **values: str) -> None:
    where = (_chunks.c.output_id == output_id, _chunks.c.seq == seq)
    bind.execute(_chunks.update().where(*where).values(**values))


def upgrade() -> None:
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    if "content_hash" in {c["name"] for c in inspector.get_columns("tool_output_chunks")}:
        return  # made at this schema already (a notebook's own create_all)
    if not inspector.has_table("chunk_contents"):
        op.create_table(
            "chunk_contents",
            sa.Column("hash", sa.String(64), primary_key=True),
            sa.Column("content", sa.Text, nullable=False),
        )
    op.add_column("tool_output_chunks", sa.Column("content_hash", sa.String(64), nullable=True))
    held: set[str] = set()
    for output_id, seq, content in _each_chunk(bind, _chunks.c.content):
        digest = ids.content_sha256(content)
        if digest not in held:
            bind.execute(_contents.insert().values(hash=digest, content=content))
            held.add(digest)
        _set(bind, output_id, seq, content_hash=digest)
    with op.batch_alter_table("tool_output_chunks") as batch:
        batch.drop_column("content")
        batch.alter_column("content_hash", existing_type=sa.String(64), nullable=False)
        batch.create_foreign_key(
            "fk_tool_output_chunks_content_hash", "chunk_contents", ["content_hash"], ["hash"]
        )
        batch.create_index("ix_tool_output_chunks_content_hash", ["content_hash"])
    op.create_index("ix_tool_outputs_sha256", "tool_outputs", ["sha256"])


def downgrade() -> None:
    bind = op.get_bind()
    op.drop_index("ix_tool_outputs_sha256", "tool_outputs")
    op.add_column("tool_output_chunks", sa.Column("content", sa.Text, nullable=True))
    for output_id, seq, content in _each_chunk(bind, _contents.c.content):
        _set(bind, output_id, seq, content=content)
    with op.batch_alter_table("tool_output_chunks") as batch:
        batch.drop_index("ix_tool_output_chunks_content_hash")
        batch.drop_constraint("fk_tool_output_chunks_content_hash", type_="foreignkey")
        batch.drop_column("content_hash")
        batch.alter_column("content", existing_type=sa.Text, nullable=False)
    op.drop_table("chunk_contents")
