"""Waivers through the API: an approver sets one policy aside for a while in one environment or project; its
deny and pending count as warn, marked "waived by X until T"; a waiting deployment is evaluated again; expiry
and revocation restore the policy for new evaluations only; every waiver is audited and sent to webhooks;
the deployer's own waiver never releases the deployer's own deployment (four eyes)."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from policies_app.models import (
    AuditEntry,
    Deployment,
    Environment,
    Project,
    ProjectMembership,
    Waiver,
    WebhookDelivery,
)
from policies_app.notifications import webhooks
from policy_gate import gate
from tests.builders import make_policy
from tests.deployments.test_approval_flow import trigger

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("commits_run_on_commit_callbacks", "loopback_allowed"),
]

NO_DELETES = """
package env0

deny contains msg if {
    some change in input.plan.resource_changes
    "delete" in change.change.actions
    msg := sprintf("%s may not be deleted", [change.address])
}
"""
ALWAYS_WAIT = """# METADATA
# custom:
#   approvals: 2
package env0

pending contains "waiting for a change board" if true
"""
DELETES = {
    "plan": {
        "format_version": "1.2",
        "resource_changes": [
            {
                "address": "aws_s3_bucket.logs",
                "type": "aws_s3_bucket",
                "name": "logs",
                "change": {"actions": ["delete"], "before": {}, "after": None},
            },
        ],
    }
}


@pytest.fixture
def no_deletes(world):
    policy = make_policy("no deletes", NO_DELETES)
    world.platform.approval_policies.add(policy)
    return policy


def deploy(world, api, key: str) -> dict:
    response = trigger(api(world.bob), world.environment, idempotency_key=key, **DELETES)
    assert response.status_code in (200, 201), response.content
    return api(world.bob).get(f"/api/v1/deployments/{response.json()['id']}/").json()


def grant(api, user, policy, **body):
    body = {"policy": policy.pk, "reason": "incident 42: the bucket must go", "hours": 2, **body}
    return api(user).post("/api/v1/waivers/", body, format="json")


def complete(world, api, deployment: dict) -> None:
    done = api(world.bob).post(
        f"/api/v1/deployments/{deployment['id']}/complete/", {"status": "succeeded"}, format="json"
    )
    assert done.status_code == 200, done.content


def test_a_waiver_turns_a_deny_into_a_marked_warn_until_it_expires(world, api, no_deletes):
    hook = webhooks.create_webhook(world.admin, world.payments, name="chat", url="http://127.0.0.1:9/hook")
    denied = deploy(world, api, "1")
    assert denied["status"] == "denied"
    assert denied["messages"]["deny"] == ["aws_s3_bucket.logs may not be deleted"]

    response = grant(api, world.alice, no_deletes, environment=world.environment.pk)
    assert response.status_code == 201, response.content
    waiver = response.json()
    assert waiver["in_force"] and waiver["granted_by"] == "alice"

    released = deploy(world, api, "2")
    assert released["status"] == "approved"
    assert released["decision"] == "warn"
    assert released["messages"]["deny"] == []
    until = Waiver.objects.get(pk=waiver["id"]).expires_at.strftime("%Y-%m-%d %H:%M UTC")
    (marked,) = released["messages"]["warn"]
    assert marked == f"waived by alice until {until}: aws_s3_bucket.logs may not be deleted"
    (outcome,) = released["evaluations"][0]["outcomes"]
    assert outcome["decision"] == "warn"
    assert outcome["waived_by"] == "alice" and outcome["waiver_id"] == waiver["id"]
    assert outcome["waived_until"] == waiver["expires_at"].replace("Z", "+00:00")
    printed = []
    assert gate.report_final(released, printed.append) == 0
    assert f"  warn: {marked}" in printed  # the pipeline's log says so too
    # A decision made earlier is not reopened: a denied deployment stays denied.
    assert Deployment.objects.get(pk=denied["id"]).status == "denied"

    # Every waiver is in the audit log and sent to the project's webhooks (and its ancestors').
    entry = AuditEntry.objects.get(action="waiver.granted")
    assert entry.actor == world.alice and entry.project == world.payments_eu
    assert entry.after["reason"] == "incident 42: the bucket must go"
    delivery = WebhookDelivery.objects.get(webhook=hook, event="waiver.granted")
    body = json.loads(delivery.body)
    assert body["waiver"]["policy"] == "no deletes" and body["waiver"]["granted_by"] == "alice"
    assert body["waiver"]["scope"] == "Platform / Payments / Payments EU / prod"

    # Expired (as if its hours had passed): a new evaluation sees the policy again; the released
    # deployment keeps the decision it was given.
    complete(world, api, released)
    now = timezone.now()
    Waiver.objects.filter(pk=waiver["id"]).update(
        starts_at=now - timedelta(hours=3), expires_at=now - timedelta(hours=1)
    )
    assert api(world.alice).get(f"/api/v1/waivers/{waiver['id']}/").json()["in_force"] is False
    again = deploy(world, api, "3")
    assert again["status"] == "denied"
    assert again["messages"]["deny"] == ["aws_s3_bucket.logs may not be deleted"]
    kept = api(world.bob).get(f"/api/v1/deployments/{released['id']}/").json()
    assert kept["decision"] == "warn" and kept["status"] == "succeeded"


def test_a_waiver_granted_while_a_deployment_waits_releases_it(world, api):
    board = make_policy("change board", ALWAYS_WAIT)
    world.payments.approval_policies.add(board)
    waiting = deploy(world, api, "1")
    assert waiting["status"] == "pending_approval"

    # A project waiver covers the environments below the project.
    response = grant(api, world.alice, board, project=world.payments.pk)
    assert response.status_code == 201, response.content

    released = api(world.bob).get(f"/api/v1/deployments/{waiting['id']}/").json()
    assert released["status"] == "approved"
    assert released["decision"] == "warn"
    assert released["messages"]["warn"][0].startswith("waived by alice until ")
    assert released["messages"]["warn"][0].endswith(": waiting for a change board")
    assert released["messages"]["pending"] == []
    assert [e["decision"] for e in released["evaluations"]] == ["pending", "warn"]
    assert waiting["requirements"][0]["required"] == 2
    assert released["requirements"] == []  # the waived policy's two approvals are asked no more


def test_a_revoked_waiver_holds_no_more(world, api, no_deletes):
    hook = webhooks.create_webhook(
        world.admin, world.platform, name="chat", url="http://127.0.0.1:9/hook", format="chat"
    )
    waiver = grant(api, world.alice, no_deletes, environment=world.environment.pk).json()
    assert api(world.bob).post(f"/api/v1/waivers/{waiver['id']}/revoke/").status_code == 403
    revoked = api(world.sam).post(f"/api/v1/waivers/{waiver['id']}/revoke/")
    assert revoked.status_code == 200, revoked.content
    assert revoked.json()["revoked_by"] == "sam" and revoked.json()["in_force"] is False
    assert api(world.alice).post(f"/api/v1/waivers/{waiver['id']}/revoke/").status_code == 409
    assert deploy(world, api, "1")["status"] == "denied"
    entry = AuditEntry.objects.get(action="waiver.revoked")
    assert entry.actor == world.sam and entry.after["revoked_by"] == "sam"
    # A chat webhook of a project above hears of both, in words.
    said = [json.loads(d.body)["text"] for d in WebhookDelivery.objects.filter(webhook=hook).order_by("pk")]
    assert said[0].startswith(
        "Waiver of policy no deletes on Platform / Payments / Payments EU / prod granted by alice"
    )
    assert said[1].startswith(
        "Waiver of policy no deletes on Platform / Payments / Payments EU / prod revoked by sam"
    )


def test_only_approvers_of_the_scope_may_grant(world, api, no_deletes):
    for user in (world.vera, world.bob, world.charlie):  # viewer, deployer, outsider
        response = grant(api, user, no_deletes, environment=world.environment.pk)
        assert response.status_code in (403, 400), (user, response.content)
    assert grant(api, world.vera, no_deletes, environment=world.environment.pk).status_code == 403
    assert grant(api, world.bob, no_deletes, project=world.payments.pk).status_code == 403
    # An approver of Payments EU only may not waive for all of Payments (which they do not even see).
    ProjectMembership.objects.create(project=world.payments_eu, user=world.charlie, role="approver")
    assert grant(api, world.charlie, no_deletes, project=world.payments.pk).status_code == 400
    ProjectMembership.objects.create(project=world.payments, user=world.charlie, role="viewer")
    assert grant(api, world.charlie, no_deletes, project=world.payments.pk).status_code == 403
    assert grant(api, world.charlie, no_deletes, environment=world.environment.pk).status_code == 201
    assert Waiver.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"hours": 25}, "hours"),
        ({"hours": 0}, "hours"),
        ({"hours": "nan"}, "hours"),
        ({"hours": None, "expires_at": "2999-01-01T00:00:00Z"}, "expires_at"),
        ({"reason": ""}, "reason"),
        ({"reason": "   "}, "reason"),
        ({"reason": None}, "reason"),
        ({"reason": "line one\nline two"}, "reason"),
    ],
)
def test_a_waiver_is_bounded_and_explained(world, api, no_deletes, body, field):
    if body.get("reason", "") is None:
        body = {key: value for key, value in body.items() if key != "reason"}
        response = api(world.alice).post(
            "/api/v1/waivers/",
            {"policy": no_deletes.pk, "hours": 1, "environment": world.environment.pk},
            format="json",
        )
    else:
        response = grant(api, world.alice, no_deletes, environment=world.environment.pk, **body)
    assert response.status_code == 400, response.content
    assert field in response.json().get("fields", response.json()), response.json()
    assert not Waiver.objects.exists()


def test_the_limit_is_a_setting(world, api, no_deletes, settings):
    settings.WAIVER_MAX_HOURS = 48
    assert grant(api, world.alice, no_deletes, environment=world.environment.pk, hours=25).status_code == 201


def test_one_scope_exactly(world, api, no_deletes):
    both = grant(api, world.alice, no_deletes, environment=world.environment.pk, project=world.payments.pk)
    assert both.status_code == 400
    assert grant(api, world.alice, no_deletes).status_code == 400


def test_a_waiver_never_releases_its_granters_own_deployment(world, api, no_deletes):
    """A deployer who is also an approver, on a project that refuses self-approval, may not release their own
    blocked deployment with a waiver: their waiver serves everyone else's deployments only."""
    world.platform.memberships.filter(user=world.bob).update(role="approver")
    assert grant(api, world.bob, no_deletes, environment=world.environment.pk).status_code == 201
    assert deploy(world, api, "1")["status"] == "denied"
    # Someone else's waiver does.
    assert grant(api, world.alice, no_deletes, environment=world.environment.pk).status_code == 201
    assert deploy(world, api, "2")["status"] == "approved"


def test_where_self_approval_is_allowed_the_granters_waiver_applies(world, api, no_deletes):
    world.platform.memberships.filter(user=world.bob).update(role="approver")
    world.payments.allow_self_approval = True
    world.payments.save()
    assert grant(api, world.bob, no_deletes, environment=world.environment.pk).status_code == 201
    assert deploy(world, api, "1")["status"] == "approved"


def test_an_error_is_never_waived(world, api):
    # Two values for one complete rule: an evaluation error, whatever the input's values.
    broken = make_policy(
        "broken",
        'package env0\n\nlevel := "a" if input.deploymentRequest.type == "deploy"\n'
        'level := "b" if count(input.plan.resource_changes) > 0\n\ndeny contains level if true\n',
    )
    world.platform.approval_policies.add(broken)
    assert grant(api, world.alice, broken, environment=world.environment.pk).status_code == 201
    assert deploy(world, api, "1")["status"] == "error"


def test_waivers_are_listed_to_those_who_see_their_scope(world, api, no_deletes):
    grant(api, world.alice, no_deletes, environment=world.environment.pk)
    grant(api, world.alice, no_deletes, project=world.platform.pk)
    assert len(api(world.vera).get("/api/v1/waivers/").json()["results"]) == 2
    assert api(world.charlie).get("/api/v1/waivers/").json()["results"] == []
    ProjectMembership.objects.create(project=world.payments_eu, user=world.charlie, role="viewer")
    (seen,) = api(world.charlie).get("/api/v1/waivers/").json()["results"]
    assert seen["environment"] == world.environment.pk


# --- the environment's page ----------------------------------------------------------------------------


def test_the_environment_page_grants_shows_and_revokes_waivers(world, client, no_deletes):
    page = f"/environments/{world.environment.pk}/"
    grant_url = f"/environments/{world.environment.pk}/waivers/"
    form = {"policy": no_deletes.pk, "scope": "environment", "hours": "2", "reason": "incident 7"}
    client.force_login(world.vera)
    assert "Waive a policy" not in client.get(page).content.decode()
    refused = client.post(grant_url, form)
    assert refused.status_code == 403
    assert "Only approvers" in refused.content.decode()

    client.force_login(world.alice)
    assert "Waive a policy" in client.get(page).content.decode()
    assert client.post(grant_url, {**form, "reason": ""}).status_code == 400
    assert client.post(grant_url, {**form, "hours": "100"}).status_code == 400
    granted = client.post(grant_url, form)
    assert granted.status_code == 302, granted.content.decode()[:500]
    waiver = Waiver.objects.get()
    assert waiver.environment == world.environment and waiver.granted_by == world.alice
    shown = client.get(page).content.decode()
    assert "incident 7" in shown and "this environment" in shown

    client.force_login(world.vera)
    assert "incident 7" in client.get(page).content.decode()  # seen by the environment's viewers
    assert (
        client.post(f"/waivers/{waiver.pk}/revoke/", {"environment": world.environment.pk}).status_code == 403
    )
    client.force_login(world.alice)
    revoked = client.post(f"/waivers/{waiver.pk}/revoke/", {"environment": world.environment.pk})
    assert revoked.status_code == 302
    assert Waiver.objects.get().revoked_by == world.alice
    assert "No waiver holds here." in client.get(page).content.decode()


def test_the_deployment_page_marks_a_waived_outcome(world, api, client, no_deletes):
    grant(api, world.alice, no_deletes, environment=world.environment.pk, reason="incident 9")
    released = deploy(world, api, "1")
    client.force_login(world.vera)
    shown = client.get(f"/deployments/{released['id']}/").content.decode()
    assert "waived by alice until " in shown
    assert 'title="incident 9"' in shown
    # The policy's page says where it is waived now.
    policy_page = client.get(f"/policies/{no_deletes.pk}/").content.decode()
    assert "Waived now" in policy_page and "incident 9" in policy_page


def test_a_blocked_deployment_points_its_approvers_to_the_waiver_form(world, api, client, no_deletes):
    denied = deploy(world, api, "1")
    client.force_login(world.alice)
    assert "Waive it for a while" in client.get(f"/deployments/{denied['id']}/").content.decode()
    client.force_login(world.vera)
    assert "Waive it for a while" not in client.get(f"/deployments/{denied['id']}/").content.decode()


def test_the_approval_email_says_what_is_waived(world, api, no_deletes, mailoutbox):
    world.payments.approval_policies.add(make_policy("change board", ALWAYS_WAIT))
    grant(api, world.alice, no_deletes, environment=world.environment.pk)
    waiting = deploy(world, api, "1")
    assert waiting["status"] == "pending_approval"  # the change board still waits; no deletes is waived
    assert waiting["decision"] == "pending"
    (mail, *_) = [m for m in mailoutbox if "waits for your approval" in m.subject]
    assert "Waiting because: waiting for a change board" in mail.body
    assert "Waived: waived by alice until " in mail.body
    assert ": aws_s3_bucket.logs may not be deleted" in mail.body


def test_a_waiver_holds_only_while_its_granter_may_grant_it(world, api, no_deletes):
    assert grant(api, world.alice, no_deletes, environment=world.environment.pk).status_code == 201
    world.platform.memberships.filter(user=world.alice).update(role="viewer")
    assert deploy(world, api, "1")["status"] == "denied"
    world.platform.memberships.filter(user=world.alice).update(role="approver")
    world.alice.is_active = False
    world.alice.save()
    assert deploy(world, api, "2")["status"] == "denied"
    world.alice.is_active = True
    world.alice.save()
    assert deploy(world, api, "3")["status"] == "approved"


def test_a_waiver_holds_in_its_scope_only(world, api, no_deletes):
    data = Project.objects.create(name="Data", parent=world.platform)
    warehouse = Environment.objects.create(name="warehouse", project=data, template=world.template)
    assert grant(api, world.alice, no_deletes, project=world.payments.pk).status_code == 201
    sibling = trigger(api(world.bob), warehouse, idempotency_key="1", **DELETES).json()
    assert Deployment.objects.get(pk=sibling["id"]).status == "denied"
    # Nor does an environment waiver reach another environment of the same project.
    other = Environment.objects.create(name="staging", project=world.payments_eu, template=world.template)
    Waiver.objects.update(revoked_at=timezone.now())
    assert grant(api, world.alice, no_deletes, environment=other.pk).status_code == 201
    assert deploy(world, api, "2")["status"] == "denied"
    # A waiver of another policy waives nothing here.
    elsewhere = make_policy("another", ALWAYS_WAIT)
    data.approval_policies.add(elsewhere)
    assert grant(api, world.alice, elsewhere, environment=world.environment.pk).status_code == 201
    assert deploy(world, api, "3")["status"] == "denied"
