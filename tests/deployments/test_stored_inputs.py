"""A plan is stored once, compressed and addressed by its hash; every evaluation's input is rebuilt byte for
byte as the engine saw it, for the API, the pages, replays and "try it"."""

import json

import pytest
from django.urls import reverse

from policies_app import rego
from policies_app.deployments import input_codec, stored_inputs
from policies_app.deployments.policy_input import build_policy_input
from policies_app.models import Deployment, Evaluation, InputPiece, StoredDocument
from policies_app.policies import replay
from tests.builders import make_policy, plan_with

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("commits_run_on_commit_callbacks")]

TWO_APPROVERS = """
package env0

allow contains "two approvers approved" if count(input.approvers) >= 2
pending contains "waiting for two approvers" if count(input.approvers) < 2
"""


def big_plan(count: int = 40, marker: str = "") -> dict:
    plan = plan_with(*((f"aws_s3_bucket.b{i}{marker}", ["create"]) for i in range(count)))
    # Keys in no particular order, text that JSON escapes, floats: all must come back as they were.
    plan["zz_note"] = 'café \u2603 "quoted" \\ tab\t'
    plan["a_ratio"] = 0.1 + 0.2
    return plan


@pytest.fixture
def engine_inputs(monkeypatch):
    """Every input handed to the engine, as the engine got it (the real engine still runs)."""
    seen: list[str] = []
    evaluate = rego.evaluate_policies

    def recording(sources, input_json, **options):
        seen.append(input_json)
        return evaluate(sources, input_json, **options)

    monkeypatch.setattr(rego, "evaluate_policies", recording)
    return seen


def trigger(client, environment, **body):
    response = client.post(f"/api/v1/environments/{environment.pk}/deployments/", body, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()["id"]


def test_the_codec_writes_exactly_what_json_dumps_writes_and_splices_it_back():
    document = {
        "deploymentRequest": {"type": "deploy", "plan": "not the plan"},
        "plan": big_plan(),
        "deployerUser": {"name": "Zoë"},
        "state": None,
        "configuration": {"resources": [{"x": 1.5e300, "y": "é"}] * 30},
    }
    text, spans = input_codec.encode_input(document)
    assert text == json.dumps(document, separators=(",", ":"))
    assert [text[start:end][:2] for start, end in spans] == ['{"', '{"']  # the plan and the configuration
    skeleton, pieces = input_codec.split_input(text, spans)
    assert len(skeleton) < 200
    assert input_codec.join_input(skeleton, pieces) == text
    assert input_codec.spans_of_stored_input(text) == spans
    assert input_codec.spans_of_stored_input(json.dumps(document)) == []  # another serialisation: kept whole


def test_every_evaluation_input_is_rebuilt_byte_for_byte_and_the_plan_is_stored_once(
    world, api, engine_inputs
):
    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    plan = big_plan()
    deployment_id = trigger(api(world.bob), world.environment, plan=plan)
    for approver in (world.alice, world.sam):
        response = api(approver).post(f"/api/v1/deployments/{deployment_id}/approve/", {}, format="json")
        assert response.status_code == 200
    assert response.json()["status"] == "approved"
    deployment = Deployment.objects.get(pk=deployment_id)
    evaluations = list(deployment.evaluations.order_by("created_at", "id"))
    assert len(evaluations) == 3 and len(engine_inputs) == 3

    # Each evaluation's input, through the one reader, the API, the page and "try it" / replays.
    assert [stored_inputs.input_of(e) for e in evaluations] == engine_inputs
    assert (
        api(world.vera).get(f"/api/v1/deployments/{deployment_id}/input/").content.decode()
        == engine_inputs[-1]
    )
    page = api(world.vera)
    page.force_login(world.vera)
    for evaluation, seen in zip(evaluations, engine_inputs, strict=True):
        url = reverse("web:evaluation-input", args=[deployment_id, evaluation.pk])
        assert page.get(url).content.decode() == seen
    assert replay.recorded_input(world.vera, deployment_id).input_json == engine_inputs[-1]

    # The plan: one compressed document, the deployment's and every evaluation's.
    assert stored_inputs.plan_of(deployment) == json.loads(input_codec.canonical_plan(plan))
    assert StoredDocument.objects.count() == 1
    stored = StoredDocument.objects.get()
    assert deployment.plan_document_id == stored.key
    assert set(InputPiece.objects.values_list("document_id", flat=True)) == {stored.key}
    assert len(stored.body) < stored.size / 5
    assert all(len(e.input_json) < len(seen) / 3 for e, seen in zip(evaluations, engine_inputs, strict=True))


def test_the_input_takes_the_stored_plan_text_as_writing_the_plan_again_would_give_it(
    world, api, engine_inputs
):
    # The plan is not written again for the engine: its stored text is the same bytes.
    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    deployment_id = trigger(api(world.bob), world.environment, plan=big_plan())
    deployment = Deployment.objects.select_related("environment__project", "environment__template").get(
        pk=deployment_id
    )
    assert stored_inputs.plan_json_of(deployment) == input_codec.dumps(stored_inputs.plan_of(deployment))
    document = build_policy_input(deployment, "deploy").document
    assert engine_inputs == [json.dumps(document, separators=(",", ":"))]


def test_identical_plans_share_one_document(world, api):
    first = trigger(api(world.bob), world.environment, plan=big_plan())
    reordered = dict(reversed(list(big_plan().items())))
    second = trigger(api(world.bob), world.environment, plan=reordered)
    third = trigger(api(world.bob), world.environment, plan=big_plan(marker="x"))
    keys = dict(Deployment.objects.values_list("pk", "plan_document_id"))
    assert keys[first] == keys[second] != keys[third]
    assert StoredDocument.objects.count() == 2


def test_a_failed_closed_evaluation_shows_its_null_input(world, api):
    deployment = Deployment.objects.create(environment=world.environment, deployer=world.bob, status="error")
    evaluation = Evaluation.objects.create(
        deployment=deployment, request_type="deploy", input_json="null", decision="error", engine="none"
    )
    assert stored_inputs.input_of(evaluation) == "null"
    assert api(world.vera).get(f"/api/v1/deployments/{deployment.pk}/input/").content == b"null"


def test_purging_removes_old_inputs_and_plans_and_keeps_decisions_and_the_audit_trail(world, api, settings):
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    from policies_app.models import AuditEntry, DeploymentEvent

    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    old = trigger(api(world.bob), world.environment, plan=big_plan(marker="old"))
    recent = trigger(api(world.bob), world.environment, plan=big_plan(marker="new"))
    long_ago = timezone.now() - timedelta(days=40)
    Deployment.objects.filter(pk=old).update(created_at=long_ago)
    Evaluation.objects.filter(deployment_id=old).update(created_at=long_ago)
    StoredDocument.objects.update(last_used_at=long_ago)  # both plans unused since; one still referenced
    events, audit = DeploymentEvent.objects.count(), AuditEntry.objects.count()
    old_deployment = Deployment.objects.get(pk=old)
    assert old_deployment.status == "superseded"  # finished: its plan may go too
    messages = old_deployment.evaluations.get().messages

    settings.EVALUATION_INPUT_RETENTION_DAYS = 30
    call_command("purge_inputs", "--batch", "1")

    purged = Evaluation.objects.get(deployment_id=old)
    assert purged.input_purged_at is not None and purged.input_json == ""
    assert purged.messages == messages and purged.decision == "pending"
    assert stored_inputs.input_of(purged) is None
    answer = api(world.vera).get(f"/api/v1/deployments/{old}/input/")
    assert answer.status_code == 410 and "purged" in answer.json()["detail"]
    page = api(world.vera)
    page.force_login(world.vera)
    assert page.get(reverse("web:evaluation-input", args=[old, purged.pk])).status_code == 410
    shown = page.get(reverse("web:deployment-detail", args=[old])).content.decode()
    assert "input purged" in shown and "Plan: purged" in shown
    assert stored_inputs.plan_of(Deployment.objects.get(pk=old)) is None
    with pytest.raises(Exception, match="no recorded input"):
        replay.recorded_input(world.vera, old)
    # The recent deployment keeps everything; the old plan's document is gone, the recent one's stays.
    assert json.loads(api(world.vera).get(f"/api/v1/deployments/{recent}/input/").content)["plan"]
    assert list(StoredDocument.objects.values_list("key", flat=True)) == [
        Deployment.objects.get(pk=recent).plan_document_id
    ]
    assert (DeploymentEvent.objects.count(), AuditEntry.objects.count()) == (events, audit)


def test_purging_needs_a_retention_period(settings):
    from django.core.management import CommandError, call_command

    settings.EVALUATION_INPUT_RETENTION_DAYS = None
    with pytest.raises(CommandError, match="retention"):
        call_command("purge_inputs")


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_existing_plans_and_inputs_and_rebuilds_them_exactly():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = (
        ("policies_app", "0017_audit_hash_chain"),
        ("policies_app", "0018_stored_documents"),
    )
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    old = executor.loader.project_state([before]).apps
    user = old.get_model("auth", "User").objects.create(username="bob")
    project = old.get_model("policies_app", "Project").objects.create(name="p")
    template = old.get_model("policies_app", "Template").objects.create(name="t", type="terraform")
    environment = old.get_model("policies_app", "Environment").objects.create(
        name="e", project=project, template=template
    )
    plan = big_plan()
    deployment = old.get_model("policies_app", "Deployment").objects.create(
        environment=environment, deployer=user, plan=plan
    )
    whole = json.dumps(
        {"deploymentRequest": {"type": "deploy"}, "plan": plan, "approvers": []}, separators=(",", ":")
    )
    spaced = json.dumps({"plan": plan})  # not the platform's serialisation: kept whole
    rows = [
        old.get_model("policies_app", "Evaluation").objects.create(
            deployment=deployment, request_type="deploy", input_json=text, decision="allow", engine="x"
        )
        for text in (whole, whole, spaced, "null")
    ]

    executor = MigrationExecutor(connection)
    executor.migrate([after])
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    migrated = Deployment.objects.get(pk=deployment.pk)
    assert stored_inputs.plan_of(migrated) == plan
    inputs = stored_inputs.inputs_of(Evaluation.objects.filter(pk__in=[row.pk for row in rows]))
    assert [inputs[row.pk] for row in rows] == [whole, whole, spaced, "null"]
    assert len(Evaluation.objects.get(pk=rows[0].pk).input_json) < 100
    # The deployment's canonical plan, and the text the two evaluations embedded (one document for both).
    assert StoredDocument.objects.count() == 2

    # And back: the plan inline again, every input whole.
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    old = executor.loader.project_state([before]).apps
    assert old.get_model("policies_app", "Deployment").objects.get(pk=deployment.pk).plan == plan
    inputs = dict(old.get_model("policies_app", "Evaluation").objects.values_list("pk", "input_json"))
    assert [inputs[row.pk] for row in rows] == [whole, whole, spaced, "null"]
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


COUNTS_CHANGES = """
package env0

deny contains sprintf("%d changes", [count(input.plan.resource_changes)]) if count(input.plan.resource_changes) > 10
"""


def test_try_it_and_lists_read_the_plan_only_where_they_need_it(world, api):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    deployment_id = trigger(api(world.bob), world.environment, plan=big_plan(count=40))
    policy = make_policy("counts changes", COUNTS_CHANGES)
    tried = api(world.admin).post(
        f"/api/v1/policies/{policy.pk}/evaluate/", {"deployment": deployment_id}, format="json"
    )
    assert tried.status_code == 200, tried.content
    assert tried.json()["decision"] == "deny" and tried.json()["deny"] == ["40 changes"]

    page = api(world.alice)
    page.force_login(world.alice)
    with CaptureQueriesContext(connection) as queries:
        assert api(world.alice).get("/api/v1/deployments/").status_code == 200
        assert api(world.alice).get(f"/api/v1/deployments/{deployment_id}/").status_code == 200
        assert page.get("/?view=all").status_code == 200
    read = [q["sql"] for q in queries if "storeddocument" in q["sql"] or "inputpiece" in q["sql"]]
    assert read == []
