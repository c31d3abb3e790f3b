"""Webhook secrets in the Standard Webhooks form: ``whsec_`` and the key in base64.

An older secret's bytes become the key, so a receiver that holds the old secret can still compute the
signature: the key is the same; only its spelling and the signing scheme change."""

import base64

from django.db import migrations, models


def to_standard_form(apps, schema_editor):
    Webhook = apps.get_model("policies_app", "Webhook")
    for webhook in Webhook.objects.exclude(secret__startswith="whsec_"):
        webhook.secret = "whsec_" + base64.b64encode(webhook.secret.encode()).decode()
        webhook.save(update_fields=["secret"])


class Migration(migrations.Migration):
    dependencies = [("policies_app", "0009_invitation_outbox_replay_enqueued_at")]

    operations = [
        migrations.AlterField(model_name="webhook", name="secret", field=models.CharField(max_length=300)),
        migrations.RunPython(to_standard_form, migrations.RunPython.noop),
    ]
