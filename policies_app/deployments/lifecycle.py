"""A deployment's life, one transaction per use case: trigger, complete (evaluating and recording the
verdict is in verdicts.py; approving, rejecting and cancelling in approvals.py; the periodic sweeps,
expiry included, in sweeps.py).

Status changes go through ``move_deployment``: a conditional UPDATE that only succeeds from an expected
status, so two workers or two approvers racing each other can never release a deployment twice. What a
change of status owes the world (an expiry date, emails to approvers, webhook deliveries, starting the
next deployment of the environment) is written in the same transaction (``_after_status_change``).

One environment, one line: a newer deployment supersedes the older ones still waiting, and while a
released deployment has not completed, a newer one stays queued behind it.

Work the platform owes a deployment (an evaluation) is recorded in the deployment's own row
(``evaluation_due_at``) in the transaction that makes it due; sending the task is only a wake-up call
(wakeups.py). When the broker is down or a worker dies, ``sweeps.resend_lost_evaluations`` sends it again.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from policies_app import access, audit, wakeups
from policies_app.choices import (
    ALLOWED_TRANSITIONS,
    FINAL_STATUSES,
    SUPERSEDABLE_STATUSES,
    UNFINISHED_RELEASE_STATUSES,
    Capability,
    DeploymentStatus,
    EventKind,
)
from policies_app.deployments.plan_summary import plan_counts
from policies_app.deployments.stored_inputs import store_plan, store_plan_text
from policies_app.errors import Conflict, Invalid
from policies_app.iac.plan_formats import PlanFormatError, check_plan
from policies_app.models import Deployment, DeploymentEvent, Environment
from policies_app.notifications import approval_emails, slack, webhooks
from policies_app.projects.tree import ProjectTree, tree_for
from policies_app.projects.windows import pending_expiry_hours, release_expiry_hours

logger = logging.getLogger(__name__)


def move_deployment(
    deployment: Deployment | int,
    from_status: str,
    to_status: str,
    *,
    tree: ProjectTree | None = None,
    **fields: Any,
) -> bool:
    """Change the status only if it is still ``from_status``; True when this call made the change.

    Given the deployment itself (loaded with its environment and project) and its project's tree, the
    change updates that object and reuses both instead of reading them again."""
    if to_status not in ALLOWED_TRANSITIONS[from_status]:
        raise ValueError(f"a deployment cannot go from {from_status} to {to_status}")
    if to_status == DeploymentStatus.PENDING_APPROVAL:
        fields.setdefault("pending_since", timezone.now())
    fields = {"status": to_status, "updated_at": timezone.now(), **fields}
    deployment_id = deployment if isinstance(deployment, int) else deployment.pk
    with transaction.atomic():
        changed = Deployment.objects.filter(pk=deployment_id, status=from_status).update(**fields)
        if changed == 1:
            if isinstance(deployment, int):
                deployment = Deployment.objects.select_related("environment__project", "deployer").get(
                    pk=deployment_id
                )
            else:
                for name, value in fields.items():
                    setattr(deployment, name, value)
            _after_status_change(deployment, from_status, to_status, tree)
    return changed == 1


def _after_status_change(
    deployment: Deployment, from_status: str, to_status: str, tree: ProjectTree | None
) -> None:
    """What a change of status owes, written in its transaction: nothing is lost if a process dies."""
    project = deployment.environment.project
    tree = tree or tree_for(project, with_policies=False)
    if to_status == DeploymentStatus.PENDING_APPROVAL:
        deployment.expires_at = deployment.pending_since + timedelta(
            hours=pending_expiry_hours(tree, project)
        )
        Deployment.objects.filter(pk=deployment.pk).update(expires_at=deployment.expires_at)
        approval_emails.request_approvals(deployment, tree)
        slack.request_approval(deployment)
    elif to_status == DeploymentStatus.APPROVED:
        # A release the pipeline never completes would hold its environment for ever: it goes stale.
        released_at = deployment.released_at or timezone.now()
        deployment.expires_at = released_at + timedelta(hours=release_expiry_hours(tree, project))
        Deployment.objects.filter(pk=deployment.pk).update(expires_at=deployment.expires_at)
    if from_status == DeploymentStatus.PENDING_APPROVAL:
        slack.queue_outcome(deployment)
    webhooks.queue_status_change(deployment, from_status, to_status, tree)
    if from_status in UNFINISHED_RELEASE_STATUSES and to_status in FINAL_STATUSES:
        start_held_deployments(deployment.environment_id)


def start_held_deployments(environment_id: int) -> list[int]:
    """Once no released deployment of the environment is unfinished, the one queued behind it is evaluated."""
    if Deployment.objects.filter(
        environment_id=environment_id, status__in=UNFINISHED_RELEASE_STATUSES
    ).exists():
        return []
    held = Deployment.objects.filter(
        environment_id=environment_id, status=DeploymentStatus.QUEUED, evaluation_due_at__isnull=True
    ).values_list("pk", flat=True)
    started = []
    for deployment_id in held:
        Deployment.objects.filter(pk=deployment_id).update(queued_behind=None)
        record_event(deployment_id, EventKind.STARTED, detail="The earlier release is done.")
        make_evaluation_due(deployment_id, resume=False)
        started.append(deployment_id)
    return started


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


def wake_evaluation(deployment_id: int, resume: bool) -> None:
    """Wake a worker for the evaluation the deployment's row says is due (after commit; wakeups.py)."""
    wakeups.wake("policies_app.tasks.evaluate_deployment_task", deployment_id, resume)


def make_evaluation_due(deployment_id: int, resume: bool) -> None:
    now = timezone.now()
    Deployment.objects.filter(pk=deployment_id).update(evaluation_due_at=now, evaluation_enqueued_at=now)
    wake_evaluation(deployment_id, resume)


# What a deployment may say about the change that caused it.
CHANGE_LINKS = ("commit_sha", "pull_request_url", "ci_run_url")


def trigger_deployment(
    environment: Environment,
    deployer: AbstractBaseUser,
    *,
    type: str = "deploy",
    trigger_name: str = "user",
    revision: str = "",
    plan: Any = None,
    plan_text: str | None = None,
    total_monthly_cost: float | None = None,
    monthly_cost_diff: float | None = None,
    variables: dict[str, Any] | None = None,
    policy_data: Any = None,
    idempotency_key: str = "",
    links: dict[str, str] | None = None,
) -> tuple[Deployment, bool]:
    """Queue a deployment for evaluation. A repeated idempotency key returns the first deployment.
    ``links``: commit_sha, pull_request_url and ci_run_url, each optional (checked by the caller)."""
    require_may_trigger(environment, deployer)
    try:
        check_plan(environment.template.type, type, plan)
    except PlanFormatError as problem:
        raise Invalid({"plan": [str(problem)]}) from None
    if idempotency_key:
        existing = Deployment.objects.filter(environment=environment, idempotency_key=idempotency_key).first()
        if existing is not None:
            return _same_request_or_conflict(existing, type, revision), False
    # Stored before the environment's lock is taken: compressing a large plan takes a while.
    plan_document = store_plan(plan)
    plan_text_document = store_plan_text(plan_text)
    try:
        with transaction.atomic():
            # Triggers of one environment are serialised: each sees the one before it.
            # Its id alone: the lock is what is wanted, not the row (read by the caller already).
            Environment.objects.select_for_update().filter(pk=environment.pk).values_list("pk").first()
            now = timezone.now()
            # The deployments the new one may wait behind (a release) or replace (older waiting ones).
            earlier = list(
                Deployment.objects.filter(
                    environment=environment, status__in=UNFINISHED_RELEASE_STATUSES | SUPERSEDABLE_STATUSES
                )
                .order_by(F("released_at").desc(nulls_last=True), "-id")
                .values_list("pk", "status")
            )
            release = next((pk for pk, status in earlier if status in UNFINISHED_RELEASE_STATUSES), None)
            deployment = Deployment.objects.create(
                environment=environment,
                deployer=deployer,
                type=type,
                trigger_name=trigger_name,
                revision=revision,
                plan_document_id=plan_document,
                plan_text_document_id=plan_text_document,
                plan_counts=plan_counts(plan),
                total_monthly_cost=total_monthly_cost,
                monthly_cost_diff=monthly_cost_diff,
                variables=variables or {},
                policy_data=policy_data,
                idempotency_key=idempotency_key,
                **{name: value for name, value in (links or {}).items() if name in CHANGE_LINKS},
                evaluation_due_at=None if release else now,
                evaluation_enqueued_at=None if release else now,
                queued_behind_id=release,
            )
            record_event(deployment, EventKind.TRIGGERED, deployer, f"{type} triggered by {trigger_name}")
            audit.record(
                deployer,
                "deployment.triggered",
                deployment,
                after={"type": type, "trigger": trigger_name, "revision": revision},
                project=environment.project,
            )
            _supersede_older(
                deployment, [(pk, status) for pk, status in earlier if status in SUPERSEDABLE_STATUSES]
            )
            if release is not None:
                record_event(deployment, EventKind.QUEUED_BEHIND, detail=queued_reason(release))
            else:
                wake_evaluation(deployment.pk, resume=False)
    except IntegrityError:
        if not idempotency_key:
            raise
        # Two triggers with the same key raced; the other one created it.
        existing = Deployment.objects.get(environment=environment, idempotency_key=idempotency_key)
        return _same_request_or_conflict(existing, type, revision), False
    return deployment, True


def queued_reason(release_id: int) -> str:
    return (
        f"Waits for deployment #{release_id} of this environment, released and not yet completed: "
        "it is evaluated once that one completes, fails or is cancelled."
    )


def _supersede_older(newer: Deployment, waiting: list[tuple[int, str]]) -> None:
    """An older deployment still waiting would apply an outdated plan: the newer one replaces it.
    ``waiting``: the environment's supersedable deployments (id, status), read under its lock."""
    for deployment_id, status in waiting:
        if move_deployment(
            deployment_id, status, DeploymentStatus.SUPERSEDED, superseded_by=newer, evaluation_due_at=None
        ):
            record_event(deployment_id, EventKind.SUPERSEDED, detail=f"superseded by deployment #{newer.pk}")


def require_may_trigger(environment: Environment, user: AbstractBaseUser) -> None:
    access.require(
        user,
        Capability.DEPLOY,
        environment.project,
        "Only deployers of this project may trigger deployments.",
    )


def _same_request_or_conflict(existing: Deployment, type: str, revision: str) -> Deployment:
    # A key names one request: reusing it for another (a destroy after a deploy) must not answer for the first.
    if existing.type != type or existing.revision != revision:
        raise Conflict(
            f"Idempotency key {existing.idempotency_key!r} was used for deployment #{existing.pk} "
            f"({existing.type} of revision {existing.revision or 'unset'}); use a new key for another request.",
            code="idempotency_conflict",
        )
    return existing


def complete_deployment(
    deployment: Deployment, user: AbstractBaseUser, status: str, state: dict[str, Any] | None = None
) -> Deployment:
    """The pipeline reports how the released deployment went, with the resulting Terraform state."""
    if status not in (DeploymentStatus.SUCCEEDED, DeploymentStatus.FAILED):
        raise Invalid({"status": ["Must be succeeded or failed."]})
    access.require(
        user,
        Capability.DEPLOY,
        deployment.environment.project,
        "Only deployers of this project may complete deployments.",
    )
    from policies_app.projects.states import store_state

    with transaction.atomic():
        if not move_deployment(deployment.pk, DeploymentStatus.APPROVED, status, completed_at=timezone.now()):
            current, released_at = Deployment.objects.values_list("status", "released_at").get(
                pk=deployment.pk
            )
            if current == DeploymentStatus.EXPIRED and released_at is not None:
                raise Conflict(
                    "The release expired: the pipeline did not complete it in time, and another deployment "
                    "of the environment may have started since. Nothing is recorded; trigger a new "
                    "deployment for the current plan.",
                    code="release_expired",
                )
            raise Conflict(f"The deployment is {current}, not approved.", code="not_pending")
        record_event(deployment, EventKind.COMPLETED, user, status)
        audit.record(user, "deployment.completed", deployment, after={"status": status})
        if state is not None:
            store_state(deployment.environment, state, user=user, deployment=deployment, force=True)
    deployment.refresh_from_db()
    return deployment
