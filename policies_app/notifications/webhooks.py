"""Outgoing webhooks: every status change of a deployment is sent to the webhooks of its project and
every ancestor project, as signed JSON or as a chat message (Slack and Microsoft Teams incoming webhooks
both read ``{"text": ...}``).

Each request is signed as the Standard Webhooks specification says (``webhook-id``, ``webhook-timestamp``,
``webhook-signature``; the ``standardwebhooks`` package), with a ``whsec_`` secret shown once, at creation.
Every request goes through the egress guard (policies_app/guards/egress.py): a webhook's address must be
a public one when it is saved and again at each delivery, the connection goes to the address checked, and
no redirect is followed. What is recorded of a failure is its class only, never the connection's error
text: the delivery history (and the "send test", which runs in a worker like every delivery) is no port
scanner.

Each message is a ``WebhookDelivery`` row written with the status change (an outbox). A Celery task
sends it after commit and, when the receiver fails, retries it with exponential backoff; the periodic
sweep sends whatever is due and has no task (a lost message, or the embedded setup without a broker).

Why this module is long: one outbox, from the row written with the status change to the signed request
and its retries, in two message formats; the delivery history already lives in webhook_history.py.
Every attempt is kept on the row: the delivery history shown to project admins.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import standardwebhooks
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from policies_app import access, audit, wakeups
from policies_app.access import Grants
from policies_app.choices import Capability, DeliveryStatus, DeploymentStatus, WebhookFormat
from policies_app.errors import Invalid
from policies_app.guards import egress
from policies_app.models import Deployment, Project, Webhook, WebhookDelivery
from policies_app.ops import metrics
from policies_app.projects.tree import ProjectTree, tree_for

logger = logging.getLogger(__name__)

STATUS_CHANGED = "deployment.status_changed"
PING = "ping"
# A waiver granted or revoked (deployments/waivers.py): sent to every active webhook, whatever statuses
# it chose, because a policy set aside is news to anyone watching the project.
WAIVER_GRANTED = "waiver.granted"
WAIVER_REVOKED = "waiver.revoked"
# While one sender attempts a delivery, no other takes it (longer than any request may take).
ATTEMPT_LEASE = timedelta(minutes=2)


SECRET_PREFIX = "whsec_"
# The specification asks for secrets of 24 to 64 bytes; ours are 32 random bytes.
SECRET_BYTES = (24, 64)
# What a failed attempt records: its class, never the error text of the connection (a port scanner's
# answer) nor the receiver's reason phrase. The HTTP status, when the receiver answered, is kept beside it.
FAILURES = {
    "refused": "Not sent: the address is not allowed (the platform sends only to public internet addresses).",
    "unreachable": "The receiver could not be reached, or did not answer in time.",
    "too_large": "The receiver's answer was too large.",
    "redirect": "The receiver answered with a redirect; redirects are not followed.",
    "status": "The receiver answered with an error status.",
}
# The receiver's answer is not used: a little of it is read, more is a failure.
MAX_ANSWER_BYTES = 64 * 1024


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def refusal_to_use_secret(secret: str) -> str | None:
    """Why a secret given by a user cannot sign (None when it can): ``whsec_`` and base64 of 24 to 64 bytes."""
    if not secret.startswith(SECRET_PREFIX):
        return f"Must start with {SECRET_PREFIX} followed by base64 (leave it empty to get one made)."
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        return f"After {SECRET_PREFIX}, the secret must be base64."
    if not SECRET_BYTES[0] <= len(key) <= SECRET_BYTES[1]:
        return f"The secret must hold {SECRET_BYTES[0]} to {SECRET_BYTES[1]} bytes (it holds {len(key)})."
    return None


def signature_headers(webhook: Webhook, message_id: str, body: str, at: datetime) -> dict[str, str]:
    """The Standard Webhooks headers for one attempt: the id stays the same across retries (receivers
    drop duplicates by it), the timestamp is the attempt's (receivers refuse old ones: no replay)."""
    return signed_headers(webhook.secret, message_id, body, at)


def signed_headers(secret: str, message_id: str, body: str, at: datetime) -> dict[str, str]:
    """The Standard Webhooks headers of ``body`` signed with ``secret`` (a ``whsec_`` one): every signed
    message the platform sends (webhooks, the audit stream) is signed here."""
    signature = standardwebhooks.Webhook(secret).sign(message_id, at, body)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
    }


def escape_chat(text: str) -> str:
    """Text for a chat message: Slack reads ``<...>`` as links and mentions (``<url|text>``,
    ``<!channel>``) and asks for ``&``, ``<`` and ``>`` escaped; Teams reads the same entities as the
    characters, and without a raw ``<`` no HTML reaches it either."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


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
    *, name: str, url: str, format: str, statuses: list[str] | None, secret: str = ""
) -> tuple[str, str, str, list[str]]:
    errors: dict[str, list[str]] = {}
    if not name or not name.strip():
        errors["name"] = ["A name is required."]
    refusal = egress.refusal_to_reach(url or "")
    if refusal:
        errors["url"] = [refusal]
    secret_refusal = refusal_to_use_secret(secret) if secret else None
    if secret_refusal:
        errors["secret"] = [secret_refusal]
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
    name, url, format, statuses = _clean(name=name, url=url, format=format, statuses=statuses, secret=secret)
    if Webhook.objects.filter(project=project, name=name).exists():
        raise Invalid({"name": ["The project already has a webhook of this name."]})
    with transaction.atomic():
        webhook = Webhook(
            project=project,
            name=name,
            url=url,
            format=format,
            statuses=statuses,
            active=active,
            created_by=user,
        )
        webhook.secret = secret or new_secret()
        webhook.save()
        audit.record(user, "webhook.created", webhook, after=_snapshot(webhook), project=project)
    return webhook


def update_webhook(user: AbstractBaseUser, webhook: Webhook, **changes: Any) -> Webhook:
    """Change a webhook; ``secret`` empty or absent keeps the current one."""
    access.require(
        user, Capability.ADMINISTER, webhook.project, "Only admins of this project may change its webhooks."
    )
    merged = {key: changes.get(key, getattr(webhook, key)) for key in ("name", "url", "format", "statuses")}
    name, url, format, statuses = _clean(**merged, secret=changes.get("secret") or "")
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
        return json.dumps({"text": escape_chat(text)})
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
        text = f"Test message from the policy platform for webhook {webhook.name}."
        return json.dumps({"text": escape_chat(text)})
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
    return queue_deliveries(deliveries)


def queue_event(
    tree: ProjectTree,
    project: Project,
    event: str,
    document: str,
    chat_text: str,
    *,
    deployment: Deployment | None = None,
    only_to_every_event: bool = False,
) -> list[int]:
    """In the caller's transaction: one delivery of ``event`` per active webhook of the project's chain,
    ``document`` (JSON) to JSON webhooks and ``chat_text`` (escaped here) to chat ones.
    ``only_to_every_event``: leave out the webhooks that asked for some statuses only."""
    chat = json.dumps({"text": escape_chat(chat_text)})
    now = timezone.now()
    return queue_deliveries(
        [
            WebhookDelivery(
                webhook=webhook,
                deployment=deployment,
                event=event,
                body=chat if webhook.format == WebhookFormat.CHAT else document,
                next_attempt_at=now,
            )
            for webhook in tree.active_webhooks(project)
            if not (only_to_every_event and webhook.statuses)
        ]
    )


def queue_deliveries(deliveries: list[WebhookDelivery]) -> list[int]:
    """Write the deliveries (in the caller's transaction) and wake a sender for each after commit."""
    if not deliveries:
        return []
    since = min(delivery.next_attempt_at for delivery in deliveries)
    ids = [delivery.pk for delivery in WebhookDelivery.objects.bulk_create(deliveries)]
    if None in ids:  # backends that do not return ids from a bulk insert
        ids = list(
            WebhookDelivery.objects.filter(
                webhook_id__in={delivery.webhook_id for delivery in deliveries},
                event=deliveries[0].event,
                deployment_id=deliveries[0].deployment_id,
                created_at__gte=since,
            ).values_list("pk", flat=True)
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
    fields: dict[str, Any] = {
        "attempts": attempts,
        "response_code": code,
        "error": error,
        "last_attempt_at": now,
    }
    retry_in = None
    if error == "":
        fields.update(status=DeliveryStatus.DELIVERED, delivered_at=timezone.now(), next_attempt_at=None)
    elif attempts >= settings.WEBHOOK_MAX_ATTEMPTS or delivery.event == PING:
        fields.update(status=DeliveryStatus.FAILED, next_attempt_at=None)
        metrics.WEBHOOK_FAILURES.labels(kind=error, final="true").inc()
    else:
        metrics.WEBHOOK_FAILURES.labels(kind=error, final="false").inc()
        retry_in = retry_delay(attempts)
        fields["next_attempt_at"] = timezone.now() + timedelta(seconds=retry_in)
    WebhookDelivery.objects.filter(pk=delivery_id).update(**fields)
    return retry_in


def request_headers(delivery: WebhookDelivery, at: datetime) -> dict[str, str]:
    """The headers of one attempt at ``at``: the same for every attempt but the timestamp and signature."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "policy-platform-webhooks",
        "X-Platform-Event": delivery.event,
        "X-Platform-Delivery": str(delivery.pk),
        **signature_headers(delivery.webhook, f"msg_{delivery.pk}", delivery.body, at),
    }


def post(delivery: WebhookDelivery) -> tuple[int | None, str]:
    """POST the delivery through the egress guard; returns the HTTP status the receiver answered (None
    when it did not) and the failure's class as text (empty when it accepted the message)."""
    headers = request_headers(delivery, datetime.now(UTC))
    return post_body(delivery.webhook.url, headers, delivery.body, f"webhook delivery {delivery.pk}")


def post_body(url: str, headers: dict[str, str], body: str, what: str) -> tuple[int | None, str]:
    """POST a signed body through the egress guard (``post`` for a delivery, the audit stream for its
    entries): the receiver's HTTP status (None when it did not answer) and the failure's class as text
    (empty when it accepted the message). ``what`` names the message in the log."""
    try:
        answer = egress.request(
            "POST",
            url,
            headers=headers,
            body=body.encode(),
            timeout_s=settings.WEBHOOK_TIMEOUT_SECONDS,
            max_response_bytes=MAX_ANSWER_BYTES,
        )
    except egress.EgressRefused:
        return None, FAILURES["refused"]
    except egress.EgressFailed as failure:
        logger.info("%s failed (%s): %r", what, failure.kind, failure.cause)
        return None, FAILURES[failure.kind]
    if 200 <= answer.status < 300:
        return answer.status, ""
    return answer.status, FAILURES["redirect" if 300 <= answer.status < 400 else "status"]


def send_test(user: AbstractBaseUser, webhook: Webhook) -> WebhookDelivery:
    """Queue a test message; a worker sends it like any delivery (not retried) and its outcome appears in
    the history. Nothing of the attempt is answered here: no timing, no connection error."""
    access.require(
        user, Capability.ADMINISTER, webhook.project, "Only admins of this project may test its webhooks."
    )
    delivery = WebhookDelivery.objects.create(
        webhook=webhook, event=PING, body=ping_body(webhook), next_attempt_at=timezone.now()
    )
    wakeups.wake("policies_app.tasks.deliver_webhook_task", delivery.pk)
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
