"""Waivers: for a while, one policy's ``deny`` and ``pending`` count as ``warn`` in one environment or in a
project's subtree, so that an emergency change passes without editing or detaching the policy for everyone.

The rules, each stated once here:
- Who may grant (``refusal_to_grant``): whoever may approve deployments where the waiver holds (the
  approve capability on the environment's project, or on the project of a project waiver: a role there or
  above, or an organisation role), for a policy they can see, with a one-line reason, for at most
  ``WAIVER_MAX_HOURS``. A waiver starts when it is granted; none is dated ahead.
- Who may revoke (``may_revoke``): the one who granted it and anyone who may grant it. Revoking only
  tightens, so no four-eyes rule applies.
- Four eyes (``waivers_in_force``): a waiver never applies to a deployment triggered by the one who
  granted it, unless the deployment's project allows self-approval. Otherwise a deployer who is also an
  approver could release their own blocked deployment with a waiver where an approval of their own is
  refused (deployments/approvals.py, ``refusal_to_decide``). Granting is not refused for that: the waiver
  serves everyone else's deployments. A waiver also holds only while its granter is active and may still
  grant it.
- What it changes (``waive``): after the engine's outcomes (and the enforcement levels), a waived policy's
  ``deny`` and ``pending`` messages become ``warn`` messages prefixed "waived by X until T: ", and its
  outcome records ``waived_by``, ``waived_until``, ``waiver_id`` and ``waiver_reason``. An ``error`` is
  never waived: a policy that could not be evaluated still fails closed.
- When: a waiver is read by each evaluation at the time it runs. A deployment decided under a waiver keeps
  its decision when the waiver expires or is revoked; an evaluation after that sees the policy again. A
  deployment waiting for approval when a waiver is granted is evaluated again (its due-work row, as after
  an approval); a denied deployment is final and stays denied (the pipeline triggers again).
- Every grant and revocation is in the audit log and sent to the webhooks of the project and its
  ancestors.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from policies_app import access, audit
from policies_app.access import Grants
from policies_app.choices import WAIVED_MARK, Capability, Decision, DeploymentStatus
from policies_app.deployments import lifecycle
from policies_app.errors import Conflict, DomainError, Forbidden, Invalid
from policies_app.guards.names import refusal_of_line
from policies_app.models import ApprovalPolicy, Deployment, Environment, Project, Waiver
from policies_app.notifications import webhooks
from policies_app.projects.tree import ProjectTree, tree_for
from policies_app.rego.decisions import combine_decisions, policy_decision

WAIVED_RULES = ("deny", "pending")
MAX_REASON = 500


def scope_project(waiver: Waiver) -> Project:
    """The project whose approvers may grant and revoke the waiver, and whose webhooks hear of it."""
    return waiver.environment.project if waiver.environment_id else waiver.project


def scope_name(waiver: Waiver, tree: ProjectTree) -> str:
    """Where the waiver holds, as people name it ("Platform / Payments / prod"); ``tree``: around it."""
    project = tree.full_name(scope_project(waiver))
    return f"{project} / {waiver.environment.name}" if waiver.environment_id else f"{project} (and below)"


def in_force(at: datetime | None = None) -> Q:
    """A filter to the waivers holding at ``at`` (now): started, not expired, not revoked."""
    at = at or timezone.now()
    return Q(revoked_at__isnull=True, starts_at__lte=at, expires_at__gt=at)


def visible_waivers(user: AbstractBaseUser) -> QuerySet[Waiver]:
    """The waivers of the environments and projects the user can see."""
    held = Grants.of(user)
    waivers = Waiver.objects.select_related(
        "policy", "environment__project", "project", "granted_by", "revoked_by"
    )
    if held.sees_everything:
        return waivers
    projects = held.project_filter()
    visible = Project.objects.filter(projects) if projects is not None else Project.objects.none()
    return waivers.filter(Q(project__in=visible) | Q(environment__project__in=visible))


# --- granting and revoking ----------------------------------------------------------------------------


def refusal_to_grant(held: Grants, project: Project) -> DomainError | None:
    """Why a user holding ``held`` may not grant (or revoke) a waiver scoped at ``project`` (None: they
    may): the same capability that approves its deployments."""
    if not held.can(Capability.APPROVE, project):
        return Forbidden("Only approvers of this project or a parent project may grant or revoke waivers.")
    return None


def may_grant(user: AbstractBaseUser, project: Project) -> bool:
    return refusal_to_grant(Grants.of(user), project) is None


def may_revoke(user: AbstractBaseUser, waiver: Waiver) -> bool:
    return waiver.granted_by_id == user.pk or may_grant(user, scope_project(waiver))


def waivers_holding_for(environment: Environment) -> list[Waiver]:
    """The waivers in force now on the environment and on its project and the projects above it."""
    project = environment.project
    return list(
        Waiver.objects.filter(in_force())
        .filter(Q(environment=environment) | Q(project_id__in=[project.pk, *project.ancestor_ids]))
        .select_related("policy", "project", "environment__project", "granted_by")
        .order_by("expires_at", "pk")
    )


def _clean_reason(reason: Any) -> str:
    reason = reason.strip() if isinstance(reason, str) else ""
    if not reason:
        raise Invalid({"reason": ["A waiver needs a reason."]})
    refusal = refusal_of_line(reason)
    if refusal is not None:
        raise Invalid({"reason": [refusal]})
    if len(reason) > MAX_REASON:
        raise Invalid({"reason": [f"At most {MAX_REASON} characters."]})
    return reason


def _expiry(now: datetime, hours: float | None, expires_at: datetime | None) -> datetime:
    limit = settings.WAIVER_MAX_HOURS
    if (hours is None) == (expires_at is None):
        raise Invalid({"hours": ["Give either hours or expires_at."]})
    if hours is not None:
        if not math.isfinite(hours) or hours <= 0 or hours > limit:
            raise Invalid({"hours": [f"A waiver holds for more than 0 and at most {limit:g} hours."]})
        return now + timedelta(hours=hours)
    assert expires_at is not None
    if expires_at <= now or expires_at > now + timedelta(hours=limit):
        raise Invalid({"expires_at": [f"A waiver ends after now and at most {limit:g} hours from now."]})
    return expires_at


def grant_waiver(
    user: AbstractBaseUser,
    policy: ApprovalPolicy,
    *,
    environment: Environment | None = None,
    project: Project | None = None,
    reason: Any = "",
    hours: float | None = None,
    expires_at: datetime | None = None,
) -> Waiver:
    """Grant a waiver of ``policy`` on one environment or one project's subtree; deployments of its scope
    waiting for approval are evaluated again."""
    if (environment is None) == (project is None):
        raise Invalid({"environment": ["Give either an environment or a project."]})
    scope = environment.project if environment is not None else project
    assert scope is not None
    refusal = refusal_to_grant(Grants.of(user), scope)
    if refusal is not None:
        raise refusal
    access.require_policies_visible(user, [policy])
    reason = _clean_reason(reason)
    now = timezone.now()
    until = _expiry(now, hours, expires_at)
    with transaction.atomic():
        waiver = Waiver.objects.create(
            policy=policy,
            environment=environment,
            project=project,
            granted_by=user,
            reason=reason,
            starts_at=now,
            expires_at=until,
        )
        audit.record(user, "waiver.granted", waiver, after=snapshot(waiver), project=scope)
        _notify(waiver, webhooks.WAIVER_GRANTED)
        for deployment_id in _waiting_in_scope(waiver):
            lifecycle.make_evaluation_due(deployment_id, resume=True)
    return waiver


def revoke_waiver(user: AbstractBaseUser, waiver: Waiver) -> Waiver:
    """End a waiver now. What was decided under it stays decided."""
    if not may_revoke(user, waiver):
        raise Forbidden("Only the one who granted it and approvers of its project may revoke a waiver.")
    with transaction.atomic():
        now = timezone.now()
        ended = Waiver.objects.filter(pk=waiver.pk, revoked_at__isnull=True, expires_at__gt=now).update(
            revoked_at=now, revoked_by=user
        )
        if not ended:
            raise Conflict("The waiver has already ended.", code="waiver_ended")
        before = snapshot(waiver)
        waiver.refresh_from_db()
        audit.record(
            user,
            "waiver.revoked",
            waiver,
            before=before,
            after=snapshot(waiver),
            project=scope_project(waiver),
        )
        _notify(waiver, webhooks.WAIVER_REVOKED)
    return waiver


def _waiting_in_scope(waiver: Waiver) -> list[int]:
    """Deployments waiting for approval that the waived policy judges, where the waiver holds, and those
    being evaluated now (an evaluation that read the waivers before this one was granted may decide
    "pending": the due-work row then has it evaluated again, by the sweep if its wake-up came too early)."""
    if waiver.environment_id:
        where = Q(environment_id=waiver.environment_id)
    else:
        where = Q(environment__project=waiver.project) | Q(
            environment__project__lineage__startswith=waiver.project.path
        )
    return list(
        Deployment.objects.filter(where)
        .filter(
            Q(status=DeploymentStatus.PENDING_APPROVAL, policy_revisions__policy_id=waiver.policy_id)
            | Q(status=DeploymentStatus.EVALUATING)
        )
        .values_list("pk", flat=True)
        .distinct()
    )


def snapshot(waiver: Waiver) -> dict[str, Any]:
    return {
        "policy": waiver.policy.name,
        "environment": waiver.environment_id,
        "project": waiver.project_id,
        "granted_by": waiver.granted_by.get_username(),
        "reason": waiver.reason,
        "starts_at": waiver.starts_at.isoformat(),
        "expires_at": waiver.expires_at.isoformat(),
        "revoked_at": waiver.revoked_at.isoformat() if waiver.revoked_at else None,
        "revoked_by": waiver.revoked_by.get_username() if waiver.revoked_by_id else None,
    }


def _notify(waiver: Waiver, event: str) -> list[int]:
    project = scope_project(waiver)
    tree = tree_for(project, with_policies=False)
    where = scope_name(waiver, tree)
    verb = "granted" if event == webhooks.WAIVER_GRANTED else "revoked"
    who = waiver.granted_by if event == webhooks.WAIVER_GRANTED else waiver.revoked_by
    text = (
        f"Waiver of policy {waiver.policy.name} on {where} {verb} by {who.get_username()}"
        f" (until {until_text(waiver.expires_at)}): {waiver.reason}"
    )
    document = json.dumps(
        {
            "event": event,
            "occurred_at": timezone.now().isoformat(),
            "waiver": {"id": waiver.pk, "scope": where, **snapshot(waiver)},
        },
        sort_keys=True,
    )
    return webhooks.queue_event(tree, project, event, document, text)


# --- what an evaluation makes of them -----------------------------------------------------------------


def until_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def waivers_in_force(deployment: Deployment, policy_ids: set[int], at: datetime) -> dict[int, Waiver]:
    """For each of ``policy_ids``, the waiver holding for ``deployment`` at ``at`` that lasts longest.
    One query when none holds; then the granters' roles (a waiver holds only while the one who granted
    it may still grant it: an approver who left takes their waivers with them) and, for a waiver granted
    by the deployer, the four-eyes rule above."""
    if not policy_ids:
        return {}
    project = deployment.environment.project
    found = (
        Waiver.objects.filter(in_force(at), policy_id__in=policy_ids)
        .filter(
            Q(environment_id=deployment.environment_id)
            | Q(project_id__in=[project.pk, *project.ancestor_ids])
        )
        .select_related("granted_by", "project")
        .order_by("expires_at", "pk")
    )
    waivers = [
        waiver
        for waiver in found
        if may_grant(waiver.granted_by, waiver.project if waiver.project_id else project)
    ]
    if any(waiver.granted_by_id == deployment.deployer_id for waiver in waivers):
        if not tree_for(project, with_policies=False).self_approval_allowed(project):
            waivers = [waiver for waiver in waivers if waiver.granted_by_id != deployment.deployer_id]
    return {waiver.policy_id: waiver for waiver in waivers}  # the last one, the longest, wins


def waive(
    deployment: Deployment, decision: str, outcomes: list[dict[str, Any]], messages: dict[str, list[str]]
) -> tuple[str, dict[str, list[str]]]:
    """The decision and messages once the waivers in force are applied to ``outcomes`` (changed in
    place). Nothing is read when no policy denies or waits."""
    if decision not in (Decision.DENY, Decision.PENDING):
        return decision, messages
    blocking = {o["policy_id"] for o in outcomes if o.get("decision") in WAIVED_RULES and o.get("policy_id")}
    waivers = waivers_in_force(deployment, blocking, timezone.now())
    if not waivers:
        return decision, messages
    messages = {rule: list(texts) for rule, texts in messages.items()}
    for outcome in outcomes:
        waiver = waivers.get(outcome.get("policy_id"))
        if waiver is None or outcome.get("decision") not in WAIVED_RULES:
            continue
        mark = f"{WAIVED_MARK}{waiver.granted_by.get_username()} until {until_text(waiver.expires_at)}"
        for rule in WAIVED_RULES:
            marked = [f"{mark}: {text}" for text in outcome.get(rule, [])]
            for text in outcome.get(rule, []):
                if text in messages.get(rule, []):
                    messages[rule].remove(text)
            outcome["warn"] = [*outcome.get("warn", []), *marked]
            messages["warn"] = [*messages.get("warn", []), *marked]
            outcome[rule] = []
        outcome["decision"] = policy_decision(outcome)
        outcome.update(
            waived_by=waiver.granted_by.get_username(),
            waived_until=waiver.expires_at.isoformat(),
            waiver_id=waiver.pk,
            waiver_reason=waiver.reason,
        )
    return combine_decisions(o.get("decision") for o in outcomes), messages
