"""A plan is stored once, compressed and addressed by its hash; every evaluation's input is rebuilt byte for
byte as the engine saw it, for the API, the pages, replays and "try it"."""

import json

import pytest
from django.urls import reverse

from policies_app import rego
from policies_app.deployments import input_codec, stored_inputs
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
    plan["zz_note"] = "café \u2603 \"quoted\" \\ tab\t"
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
    assert api(world.vera).get(f"/api/v1/deployments/{deployment_id}/input/").content.decode() == engine_inputs[-1]
    page = api(world.vera)
    page.force_login(world.vera)
    for evaluation, seen in zip(evaluations, engine_inputs, strict=True):
        url = reverse("web:evaluation-input", args=[deployment_id, evaluation.pk])
        assert page.get(url).content.decode() == seen
    assert replay.recorded_input(world.vera, deployment_id) == engine_inputs[-1]

    # The plan: one compressed document, the deployment's and every evaluation's.
    assert stored_inputs.plan_of(deployment) == json.loads(input_codec.canonical_plan(plan))
    assert StoredDocument.objects.count() == 1
    stored = StoredDocument.objects.get()
    assert deployment.plan_document_id == stored.key
    assert set(InputPiece.objects.values_list("document_id", flat=True)) == {stored.key}
    assert len(stored.body) < stored.size / 5
    assert all(len(e.input_json) < len(seen) / 3 for e, seen in zip(evaluations, engine_inputs, strict=True))


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
