# Webhook secrets are encrypted at rest like the repositories' (policies_app/guards/encryption.py).

from django.db import migrations

import policies_app.guards.encryption


def encrypt_webhook_secrets(apps, schema_editor):
    from policies_app.guards.encryption import encrypt_plaintext_column

    encrypt_plaintext_column(apps.get_model("policies_app", "Webhook"), "secret", schema_editor)


def decrypt_webhook_secrets(apps, schema_editor):
    from policies_app.guards.encryption import decrypt_to_plaintext_column

    decrypt_to_plaintext_column(apps.get_model("policies_app", "Webhook"), "secret", schema_editor)


class Migration(migrations.Migration):
    dependencies = [("policies_app", "0012_audit_vocabulary")]

    operations = [
        migrations.AlterField(
            model_name="webhook",
            name="secret",
            field=policies_app.guards.encryption.EncryptedTextField(),
        ),
        migrations.RunPython(encrypt_webhook_secrets, decrypt_webhook_secrets),
    ]
