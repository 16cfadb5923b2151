"""Tools and their log: the tool registry (schemas from functions), the real tools and their offline data, and the SQLAlchemy store of every dispatch (with its Alembic migrations)."""
