from django.db import migrations, models

from policies_app.ops.migration_operations import AddIndexWithoutLock


class Migration(migrations.Migration):
    # The index is built concurrently on PostgreSQL (evaluations is a large table), which cannot run
    # inside a transaction.
    atomic = False

    dependencies = [
        ("policies_app", "0027_audit_stream"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="explanations_due_at",
            field=models.DateTimeField(
                blank=True,
                help_text="Set while the explanations of its outcomes are still to be computed (by a worker, "
                "after the decision: deployments/explanations.py); when the task was last sent.",
                null=True,
            ),
        ),
        AddIndexWithoutLock(
            model_name="evaluation",
            index=models.Index(
                condition=models.Q(("explanations_due_at__isnull", False)),
                fields=["explanations_due_at"],
                name="evaluation_explanations_due",
            ),
        ),
    ]
