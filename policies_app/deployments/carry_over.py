"""Approvals that survive an unchanged re-plan: the one statement of when the approvals of an earlier
deployment count for a new one, and the use case that carries them over.

A re-run of a pipeline re-plans; when nothing changed, asking the approvers again only teaches them to
approve without reading. So, when a project sets a window (``approval_carry_over_hours``, inherited; off
by default), a new deployment's first evaluation looks at the environment's latest release. Its approvals
carry over only when everything the approvers judged is the same:

- the same kind of deployment (deploy or destroy) of the same environment;
- the same resource changes: a SHA-256 of the canonical JSON of the plan's ``resource_changes`` (keys
  sorted, changes in a fixed order), so a plan that merely lists them differently still matches, and a
  plan without ``resource_changes`` never carries anything over;
- the same policy revisions pinned (so the same policies, with the same data of their own) and the same
  deployment ``policy_data``;
- each approval given within the window, by someone who may still approve on the project now, and not by
  the new deployment's deployer unless the project lets deployers approve their own.

Only the environment's latest release is considered (a cancelled one carries nothing over), so an older
approval never comes back after something else was applied in between. The carried approvals are new
rows marked ``carried_over_from`` that keep the original approver, comment and time; the policies then
evaluate as after an approval (``deployResume``, the approvers in the input), so a policy asking for two
approvers still waits for a second one. Any difference starts afresh, as without the window.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from policies_app import audit
from policies_app.access import Grants
from policies_app.choices import ApprovalDecision, Capability, DeploymentStatus, EventKind
from policies_app.deployments.lifecycle import record_event
from policies_app.deployments.stored_inputs import plan_of
from policies_app.models import Approval, Deployment, PolicyRevision
from policies_app.projects.tree import ProjectTree, tree_for
from policies_app.projects.windows import approval_carry_over_hours

# A release whose approvals may carry over: it was applied, is being applied, or went stale unapplied.
CARRYING_STATUSES = frozenset(
    {DeploymentStatus.APPROVED, DeploymentStatus.SUCCEEDED, DeploymentStatus.FAILED, DeploymentStatus.EXPIRED}
)


def plan_fingerprint(plan: Any) -> str | None:
    """SHA-256 of the canonical JSON of the plan's resource changes; None when it has none to compare."""
    changes = plan.get("resource_changes") if isinstance(plan, dict) else None
    if not isinstance(changes, list):
        return None
    canonical = sorted(json.dumps(change, sort_keys=True, separators=(",", ":")) for change in changes)
    return hashlib.sha256(json.dumps(canonical, separators=(",", ":")).encode()).hexdigest()


def refusal_to_carry_over(
    deployment: Deployment, source: Deployment, revisions: list[PolicyRevision]
) -> str | None:
    """Why ``source``'s approvals may not count for ``deployment`` (None: they may, window aside)."""
    if source.status not in CARRYING_STATUSES:
        return f"the latest release, #{source.pk}, is {source.status}"
    if source.type != deployment.type:
        return "it is another kind of deployment"
    fingerprint = plan_fingerprint(plan_of(deployment))
    if fingerprint is None or fingerprint != plan_fingerprint(plan_of(source)):
        return "the plan's resource changes differ"
    pinned = set(source.policy_revisions.values_list("pk", flat=True))
    if not source.policies_pinned or pinned != {revision.pk for revision in revisions}:
        return "the policy revisions differ"
    if source.policy_data != deployment.policy_data:
        return "the policy data differs"
    return None


def carry_over_approvals(
    deployment: Deployment, revisions: list[PolicyRevision], tree: ProjectTree | None
) -> int | None:
    """At a deployment's first evaluation: copy the approvals of the environment's latest release when
    nothing they judged changed. Returns the id of the deployment they came from (None: none carried).
    Safe to run again for the same deployment (a redelivered task): what was carried stays, once."""
    already = (
        Approval.objects.filter(deployment=deployment, carried_over_from__isnull=False)
        .values_list("carried_over_from", flat=True)
        .first()
    )
    if already is not None:
        return already
    project = deployment.environment.project
    tree = tree or tree_for(project, with_policies=False)
    hours = approval_carry_over_hours(tree, project)
    if not hours:
        return None
    source = (
        Deployment.objects.filter(environment_id=deployment.environment_id, released_at__isnull=False)
        .exclude(pk=deployment.pk)
        .order_by("-released_at", "-id")
        .first()
    )
    if source is None or refusal_to_carry_over(deployment, source, revisions) is not None:
        return None
    since = timezone.now() - timedelta(hours=hours)
    decided = list(source.approvals.select_related("user"))
    if any(approval.decision == ApprovalDecision.REJECT for approval in decided):
        return None
    self_approval = tree.self_approval_allowed(project)
    carried = [
        approval
        for approval in decided
        if approval.created_at >= since
        and (approval.user_id != deployment.deployer_id or self_approval)
        and Grants.of(approval.user).can(Capability.APPROVE, project)
    ]
    if not carried:
        return None
    with transaction.atomic():
        for approval in carried:
            copy = Approval.objects.create(
                deployment=deployment,
                user=approval.user,
                decision=ApprovalDecision.APPROVE,
                comment=approval.comment,
                carried_over_from=source,
            )
            # The approval was given then, not now: the window of a later re-plan counts from it.
            Approval.objects.filter(pk=copy.pk).update(created_at=approval.created_at)
        names = ", ".join(approval.user.get_username() for approval in carried)
        record_event(
            deployment,
            EventKind.CARRIED_OVER,
            detail=f"Approvals of {names} carried over from deployment #{source.pk}: the same resource "
            f"changes, policy revisions and policy data, approved within {hours:g} hours.",
        )
        audit.record(
            None,
            "deployment.approvals_carried_over",
            deployment,
            after={
                "from_deployment": source.pk,
                "approvers": [approval.user.get_username() for approval in carried],
                "plan_sha256": plan_fingerprint(plan_of(deployment)),
                "window_hours": hours,
            },
        )
    return source.pk
