"""Outgoing webhooks: every status change of a deployment is sent to the webhooks of its project and
every ancestor project, as signed JSON or as a chat message (Slack and Microsoft Teams incoming webhooks
both read ``{"text": ...}``).

Each message is a ``WebhookDelivery`` row written with the status change (an outbox). A Celery task
sends it after commit and, when the receiver fails, retries it with exponential backoff; the periodic
sweep sends whatever is due and has no task (a lost message, or the embedded setup without a broker).
Every attempt is kept on the row: the delivery history shown to project admins.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from policies_app import access, audit, wakeups
from policies_app.access import Grants
from policies_app.choices import Capability, DeliveryStatus, DeploymentStatus, WebhookFormat
from policies_app.errors import Invalid
from policies_app.models import Deployment, Project, Webhook, WebhookDelivery
from policies_app.projects.tree import ProjectTree, tree_for

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Platform-Signature-256"
STATUS_CHANGED = "deployment.status_changed"
PING = "ping"
# While one sender attempts a delivery, no other takes it (longer than any request may take).
ATTEMPT_LEASE = timedelta(minutes=2)


def sign(secret: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the HMAC-SHA256 of the exact body, in hex."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def retry_delay(attempts: int) -> float:
    """Seconds before the next attempt, after ``attempts`` failed ones: base, 2 x base, 4 x base..."""
    return settings.WEBHOOK_RETRY_BASE_SECONDS * 2 ** (attempts - 1)


# --- who may see and change webhooks -------------------------------------------------------------------


def visible_webhooks(user: AbstractBaseUser) -> QuerySet[Webhook]:
    """Webhooks of the projects the user administers (and every webhook for organisation roles)."""
    held = Grants.of(user)
    webhooks = Webhook.objects.select_related("project")
    if held.sees_everything:
        return webhooks
    return webhooks.filter(held.capability_filter(Capability.ADMINISTER, "project__") or Q())


def _clean(
    *, name: str, url: str, format: str, statuses: list[str] | None
) -> tuple[str, str, str, list[str]]:
    errors: dict[str, list[str]] = {}
    if not name or not name.strip():
        errors["name"] = ["A name is required."]
    parts = urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        errors["url"] = ["Must be an http:// or https:// address."]
    if format not in WebhookFormat.values:
        errors["format"] = [f"Must be one of {', '.join(WebhookFormat.values)}."]
    statuses = list(statuses or [])
    unknown = sorted(set(statuses) - set(DeploymentStatus.values))
    if unknown:
        errors["statuses"] = [f"Unknown statuses: {', '.join(unknown)}."]
    if errors:
        raise Invalid(errors)
    return name.strip(), url, format, sorted(set(statuses))


def _snapshot(webhook: Webhook) -> dict[str, Any]:
    # The secret is never written to the log; that it changed is.
    return {
        "name": webhook.name,
        "url": webhook.url,
        "format": webhook.format,
        "statuses": webhook.statuses,
        "active": webhook.active,
        "secret": hashlib.sha256(webhook.secret.encode()).hexdigest()[:12],
    }


def create_webhook(
    user: AbstractBaseUser,
    project: Project,
    *,
    name: str,
    url: str,
    secret: str = "",
    format: str = WebhookFormat.JSON,
    statuses: list[str] | None = None,
    active: bool = True,
) -> Webhook:
    access.require(user, Capability.ADMINISTER, project, "Only admins of this project may add webhooks.")
    name, url, format, statuses = _clean(name=name, url=url, format=format, statuses=statuses)
    if Webhook.objects.filter(project=project, name=name).exists():
        raise Invalid({"name": ["The project already has a webhook of this name."]})
    with transaction.atomic():
        webhook = Webhook.objects.create(
            project=project,
            name=name,
            url=url,
            secret=secret or secrets.token_urlsafe(32),
            format=format,
            statuses=statuses,
            active=active,
            created_by=user,
        )
        audit.record(user, "webhook.created", webhook, after=_snapshot(webhook), project=project)
    return webhook


def update_webhook(user: AbstractBaseUser, webhook: Webhook, **changes: Any) -> Webhook:
    """Change a webhook; ``secret`` empty or absent keeps the current one."""
    access.require(
        user, Capability.ADMINISTER, webhook.project, "Only admins of this project may change its webhooks."
    )
    merged = {key: changes.get(key, getattr(webhook, key)) for key in ("name", "url", "format", "statuses")}
    name, url, format, statuses = _clean(**merged)
    if Webhook.objects.filter(project=webhook.project, name=name).exclude(pk=webhook.pk).exists():
        raise Invalid({"name": ["The project already has a webhook of this name."]})
    with transaction.atomic():
        before = _snapshot(webhook)
        webhook.name, webhook.url, webhook.format, webhook.statuses = name, url, format, statuses
        webhook.active = changes.get("active", webhook.active)
        if changes.get("secret"):
            webhook.secret = changes["secret"]
        webhook.save()
        audit.record(
            user, "webhook.changed", webhook, before=before, after=_snapshot(webhook), project=webhook.project
        )
    return webhook


def delete_webhook(user: AbstractBaseUser, webhook: Webhook) -> None:
    access.require(
        user, Capability.ADMINISTER, webhook.project, "Only admins of this project may remove its webhooks."
    )
    with transaction.atomic():
        audit.record(user, "webhook.deleted", webhook, before=_snapshot(webhook), project=webhook.project)
        webhook.delete()


# --- what is sent --------------------------------------------------------------------------------------


def status_change_body(
    webhook_format: str, deployment: Deployment, full_name: str, from_status: str, to_status: str
) -> str:
    from policies_app.notifications.approval_emails import deployment_url

    url = deployment_url(deployment.pk)
    if webhook_format == WebhookFormat.CHAT:
        labels = dict(DeploymentStatus.choices)
        text = (
            f"{deployment.get_type_display()} #{deployment.pk} of {full_name} / {deployment.environment.name} "
            f"by {deployment.deployer.get_username()}: {labels.get(from_status, from_status)} → "
            f"{labels.get(to_status, to_status)}. {url}"
        )
        return json.dumps({"text": text})
    return json.dumps(
        {
            "event": STATUS_CHANGED,
            "occurred_at": timezone.now().isoformat(),
            "deployment": {
                "id": deployment.pk,
                "url": url,
                "type": deployment.type,
                "status": to_status,
                "previous_status": from_status,
                "decision": deployment.decision or None,
                "messages": deployment.messages,
                "revision": deployment.revision,
                "deployer": deployment.deployer.get_username(),
                "environment": {"id": deployment.environment_id, "name": deployment.environment.name},
                "project": {"id": deployment.environment.project_id, "full_name": full_name},
                "superseded_by": deployment.superseded_by_id,
            },
        },
        sort_keys=True,
    )


def ping_body(webhook: Webhook) -> str:
    if webhook.format == WebhookFormat.CHAT:
        return json.dumps({"text": f"Test message from the policy platform for webhook {webhook.name}."})
    return json.dumps(
        {
            "event": PING,
            "occurred_at": timezone.now().isoformat(),
            "webhook": {"id": webhook.pk, "name": webhook.name, "project": webhook.project_id},
        },
        sort_keys=True,
    )


def queue_status_change(
    deployment: Deployment, from_status: str, to_status: str, tree: ProjectTree | None = None
) -> list[int]:
    """In the transaction of the status change: one delivery per webhook of the project's chain."""
    project = deployment.environment.project
    tree = tree or tree_for(project, with_policies=False)
    full_name = tree.full_name(project)
    now = timezone.now()
    deliveries = [
        WebhookDelivery(
            webhook=webhook,
            deployment=deployment,
            event=STATUS_CHANGED,
            body=status_change_body(webhook.format, deployment, full_name, from_status, to_status),
            next_attempt_at=now,
        )
        for webhook in tree.active_webhooks(project)
        if not webhook.statuses or to_status in webhook.statuses
    ]
    if not deliveries:
        return []
    ids = [delivery.pk for delivery in WebhookDelivery.objects.bulk_create(deliveries)]
    if None in ids:  # backends that do not return ids from a bulk insert
        ids = list(
            WebhookDelivery.objects.filter(deployment=deployment, created_at__gte=now).values_list(
                "pk", flat=True
            )
        )
    for delivery_id in ids:
        wakeups.wake("policies_app.tasks.deliver_webhook_task", delivery_id)
    return ids


def attempt_delivery(delivery_id: int) -> float | None:
    """One attempt at a due delivery. Returns the seconds to wait before retrying, or None when there
    is nothing more to do (delivered, gave up, or not this sender's to attempt)."""
    now = timezone.now()
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now
    ).update(next_attempt_at=now + ATTEMPT_LEASE)
    if not claimed:
        return None
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)
    code, error = post(delivery)
    attempts = delivery.attempts + 1
    fields: dict[str, Any] = {"attempts": attempts, "response_code": code, "error": error}
    retry_in = None
    if error == "":
        fields.update(status=DeliveryStatus.DELIVERED, delivered_at=timezone.now(), next_attempt_at=None)
    elif attempts >= settings.WEBHOOK_MAX_ATTEMPTS or delivery.event == PING:
        fields.update(status=DeliveryStatus.FAILED, next_attempt_at=None)
    else:
        retry_in = retry_delay(attempts)
        fields["next_attempt_at"] = timezone.now() + timedelta(seconds=retry_in)
    WebhookDelivery.objects.filter(pk=delivery_id).update(**fields)
    return retry_in


def post(delivery: WebhookDelivery) -> tuple[int | None, str]:
    """POST the delivery; returns the HTTP status and an error text (empty when it was accepted)."""
    body = delivery.body.encode()
    request = urllib.request.Request(delivery.webhook.url, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("User-Agent", "policy-platform-webhooks")
    request.add_header("X-Platform-Event", delivery.event)
    request.add_header("X-Platform-Delivery", str(delivery.pk))
    request.add_header(SIGNATURE_HEADER, sign(delivery.webhook.secret, body))
    try:
        with urllib.request.urlopen(request, timeout=settings.WEBHOOK_TIMEOUT_SECONDS) as response:
            return response.status, ""
    except urllib.error.HTTPError as problem:
        return problem.code, f"HTTP {problem.code} {problem.reason}"
    except (urllib.error.URLError, OSError) as problem:
        return None, f"Could not reach the receiver: {getattr(problem, 'reason', problem)}"


def send_test(user: AbstractBaseUser, webhook: Webhook) -> WebhookDelivery:
    """Send a test message now and say how it went (kept in the history; a test is not retried)."""
    access.require(
        user, Capability.ADMINISTER, webhook.project, "Only admins of this project may test its webhooks."
    )
    delivery = WebhookDelivery.objects.create(
        webhook=webhook, event=PING, body=ping_body(webhook), next_attempt_at=timezone.now()
    )
    attempt_delivery(delivery.pk)
    delivery.refresh_from_db()
    return delivery


def resend_due_deliveries() -> list[int]:
    """Periodic: attempt every delivery that is due (its retry time passed, or its task was lost)."""
    due = WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING, next_attempt_at__lte=timezone.now()
    ).values_list("pk", flat=True)[: settings.EVALUATION_RESEND_BATCH]
    attempted = list(due)
    for delivery_id in attempted:
        attempt_delivery(delivery_id)
    return attempted
