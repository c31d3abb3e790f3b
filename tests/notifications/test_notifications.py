"""Approvers are told: an email to each user who may approve (Django's mail outbox), a daily digest
for those who chose one, nothing for those who chose off; and signed webhooks on every status change,
sent to a real HTTP receiver on loopback (allowed by the operator's setting, as the egress guard refuses
loopback otherwise), retried with backoff, with their history and a test message."""

from datetime import timedelta

import pytest
import standardwebhooks
from django.core import mail
from django.test import override_settings
from django.utils import timezone

from policies_app.deployments import approvals, lifecycle, verdicts
from policies_app.errors import Forbidden, Invalid
from policies_app.models import ApprovalRequestEmail, AuditEntry, ProjectMembership, WebhookDelivery
from policies_app.notifications import approval_emails, webhooks
from tests.builders import make_user, plan_with
from tests.receiver import Receiver

STATUS_CHANGED = "deployment.status_changed"

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def trigger(run, world, **fields):
    deployment, _ = run(lifecycle.trigger_deployment, world.environment, world.bob, **fields)
    deployment.refresh_from_db()
    return deployment


# --- email ---------------------------------------------------------------------------------------------


@override_settings(PLATFORM_URL="https://platform.example.com")
def test_every_user_who_may_approve_gets_an_email_with_a_direct_link(gated, run):
    deployment = trigger(run, gated, plan=plan_with(("aws_s3_bucket.logs", ["create"])))
    recipients = sorted(address for message in mail.outbox for address in message.to)
    # Alice and Sam approve on Platform, the admin is a superuser; Bob deployed it, Vera only views.
    assert recipients == ["admin@example.com", "alice@example.com", "sam@example.com"]
    message = next(m for m in mail.outbox if m.to == ["alice@example.com"])
    assert f"#{deployment.pk}" in message.subject and "waits for your approval" in message.subject
    assert f"https://platform.example.com/deployments/{deployment.pk}/" in message.body
    assert "1 to create" in message.body
    assert "needs one approver" in message.body


def test_an_approver_through_a_team_gets_the_email_and_a_deployer_approving_own_does_not(gated, run):
    alex = make_user("alex")
    gated.security.members.add(alex)
    gated.payments.memberships.create(team=gated.security, role="approver")
    deployment = trigger(run, gated)
    assert any(m.to == ["alex@example.com"] for m in mail.outbox)
    assert not any(m.to == ["bob@example.com"] for m in mail.outbox)
    assert ApprovalRequestEmail.objects.filter(deployment=deployment, user=gated.bob).count() == 0


def test_a_user_who_chose_no_email_gets_none_and_a_digest_user_gets_it_later(gated, run):
    approval_emails.set_email_mode(gated.alice, "off")
    approval_emails.set_email_mode(gated.sam, "daily_digest")
    trigger(run, gated)
    recipients = {address for message in mail.outbox for address in message.to}
    assert "alice@example.com" not in recipients and "sam@example.com" not in recipients
    assert AuditEntry.objects.filter(action="notifications.changed", actor=gated.alice).exists()

    mail.outbox.clear()
    morning = timezone.now().replace(hour=9, minute=0)
    with override_settings(EMAIL_DIGEST_HOUR=8):
        assert approval_emails.send_daily_digests(morning.replace(hour=7)) == 0, "not before the hour"
        assert approval_emails.send_daily_digests(morning) == 1
        assert approval_emails.send_daily_digests(morning + timedelta(hours=1)) == 0, "once a day"
    [digest] = mail.outbox
    assert digest.to == ["sam@example.com"] and "1 deployment(s) wait" in digest.subject


def test_an_unknown_email_mode_is_refused_by_name(world):
    with pytest.raises(Invalid) as refused:
        approval_emails.set_email_mode(world.alice, "hourly")
    assert "email" in refused.value.errors


def test_a_deployment_decided_before_its_email_went_out_is_not_emailed(
    gated, django_capture_on_commit_callbacks
):
    # The email task never runs (its message was lost); the deployment is rejected meanwhile.
    with django_capture_on_commit_callbacks(execute=False):
        deployment, _ = lifecycle.trigger_deployment(gated.environment, gated.bob)
    verdicts.evaluate_deployment(deployment.pk)
    approvals.record_approval(deployment, gated.alice, "reject", "no")
    ApprovalRequestEmail.objects.update(created_at=timezone.now() - timedelta(minutes=5))
    assert approval_emails.send_approval_emails() == 0
    assert not mail.outbox
    assert not ApprovalRequestEmail.objects.filter(sent_at__isnull=True).exists()


def test_emails_whose_task_was_lost_are_sent_by_the_sweep(gated, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        deployment, _ = lifecycle.trigger_deployment(gated.environment, gated.bob)
    with django_capture_on_commit_callbacks(execute=False):
        verdicts.evaluate_deployment(deployment.pk)
    assert not mail.outbox
    assert approval_emails.send_approval_emails() == 0, "too recent: its task may still come"
    ApprovalRequestEmail.objects.update(created_at=timezone.now() - timedelta(minutes=5))
    assert approval_emails.send_approval_emails() == 3
    assert approval_emails.send_approval_emails() == 0, "each email once"


# --- webhooks ------------------------------------------------------------------------------------------


def test_every_status_change_is_posted_signed_to_the_webhooks_of_the_project_and_its_ancestors(
    gated, run, receiver
):
    hook = webhooks.create_webhook(gated.admin, gated.platform, name="audit", url=receiver.url, secret=SECRET)
    deployment = trigger(run, gated)
    run(approvals.record_approval, deployment, gated.alice, "approve")
    bodies = [item.json() for item in receiver.received]
    changes = [(b["deployment"]["previous_status"], b["deployment"]["status"]) for b in bodies]
    assert changes == [
        ("queued", "evaluating"),
        ("evaluating", "pending_approval"),
        ("pending_approval", "approved"),
    ]
    first = receiver.received[0]
    # Signed as Standard Webhooks says (the old body-only X-Platform-Signature-256 is gone: replayable).
    assert standardwebhooks.Webhook(SECRET).verify(first.body, first.headers)["event"] == STATUS_CHANGED
    assert "X-Platform-Signature-256" not in first.headers
    assert first.headers["X-Platform-Event"] == "deployment.status_changed"
    assert bodies[0]["deployment"]["project"]["full_name"] == "Platform / Payments / Payments EU"
    assert all(d.status == "delivered" for d in WebhookDelivery.objects.filter(webhook=hook))


def test_a_chat_webhook_gets_a_text_message_only_for_the_statuses_it_asked_for(gated, run, receiver):
    webhooks.create_webhook(
        gated.admin,
        gated.payments,
        name="slack",
        url=receiver.url,
        format="chat",
        statuses=["pending_approval"],
    )
    deployment = trigger(run, gated)
    [message] = [item.json() for item in receiver.received]
    assert set(message) == {"text"}
    assert f"#{deployment.pk}" in message["text"] and "Pending approval" in message["text"]
    assert f"/deployments/{deployment.pk}/" in message["text"]


@override_settings(WEBHOOK_RETRY_BASE_SECONDS=10, WEBHOOK_MAX_ATTEMPTS=3)
def test_a_failed_delivery_is_retried_with_exponential_backoff_then_given_up(gated, run, receiver):
    hook = webhooks.create_webhook(
        gated.admin, gated.payments, name="flaky", url=receiver.url, statuses=["pending_approval"]
    )
    receiver.answers = [500, 503, 500]
    trigger(run, gated)
    delivery = WebhookDelivery.objects.get(webhook=hook)
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("pending", 1, 500)
    delays = []
    for _ in range(2):
        delays.append((delivery.next_attempt_at - timezone.now()).total_seconds())
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
        webhooks.resend_due_deliveries()
        delivery.refresh_from_db()
    assert 8 < delays[0] <= 10 and 18 < delays[1] <= 20, delays
    # The failure's class, not the receiver's reason phrase; the status is kept beside it.
    assert (delivery.status, delivery.attempts, delivery.response_code, delivery.error) == (
        "failed",
        3,
        500,
        "The receiver answered with an error status.",
    )
    assert len(receiver.received) == 3
    assert len({item.body for item in receiver.received}) == 1, "every retry sends the same body"


def test_a_delivery_not_yet_due_is_not_sent_again(gated, run, receiver):
    webhooks.create_webhook(
        gated.admin, gated.payments, name="h", url=receiver.url, statuses=["pending_approval"]
    )
    receiver.answers = [500]
    trigger(run, gated)
    assert webhooks.resend_due_deliveries() == []
    assert len(receiver.received) == 1


def test_send_test_reports_how_the_receiver_answered_and_keeps_it_in_the_history(world, receiver, run):
    # The test is sent by a worker after commit (``run`` runs it as one would); the row tells the outcome.
    hook = webhooks.create_webhook(world.admin, world.payments, name="h", url=receiver.url)
    sent = run(webhooks.send_test, world.admin, hook)
    sent.refresh_from_db()
    assert sent.status == "delivered"
    assert receiver.received[0].json()["event"] == "ping"
    receiver.answers = [404]
    failed = run(webhooks.send_test, world.admin, hook)
    failed.refresh_from_db()
    assert (failed.status, failed.response_code) == ("failed", 404)
    assert hook.deliveries.count() == 2


def test_only_project_admins_manage_webhooks_and_bad_input_is_named(world, receiver):
    with pytest.raises(Forbidden):
        webhooks.create_webhook(world.alice, world.payments, name="h", url=receiver.url)
    with pytest.raises(Invalid) as refused:
        webhooks.create_webhook(world.admin, world.payments, name="h", url="ftp://x", statuses=["bogus"])
    assert set(refused.value.errors) == {"url", "statuses"}
    pat = make_user("pat")
    ProjectMembership.objects.create(project=world.payments, user=pat, role="admin")
    hook = webhooks.create_webhook(pat, world.payments, name="h", url=receiver.url)
    assert len(hook.secret) > 20, "a secret is made when none is given"
    entry = AuditEntry.objects.get(action="webhook.created")
    assert entry.project == world.payments and hook.secret not in str(entry.after)
    with pytest.raises(Forbidden):
        webhooks.send_test(world.vera, hook)
