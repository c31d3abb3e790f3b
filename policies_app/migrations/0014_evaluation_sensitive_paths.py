from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("policies_app", "0013_webhook_secret_encrypted"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="sensitive_paths",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="Paths into the input of values to mask wherever it is shown, beyond what the input "
                "marks itself: values derived from sensitive variables, state attributes Terraform marked.",
            ),
        ),
    ]
