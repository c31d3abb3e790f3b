"""Everything the pages administer is also in the API: tokens, users, webhooks, policy attachments, the
audit log, one's notification settings, a deployment's plan summary and who may still approve it.
(Who may call each route is tests/http_api/test_authorization_matrix.py; here, what each does.)"""

import csv
import io
import json

import pytest
from django.core import mail
from rest_framework.test import APIClient

from policies_app.deployments.stored_inputs import store_plan
from policies_app.models import ApiToken, AuditEntry, Deployment
from tests.builders import make_policy, plan_with
from tests.receiver import Receiver

pytestmark = pytest.mark.django_db

ALLOW = 'package env0\n\nallow contains "ok" if true\n'


def test_a_user_holds_several_named_tokens_each_working_until_revoked(api, world):
    bob = api(world.bob)
    first = bob.post("/api/v1/tokens/", {"name": "deploy"}, format="json").json()
    second = bob.post("/api/v1/tokens/", {"name": "drift"}, format="json").json()
    assert first["key"].startswith("pp_") and first["key"] != second["key"]
    assert bob.post("/api/v1/tokens/", {"name": "deploy"}, format="json").status_code == 400
    listed = bob.get("/api/v1/tokens/").json()["results"]
    assert [t["name"] for t in listed] == ["deploy", "drift"] and all("key" not in t for t in listed)
    assert ApiToken.objects.get(name="deploy").key_hash != first["key"], "only a hash is kept"

    pipeline = APIClient()
    pipeline.credentials(HTTP_AUTHORIZATION=f"Token {first['key']}")
    assert pipeline.get(f"/api/v1/environments/{world.environment.pk}/").status_code == 200
    assert bob.get(f"/api/v1/tokens/{first['id']}/").json()["last_used_at"] is not None
    assert bob.delete(f"/api/v1/tokens/{first['id']}/").status_code == 204
    assert pipeline.get(f"/api/v1/environments/{world.environment.pk}/").status_code == 401


def test_a_deactivated_users_tokens_stop_working(api, world):
    key = api(world.bob).post("/api/v1/tokens/", {"name": "ci"}, format="json").json()["key"]
    assert (
        api(world.admin)
        .patch(f"/api/v1/users/{world.bob.pk}/", {"is_active": False}, format="json")
        .status_code
        == 200
    )
    pipeline = APIClient()
    pipeline.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert pipeline.get("/api/v1/me/").status_code == 401
    assert AuditEntry.objects.filter(action="user.changed", after__is_active=False).exists()
    # Reactivated, the account starts afresh: the token given before is gone, not merely paused.
    api(world.admin).patch(f"/api/v1/users/{world.bob.pk}/", {"is_active": True}, format="json")
    assert pipeline.get("/api/v1/me/").status_code == 401
    assert not world.bob.api_tokens.exists()


def test_an_organisation_admin_invites_a_user_by_email(api, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        created = api(world.admin).post(
            "/api/v1/users/",
            {"username": "nina", "email": "nina@example.com", "organisation_role": "auditor"},
            format="json",
        )
    assert created.status_code == 201 and created.json()["organisation_role"] == "auditor"
    [invitation] = mail.outbox
    assert invitation.to == ["nina@example.com"] and "/accounts/reset/" in invitation.body
    bad = api(world.admin).post("/api/v1/users/", {"username": "x y"}, format="json")
    assert bad.status_code == 400 and set(bad.json()) == {"username", "email"}


def test_an_admin_cannot_deactivate_themselves(api, world):
    from policies_app.models import OrganisationMembership
    from tests.builders import make_user

    olga = make_user("olga")
    OrganisationMembership.objects.create(user=olga, role="admin")
    refused = api(olga).patch(f"/api/v1/users/{olga.pk}/", {"is_active": False}, format="json")
    assert refused.status_code == 403


def test_webhooks_are_created_with_a_secret_shown_once_tested_and_their_deliveries_listed(
    api, world, loopback_allowed, django_capture_on_commit_callbacks
):
    receiver = Receiver()
    try:
        admin = api(world.admin)
        created = admin.post(
            "/api/v1/webhooks/",
            {"project": world.payments.pk, "name": "chat", "url": receiver.url, "format": "chat"},
            format="json",
        )
        assert created.status_code == 201 and len(created.json()["secret"]) > 20
        assert created.json()["secret"].startswith("whsec_")
        hook = created.json()["id"]
        assert "secret" not in admin.get(f"/api/v1/webhooks/{hook}/").json()
        # The test is queued (a worker sends it after commit) and its outcome is read in the history.
        with django_capture_on_commit_callbacks(execute=True):
            queued = admin.post(f"/api/v1/webhooks/{hook}/test/")
        assert queued.status_code == 202 and queued.json()["status"] == "pending"
        history = admin.get(f"/api/v1/webhooks/{hook}/deliveries/").json()
        assert history["count"] == 1
        tested = history["results"][0]
        assert (tested["status"], tested["response_code"]) == ("delivered", 200)
        bad = admin.patch(f"/api/v1/webhooks/{hook}/", {"statuses": ["nope"]}, format="json")
        assert bad.status_code == 400 and "statuses" in bad.json()
        assert admin.delete(f"/api/v1/webhooks/{hook}/").status_code == 204
    finally:
        receiver.close()


def test_policies_are_attached_to_and_detached_from_projects_and_templates(api, world):
    policy = make_policy("attachable", ALLOW)
    admin = api(world.admin)
    attached = admin.post(
        f"/api/v1/projects/{world.payments.pk}/policies/", {"policy": policy.pk}, format="json"
    )
    assert attached.status_code == 201 and attached.json()["approval_policies"] == [policy.pk]
    again = admin.post(
        f"/api/v1/projects/{world.payments.pk}/policies/", {"policy": policy.pk}, format="json"
    )
    assert again.status_code == 400 and "already attached" in again.json()["policy"][0]
    assert (
        admin.delete(f"/api/v1/projects/{world.payments.pk}/policies/{policy.pk}/").json()[
            "approval_policies"
        ]
        == []
    )
    assert admin.delete(f"/api/v1/projects/{world.payments.pk}/policies/{policy.pk}/").status_code == 404
    on_template = admin.post(
        f"/api/v1/templates/{world.template.pk}/policies/", {"policy": policy.pk}, format="json"
    )
    assert on_template.json()["approval_policies"] == [policy.pk]
    actions = list(AuditEntry.objects.filter(action__startswith="policy.").values_list("action", flat=True))
    assert actions.count("policy.attached") == 2 and actions.count("policy.detached") == 1


def test_members_are_removed_through_the_api(api, world):
    membership = world.payments_eu.memberships.create(user=world.charlie, role="viewer")
    assert (
        api(world.alice)
        .delete(f"/api/v1/projects/{world.payments_eu.pk}/members/{membership.pk}/")
        .status_code
        == 403
    )
    assert (
        api(world.admin)
        .delete(f"/api/v1/projects/{world.payments_eu.pk}/members/{membership.pk}/")
        .status_code
        == 204
    )
    assert not world.payments_eu.memberships.exists()


def test_a_project_shows_its_own_and_its_effective_expiry(api, world, settings):
    settings.DEPLOYMENT_PENDING_EXPIRY_HOURS = 72
    admin = api(world.admin)
    assert (
        admin.patch(
            f"/api/v1/projects/{world.payments.pk}/", {"pending_expiry_hours": 8}, format="json"
        ).status_code
        == 200
    )
    shown = admin.get(f"/api/v1/projects/{world.payments_eu.pk}/").json()
    assert (shown["pending_expiry_hours"], shown["effective_pending_expiry_hours"]) == (None, 8)
    assert (
        admin.patch(
            f"/api/v1/projects/{world.payments.pk}/", {"pending_expiry_hours": 0}, format="json"
        ).status_code
        == 400
    )


def test_the_audit_log_is_filtered_and_exported(api, world):
    make_policy("audited", ALLOW)
    admin = api(world.admin)
    admin.patch(f"/api/v1/projects/{world.payments.pk}/", {"description": "x"}, format="json")
    listed = admin.get("/api/v1/audit/", {"action": "project.", "actor": "admin"}).json()
    assert [(e["action"], e["actor"]) for e in listed["results"]] == [("project.changed", "admin")]
    assert listed["results"][0]["before"]["name"] == "Payments"
    assert admin.get("/api/v1/audit/", {"since": "not a date"}).status_code == 400
    exported = admin.get("/api/v1/audit/export/", {"file": "csv", "target_type": "approvalpolicy"})
    rows = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert [r["action"] for r in rows] == ["policy.created"]
    as_json = json.loads(b"".join(admin.get("/api/v1/audit/export/").streaming_content))
    assert len(as_json) == 2
    assert api(world.vera).get("/api/v1/audit/").json()["count"] == 0, "a viewer reads no entries"


def test_a_user_sets_how_they_are_told(api, world):
    alice = api(world.alice)
    assert alice.get("/api/v1/me/").json()["email_notifications"] == "immediately"
    assert (
        alice.patch("/api/v1/me/", {"email_notifications": "off"}, format="json").json()[
            "email_notifications"
        ]
        == "off"
    )
    assert alice.patch("/api/v1/me/", {"email_notifications": "loud"}, format="json").status_code == 400


def test_a_deployment_shows_its_plan_summary_and_who_may_still_approve(api, world):
    deployment = Deployment.objects.create(
        environment=world.environment,
        deployer=world.bob,
        status="pending_approval",
        plan_document_id=store_plan(plan_with(("aws_db_instance.main", ["delete", "create"]))),
    )
    summary = api(world.vera).get(f"/api/v1/deployments/{deployment.pk}/plan-summary/").json()
    assert summary["counts"]["replace"] == 1 and summary["resources"][0]["address"] == "aws_db_instance.main"
    shown = api(world.vera).get(f"/api/v1/deployments/{deployment.pk}/").json()
    assert shown["approvers_to_act"] == ["admin", "alice", "sam"]
    assert api(world.vera).get("/api/v1/deployments/").json()["results"][0]["approvers_to_act"] is None
