"""Migration operations that add or remove an index without blocking writes to a large table
(docs/operations.md, "Indexes on large tables without blocking writes").

On PostgreSQL they are Django's ``AddIndexConcurrently``/``RemoveIndexConcurrently`` (``CREATE INDEX
CONCURRENTLY``, in a migration with ``atomic = False``); on any other database (SQLite in development
and in the tests) a plain ``AddIndex``/``RemoveIndex``, which there locks nothing anyone waits on. The
migration's state is the same either way, so ``makemigrations --check`` stays clean.
tests/ops/test_migrations_lock_free.py fails on a migration that indexes a large table otherwise."""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db.migrations.operations import AddIndex, RemoveIndex


def _on_postgresql(schema_editor: Any) -> bool:
    return schema_editor.connection.vendor == "postgresql"


class AddIndexWithoutLock(AddIndexConcurrently):
    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if _on_postgresql(schema_editor):
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if _on_postgresql(schema_editor):
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


class RemoveIndexWithoutLock(RemoveIndexConcurrently):
    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if _on_postgresql(schema_editor):
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            RemoveIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if _on_postgresql(schema_editor):
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            RemoveIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)
