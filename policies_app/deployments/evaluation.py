"""Evaluating a deployment: what its policies are shown and what they decide (which policies apply is
the project tree's business: tree.py)."""

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import prefetch_related_objects

from policies_app.choices import ApprovalDecision, Decision, RequestType
from policies_app.deployments.explanations import explanations_due
from policies_app.deployments.input_codec import Span, encode_input
from policies_app.deployments.policy_input import build_policy_input
from policies_app.deployments.requirements import requirements_of_revision
from policies_app.deployments.waivers import waive
from policies_app.guards.masking import scrub, scrubbed, secrets_of
from policies_app.models import ApprovalPolicy, Deployment, Environment, PolicyRevision
from policies_app.policies.engine import evaluator_for, revision_key
from policies_app.projects.tree import effective_policies_filter

logger = logging.getLogger(__name__)

MESSAGE_KINDS = ("deny", "pending", "warn", "allow")


def approves_automatically(environment: Environment, applying: list[ApprovalPolicy]) -> bool:
    """Automatic approval holds only while no policy applies (``applying``: its effective policies)."""
    return environment.approve_plans_automatically and not applying


class PolicyWithoutActiveRevision(Exception):
    """A policy applies but has no revision in force: the deployment fails closed rather than skip it."""


def active_revisions(policies: list[ApprovalPolicy]) -> list[PolicyRevision]:
    """The revision in force of each policy (its active revision, which a newer draft or a revision whose
    tests failed does not replace), in two queries. Raises PolicyWithoutActiveRevision when one has none
    (its tests never passed): skipping it would let deployments through that it was attached to stop.
    Ordered by policy name, with their modules: ready to be evaluated."""
    revisions = list(
        PolicyRevision.objects.filter(active_for__in=policies)
        .select_related("policy")
        .prefetch_related("modules")
        .order_by("policy__name")
    )
    _require_active_revisions(policies, revisions)
    return revisions


def effective_revisions(environment: Environment) -> list[PolicyRevision]:
    """``active_revisions`` of the environment's effective policies (environment loaded with its project),
    in two queries and no project tree: the policies with their revisions in force, then the modules."""
    policies = list(
        ApprovalPolicy.objects.filter(effective_policies_filter(environment))
        .select_related("active_revision")
        .order_by("name")
    )
    revisions = []
    for policy in policies:
        revision = policy.active_revision
        if revision is not None:
            if revision.policy_id == policy.pk:
                revision.policy = policy  # read in the same row: not read again
            revisions.append(revision)
    prefetch_related_objects(revisions, "modules")
    _require_active_revisions(policies, revisions)
    return revisions


def _require_active_revisions(policies: list[ApprovalPolicy], revisions: list[PolicyRevision]) -> None:
    covered = {revision.policy_id for revision in revisions}
    missing = sorted(policy.name for policy in policies if policy.pk not in covered)
    if missing:
        raise PolicyWithoutActiveRevision(
            f"policy {', '.join(missing)} applies but has no active revision (its tests have never passed)"
        )


def pinned_revisions(deployment: Deployment) -> list[PolicyRevision]:
    """The revisions a deployment is judged by: those pinned at its first evaluation, else the ones in
    force now (its environment's effective policies'), pinned so that later edits to a policy do not
    change a running deployment."""
    if deployment.policies_pinned:
        return list(
            deployment.policy_revisions.select_related("policy")
            .prefetch_related("modules")
            .order_by("policy__name")
        )
    revisions = effective_revisions(deployment.environment)
    with transaction.atomic():
        pin = Deployment.policy_revisions.through
        pin.objects.bulk_create(
            (pin(deployment_id=deployment.pk, policyrevision_id=revision.pk) for revision in revisions),
            ignore_conflicts=True,  # a redelivered task racing the first one pins the same
        )
        Deployment.objects.filter(pk=deployment.pk).update(policies_pinned=True)
    return revisions


@dataclass
class Verdict:
    """What an evaluation concluded, ready to be recorded."""

    request_type: str
    input_json: str
    revisions: list[PolicyRevision]
    decision: str
    messages: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in MESSAGE_KINDS})
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    engine: str = ""
    duration_ms: float = 0.0
    template_commit: str = ""  # the commit the template's configuration was read at, if any
    sensitive_paths: list[Any] = field(default_factory=list)  # kept beside the input (guards/masking.py)
    input_spans: list[Span] = field(default_factory=list)  # its shared pieces, stored once (stored_inputs)
    # Which rules fired and what they read, for the messages people read: computed by a worker after the
    # decision is recorded (deployments/explanations.py), never on the way to it.
    explanations_due: bool = False


def _verdict_without_policies(deployment: Deployment, request_type: str, input_json: str) -> Verdict:
    if approves_automatically(deployment.environment, []):
        decision, reason = (
            Decision.ALLOW,
            "No approval policy applies and the environment approves plans automatically.",
        )
    elif deployment.approvals.filter(decision=ApprovalDecision.APPROVE).exists():
        decision, reason = Decision.ALLOW, "No approval policy applies; approved by an approver."
    else:
        decision, reason = (
            Decision.PENDING,
            "No approval policy applies; waiting for one approval by an approver.",
        )
    verdict = Verdict(request_type, input_json, [], decision, engine="none")
    verdict.messages[decision].append(reason)
    return verdict


def judge(deployment: Deployment, request_type: str, revisions: list[PolicyRevision]) -> Verdict:
    """Build the input once, run every pinned policy revision over it, and combine their decisions."""
    started = time.perf_counter()
    built = build_policy_input(deployment, request_type)
    input_json, spans = encode_input(built.document, built.written)
    if not revisions:
        verdict = _verdict_without_policies(deployment, request_type, input_json)
        verdict.template_commit = built.template_commit
        verdict.sensitive_paths = built.sensitivity.paths
        verdict.input_spans = spans
        return verdict
    revision_by_key = {revision_key(r): r for r in revisions}
    result = evaluator_for(revisions)(input_json)
    # A policy may print any value it sees: what it says is stored and shown without the sensitive ones.
    secrets = secrets_of(built.document, built.sensitivity)
    outcomes = []
    for outcome in result.outcomes:
        revision = revision_by_key.get(outcome.key)
        outcomes.append(
            {
                "policy_id": revision.policy_id if revision else None,
                "policy": outcome.name,
                "revision": revision.number if revision else None,
                "decision": outcome.decision,
                **{kind: scrubbed(outcome.messages.get(kind, []), secrets) for kind in MESSAGE_KINDS},
                "error": scrub(str(outcome.error), secrets) if outcome.error else None,
                # What the policy declares clears it (METADATA custom), shown while and after it waits.
                "requirements": requirements_of_revision(revision) if revision else [],
            }
        )
    messages = {kind: scrubbed(list(result.messages.get(kind, [])), secrets) for kind in MESSAGE_KINDS}
    # A waived policy's deny and pending count as warn (deployments/waivers.py); an error never does.
    decision, messages = waive(deployment, result.decision, outcomes, messages)
    logger.info(
        "deployment %s %s: %s in %.1f ms (%d policies)",
        deployment.pk,
        request_type,
        decision,
        (time.perf_counter() - started) * 1000,
        len(revisions),
    )
    return Verdict(
        request_type=request_type,
        input_json=input_json,
        revisions=revisions,
        decision=decision,
        messages=messages,
        outcomes=outcomes,
        error=scrub(str(result.error), secrets) if result.error else "",
        engine=result.engine,
        duration_ms=result.duration_ms,
        template_commit=built.template_commit,
        sensitive_paths=built.sensitivity.paths,
        input_spans=spans,
        explanations_due=explanations_due(outcomes),
    )


def request_type_for(deployment: Deployment, resume: bool) -> str:
    return RequestType.for_deployment(deployment.type, resume)
