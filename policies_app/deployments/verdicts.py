"""Evaluating a deployment and recording its verdict: the evaluation row, the decision's status change,
its events and audit entry, in one transaction. A failure of anything but the database fails closed
(status ``error``); a database error is left to the task's retry, never recorded as a verdict."""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone

from policies_app import audit
from policies_app.choices import Decision, DeploymentStatus, EventKind, RequestType
from policies_app.deployments import lifecycle, stored_inputs
from policies_app.deployments.carry_over import carry_over_approvals
from policies_app.deployments.evaluation import Verdict, judge, pinned_revisions, request_type_for
from policies_app.deployments.explanations import wake_explanations
from policies_app.guards import file_sandbox
from policies_app.models import Deployment, DeploymentEvent, Evaluation
from policies_app.ops import metrics
from policies_app.projects.tree import ProjectTree, tree_for

logger = logging.getLogger(__name__)

# Where each decision leaves a deployment.
STATUS_FOR_DECISION = {
    Decision.ALLOW: DeploymentStatus.APPROVED,
    Decision.WARN: DeploymentStatus.APPROVED,
    Decision.PENDING: DeploymentStatus.PENDING_APPROVAL,
    Decision.DENY: DeploymentStatus.DENIED,
    Decision.ERROR: DeploymentStatus.ERROR,
}
# The event trail is read by people: what caused an evaluation, not the Rego input's spelling of it.
EVALUATION_CAUSES = {
    RequestType.DEPLOY: "deploy requested",
    RequestType.DESTROY: "destroy requested",
    RequestType.DEPLOY_RESUME: "re-evaluated after an approval",
    RequestType.DESTROY_RESUME: "re-evaluated after an approval (destroy)",
}
EVENT_FOR_STATUS = {
    DeploymentStatus.APPROVED: EventKind.RELEASED,
    DeploymentStatus.DENIED: EventKind.DENIED,
    DeploymentStatus.ERROR: EventKind.FAILED_CLOSED,
}


def _record_verdict(
    deployment: Deployment, from_status: str, verdict: Verdict, started_at: Any, tree: ProjectTree | None
) -> None:
    """Store the evaluation and move the deployment where its decision leads, in one transaction."""
    target = STATUS_FOR_DECISION[verdict.decision]
    stored = stored_inputs.store_input(verdict.input_json, verdict.input_spans)
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            deployment=deployment,
            request_type=verdict.request_type,
            input_json=stored.skeleton,
            decision=verdict.decision,
            messages=verdict.messages,
            outcomes=verdict.outcomes,
            error=verdict.error,
            engine=verdict.engine,
            duration_ms=verdict.duration_ms,
            sensitive_variables=deployment.environment.sensitive_variables,
            sensitive_paths=verdict.sensitive_paths,
            explanations_due_at=timezone.now() if verdict.explanations_due else None,
        )
        stored_inputs.record_input(evaluation, stored)
        if verdict.explanations_due:
            wake_explanations(evaluation.pk)  # after the decision, never on its way
        seen = Evaluation.policy_revisions.through
        seen.objects.bulk_create(
            seen(evaluation_id=evaluation.pk, policyrevision_id=revision.pk) for revision in verdict.revisions
        )
        # The events are written at the end, in this order, in one INSERT.
        events = [
            DeploymentEvent(
                deployment=deployment,
                kind=EventKind.EVALUATED,
                detail=f"{EVALUATION_CAUSES.get(verdict.request_type, verdict.request_type)}: {verdict.decision}",
            )
        ]
        # Only what this evaluation saw is done: an approval recorded after it started is still due.
        Deployment.objects.filter(pk=deployment.pk, evaluation_due_at__lte=started_at).update(
            evaluation_due_at=None
        )
        fields = {"decision": verdict.decision, "messages": verdict.messages, "error": verdict.error}
        if verdict.template_commit and not deployment.template_commit:
            fields["template_commit"] = verdict.template_commit  # what every later evaluation reads
        if target == from_status:
            Deployment.objects.filter(pk=deployment.pk, status=from_status).update(**fields)
        else:
            if target == DeploymentStatus.APPROVED:
                fields["released_at"] = timezone.now()
            event = EVENT_FOR_STATUS.get(target)
            if lifecycle.move_deployment(deployment, from_status, target, tree=tree, **fields) and event:
                detail = verdict.error or ", ".join(verdict.messages.get(verdict.decision, []))
                events.append(DeploymentEvent(deployment=deployment, kind=event, detail=detail[:10_000]))
        DeploymentEvent.objects.bulk_create(events)
        # The platform decides, not a person: no actor.
        audit.record(
            None,
            f"deployment.decision.{verdict.decision}",
            deployment,
            after={
                "request_type": verdict.request_type,
                "failed_closed": bool(verdict.error),
                # The decision record a SIEM receives with this entry (accounts/audit_stream.py).
                "evaluation": evaluation.pk,
            },
        )
    seconds = (timezone.now() - started_at).total_seconds()
    metrics.record_decision(verdict.decision, verdict.engine, seconds)
    logger.info(
        "decision %s for deployment %s",
        verdict.decision,
        deployment.pk,
        extra={
            "deployment_id": deployment.pk,
            "decision": verdict.decision,
            "engine": verdict.engine,
            "request_type": verdict.request_type,
            "duration_ms": round(seconds * 1000, 1),
        },
    )


def _failed_closed_verdict(deployment: Deployment, resume: bool, problem: Exception) -> Verdict:
    logger.exception("evaluating deployment %s failed", deployment.pk)
    verdict = Verdict(request_type_for(deployment, resume), "null", [], Decision.ERROR, engine="none")
    # Shown to the deployment's viewers: an OS error may quote a path of the server.
    verdict.error = (
        f"The evaluation failed: {type(problem).__name__}: {file_sandbox.scrub_server_paths(str(problem))}"
    )
    return verdict


def evaluate_deployment(deployment_id: int, resume: bool = False) -> None:
    """Evaluate a queued deployment, or re-evaluate a pending one after an approval (resume).

    Safe to run twice for the same work (a redelivered or resent task): recording the verdict is a
    conditional status change, and work found already done is skipped."""
    from_status = DeploymentStatus.PENDING_APPROVAL if resume else DeploymentStatus.EVALUATING
    started_at = timezone.now()
    deployment = (
        Deployment.objects.select_related("environment__project", "environment__template", "deployer")
        .filter(pk=deployment_id)
        .first()
    )
    if deployment is None:
        return  # deleted since the task was sent
    held = deployment.status == DeploymentStatus.QUEUED and deployment.evaluation_due_at is None
    if held and not resume:
        return  # held behind an unfinished release: evaluated when that one is done
    # Loaded once for every status change (None: loaded by a change if one needs it); its projects alone,
    # the policies to pin are read with their revisions (evaluation.effective_revisions).
    tree = (
        None if deployment.policies_pinned else tree_for(deployment.environment.project, with_policies=False)
    )
    if not resume:
        # A deployment found already "evaluating" is one whose worker died mid-way and whose task was
        # delivered again: it is evaluated again.
        started = lifecycle.move_deployment(
            deployment,
            DeploymentStatus.QUEUED,
            DeploymentStatus.EVALUATING,
            tree=tree,
            evaluation_started_at=started_at,
        )
    else:
        started = False
    if not started and not Deployment.objects.filter(
        pk=deployment_id, status=from_status, evaluation_due_at__isnull=False
    ).update(evaluation_started_at=started_at):
        return  # already evaluated, or cancelled meanwhile
    try:
        revisions = pinned_revisions(deployment)
        # Approvals carried over from an identical earlier release are judged as after an approval.
        carried = not resume and carry_over_approvals(deployment, revisions, tree) is not None
        verdict = judge(deployment, request_type_for(deployment, resume or carried), revisions)
    except DatabaseError:
        raise  # transient (a restarted database): the task is retried, never recorded as a verdict
    except Exception as problem:  # noqa: BLE001 - any other failure must fail closed, never release
        verdict = _failed_closed_verdict(deployment, resume, problem)
    _record_verdict(deployment, from_status, verdict, started_at, tree)
