"""The audit log's words (issue 16, finding 16): rejections were recorded as ``deployment.rejectd``, and
targets by their model's internal name (``approvalpolicy``); existing entries take the words the log
uses now (``deployment.rejected``; the model's verbose name, "approval policy")."""

from django.db import migrations

TYPO = ("deployment.rejectd", "deployment.rejected")


def internal_to_readable(apps):
    names = {}
    for model in [*apps.get_app_config("policies_app").get_models(), apps.get_model("auth", "User")]:
        readable = str(model._meta.verbose_name)
        if readable != model._meta.model_name:
            names[model._meta.model_name] = readable
    return names


def forwards(apps, schema_editor):
    entries = apps.get_model("policies_app", "AuditEntry").objects
    entries.filter(action=TYPO[0]).update(action=TYPO[1])
    for internal, readable in internal_to_readable(apps).items():
        entries.filter(target_type=internal).update(target_type=readable)


def backwards(apps, schema_editor):
    entries = apps.get_model("policies_app", "AuditEntry").objects
    entries.filter(action=TYPO[1]).update(action=TYPO[0])
    for internal, readable in internal_to_readable(apps).items():
        entries.filter(target_type=readable).update(target_type=internal)


class Migration(migrations.Migration):
    dependencies = [("policies_app", "0011_secrets_encrypted_tokens_hashed")]

    operations = [migrations.RunPython(forwards, backwards)]
