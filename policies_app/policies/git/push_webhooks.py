"""Push webhooks of a policy's repository, as GitHub (an HMAC of the body) and GitLab (a token) send them:
checked against the repository's webhook secret, then a worker is woken to sync the policy. A push to
another branch is checked for its pull request when the repository has a review API (branch_checks.py,
whose row records that due work); otherwise it is acknowledged and ignored.

No row records the sync a push asks for: the scheduled sync (``sources.sync_all_repository_policies``,
every POLICY_SYNC_INTERVAL_SECONDS) syncs every repository policy the same way, so a wake-up lost to a
broker outage costs a delay, never the pushed commit.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from policies_app import wakeups
from policies_app.errors import Forbidden
from policies_app.models import ApprovalPolicy
from policies_app.policies.git.branch_checks import record_branch_check
from policies_app.policies.git.review_reports import refusal_to_report

_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_NO_COMMIT = re.compile(r"^0+$")  # "after" of a deleted branch


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
    document = _pushed_document(body)
    ref = document.get("ref") if isinstance(document.get("ref"), str) else ""
    followed = policy.repository_revision or _default_branch(document)
    if ref.startswith("refs/heads/") and followed and ref != f"refs/heads/{followed}" and "Tag" not in event:
        return _other_branch(policy, ref.removeprefix("refs/heads/"), document)
    wakeups.wake("policies_app.tasks.sync_policy_task", policy.pk)
    return WebhookReply(202, {"detail": "sync queued", "policy": policy.pk})


def _other_branch(policy: ApprovalPolicy, branch: str, document: dict[str, Any]) -> WebhookReply:
    """A push to a branch the policy does not follow: checked for its pull request when the repository
    has a review API and the push names a commit (not a deleted branch)."""
    after = document.get("after") if isinstance(document.get("after"), str) else ""
    refusal = refusal_to_report(policy.repository)
    if refusal is None and _COMMIT.match(after) and not _NO_COMMIT.match(after):
        check = record_branch_check(policy.repository, branch, after)
        return WebhookReply(202, {"detail": "branch check queued", "check": check.pk})
    followed = policy.repository_revision or "the default branch"
    return WebhookReply(202, {"detail": f"ignored: {branch} is not {followed}, which the policy follows"})


def _default_branch(document: dict[str, Any]) -> str:
    """The repository's default branch as the push says it (GitHub: repository, GitLab: project)."""
    for key in ("repository", "project"):
        holder = document.get(key)
        if isinstance(holder, dict) and isinstance(holder.get("default_branch"), str):
            return holder["default_branch"]
    return ""


def _pushed_document(body: bytes) -> dict[str, Any]:
    if body.startswith(b"payload="):  # GitHub's form-encoded deliveries
        body = (parse_qs(body.decode("utf-8", "replace")).get("payload") or [""])[0].encode()
    try:
        document = json.loads(body or b"{}")
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}
