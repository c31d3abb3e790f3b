"""Approve from Slack: a Slack app posts each waiting deployment to a channel with Approve and Reject
buttons (Block Kit), and the clicks Slack posts back run the same use case as the web's buttons.

Outbound, every Web API call (``chat.postMessage``, ``chat.update``, ``chat.postEphemeral``,
``users.info``) goes through ``slack_sdk``'s WebClient, whose HTTP is handed to the egress guard
(guards/egress.py): the API's address is checked, the connection goes to the checked address, nothing is
followed. The platform never fetches an address a request gives it (no ``response_url``): answers go
through the Web API with the bot token, to the configured API only.

Inbound, the clicks are notifications/slack_interactions.py's.

The message owed is a row (``SlackApprovalMessage``) written in the transaction that makes the
deployment wait; a task posts it after commit and the periodic sweep posts what a lost task left.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any
from urllib.request import Request

from django.conf import settings
from django.utils import timezone
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from policies_app import wakeups
from policies_app.choices import ApprovalDecision, DeliveryStatus, DeploymentStatus
from policies_app.guards import egress
from policies_app.guards.names import one_line
from policies_app.models import Approval, Deployment, SlackApprovalMessage

logger = logging.getLogger(__name__)

APPROVE = "deployment_approve"
REJECT = "deployment_reject"
# While one sender posts a message, no other takes it.
ATTEMPT_LEASE = timedelta(minutes=2)
MAX_ANSWER_BYTES = 1024 * 1024


class GuardedWebClient(WebClient):
    """slack_sdk's WebClient with its HTTP sent through the egress guard (no proxy, no redirect, bounded
    time and size, the checked address only)."""

    def _perform_urllib_http_request_internal(self, url: str, req: Request) -> dict[str, Any]:
        headers = {name: str(value) for name, value in req.header_items()}
        data = req.data if isinstance(req.data, bytes) else None
        answer = egress.request(
            "POST",
            url,
            headers=headers,
            body=data,
            timeout_s=settings.SLACK_TIMEOUT_SECONDS,
            max_response_bytes=MAX_ANSWER_BYTES,
        )
        return {"status": answer.status, "headers": dict(answer.headers), "body": answer.body.decode()}


def enabled() -> bool:
    """Slack approvals are on when the bot token, the signing secret and the channel are all set."""
    return bool(settings.SLACK_BOT_TOKEN and settings.SLACK_SIGNING_SECRET and settings.SLACK_CHANNEL)


def client() -> GuardedWebClient:
    return GuardedWebClient(
        token=settings.SLACK_BOT_TOKEN,
        base_url=settings.SLACK_API_URL,
        timeout=int(settings.SLACK_TIMEOUT_SECONDS),
    )


def _failure(error: Exception) -> str:
    """What is recorded of a failed call: Slack's error code, or the guard's class; never the text of a
    connection error nor anything holding the token."""
    if isinstance(error, SlackApiError):
        return str(error.response.get("error") or "error")[:200]
    if isinstance(error, egress.EgressRefused):
        return "refused"
    if isinstance(error, egress.EgressFailed):
        return error.kind
    return "unreachable"


# --- the message -------------------------------------------------------------------------------------


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _summary(deployment: Deployment) -> str:
    from policies_app.notifications.approval_emails import deployment_url

    environment = deployment.environment
    pending = (deployment.messages or {}).get("pending") or []
    lines = [
        f"*<{deployment_url(deployment.pk)}|{_escape(deployment.get_type_display())} #{deployment.pk}>* "
        f"of {_escape(environment.project.name)} / {_escape(environment.name)} "
        f"by {_escape(deployment.deployer.get_username())} waits for approval."
    ]
    lines += [f"• {_escape(one_line(reason)[:300])}" for reason in pending[:5]]
    return "\n".join(lines)


def message_blocks(deployment: Deployment, outcome: str = "", decidable: bool = True) -> list[dict]:
    """The Block Kit message: what waits and why, the outcome so far, Approve / Reject and the page."""
    from policies_app.notifications.approval_emails import deployment_url

    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": _summary(deployment)}}
    ]
    if outcome:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _escape(outcome)}]})
    elements: list[dict[str, Any]] = []
    if decidable:
        value = str(deployment.pk)
        elements += [
            {
                "type": "button",
                "action_id": APPROVE,
                "style": "primary",
                "text": {"type": "plain_text", "text": "Approve"},
                "value": value,
            },
            {
                "type": "button",
                "action_id": REJECT,
                "style": "danger",
                "text": {"type": "plain_text", "text": "Reject"},
                "value": value,
                "confirm": {
                    "title": {"type": "plain_text", "text": "Reject this deployment?"},
                    "text": {"type": "plain_text", "text": "A rejection is final."},
                    "confirm": {"type": "plain_text", "text": "Reject"},
                    "deny": {"type": "plain_text", "text": "Cancel"},
                },
            },
        ]
    elements.append(
        {
            "type": "button",
            "action_id": "deployment_open",
            "text": {"type": "plain_text", "text": "Open the deployment"},
            "url": deployment_url(deployment.pk),
        }
    )
    blocks.append({"type": "actions", "block_id": f"deployment_{deployment.pk}", "elements": elements})
    return blocks


def current_outcome(deployment: Deployment) -> str:
    """What the message says of the decisions so far, read now: who approved or rejected, then whether
    it still waits. Every update renders it afresh, so whichever update lands last tells the truth of
    its moment (a click on a stale button meets the web's checks anyway)."""
    decided = [
        f"{approval.user.get_username()} {'approved' if approval.decision == ApprovalDecision.APPROVE else 'rejected'}"
        for approval in Approval.objects.filter(deployment=deployment).select_related("user")
    ]
    now = (
        "still waits for approval"
        if deployment.status == DeploymentStatus.PENDING_APPROVAL
        else f"now {deployment.get_status_display()}"
    )
    return f"{', '.join(decided) or 'No decision yet'}; {now}."


def _fallback_text(deployment: Deployment) -> str:
    return f"Deployment #{deployment.pk} waits for approval."


# --- posting -----------------------------------------------------------------------------------------


def request_approval(deployment: Deployment) -> None:
    """In the transaction that makes the deployment wait: owe a message to the channel (once)."""
    if not enabled():
        return
    message, created = SlackApprovalMessage.objects.get_or_create(
        deployment=deployment,
        defaults={"channel": settings.SLACK_CHANNEL, "next_attempt_at": timezone.now()},
    )
    if created:
        wakeups.wake("policies_app.tasks.post_slack_message_task", message.pk)


def post_message(message_id: int) -> bool:
    """Post one due message with ``chat.postMessage``; True when Slack took it. A failure is retried by
    the sweep with backoff, up to WEBHOOK_MAX_ATTEMPTS attempts; a deployment no longer waiting gets none."""
    now = timezone.now()
    claimed = SlackApprovalMessage.objects.filter(
        pk=message_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now
    ).update(next_attempt_at=now + ATTEMPT_LEASE)
    if not claimed:
        return False
    message = SlackApprovalMessage.objects.select_related(
        "deployment__environment__project", "deployment__deployer"
    ).get(pk=message_id)
    deployment = message.deployment
    if deployment.status != DeploymentStatus.PENDING_APPROVAL:
        SlackApprovalMessage.objects.filter(pk=message_id).update(
            status=DeliveryStatus.FAILED, error="no longer waiting", next_attempt_at=None
        )
        return False
    attempts = message.attempts + 1
    try:
        answer = client().chat_postMessage(
            channel=message.channel,
            text=_fallback_text(deployment),
            blocks=message_blocks(deployment),
            unfurl_links=False,
        )
    except (SlackClientError, egress.EgressRefused, egress.EgressFailed) as error:
        logger.info("slack message %s failed: %s", message_id, _failure(error))
        gave_up = attempts >= settings.WEBHOOK_MAX_ATTEMPTS
        SlackApprovalMessage.objects.filter(pk=message_id).update(
            attempts=attempts,
            error=_failure(error),
            status=DeliveryStatus.FAILED if gave_up else DeliveryStatus.PENDING,
            next_attempt_at=None
            if gave_up
            else timezone.now()
            + timedelta(seconds=settings.WEBHOOK_RETRY_BASE_SECONDS * 2 ** (attempts - 1)),
        )
        return False
    SlackApprovalMessage.objects.filter(pk=message_id).update(
        attempts=attempts,
        error="",
        status=DeliveryStatus.DELIVERED,
        channel=str(answer.get("channel") or message.channel),
        ts=str(answer.get("ts") or ""),
        posted_at=timezone.now(),
        next_attempt_at=None,
    )
    return True


def queue_outcome(deployment: Deployment) -> None:
    """In the transaction that ends the wait (approved, rejected, expired, cancelled, from Slack or
    anywhere else): update the posted message in place with the outcome, after commit."""
    if not enabled():
        return
    message = (
        SlackApprovalMessage.objects.filter(deployment=deployment, status=DeliveryStatus.DELIVERED)
        .exclude(ts="")
        .first()
    )
    if message is not None:
        wakeups.wake("policies_app.tasks.update_slack_message_task", message.pk)


def show_outcome(message_id: int) -> bool:
    """``chat.update`` the posted message with the deployment's status now, without buttons if it no
    longer waits. Best effort: a failure is logged (the page stays the truth)."""
    message = (
        SlackApprovalMessage.objects.select_related(
            "deployment__environment__project", "deployment__deployer"
        )
        .filter(pk=message_id)
        .exclude(ts="")
        .first()
    )
    if message is None:
        return False
    deployment = message.deployment
    waiting = deployment.status == DeploymentStatus.PENDING_APPROVAL
    outcome = current_outcome(deployment)
    try:
        client().chat_update(
            channel=message.channel,
            ts=message.ts,
            text=outcome,
            blocks=message_blocks(deployment, outcome, decidable=waiting),
        )
    except (SlackClientError, egress.EgressRefused, egress.EgressFailed) as error:
        logger.info("slack update of message %s failed: %s", message_id, _failure(error))
        return False
    return True


def resend_due_messages() -> list[int]:
    """Periodic: post every message that is due (its retry time passed, or its task was lost)."""
    due = list(
        SlackApprovalMessage.objects.filter(
            status=DeliveryStatus.PENDING, next_attempt_at__lte=timezone.now()
        ).values_list("pk", flat=True)[: settings.EVALUATION_RESEND_BATCH]
    )
    for message_id in due:
        post_message(message_id)
    return due
