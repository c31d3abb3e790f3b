"""A webhook's delivery history as its project's admins use it: a delivery opened (the headers it was
sent with, the signature masked) and sent again (a new delivery through the outbox, as every delivery)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from policies_app import access, audit, wakeups
from policies_app.choices import Capability
from policies_app.models import WebhookDelivery
from policies_app.notifications.webhooks import request_headers


def shown_request_headers(delivery: WebhookDelivery) -> dict[str, str]:
    """The headers of the last attempt as a project admin may see them: the signature masked (it is
    made with the secret, which is shown once, at creation)."""
    at = delivery.last_attempt_at or delivery.created_at
    headers = request_headers(delivery, at)
    headers["webhook-signature"] = "v1," + "•" * 12
    return headers


def resend_delivery(user: AbstractBaseUser, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again, as a new delivery of the same body (signed anew at each attempt, with its
    own id: a receiver that dropped the first by its id takes this one). It goes out like any other:
    the outbox row now, a worker after commit, the sweep if the task is lost; retried unless a test."""
    webhook = delivery.webhook
    access.require(
        user, Capability.ADMINISTER, webhook.project, "Only admins of this project may resend its deliveries."
    )
    with transaction.atomic():
        again = WebhookDelivery.objects.create(
            webhook=webhook,
            deployment_id=delivery.deployment_id,
            event=delivery.event,
            body=delivery.body,
            next_attempt_at=timezone.now(),
            resent_from=delivery,
        )
        audit.record(
            user,
            "webhook.delivery_resent",
            webhook,
            after={"delivery": delivery.pk, "resent_as": again.pk},
            project=webhook.project,
        )
        wakeups.wake("policies_app.tasks.deliver_webhook_task", again.pk)
    return again
