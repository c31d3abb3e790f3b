"""A deployment keeps the plan's text as `terraform show` printed it (stored once, compressed, like the
plan) and the plan's counts by action, counted at trigger for the queue."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("policies_app", "0024_slack_messages_and_delivery_resends"),
    ]

    operations = [
        migrations.AddField(
            model_name="deployment",
            name="plan_text_document",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="policies_app.storeddocument",
            ),
        ),
        migrations.AddField(
            model_name="deployment",
            name="plan_counts",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="policyreplay",
            name="environment_ids",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
