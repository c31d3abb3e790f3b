"""Slack's clicks on the Approve and Reject buttons of notifications/slack.py's messages.

``/integrations/slack/interactions/`` takes no session or token: it is trusted only for what Slack signs.
``slack_sdk.signature.SignatureVerifier`` checks ``X-Slack-Signature`` (``v0=`` HMAC-SHA256 of
``v0:{timestamp}:{body}`` with the signing secret) and refuses an ``X-Slack-Request-Timestamp`` more than
five minutes from now (replays). The clicker acts as the one active platform user whose email is the
Slack user's (``users.info``, or the email in the payload when Slack sends one); that user then meets
exactly the checks of the web (deployments/approvals.py ``record_approval``): role, self-approval,
state, one decision each. A refusal is told to the clicker alone (an ephemeral message) and changes
nothing; an accepted decision updates the message in place after commit (``chat.update``, by
notifications/slack.py, as for a decision on the web).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from slack_sdk import WebClient
from slack_sdk.errors import SlackClientError
from slack_sdk.signature import SignatureVerifier

from policies_app.choices import ApprovalDecision
from policies_app.deployments import approvals
from policies_app.errors import DomainError
from policies_app.guards import egress
from policies_app.models import Deployment
from policies_app.notifications.slack import APPROVE, REJECT, client

logger = logging.getLogger(__name__)

DECISIONS = {APPROVE: ApprovalDecision.APPROVE, REJECT: ApprovalDecision.REJECT}


def _quietly(call: Callable[[], Any]) -> None:
    """A Web API call made after the decision is recorded (or refused): its failure is logged, never
    raised into an answer Slack would retry."""
    try:
        call()
    except (SlackClientError, egress.EgressRefused, egress.EgressFailed) as error:
        logger.info("slack answer failed: %s", type(error).__name__)


def is_signed_by_slack(body: bytes, headers: Mapping[str, str]) -> bool:
    """Whether the request is Slack's: the signature over ``v0:{timestamp}:{body}`` matches the signing
    secret and the timestamp is within five minutes of now (slack_sdk's verifier)."""
    if not settings.SLACK_SIGNING_SECRET:
        return False
    timestamp = headers.get("X-Slack-Request-Timestamp")
    signature = headers.get("X-Slack-Signature")
    if not timestamp or not signature or not timestamp.isdigit():
        return False
    return SignatureVerifier(settings.SLACK_SIGNING_SECRET).is_valid(body, timestamp, signature)


def interaction_payload(body: bytes) -> dict[str, Any] | None:
    """The ``payload`` JSON of a form-encoded interaction, or None when there is none to read."""
    try:
        values = parse_qs(body.decode(), strict_parsing=False).get("payload")
        payload = json.loads(values[0]) if values else None
    except (UnicodeDecodeError, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


def slack_user_email(slack: WebClient, payload: Mapping[str, Any]) -> str:
    """The clicker's email: the payload's when Slack sends one, else ``users.info`` (users:read.email)."""
    user = payload.get("user") or {}
    email = user.get("email") or (user.get("profile") or {}).get("email")
    if email:
        return str(email)
    if not user.get("id"):
        return ""
    answer = slack.users_info(user=str(user["id"]))
    return str(((answer.get("user") or {}).get("profile") or {}).get("email") or "")


def platform_user_for(email: str) -> AbstractBaseUser | None:
    """The one active platform user with this email (none when no user, or several, have it)."""
    if not email:
        return None
    users = list(get_user_model().objects.filter(email__iexact=email, is_active=True)[:2])
    return users[0] if len(users) == 1 else None


def _tell_clicker(slack: WebClient, payload: Mapping[str, Any], text: str) -> None:
    channel = (payload.get("container") or {}).get("channel_id") or (payload.get("channel") or {}).get("id")
    user = (payload.get("user") or {}).get("id")
    if channel and user:
        _quietly(lambda: slack.chat_postEphemeral(channel=channel, user=user, text=text))


def handle_interaction(payload: Mapping[str, Any]) -> str:
    """Act on a verified ``block_actions`` payload. Returns what happened, for the log: "approve",
    "reject", "refused" or "ignored". A refusal is told to the clicker alone and changes nothing."""
    actions = payload.get("actions") or []
    action = actions[0] if actions and isinstance(actions[0], dict) else {}
    decision = DECISIONS.get(str(action.get("action_id")))
    if payload.get("type") != "block_actions" or decision is None:
        return "ignored"
    slack = client()
    value = str(action.get("value") or "")
    deployment = (
        Deployment.objects.select_related("environment__project", "deployer").filter(pk=value).first()
        if value.isdigit()
        else None
    )
    if deployment is None:
        _tell_clicker(slack, payload, "This deployment no longer exists.")
        return "refused"
    team = str((payload.get("user") or {}).get("team_id") or (payload.get("team") or {}).get("id") or "")
    if settings.SLACK_TEAM_ID and team != settings.SLACK_TEAM_ID:
        # A shared (Slack Connect) channel lets people of other workspaces click: only ours decide.
        _tell_clicker(slack, payload, "Only members of the platform's own Slack workspace may decide here.")
        return "refused"
    try:
        email = slack_user_email(slack, payload)
    except (SlackClientError, egress.EgressRefused, egress.EgressFailed) as error:
        logger.info("slack users.info failed: %s", type(error).__name__)
        email = ""
    user = platform_user_for(email)
    if user is None:
        _tell_clicker(
            slack,
            payload,
            "No platform account has your Slack email address (or several do): nothing was recorded. "
            "Decide on the deployment's page instead.",
        )
        return "refused"
    try:
        approvals.record_approval(deployment, user, decision)
    except DomainError as refusal:
        _tell_clicker(slack, payload, f"Nothing was recorded: {refusal.message}")
        return "refused"
    # The message is updated after commit with who decided and, once evaluated again, the outcome
    # (slack.queue_outcome, the same path as a decision on the web): the answer to Slack is not held up.
    return str(decision)
