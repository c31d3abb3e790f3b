"""Push webhooks of a policy's repository, as GitHub (an HMAC of the body) and GitLab (a token) send them:
checked against the repository's webhook secret, then a worker is woken to sync the policy.

No row records the sync a push asks for: the scheduled sync (``sources.sync_all_repository_policies``,
every POLICY_SYNC_INTERVAL_SECONDS) syncs every repository policy the same way, so a wake-up lost to a
broker outage costs a delay, never the pushed commit.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from policies_app import wakeups
from policies_app.errors import Forbidden
from policies_app.models import ApprovalPolicy


@dataclass(frozen=True)
class WebhookReply:
    status: int
    body: dict[str, Any]


def signature_matches(secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    """GitHub signs the body with the secret (X-Hub-Signature-256: sha256=<hex>); GitLab sends the
    secret itself as a token (X-Gitlab-Token). Either must match; without a secret nothing does."""
    if not secret:
        return False
    signature = headers.get("X-Hub-Signature-256", "")
    if signature.startswith("sha256="):
        expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, signature[len("sha256=") :])
    token = headers.get("X-Gitlab-Token", "")
    return bool(token) and hmac.compare_digest(secret.encode(), token.encode())


def receive_push(policy_id: Any, headers: Mapping[str, str], body: bytes) -> WebhookReply:
    """A push webhook for a policy's repository: checked, then a worker is woken to sync the policy."""
    policy = (
        ApprovalPolicy.objects.filter(pk=policy_id, repository__isnull=False)
        .select_related("repository")
        .first()
    )
    # Unknown policy and wrong signature read the same: a webhook caller learns nothing it may not know.
    if policy is None or not signature_matches(policy.repository.webhook_secret, headers, body):
        raise Forbidden("The webhook's signature or token does not match the repository's secret.")
    event = headers.get("X-GitHub-Event") or headers.get("X-Gitlab-Event") or "push"
    if event == "ping":
        return WebhookReply(200, {"detail": "pong"})
    ref = _pushed_ref(body)
    tracked = policy.repository_revision
    if (
        ref
        and ref.startswith("refs/heads/")
        and tracked
        and ref != f"refs/heads/{tracked}"
        and "Tag" not in event
    ):
        return WebhookReply(
            202, {"detail": f"ignored: {ref} is not the branch {tracked} that the policy follows"}
        )
    wakeups.wake("policies_app.tasks.sync_policy_task", policy.pk)
    return WebhookReply(202, {"detail": "sync queued", "policy": policy.pk})


def _pushed_ref(body: bytes) -> str:
    if body.startswith(b"payload="):  # GitHub's form-encoded deliveries
        body = (parse_qs(body.decode("utf-8", "replace")).get("payload") or [""])[0].encode()
    try:
        document = json.loads(body or b"{}")
    except ValueError:
        return ""
    return (
        document.get("ref", "") if isinstance(document, dict) and isinstance(document.get("ref"), str) else ""
    )
