"""Indexes on large tables are built without blocking writes (docs/operations.md): every migration after
0025 that indexes one of them uses AddIndexConcurrently (our ``AddIndexWithoutLock``, which falls back to a
plain AddIndex off PostgreSQL) in a migration of its own with ``atomic = False``; a plain AddIndex, or an
added field that is indexed (``db_index=True``, ``unique``, a foreign key), fails here. Not looked at: an
AlterField that adds an index, a unique constraint (build its index concurrently first, docs/operations.md)."""

import re

import pytest
from django.db import connection, migrations, models
from django.db.migrations.loader import MigrationLoader

from policies_app.ops.migration_operations import AddIndexWithoutLock

APP = "policies_app"
CHECKED_AFTER = 25  # migrations up to this one were written before the rule
# Tables of millions of rows in a busy organisation, written to by every pipeline.
LARGE_TABLES = {
    "deployment",
    "deploymentevent",
    "evaluation",
    "inputpiece",
    "auditentry",
    "approval",
    "webhookdelivery",
    "approvalrequestemail",
}


def locking_index_builds(migration: migrations.Migration) -> list[str]:
    """What in ``migration`` would build an index on a large table while blocking its writes."""
    found = []
    concurrent = False
    for operation in migration.operations:
        model = getattr(operation, "model_name", "").lower()
        if isinstance(operation, migrations.AddIndex | migrations.RemoveIndex) and hasattr(
            operation, "_ensure_not_in_transaction"
        ):
            concurrent = True
            continue
        if model not in LARGE_TABLES:
            continue
        if isinstance(operation, migrations.AddIndex | migrations.RemoveIndex):
            found.append(
                f"{type(operation).__name__} on {model}: use AddIndexWithoutLock/RemoveIndexWithoutLock"
            )
        elif isinstance(operation, migrations.AddField):
            field = operation.field  # a foreign key is indexed unless it says db_index=False
            if field.db_index or field.unique:
                found.append(
                    f"{type(operation).__name__} {model}.{operation.name} builds an index: add the field "
                    "unindexed, then its index with AddIndexWithoutLock in a migration of its own"
                )
    if concurrent and migration.atomic:
        found.append("a concurrent index build needs `atomic = False` on its migration")
    return found


def checked_migrations() -> list[migrations.Migration]:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return [
        migration
        for (app, name), migration in sorted(loader.disk_migrations.items())
        if app == APP and int(re.match(r"\d+", name)[0]) > CHECKED_AFTER
    ]


def test_no_migration_after_0025_blocks_writes_to_a_large_table_while_indexing():
    assert checked_migrations(), "the migrations after 0025 were found"
    problems = {
        migration.name: found
        for migration in checked_migrations()
        if (found := locking_index_builds(migration))
    }
    assert problems == {}


def test_the_check_finds_a_plain_index_an_indexed_field_and_a_concurrent_build_in_a_transaction():
    index = models.Index(fields=["action", "created_at"], name="audit_action_recent")

    class Plain(migrations.Migration):
        operations = [
            migrations.AddIndex("auditentry", index),
            migrations.AddField("deployment", "marker", models.CharField(max_length=5, db_index=True)),
            migrations.AddField("evaluation", "owner", models.ForeignKey("auth.User", models.PROTECT)),
            migrations.AddIndex("webhook", models.Index(fields=["name"], name="small_table")),  # small: fine
        ]

    class Atomic(migrations.Migration):
        operations = [AddIndexWithoutLock("auditentry", index)]

    class LockFree(migrations.Migration):
        atomic = False
        operations = [AddIndexWithoutLock("auditentry", index)]

    plain = locking_index_builds(Plain("0026_x", APP))
    assert len(plain) == 3 and "AddIndex on auditentry" in plain[0]
    assert locking_index_builds(Atomic("0027_x", APP)) == [
        "a concurrent index build needs `atomic = False` on its migration"
    ]
    assert locking_index_builds(LockFree("0028_x", APP)) == []


@pytest.mark.django_db(transaction=True)
def test_the_lock_free_operation_builds_and_drops_the_index_off_postgresql_too():
    """SQLite (development, these tests) gets a plain index from the same migration."""
    loader = MigrationLoader(connection)
    before = loader.project_state()
    operation = AddIndexWithoutLock(
        "auditentry", models.Index(fields=["action", "created_at"], name="t_audit_idx")
    )
    after = before.clone()
    operation.state_forwards(APP, after)
    table = "policies_app_auditentry"

    def indexes() -> set[str]:
        with connection.cursor() as cursor:
            return set(connection.introspection.get_constraints(cursor, table))

    with connection.schema_editor(atomic=False) as editor:
        operation.database_forwards(APP, editor, before, after)
    assert "t_audit_idx" in indexes()
    with connection.schema_editor(atomic=False) as editor:
        operation.database_backwards(APP, editor, after, before)
    assert "t_audit_idx" not in indexes()
