"""Acting on a waiting deployment: approving or rejecting it, cancelling it, and the one statement of who
may do each now (``refusal_to_decide``, ``refusal_to_cancel``), which the use cases, the pages and the
API's "who may still approve" all ask."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from policies_app import access, audit
from policies_app.access import Grants
from policies_app.choices import (
    CANCELLABLE_STATUSES,
    ApprovalDecision,
    Capability,
    Decision,
    DeploymentStatus,
    EventKind,
)
from policies_app.deployments import lifecycle
from policies_app.errors import Conflict, DomainError, Forbidden, Invalid
from policies_app.models import Approval, Deployment
from policies_app.notifications import slack
from policies_app.projects.tree import ProjectTree, tree_for


def record_approval(
    deployment: Deployment, user: AbstractBaseUser, decision: str, comment: str = ""
) -> Approval:
    """An approver approves or rejects a pending deployment; an approval re-evaluates it as a resume."""
    if decision not in ApprovalDecision.values:
        raise Invalid({"decision": [f"Must be one of {', '.join(ApprovalDecision.values)}."]})
    with transaction.atomic():
        locked = (
            Deployment.objects.select_for_update(of=("self",))
            .select_related("environment__project", "deployer")
            .get(pk=deployment.pk)
        )
        project = locked.environment.project
        tree = tree_for(project, with_policies=False)
        acted = set(Approval.objects.filter(deployment=locked).values_list("user_id", flat=True))
        refusal = refusal_to_decide(user, Grants.of(user), locked, project, tree, acted)
        if refusal is not None:
            raise refusal
        approval = Approval.objects.create(deployment=locked, user=user, decision=decision, comment=comment)
        if decision == ApprovalDecision.REJECT:
            lifecycle.move_deployment(
                locked,
                DeploymentStatus.PENDING_APPROVAL,
                DeploymentStatus.REJECTED,
                tree=tree,
                evaluation_due_at=None,
                # The final word is the approver's: the policies' pending reasons stay in the evaluations.
                decision=Decision.DENY,
                messages=rejection_messages(user, comment),
            )
            lifecycle.record_event(locked, EventKind.REJECTED, user, comment)
        else:
            lifecycle.record_event(locked, EventKind.APPROVED, user, comment)
            lifecycle.make_evaluation_due(locked.pk, resume=True)
            # It may still wait (more approvals needed): the Slack message shows who approved now; a
            # rejection ends the wait, which updates it anyway.
            slack.queue_outcome(locked)
        action = "deployment.rejected" if decision == ApprovalDecision.REJECT else "deployment.approved"
        audit.record(user, action, deployment, after={"comment": comment})
    return approval


def rejection_messages(user: AbstractBaseUser, comment: str) -> dict[str, list[str]]:
    """What a rejected deployment says was decided, in place of the reasons it waited for."""
    reason = f"rejected by {user.get_username()}" + (f": {comment.strip()}" if comment.strip() else "")
    return {"deny": [reason[:10_000]], "pending": [], "warn": [], "allow": []}


def refusal_to_decide(
    user: AbstractBaseUser,
    held: Grants,
    deployment: Deployment,
    project: Any,
    tree: ProjectTree,
    acted: set[int],
) -> DomainError | None:
    """Why ``user`` may not approve or reject ``deployment`` now (None: they may). ``acted`` holds the ids
    of the users who already decided. The one statement of the rule, for the use case and the pages."""
    if not held.can(Capability.APPROVE, project):
        return Forbidden(access.WHAT_IS_NEEDED[Capability.APPROVE])
    if deployment.status != DeploymentStatus.PENDING_APPROVAL:
        return Conflict(f"The deployment is {deployment.status}, not pending approval.", code="not_pending")
    if deployment.deployer_id == user.pk and not tree.self_approval_allowed(project):
        return Forbidden("You may not approve or reject your own deployment.", code="self_approval")
    if user.pk in acted:
        return Conflict("You have already approved or rejected this deployment.", code="already_decided")
    return None


def refusal_to_cancel(user: AbstractBaseUser, held: Grants, deployment: Deployment) -> DomainError | None:
    """Only the deployer who triggered it (still a deployer) and project admins may cancel a deployment."""
    project = deployment.environment.project
    if not held.can(Capability.ADMINISTER, project):
        if not held.can(Capability.DEPLOY, project):
            return Forbidden("Only deployers of this project may cancel deployments.")
        if deployment.deployer_id != user.pk:
            return Forbidden(
                "Only the deployer who triggered this deployment and project admins may cancel it.",
                code="not_own_deployment",
            )
    if deployment.status not in CANCELLABLE_STATUSES:
        return Conflict(
            f"The deployment is {deployment.status}; only "
            f"{', '.join(sorted(CANCELLABLE_STATUSES))} deployments can be cancelled.",
            code="not_pending",
        )
    return None


@dataclass(frozen=True)
class Actions:
    """What a user may do on a deployment now: the pages show exactly these buttons."""

    may_decide: bool
    may_cancel: bool
    # For someone who holds the approver role but may not act now (own deployment, already decided).
    why_not_decide: str = ""


# The refusals of refusal_to_decide that an approver of a pending deployment meets: shown, not hidden.
_APPROVERS_REFUSALS = frozenset({"self_approval", "already_decided"})


def available_actions(
    user: AbstractBaseUser, deployment: Deployment, tree: ProjectTree, acted: set[int]
) -> Actions:
    held = Grants.of(user)
    refusal = refusal_to_decide(user, held, deployment, deployment.environment.project, tree, acted)
    shown = refusal.message if refusal is not None and refusal.code in _APPROVERS_REFUSALS else ""
    return Actions(refusal is None, refusal_to_cancel(user, held, deployment) is None, shown)


def cancel_deployment(deployment: Deployment, user: AbstractBaseUser) -> Deployment:
    held = Grants.of(user)
    with transaction.atomic():
        locked = (
            Deployment.objects.select_for_update(of=("self",))
            .select_related("environment__project", "deployer")
            .get(pk=deployment.pk)
        )
        refusal = refusal_to_cancel(user, held, locked)
        if isinstance(refusal, Forbidden):
            raise refusal
        for from_status in sorted(CANCELLABLE_STATUSES):
            if lifecycle.move_deployment(
                locked, from_status, DeploymentStatus.CANCELLED, evaluation_due_at=None
            ):
                lifecycle.record_event(deployment, EventKind.CANCELLED, user)
                audit.record(user, "deployment.cancelled", locked, before={"status": from_status})
                break
        else:
            current = Deployment.objects.values_list("status", flat=True).get(pk=deployment.pk)
            raise Conflict(
                f"The deployment is {current}; only {', '.join(sorted(CANCELLABLE_STATUSES))} deployments can be cancelled.",
                code="not_pending",
            )
    deployment.refresh_from_db()
    return deployment
