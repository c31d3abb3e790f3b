"""Telling approvers that a deployment waits for them: an email at once, a daily digest, or nothing, as
each user chose.

The emails owed are rows (``ApprovalRequestEmail``) written in the transaction that makes the deployment
wait; sending is a task woken after commit, and the periodic sweep sends whatever a lost task left
behind. A deployment decided before its email goes out gets none.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from policies_app import access, audit, wakeups
from policies_app.choices import WAIVED_MARK, Capability, DeploymentStatus, EmailMode
from policies_app.deployments import requirements, stored_inputs
from policies_app.deployments.explanations import explain_evaluation, short_why
from policies_app.deployments.plan_summary import summarise_plan
from policies_app.errors import Invalid
from policies_app.guards.names import one_line
from policies_app.models import ApprovalRequestEmail, Deployment, NotificationPreference
from policies_app.ops import metrics
from policies_app.projects.tree import ProjectTree

logger = logging.getLogger(__name__)

# A row still unsent this long after it was written lost its task: the sweep sends it.
RESEND_AFTER = timedelta(minutes=1)


def deployment_url(deployment_id: int) -> str:
    return f"{settings.PLATFORM_URL}{reverse('web:deployment-detail', args=[deployment_id])}"


def approvers_still_to_act(deployment: Deployment, tree: ProjectTree, acted: set[int]) -> list:
    """Who may approve or reject the deployment and has not yet: approvers of its project and every
    ancestor (and organisation admins), less those who decided, less its deployer unless the project
    lets deployers approve their own deployments."""
    project = deployment.environment.project
    users = access.users_with(Capability.APPROVE, project).exclude(pk__in=acted)
    if not tree.self_approval_allowed(project):
        users = users.exclude(pk=deployment.deployer_id)
    return list(users.order_by("username"))


def email_mode(user: AbstractBaseUser) -> str:
    preference = NotificationPreference.objects.filter(user=user).first()
    return preference.email if preference else EmailMode.IMMEDIATELY


def set_email_mode(user: AbstractBaseUser, mode: str) -> NotificationPreference:
    """A user chooses how they hear of deployments waiting for them (only for themselves)."""
    if mode not in EmailMode.values:
        raise Invalid({"email": [f"Must be one of {', '.join(EmailMode.values)}."]})
    with transaction.atomic():
        preference, _ = NotificationPreference.objects.get_or_create(user=user)
        before = preference.email
        preference.email = mode
        preference.save(update_fields=["email"])
        if before != mode:
            audit.record(user, "notifications.changed", user, before={"email": before}, after={"email": mode})
    return preference


def request_approvals(deployment: Deployment, tree: ProjectTree) -> None:
    """The deployment starts waiting: owe an email (or a digest line) to every approver who may act."""
    approvers = [user for user in approvers_still_to_act(deployment, tree, set()) if user.email]
    if not approvers:
        return
    modes = dict(NotificationPreference.objects.filter(user__in=approvers).values_list("user_id", "email"))
    rows = [
        ApprovalRequestEmail(
            user=user,
            deployment=deployment,
            digest=modes.get(user.pk, EmailMode.IMMEDIATELY) == EmailMode.DAILY_DIGEST,
        )
        for user in approvers
        if modes.get(user.pk, EmailMode.IMMEDIATELY) != EmailMode.OFF
    ]
    created = ApprovalRequestEmail.objects.bulk_create(rows, ignore_conflicts=True)
    if any(not row.digest for row in created):
        wakeups.wake("policies_app.tasks.send_approval_emails_task", deployment.pk)


@dataclass(frozen=True)
class DeploymentLines:
    subject: str
    body: str


def requirement_lines(deployment: Deployment, tree: ProjectTree) -> list[str]:
    """Each requirement its policies declare, with its state and who may still clear it."""
    approvals = list(deployment.approvals.select_related("user"))
    candidates = approvers_still_to_act(deployment, tree, {approval.user_id for approval in approvals})
    lines = []
    for item in requirements.progress_for(deployment.evaluations.defer("input_json"), approvals, candidates):
        line = f"  {item.summary} ({item.policy})"
        if not item.met:
            line += f": can be cleared by {', '.join(item.may_satisfy) or 'nobody who may still approve'}"
        lines.append(line)
    return ["Required before it is released:", *lines] if lines else []


@lru_cache(maxsize=64)
def _plan_headline(plan_key: str | None) -> str:
    """A stored plan never changes under its key: summarised once for every approver's email, not once
    per email (10,000 resource changes take seconds)."""
    return summarise_plan(stored_inputs.load_plan(plan_key), attributes=False).headline


def describe_waiting(deployment: Deployment, full_name: str, tree: ProjectTree) -> DeploymentLines:
    pending = deployment.messages.get("pending", []) if isinstance(deployment.messages, dict) else []
    lines = [
        f"{deployment.get_type_display()} #{deployment.pk} of {full_name} / {deployment.environment.name}",
        f"requested by {deployment.deployer.get_username()}, waits for your approval.",
        "",
        f"Plan: {_plan_headline(deployment.plan_document_id)}",
    ]
    if deployment.monthly_cost_diff is not None:
        lines.append(f"Monthly cost change: {deployment.monthly_cost_diff:+.2f}")
    # Which rule gave each reason and what it read, in short (values masked when they were stored). An
    # email is sent by a worker, off the decision's path: explanations still due are computed here first
    # rather than leaving them out (explain_evaluation stores them once, whoever gets there first).
    found = deployment.evaluations.order_by("-created_at", "-id").values_list(
        "pk", "outcomes", "explanations_due_at"
    )
    latest_id, latest, due = found.first() or (None, None, None)
    if due is not None:
        explain_evaluation(latest_id)  # done here, or by the explanation task meanwhile: read it again
        latest = deployment.evaluations.filter(pk=latest_id).values_list("outcomes", flat=True).first()
    for message in pending:
        lines.append(f"Waiting because: {message}")
        why = short_why(latest, message)
        if why:
            lines.append(f"  (from {why})")
    # A policy set aside by a waiver (deployments/waivers.py) is said, with who waived it until when.
    warned = deployment.messages.get("warn", []) if isinstance(deployment.messages, dict) else []
    lines += [f"Waived: {message}" for message in warned if message.startswith(WAIVED_MARK)]
    lines += requirement_lines(deployment, tree)
    if deployment.expires_at:
        lines.append(f"Expires unless decided by {deployment.expires_at:%Y-%m-%d %H:%M} UTC.")
    lines += ["", f"Review, approve or reject: {deployment_url(deployment.pk)}"]
    # One line whatever the names hold (names stored before they were checked may hold a newline, which
    # would make the mail library refuse the message as a header injection).
    subject = one_line(
        f"[Policy platform] {deployment.get_type_display()} #{deployment.pk} of "
        f"{full_name} / {deployment.environment.name} waits for your approval"
    )
    return DeploymentLines(subject, "\n".join(lines))


def _loaded(deployment_ids: list[int]) -> dict[int, Deployment]:
    return Deployment.objects.select_related("environment__project", "deployer").in_bulk(deployment_ids)


def send_approval_emails(deployment_id: int | None = None) -> int:
    """Send the immediate emails owed (of one deployment, or all that are late); returns how many."""
    rows = ApprovalRequestEmail.objects.filter(sent_at__isnull=True, digest=False).select_related("user")
    if deployment_id is not None:
        rows = rows.filter(deployment_id=deployment_id)
    else:
        rows = rows.filter(created_at__lt=timezone.now() - RESEND_AFTER)
    rows = list(rows[:500])
    deployments = _loaded([row.deployment_id for row in rows])
    tree = ProjectTree.around(d.environment.project for d in deployments.values())
    sent = 0
    described: dict[int, DeploymentLines] = {}
    for row in rows:
        deployment = deployments[row.deployment_id]
        # Claimed first, so two senders (the task and the sweep) never both send it.
        if not ApprovalRequestEmail.objects.filter(pk=row.pk, sent_at__isnull=True).update(
            sent_at=timezone.now()
        ):
            continue
        if deployment.status != DeploymentStatus.PENDING_APPROVAL:
            continue  # decided meanwhile: nothing to ask any more
        if deployment.pk not in described:  # one deployment's lines serve all its approvers
            described[deployment.pk] = describe_waiting(
                deployment, tree.full_name(deployment.environment.project), tree
            )
        lines = described[deployment.pk]
        try:
            send_mail(lines.subject, lines.body, None, [row.user.email])
        except Exception:  # noqa: BLE001 - the mail server may be down: unclaim, the sweep retries
            logger.exception("could not email %s about deployment %s", row.user.email, deployment.pk)
            metrics.EMAIL_FAILURES.labels(kind="approval_request").inc()
            ApprovalRequestEmail.objects.filter(pk=row.pk).update(sent_at=None)
            continue
        sent += 1
    return sent


def send_daily_digests(now: datetime | None = None) -> int:
    """Once a day, after the digest hour, one email per user listing the deployments still waiting."""
    now = now or timezone.now()
    if now.hour < settings.EMAIL_DIGEST_HOUR:
        return 0
    start_of_day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    owed = ApprovalRequestEmail.objects.filter(sent_at__isnull=True, digest=True).select_related("user")
    by_user: dict[int, list[ApprovalRequestEmail]] = {}
    for row in owed:
        by_user.setdefault(row.user_id, []).append(row)
    deployments = _loaded([row.deployment_id for rows in by_user.values() for row in rows])
    tree = ProjectTree.around(d.environment.project for d in deployments.values())
    sent = 0
    for user_id, rows in by_user.items():
        preference, _ = NotificationPreference.objects.get_or_create(user_id=user_id)
        if preference.last_digest_sent_at and preference.last_digest_sent_at >= start_of_day:
            continue
        waiting = [
            deployments[row.deployment_id]
            for row in rows
            if deployments[row.deployment_id].status == DeploymentStatus.PENDING_APPROVAL
        ]
        if waiting:
            parts = [
                describe_waiting(deployment, tree.full_name(deployment.environment.project), tree).body
                for deployment in waiting
            ]
            subject = f"[Policy platform] {len(waiting)} deployment(s) wait for your approval"
            try:
                send_mail(subject, "\n\n----\n\n".join(parts), None, [rows[0].user.email])
            except Exception:  # noqa: BLE001 - retried at the next run
                logger.exception("could not send the digest of user %s", user_id)
                metrics.EMAIL_FAILURES.labels(kind="digest").inc()
                continue
            sent += 1
        ApprovalRequestEmail.objects.filter(pk__in=[row.pk for row in rows]).update(sent_at=now)
        NotificationPreference.objects.filter(pk=preference.pk).update(last_digest_sent_at=now)
    return sent
