"""Alembic environment: run with the owner connection handed over by policydesk.storage.migrate."""

from alembic import context

from policydesk.storage.models import Base

config = context.config
target_metadata = Base.metadata

connection = config.attributes["connection"]
context.configure(connection=connection, target_metadata=target_metadata)
with context.begin_transaction():
    context.run_migrations()
