"""What a waiting pipeline asks: the slim status of its deployment and conditional requests (ETag,
If-None-Match answered 304), through the real server; who may ask; and what an unchanged poll costs."""

import json
import urllib.error
import urllib.request

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from policies_app.deployments.approvals import record_approval
from policies_app.models import Deployment
from tests.builders import ONE_APPROVER, api_client_for, api_key_for, make_policy, plan_with


def call(live_server, path: str, key: str = "", etag: str = "", method: str = "GET", body=None):
    """(status, headers, decoded body or None) of one request to the live server."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{live_server.url}{path}", data=data, method=method)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if key:
        request.add_header("Authorization", f"Token {key}")
    if etag:
        request.add_header("If-None-Match", etag)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw, status, headers = response.read(), response.status, response.headers
    except urllib.error.HTTPError as error:
        raw, status, headers = error.read(), error.code, error.headers
    return status, headers, (json.loads(raw) if raw else None)


@pytest.fixture
def pending(world, live_server):
    """A deployment Bob's pipeline triggered, waiting for one approver; its id and Bob's key."""
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    key = api_key_for(world.bob)
    status, _, body = call(
        live_server,
        f"/api/v1/environments/{world.environment.pk}/deployments/",
        key,
        method="POST",
        body={"type": "deploy", "trigger_name": "cd", "plan": plan_with(("aws_s3_bucket.logs", ["create"]))},
    )
    assert status == 201, body
    assert Deployment.objects.get(pk=body["id"]).status == "pending_approval"
    return body["id"], key


@pytest.mark.django_db(transaction=True)
def test_the_slim_status_is_answered_304_until_it_changes(world, live_server, pending):
    deployment_id, key = pending
    path = f"/api/v1/deployments/{deployment_id}/status/"
    status, headers, body = call(live_server, path, key)
    assert status == 200, body
    assert body == {
        "id": deployment_id,
        "status": "pending_approval",
        "decision": "pending",
        "required": ["needs one approver"],
        "messages": {"deny": [], "warn": [], "pending": ["needs one approver"]},
        "error": None,
        "approvals": 0,
        "expires_at": body["expires_at"],
        "superseded_by": None,
        "queued_behind": None,
        "queued_reason": None,
        "url": f"{settings.PLATFORM_URL}/deployments/{deployment_id}/",
    }
    assert body["expires_at"]
    tag = headers["ETag"]
    assert tag.startswith('"') and headers["Cache-Control"] == "private, no-cache"

    again, headers, body = call(live_server, path, key, etag=tag)
    assert (again, body, headers["ETag"]) == (304, None, tag)
    assert call(live_server, path, key, etag=f'"other", W/{tag}')[0] == 304, "a list and a weak form match"

    record_approval(Deployment.objects.get(pk=deployment_id), world.alice, "approve", "ship it")

    changed, headers, body = call(live_server, path, key, etag=tag)
    assert changed == 200
    assert (body["status"], body["decision"], body["required"], body["approvals"]) == (
        "approved",
        "allow",
        [],
        1,
    )
    assert headers["ETag"] != tag


@pytest.mark.django_db(transaction=True)
def test_the_full_deployment_is_tagged_and_answered_304_until_it_changes(world, live_server, pending):
    deployment_id, key = pending
    path = f"/api/v1/deployments/{deployment_id}/"
    status, headers, body = call(live_server, path, key)
    assert status == 200 and body["status"] == "pending_approval" and body["evaluations"]
    tag = headers["ETag"]
    assert tag.startswith('W/"'), "who may still approve follows role changes elsewhere: a weak tag"
    assert call(live_server, path, key, etag=tag)[:3:2] == (304, None)

    record_approval(Deployment.objects.get(pk=deployment_id), world.alice, "approve", "ship it")

    changed, headers, body = call(live_server, path, key, etag=tag)
    assert changed == 200 and headers["ETag"] != tag
    assert [a["user"] for a in body["approvals"]] == ["alice"] and body["status"] == "approved"


@pytest.mark.django_db(transaction=True)
def test_only_who_may_see_the_deployment_may_poll_it(world, live_server, pending):
    deployment_id, _ = pending
    for path in (f"/api/v1/deployments/{deployment_id}/status/", f"/api/v1/deployments/{deployment_id}/"):
        status, headers, _ = call(live_server, path, api_key_for(world.vera))
        assert status == 200, f"a viewer, the lowest role, polls {path}"
        tag = headers["ETag"]
        # An outsider learns nothing, not even by sending the right tag: 404, as for no such deployment.
        outsider = api_key_for(world.charlie)
        assert call(live_server, path, outsider)[0] == 404
        assert call(live_server, path, outsider, etag=tag)[0] == 404
        assert call(live_server, path, etag=tag)[0] == 401
    assert call(live_server, "/api/v1/deployments/999999/status/", api_key_for(world.admin))[0] == 404
    for unknown in ("x", "-1", "0", str(2**63), "-19468727330051841524236288"):
        assert call(live_server, f"/api/v1/deployments/{unknown}/status/", api_key_for(world.admin))[0] == 404
        assert (
            call(live_server, f"/api/v1/deployments/{unknown}/", api_key_for(world.admin), etag='"t"')[0]
            == 404
        )


@pytest.mark.django_db
def test_an_unchanged_poll_costs_one_query_and_no_serialising(world):
    deployment = Deployment.objects.create(
        environment=world.environment,
        deployer=world.bob,
        status="pending_approval",
        decision="pending",
        messages={"deny": [], "warn": [], "pending": ["needs one approver"], "allow": []},
    )
    client = api_client_for(world.bob)
    # The slim status (the gate's poll): the token, its user, whether it may see the deployment and the
    # deployment's row, in one query. The full representation: the token and its user, the user's
    # organisation and project roles, the deployment's row.
    for path, expected in (
        (f"/api/v1/deployments/{deployment.pk}/status/", 1),
        (f"/api/v1/deployments/{deployment.pk}/", 3),
    ):
        tag = client.get(path)["ETag"]
        with CaptureQueriesContext(connection) as queries:
            response = client.get(path, HTTP_IF_NONE_MATCH=tag)
        assert response.status_code == 304 and not response.content
        assert len(queries) == expected, "\n".join(query["sql"] for query in queries)
        assert "plan" not in queries[-1]["sql"].lower().replace("template", "")
