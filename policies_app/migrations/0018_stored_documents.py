# Plans and the large pieces of policy inputs kept once, compressed and addressed by their hash
# (policies_app/deployments/stored_inputs.py). Existing rows are moved in batches: each deployment's plan
# to a stored document, each evaluation's input to its skeleton and references, rebuilt byte for byte.

import json

import django.db.models.deletion
from django.db import migrations, models
from django.utils import timezone

BATCH = 200


def _store(StoredDocument, text, now):
    from policies_app.deployments import input_codec

    key = input_codec.document_key(text)
    if not StoredDocument.objects.filter(key=key).exists():
        StoredDocument.objects.create(
            key=key, body=input_codec.compress(text), size=len(text), last_used_at=now
        )
    return key


def _batches(queryset):
    last = 0
    while rows := list(queryset.filter(pk__gt=last).order_by("pk")[:BATCH]):
        yield rows
        last = rows[-1].pk


def store_plans_once(apps, schema_editor):
    from policies_app.deployments import input_codec

    Deployment = apps.get_model("policies_app", "Deployment")
    Evaluation = apps.get_model("policies_app", "Evaluation")
    InputPiece = apps.get_model("policies_app", "InputPiece")
    StoredDocument = apps.get_model("policies_app", "StoredDocument")
    now = timezone.now()
    for rows in _batches(Deployment.objects.filter(plan__isnull=False).only("pk", "plan")):
        for deployment in rows:
            key = _store(StoredDocument, input_codec.canonical_plan(deployment.plan), now)
            Deployment.objects.filter(pk=deployment.pk).update(plan_document_id=key)
    for rows in _batches(Evaluation.objects.only("pk", "input_json")):
        for evaluation in rows:
            spans = input_codec.spans_of_stored_input(evaluation.input_json)
            if not spans:
                continue  # kept whole: small, "null", or not the platform's own serialisation
            skeleton, pieces = input_codec.split_input(evaluation.input_json, spans)
            InputPiece.objects.bulk_create(
                InputPiece(
                    evaluation_id=evaluation.pk, offset=offset, document_id=_store(StoredDocument, text, now)
                )
                for offset, text in pieces
            )
            Evaluation.objects.filter(pk=evaluation.pk).update(input_json=skeleton)


def inline_plans_again(apps, schema_editor):
    from policies_app.deployments import input_codec

    Deployment = apps.get_model("policies_app", "Deployment")
    Evaluation = apps.get_model("policies_app", "Evaluation")
    InputPiece = apps.get_model("policies_app", "InputPiece")
    StoredDocument = apps.get_model("policies_app", "StoredDocument")

    def text(key):
        return input_codec.decompress(StoredDocument.objects.get(key=key).body)

    for rows in _batches(Deployment.objects.filter(plan_document__isnull=False).only("pk", "plan_document")):
        for deployment in rows:
            plan = json.loads(text(deployment.plan_document_id))
            Deployment.objects.filter(pk=deployment.pk).update(plan=plan)
    for rows in _batches(
        Evaluation.objects.filter(input_pieces__isnull=False).distinct().only("pk", "input_json")
    ):
        for evaluation in rows:
            pieces = InputPiece.objects.filter(evaluation_id=evaluation.pk).values_list(
                "offset", "document_id"
            )
            whole = input_codec.join_input(
                evaluation.input_json, [(offset, text(key)) for offset, key in pieces]
            )
            Evaluation.objects.filter(pk=evaluation.pk).update(input_json=whole)


class Migration(migrations.Migration):
    dependencies = [
        ("policies_app", "0017_audit_hash_chain"),
    ]

    operations = [
        migrations.CreateModel(
            name="StoredDocument",
            fields=[
                ("key", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("body", models.BinaryField()),
                (
                    "size",
                    models.PositiveBigIntegerField(help_text="Characters of the text, before compression."),
                ),
                ("last_used_at", models.DateTimeField(db_index=True)),
            ],
        ),
        migrations.AddField(
            model_name="deployment",
            name="plan_purged_at",
            field=models.DateTimeField(
                blank=True, help_text="When the retention period removed its plan (purge_inputs).", null=True
            ),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="input_purged_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="evaluation",
            name="input_json",
            field=models.TextField(
                help_text='The policy input as given to the engine, without its shared pieces (input_pieces), "null" when the evaluation failed before building one, "" once purged.'
            ),
        ),
        migrations.CreateModel(
            name="InputPiece",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("offset", models.PositiveBigIntegerField()),
                (
                    "evaluation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="input_pieces",
                        to="policies_app.evaluation",
                    ),
                ),
                (
                    "document",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="policies_app.storeddocument",
                    ),
                ),
            ],
            options={
                "ordering": ["evaluation", "offset"],
            },
        ),
        migrations.AddField(
            model_name="deployment",
            name="plan_document",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="policies_app.storeddocument",
            ),
        ),
        migrations.RunPython(store_plans_once, inline_plans_again, elidable=False),
        migrations.RemoveField(
            model_name="deployment",
            name="plan",
        ),
    ]
