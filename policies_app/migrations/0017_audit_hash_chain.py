# The audit log becomes a hash chain (issue 20): each entry numbered without gaps, holding the hash of the
# one before and its own; existing entries are chained in the order they were written (created_at, id).
# Signed checkpoints of the chain's head are kept in AuditCheckpoint.

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

BATCH = 1000


def chain_existing_entries(apps, schema_editor):
    from policies_app.models.audit import GENESIS_HASH, entry_hash_of, hashed_fields

    entries = apps.get_model("policies_app", "AuditEntry").objects.using(schema_editor.connection.alias)
    names = dict(apps.get_model(*settings.AUTH_USER_MODEL.split(".")).objects.values_list("pk", "username"))
    head = (0, GENESIS_HASH)
    batch = []
    for entry in entries.order_by("created_at", "id").iterator(chunk_size=BATCH):
        entry.actor_name = names.get(entry.actor_id, "")
        entry.sequence, entry.previous_hash = head[0] + 1, head[1]
        entry.entry_hash = entry_hash_of(hashed_fields(entry))
        head = (entry.sequence, entry.entry_hash)
        batch.append(entry)
        if len(batch) == BATCH:
            entries.bulk_update(batch, ["actor_name", "sequence", "previous_hash", "entry_hash"])
            batch = []
    entries.bulk_update(batch, ["actor_name", "sequence", "previous_hash", "entry_hash"])


class Migration(migrations.Migration):
    dependencies = [
        ("policies_app", "0016_deployment_change_links"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="actor_name",
            field=models.CharField(blank=True, default="", max_length=150),
        ),
        migrations.AddField(
            model_name="auditentry",
            name="sequence",
            field=models.PositiveBigIntegerField(editable=False, null=True),
        ),
        migrations.AddField(
            model_name="auditentry",
            name="previous_hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="auditentry",
            name="entry_hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="created_at",
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False),
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="actor",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, to=settings.AUTH_USER_MODEL
            ),
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="project",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="policies_app.project",
            ),
        ),
        migrations.RunPython(chain_existing_entries, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="auditentry",
            name="sequence",
            field=models.PositiveBigIntegerField(editable=False, unique=True),
        ),
        migrations.CreateModel(
            name="AuditCheckpoint",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("sequence", models.PositiveBigIntegerField(db_index=True)),
                ("entry_hash", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("key_id", models.CharField(max_length=16)),
                ("signature", models.CharField(max_length=128)),
            ],
            options={"ordering": ["sequence", "id"]},
        ),
    ]
