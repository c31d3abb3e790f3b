"""Approvals that go stale: a released deployment the pipeline has not completed within its project's
release expiry (default 24 hours, inherited down the tree) expires, frees its environment for the
deployment held behind it, and says so to the audit log, the webhooks and the gate. Through the REST API,
with the evaluations run on commit as in production; the sweep is the periodic one."""

import json
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from policies_app.deployments import sweeps
from policies_app.models import AuditEntry, Deployment, Environment, WebhookDelivery
from policies_app.notifications import webhooks
from tests.builders import plan_with
from tests.receiver import Receiver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("commits_run_on_commit_callbacks")]


def trigger(api, world, environment=None):
    environment = environment or world.environment
    body = {"plan": plan_with(("aws_s3_bucket.logs", ["create"]))}
    response = api(world.bob).post(f"/api/v1/environments/{environment.pk}/deployments/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def release(api, world, environment=None):
    """Trigger and have Alice approve: the gate opens (status approved)."""
    deployment = trigger(api, world, environment)
    approved = api(world.alice).post(f"/api/v1/deployments/{deployment['id']}/approve/", {}, format="json")
    assert approved.json()["status"] == "approved", approved.json()
    return approved.json()


@pytest.fixture
def receiver(loopback_allowed):
    receiver = Receiver()
    yield receiver
    receiver.close()


def shown(api, world, deployment_id):
    return api(world.bob).get(f"/api/v1/deployments/{deployment_id}/").json()


@override_settings(DEPLOYMENT_RELEASE_EXPIRY_HOURS=24)
def test_a_release_not_completed_in_the_default_window_expires_and_frees_its_environment(
    gated, api, receiver
):
    hook = webhooks.create_webhook(gated.admin, gated.platform, name="ops", url=receiver.url)
    released = release(api, gated)
    released_at = Deployment.objects.get(pk=released["id"]).released_at
    assert shown(api, gated, released["id"])["expires_at"] is not None
    assert Deployment.objects.get(pk=released["id"]).expires_at == released_at + timedelta(hours=24)
    held = trigger(api, gated)
    assert held["status"] == "queued" and held["queued_behind"] == released["id"]

    assert sweeps.sweep_waiting_deployments(released_at + timedelta(hours=23))["expired_releases"] == []
    assert shown(api, gated, released["id"])["status"] == "approved"

    swept = sweeps.sweep_waiting_deployments(released_at + timedelta(hours=25))
    assert swept["expired_releases"] == [released["id"]]
    stale = shown(api, gated, released["id"])
    assert stale["status"] == "expired"
    # The held deployment started at once: evaluated, it now waits for its own approval.
    assert shown(api, gated, held["id"])["status"] == "pending_approval"
    assert Deployment.objects.get(pk=held["id"]).events.filter(kind="started").exists()
    event = Deployment.objects.get(pk=released["id"]).events.get(kind="expired")
    assert event.detail.startswith("Released 25.0 hours ago and not completed by the pipeline")

    entry = AuditEntry.objects.get(action="deployment.expired", target_id=str(released["id"]))
    assert (entry.actor, entry.before, entry.after) == (
        None,
        {"status": "approved"},
        {"released_hours": 25.0},
    )
    delivery = WebhookDelivery.objects.filter(webhook=hook, deployment_id=released["id"]).order_by("-id")[0]
    body = json.loads(delivery.body)["deployment"]
    assert (body["previous_status"], body["status"]) == ("approved", "expired")
    assert delivery.status == "delivered"
    told = [item.json()["deployment"] for item in receiver.received]
    assert (released["id"], "expired", "approved") in [
        (change["id"], change["status"], change["previous_status"]) for change in told
    ]


def test_completing_an_expired_release_is_refused_with_a_clear_conflict(gated, api):
    released = release(api, gated)
    Deployment.objects.filter(pk=released["id"]).update(expires_at=timezone.now() - timedelta(minutes=1))
    sweeps.sweep_waiting_deployments()
    answer = api(gated.bob).post(
        f"/api/v1/deployments/{released['id']}/complete/", {"status": "succeeded"}, format="json"
    )
    assert answer.status_code == 409
    assert answer.json()["code"] == "release_expired"
    assert answer.json()["detail"].startswith("The release expired: the pipeline did not complete it in time")
    assert shown(api, gated, released["id"])["status"] == "expired"
    assert not AuditEntry.objects.filter(action="deployment.completed").exists()


def test_a_release_completed_in_time_does_not_expire(gated, api):
    released = release(api, gated)
    done = api(gated.bob).post(
        f"/api/v1/deployments/{released['id']}/complete/", {"status": "succeeded"}, format="json"
    )
    assert done.json()["status"] == "succeeded"
    assert sweeps.sweep_waiting_deployments(timezone.now() + timedelta(days=30))["expired_releases"] == []
    assert shown(api, gated, released["id"])["status"] == "succeeded"


def test_a_project_sets_its_own_release_window_and_its_sub_projects_inherit_it(gated, api):
    answer = api(gated.admin).patch(
        f"/api/v1/projects/{gated.payments.pk}/", {"release_expiry_hours": 2}, format="json"
    )
    assert answer.status_code == 200, answer.json()
    assert (answer.json()["release_expiry_hours"], answer.json()["effective_release_expiry_hours"]) == (2, 2)
    below = api(gated.admin).get(f"/api/v1/projects/{gated.payments_eu.pk}/").json()
    assert (below["release_expiry_hours"], below["effective_release_expiry_hours"]) == (None, 2)
    elsewhere = api(gated.admin).get(f"/api/v1/projects/{gated.platform.pk}/").json()
    assert elsewhere["effective_release_expiry_hours"] == 24
    assert AuditEntry.objects.filter(action="project.changed", after__release_expiry_hours=2).exists()

    released = release(api, gated)
    released_at = Deployment.objects.get(pk=released["id"]).released_at
    assert Deployment.objects.get(pk=released["id"]).expires_at == released_at + timedelta(hours=2)
    # A release in another branch of the tree keeps the default.
    other_project = gated.platform.__class__.objects.create(name="Data", parent=gated.platform)
    other = Environment.objects.create(name="warehouse", project=other_project, template=gated.template)
    untouched = release(api, gated, other)

    swept = sweeps.sweep_waiting_deployments(released_at + timedelta(hours=3))
    assert swept["expired_releases"] == [released["id"]]
    assert shown(api, gated, untouched["id"])["status"] == "approved"


def test_a_release_window_must_be_a_positive_whole_number_of_hours(gated, api):
    answer = api(gated.admin).patch(
        f"/api/v1/projects/{gated.payments.pk}/", {"release_expiry_hours": 0}, format="json"
    )
    assert answer.status_code == 400 and "release_expiry_hours" in answer.json()


def test_a_pending_deployment_past_its_release_window_is_left_to_the_pending_expiry(gated, api):
    # Only releases go stale: a deployment waiting for approval keeps its own expiry.
    waiting = trigger(api, gated)
    assert waiting["status"] == "pending_approval"
    swept = sweeps.sweep_waiting_deployments(timezone.now() + timedelta(hours=25))
    assert swept["expired_releases"] == [] and swept["expired"] == []


def test_the_deployment_page_says_when_a_release_expires(gated, api, client):
    from django.urls import reverse

    released = release(api, gated)
    client.force_login(gated.vera)
    page = client.get(reverse("web:deployment-detail", args=[released["id"]])).content.decode()
    expires_at = Deployment.objects.get(pk=released["id"]).expires_at
    assert f'<dt>Release expires</dt><dd><time datetime="{expires_at.isoformat()}"' in page
    assert f"{expires_at:%Y-%m-%d %H:%M} UTC</time>" in page
    assert "unless the pipeline completes it before" in page
