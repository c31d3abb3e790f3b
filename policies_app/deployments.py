"""A deployment's use cases, one transaction each: trigger, evaluate, approve, reject, cancel, complete.

Status changes go through ``move_deployment``: a conditional UPDATE that only succeeds from an expected
status, so two workers or two approvers racing each other can never release a deployment twice.
"""

import logging
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from . import access
from .choices import (
    ALLOWED_TRANSITIONS,
    ApprovalDecision,
    Decision,
    DeploymentStatus,
    EventKind,
)
from .evaluation import Verdict, effective_policies, judge, latest_revisions, request_type_for
from .models import Approval, Deployment, DeploymentEvent, Environment, Evaluation

logger = logging.getLogger(__name__)

# Where each decision leaves a deployment.
STATUS_FOR_DECISION = {
    Decision.ALLOW: DeploymentStatus.APPROVED,
    Decision.WARN: DeploymentStatus.APPROVED,
    Decision.PENDING: DeploymentStatus.PENDING_APPROVAL,
    Decision.DENY: DeploymentStatus.DENIED,
    Decision.ERROR: DeploymentStatus.ERROR,
}
EVENT_FOR_STATUS = {
    DeploymentStatus.APPROVED: EventKind.RELEASED,
    DeploymentStatus.DENIED: EventKind.DENIED,
    DeploymentStatus.ERROR: EventKind.FAILED_CLOSED,
}


class DeploymentActionError(Exception):
    """A use case refused; ``code`` tells the API which HTTP status to answer."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def move_deployment(deployment_id: int, from_status: str, to_status: str, **fields: Any) -> bool:
    """Change the status only if it is still ``from_status``; True when this call made the change."""
    if to_status not in ALLOWED_TRANSITIONS[from_status]:
        raise ValueError(f"a deployment cannot go from {from_status} to {to_status}")
    changed = Deployment.objects.filter(pk=deployment_id, status=from_status).update(
        status=to_status, updated_at=timezone.now(), **fields
    )
    return changed == 1


def record_event(
    deployment: Deployment | int, kind: str, actor: AbstractBaseUser | None = None, detail: str = ""
) -> None:
    deployment_id = deployment if isinstance(deployment, int) else deployment.pk
    DeploymentEvent.objects.create(
        deployment_id=deployment_id,
        kind=kind,
        actor=actor if actor is not None and actor.is_authenticated else None,
        detail=detail,
    )


def _enqueue_evaluation(deployment_id: int, resume: bool) -> None:
    from .tasks import evaluate_deployment_task

    transaction.on_commit(lambda: evaluate_deployment_task.delay(deployment_id, resume))


def trigger_deployment(
    environment: Environment,
    deployer: AbstractBaseUser,
    *,
    type: str = "deploy",
    trigger_name: str = "user",
    revision: str = "",
    plan: Any = None,
    total_monthly_cost: float | None = None,
    monthly_cost_diff: float | None = None,
    variables: dict[str, Any] | None = None,
    policy_data: Any = None,
    idempotency_key: str = "",
) -> tuple[Deployment, bool]:
    """Queue a deployment for evaluation. A repeated idempotency key returns the first deployment."""
    check_may_trigger(environment, deployer)
    if idempotency_key:
        existing = Deployment.objects.filter(environment=environment, idempotency_key=idempotency_key).first()
        if existing is not None:
            return _same_request_or_conflict(existing, type, revision), False
    try:
        with transaction.atomic():
            deployment = Deployment.objects.create(
                environment=environment,
                deployer=deployer,
                type=type,
                trigger_name=trigger_name,
                revision=revision,
                plan=plan,
                total_monthly_cost=total_monthly_cost,
                monthly_cost_diff=monthly_cost_diff,
                variables=variables or {},
                policy_data=policy_data,
                idempotency_key=idempotency_key,
            )
            record_event(deployment, EventKind.TRIGGERED, deployer, f"{type} triggered by {trigger_name}")
            _enqueue_evaluation(deployment.pk, resume=False)
    except IntegrityError:
        if not idempotency_key:
            raise
        # Two triggers with the same key raced; the other one created it.
        existing = Deployment.objects.get(environment=environment, idempotency_key=idempotency_key)
        return _same_request_or_conflict(existing, type, revision), False
    return deployment, True


def check_may_trigger(environment: Environment, user: AbstractBaseUser) -> None:
    if not access.can_deploy(user, environment.project):
        raise DeploymentActionError("forbidden", "Only deployers of this project may trigger deployments.")


def _same_request_or_conflict(existing: Deployment, type: str, revision: str) -> Deployment:
    # A key names one request: reusing it for another (a destroy after a deploy) must not answer for the first.
    if existing.type != type or existing.revision != revision:
        raise DeploymentActionError(
            "idempotency_conflict",
            f"Idempotency key {existing.idempotency_key!r} was used for deployment #{existing.pk} "
            f"({existing.type} of revision {existing.revision or 'unset'}); use a new key for another request.",
        )
    return existing


def _record_verdict(deployment: Deployment, from_status: str, verdict: Verdict) -> None:
    """Store the evaluation and move the deployment where its decision leads, in one transaction."""
    target = STATUS_FOR_DECISION[verdict.decision]
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            deployment=deployment,
            request_type=verdict.request_type,
            input_json=verdict.input_json,
            decision=verdict.decision,
            messages=verdict.messages,
            outcomes=verdict.outcomes,
            error=verdict.error,
            engine=verdict.engine,
            duration_ms=verdict.duration_ms,
        )
        evaluation.policy_revisions.set(verdict.revisions)
        record_event(deployment, EventKind.EVALUATED, detail=f"{verdict.request_type}: {verdict.decision}")
        fields = {"decision": verdict.decision, "messages": verdict.messages, "error": verdict.error}
        if target == from_status:
            Deployment.objects.filter(pk=deployment.pk, status=from_status).update(**fields)
            return
        if target == DeploymentStatus.APPROVED:
            fields["released_at"] = timezone.now()
        if move_deployment(deployment.pk, from_status, target, **fields):
            event = EVENT_FOR_STATUS.get(target)
            if event:
                record_event(
                    deployment,
                    event,
                    detail=verdict.error or ", ".join(verdict.messages.get(verdict.decision, [])),
                )


def _failed_closed_verdict(deployment: Deployment, resume: bool, problem: Exception) -> Verdict:
    logger.exception("evaluating deployment %s failed", deployment.pk)
    verdict = Verdict(request_type_for(deployment, resume), "null", [], Decision.ERROR, engine="none")
    verdict.error = f"The evaluation failed: {type(problem).__name__}: {problem}"
    return verdict


def evaluate_deployment(deployment_id: int, resume: bool = False) -> None:
    """Evaluate a queued deployment, or re-evaluate a pending one after an approval (resume)."""
    from_status = DeploymentStatus.PENDING_APPROVAL if resume else DeploymentStatus.EVALUATING
    if not resume:
        # A deployment found already "evaluating" is one whose worker died mid-way and whose task was
        # delivered again (tasks are acknowledged late): evaluate it again. Recording the verdict is a
        # conditional status change, so a duplicate delivery can never apply a second verdict.
        move_deployment(deployment_id, DeploymentStatus.QUEUED, DeploymentStatus.EVALUATING)
    deployment = Deployment.objects.select_related(
        "environment__project", "environment__template", "deployer"
    ).get(pk=deployment_id)
    if deployment.status != from_status:
        return  # already evaluated, or cancelled meanwhile
    try:
        if not deployment.policies_pinned:
            # Pin the revisions in force now: later edits to a policy do not change a running deployment.
            with transaction.atomic():
                deployment.policy_revisions.set(latest_revisions(effective_policies(deployment.environment)))
                Deployment.objects.filter(pk=deployment.pk).update(policies_pinned=True)
        revisions = list(deployment.policy_revisions.select_related("policy").order_by("policy__name"))
        verdict = judge(deployment, request_type_for(deployment, resume), revisions)
    except Exception as problem:  # noqa: BLE001 - any failure must fail closed, never release
        verdict = _failed_closed_verdict(deployment, resume, problem)
    _record_verdict(deployment, from_status, verdict)


def record_approval(
    deployment: Deployment, user: AbstractBaseUser, decision: str, comment: str = ""
) -> Approval:
    """An approver approves or rejects a pending deployment; an approval re-evaluates it as a resume."""
    if decision not in ApprovalDecision.values:
        raise DeploymentActionError(
            "invalid", f"decision must be one of {', '.join(ApprovalDecision.values)}"
        )
    project = deployment.environment.project
    if not access.can_approve(user, project):
        raise DeploymentActionError(
            "forbidden", "Only approvers of this project or a parent project may approve."
        )
    with transaction.atomic():
        locked = Deployment.objects.select_for_update().get(pk=deployment.pk)
        if locked.status != DeploymentStatus.PENDING_APPROVAL:
            raise DeploymentActionError(
                "not_pending", f"The deployment is {locked.status}, not pending approval."
            )
        if locked.deployer_id == user.pk and not _self_approval_allowed(project):
            raise DeploymentActionError("self_approval", "You may not approve or reject your own deployment.")
        if Approval.objects.filter(deployment=locked, user=user).exists():
            raise DeploymentActionError(
                "already_decided", "You have already approved or rejected this deployment."
            )
        approval = Approval.objects.create(deployment=locked, user=user, decision=decision, comment=comment)
        if decision == ApprovalDecision.REJECT:
            move_deployment(locked.pk, DeploymentStatus.PENDING_APPROVAL, DeploymentStatus.REJECTED)
            record_event(locked, EventKind.REJECTED, user, comment)
        else:
            record_event(locked, EventKind.APPROVED, user, comment)
            _enqueue_evaluation(locked.pk, resume=True)
    return approval


def _self_approval_allowed(project: Any) -> bool:
    return any(p.allow_self_approval for p in [project, *project.ancestors()])


def cancel_deployment(deployment: Deployment, user: AbstractBaseUser) -> Deployment:
    if not (access.can_deploy(user, deployment.environment.project)):
        raise DeploymentActionError("forbidden", "Only deployers of this project may cancel deployments.")
    with transaction.atomic():
        for from_status in (DeploymentStatus.QUEUED, DeploymentStatus.PENDING_APPROVAL):
            if move_deployment(deployment.pk, from_status, DeploymentStatus.CANCELLED):
                record_event(deployment, EventKind.CANCELLED, user)
                break
        else:
            current = Deployment.objects.values_list("status", flat=True).get(pk=deployment.pk)
            raise DeploymentActionError(
                "not_pending",
                f"The deployment is {current}; only queued or pending deployments can be cancelled.",
            )
    deployment.refresh_from_db()
    return deployment


def complete_deployment(
    deployment: Deployment, user: AbstractBaseUser, status: str, state: dict[str, Any] | None = None
) -> Deployment:
    """The pipeline reports how the released deployment went, with the resulting Terraform state."""
    if status not in (DeploymentStatus.SUCCEEDED, DeploymentStatus.FAILED):
        raise DeploymentActionError("invalid", "status must be succeeded or failed")
    if not access.can_deploy(user, deployment.environment.project):
        raise DeploymentActionError("forbidden", "Only deployers of this project may complete deployments.")
    with transaction.atomic():
        if not move_deployment(deployment.pk, DeploymentStatus.APPROVED, status, completed_at=timezone.now()):
            current = Deployment.objects.values_list("status", flat=True).get(pk=deployment.pk)
            raise DeploymentActionError("not_pending", f"The deployment is {current}, not approved.")
        record_event(deployment, EventKind.COMPLETED, user, status)
        if state is not None:
            from .states import store_state

            store_state(deployment.environment, state, user=user, deployment=deployment, force=True)
    deployment.refresh_from_db()
    return deployment
