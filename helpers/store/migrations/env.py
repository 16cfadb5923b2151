"""Alembic's entry point: migrations run on the connection the store hands over (or, from the
``alembic`` command, on ``WORKBOOK_DB_URL`` / the default store)."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context

from helpers.store.database import default_db_url, make_engine
from helpers.store.schema import Base

if context.config.config_file_name is not None:  # the alembic command: log what it does
    fileConfig(context.config.config_file_name, disable_existing_loggers=False)

connection = context.config.attributes.get("connection")
if connection is not None:
    context.configure(connection=connection, target_metadata=Base.metadata)
    with context.begin_transaction():
        context.run_migrations()
else:
    engine = make_engine(default_db_url())
    with engine.begin() as own:
        context.configure(connection=own, target_metadata=Base.metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()
