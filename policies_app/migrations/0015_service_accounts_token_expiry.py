# Service accounts and scoped tokens; every named token expires. Tokens made before expiry existed are
# given API_TOKEN_DEFAULT_DAYS from this migration: their pipelines keep working until then.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def expire_existing_tokens(apps, schema_editor):
    from datetime import timedelta

    from django.utils import timezone

    ApiToken = apps.get_model("policies_app", "ApiToken")
    deadline = timezone.now() + timedelta(days=settings.API_TOKEN_DEFAULT_DAYS)
    ApiToken.objects.filter(expires_at__isnull=True).update(expires_at=deadline)


class Migration(migrations.Migration):
    dependencies = [
        ("policies_app", "0014_evaluation_sensitive_paths"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="capabilities",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="Capabilities the token may use; empty: all of its user's.",
            ),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(
                blank=True,
                help_text="After this the key is refused (401); empty only for tokens made before expiry existed.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="scope_project",
            field=models.ForeignKey(
                blank=True,
                help_text="The subtree where the token may act; empty: wherever its user may.",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="policies_app.project",
            ),
        ),
        migrations.CreateModel(
            name="ServiceAccount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=63)),
                ("description", models.CharField(blank=True, default="", max_length=500)),
                (
                    "may_approve",
                    models.BooleanField(
                        default=False,
                        help_text="Given explicitly by an admin of the project: tokens may then approve.",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="service_accounts",
                        to="policies_app.project",
                    ),
                ),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="service_account",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["project_id", "name"],
            },
        ),
        migrations.AddField(
            model_name="apitoken",
            name="service_account",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="tokens",
                to="policies_app.serviceaccount",
            ),
        ),
        migrations.AddConstraint(
            model_name="serviceaccount",
            constraint=models.UniqueConstraint(
                fields=("project", "name"), name="service_account_unique_name_per_project"
            ),
        ),
        migrations.RunPython(expire_existing_tokens, migrations.RunPython.noop),
    ]
