"""The tool-output log: the SQLAlchemy store of every dispatch, keyed by thread and tool_call_id, its Alembic migrations, and the checkpoint rows."""
