"""Replaying a revision (usually a draft) over the recorded inputs of recent deployments, without
publishing it: which decisions it would have changed.

Each deployment is taken at its latest evaluation (the one that decided where it stands): its exact
input, its decision and each policy's outcome are recorded. The revision is evaluated on that input;
the other policies keep the outcomes they had, so "after" is what the deployment would have been
decided had this revision been in force, and "before" is what it was decided.

A deployment counts as changed when its decision changes, or when who must approve it changes: the
requirements the policy declares (deployments/requirements.py) apply while it says "pending", so the
requirements applying before (the stored outcome's ``requirements``) are compared with those the
revision declares where it says "pending". An outcome recorded before requirements were kept says
nothing about them: only its decision is compared.

A policy attached nowhere yet applies to no environment: it is replayed over the environments the author
chooses instead (``environments_to_offer`` lists those with recorded deployments).

Why this module is long: a replay is one flow (who may start and read it, which deployments it reads,
the run in the worker, the comparison, what a reader is shown), shared by drafts and by pull-request
checks of a branch's content; splitting it would scatter the visibility rule across modules.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from functools import reduce
from operator import or_
from typing import Any, NamedTuple

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from policies_app import access, rego, wakeups
from policies_app.choices import ReplayStatus
from policies_app.deployments import stored_inputs
from policies_app.deployments.requirements import (
    RequirementDeclarationError,
    declared_requirements,
    label,
    requirements_of_revision,
)
from policies_app.errors import Forbidden, Invalid
from policies_app.guards.masking import Sensitivity, scrubbed, secrets_of, shown_input_text
from policies_app.models import (
    ApprovalPolicy,
    Deployment,
    Environment,
    Evaluation,
    PolicyReplay,
    PolicyRevision,
)
from policies_app.policies.authoring import require_author, revise_policy
from policies_app.policies.content import PolicyContent
from policies_app.policies.engine import evaluator_for, evaluator_for_content

logger = logging.getLogger(__name__)

DECISIONS = ("error", "deny", "pending", "warn", "allow")
_PROGRESS_EVERY = 20  # deployments between two progress updates
_CHUNK = 20  # inputs read from the database at once (each can be megabytes)
_MESSAGES_KEPT = 20  # per rule and side, in a changed deployment's entry


def environments_applying(policy: ApprovalPolicy) -> QuerySet[Environment]:
    """Every environment the policy applies to: through its template, its project or an ancestor's."""
    conditions = [Q(template__approval_policies=policy)]
    for project in policy.projects.all():
        conditions.append(Q(project=project) | Q(project__lineage__startswith=project.path))
    return Environment.objects.filter(reduce(or_, conditions)).distinct()


def environments_to_offer(user: AbstractBaseUser, limit: int = 50) -> QuerySet[Environment]:
    """Environments the user may see that have recorded deployments, most recently deployed first: what
    a policy attached nowhere yet may be replayed over."""
    with_recorded = stored_inputs.recorded(Evaluation.objects.all()).values("deployment__environment_id")
    return (
        access.visible_environments(user)
        .filter(pk__in=with_recorded)
        .select_related("project")
        .order_by("-pk")[:limit]
    )


def recorded_deployments(
    policy: ApprovalPolicy,
    limit: int,
    deployments: QuerySet[Deployment] | None = None,
    environment_ids: list[int] | None = None,
):
    """The most recent deployments of the environments the policy applies to (or of
    ``environment_ids``) that have a recorded input, newest first, each with the id of its latest
    evaluation (``latest_evaluation``)."""
    latest = stored_inputs.recorded(Evaluation.objects.filter(deployment=OuterRef("pk"))).order_by(
        "-created_at", "-id"
    )
    base = deployments if deployments is not None else Deployment.objects.all()
    return (
        base.filter(
            environment_id__in=environment_ids
            if environment_ids
            else environments_applying(policy).values("pk")
        )
        .annotate(latest_evaluation=Subquery(latest.values("pk")[:1]))
        .filter(latest_evaluation__isnull=False)
        .order_by("-created_at", "-id")[:limit]
    )


class RecordedInput(NamedTuple):
    input_json: str  # exactly as the engine was given it
    secrets: frozenset[str]  # its sensitive values, which what is shown of a run on it never holds


def recorded_input(user: AbstractBaseUser, deployment_id: Any) -> RecordedInput:
    """The input of a deployment's latest evaluation, for a user who may see the deployment (else
    Invalid: it "does not exist", as for any reference to an unseen object)."""
    recorded, evaluation = _seen_recorded_input(user, deployment_id)
    return RecordedInput(recorded, secrets_of(json.loads(recorded), Sensitivity.of(evaluation)))


def _seen_recorded_input(user: AbstractBaseUser, deployment_id: Any) -> tuple[str, Evaluation]:
    evaluation = (
        stored_inputs.recorded(
            Evaluation.objects.filter(
                deployment__in=access.visible_deployments(user), deployment_id=deployment_id
            )
        )
        .order_by("-created_at", "-id")
        .only("input_json", "input_purged_at", "sensitive_variables", "sensitive_paths")
        .first()
        if str(deployment_id).isdigit()
        else None
    )
    recorded = stored_inputs.input_of(evaluation) if evaluation is not None else None
    if recorded is None:
        raise Invalid(
            {"deployment": [f"Deployment {deployment_id} does not exist or has no recorded input."]}
        )
    return recorded, evaluation


def input_to_try(user: AbstractBaseUser, deployment_id: Any, pasted: Any) -> RecordedInput:
    """The input of a try-it: a deployment's recorded input, for a user who may see that deployment, with
    its sensitive values to mask; or the caller's own pasted input (nothing of anyone else's to mask)."""
    if deployment_id is not None:
        return recorded_input(user, deployment_id)
    return RecordedInput(json.dumps(pasted), frozenset())


def input_to_try_unsaved(user: AbstractBaseUser, deployment_id: Any, pasted: Any) -> RecordedInput:
    """``input_to_try`` for text nobody saved or reviewed (the editor's): a recorded input is given as its
    requester may see it (masking.shown_input_text), never with its sensitive values. Scrubbing an answer
    finds a value only as written, and such text could spell it otherwise (split, reverse, base64)."""
    if deployment_id is None:
        return input_to_try(user, deployment_id, pasted)
    recorded, evaluation = _seen_recorded_input(user, deployment_id)
    sensitivity = Sensitivity.of(evaluation)
    return RecordedInput(
        shown_input_text(recorded, sensitivity), secrets_of(json.loads(recorded), sensitivity)
    )


def may_read_replays(user: AbstractBaseUser) -> bool:
    """Replays show decisions of deployments across every environment a policy applies to: policy
    authors and organisation roles read them."""
    return access.may_author_policies(user) or access.grants(user).sees_everything


def require_replay_reader(user: AbstractBaseUser) -> None:
    if not may_read_replays(user):
        raise Forbidden("Only policy authors and organisation roles may read replays.")


def start_replay(
    policy: ApprovalPolicy,
    *,
    user: AbstractBaseUser | None,
    revision_number: int | None = None,
    modules: list[dict[str, str]] | None = None,
    rego_version: str | None = None,
    data: Any = ...,
    limit: int | None = None,
    environments: list[int] | None = None,
) -> PolicyReplay:
    """Queue a replay of a revision, or of modules saved first as a draft revision (never activated);
    over ``environments`` (ids the user may see) instead of those the policy applies to, when given."""
    require_author(user)
    environment_ids = sorted(set(environments or []))
    if environment_ids:
        visible = set(
            access.visible_environments(user).filter(pk__in=environment_ids).values_list("pk", flat=True)
        )
        unknown = [pk for pk in environment_ids if pk not in visible]
        if unknown:
            raise Invalid({"environments": [f"Environment {unknown[0]} does not exist."]})
    limit = settings.POLICY_REPLAY_LIMIT if limit is None else limit
    if not isinstance(limit, int) or not 1 <= limit <= settings.POLICY_REPLAY_MAX_LIMIT:
        raise Invalid({"limit": [f"Must be a whole number from 1 to {settings.POLICY_REPLAY_MAX_LIMIT}."]})
    if (revision_number is None) == (modules is None):
        raise Invalid({"revision": ["Give either a revision number or modules to replay (not both)."]})
    if modules is not None:
        revision = (
            revise_policy(
                policy, modules=modules, rego_version=rego_version, data=data, draft=True, user=user
            )
            or policy.revisions.order_by("-number").first()
        )
    else:
        revision = policy.revisions.filter(number=revision_number).first()
        if revision is None:
            raise Invalid({"revision": [f"{policy.name} has no revision {revision_number}."]})
    with transaction.atomic():
        replay = PolicyReplay.objects.create(
            revision=revision, requested_by=_user(user), limit=limit, environment_ids=environment_ids
        )
        wakeups.wake("policies_app.tasks.replay_task", replay.pk)
    return replay


def resend_lost_replays() -> list[int]:
    """Periodic: wake a worker again for the replays still queued long after their task was sent (the
    broker was down, or lost the message). Returns their ids."""
    now = timezone.now()
    resend_before = now - timedelta(seconds=settings.EVALUATION_RESEND_AFTER_SECONDS)
    lost = PolicyReplay.objects.filter(status=ReplayStatus.QUEUED, enqueued_at__lt=resend_before)
    resent = list(lost.order_by("pk").values_list("pk", flat=True)[: settings.EVALUATION_RESEND_BATCH])
    for replay_id in resent:
        # Sent twice (the first message was only late), it still runs once: run_replay starts it
        # with a conditional update.
        PolicyReplay.objects.filter(pk=replay_id).update(enqueued_at=now)
        wakeups.wake("policies_app.tasks.replay_task", replay_id)
    if resent:
        logger.warning("resent %d replays: %s", len(resent), resent)
    return resent


def _user(user: AbstractBaseUser | None) -> AbstractBaseUser | None:
    return user if user is not None and user.is_authenticated else None


def run_replay(replay_id: int) -> None:
    """Run a queued replay (a task delivered twice runs it once), keeping its progress up to date."""
    started = PolicyReplay.objects.filter(pk=replay_id, status=ReplayStatus.QUEUED).update(
        status=ReplayStatus.RUNNING, started_at=timezone.now()
    )
    if not started:
        return
    replay = PolicyReplay.objects.select_related("revision__policy").get(pk=replay_id)
    try:
        result = replay_revision(
            replay.revision,
            replay.limit,
            progress=lambda done, total: _progress(replay, done, total),
            user=replay.requested_by,
            environment_ids=replay.environment_ids or None,
        )
    except Exception as problem:  # noqa: BLE001 - a failed replay is recorded, never left running
        logger.exception("replay %s failed", replay_id)
        PolicyReplay.objects.filter(pk=replay_id).update(
            status=ReplayStatus.FAILED,
            error=f"{type(problem).__name__}: {problem}",
            finished_at=timezone.now(),
        )
        return
    PolicyReplay.objects.filter(pk=replay_id).update(
        status=ReplayStatus.DONE,
        result=result,
        total=result["replayed"],
        replayed=result["replayed"],
        finished_at=timezone.now(),
    )


def _progress(replay: PolicyReplay, done: int, total: int) -> None:
    PolicyReplay.objects.filter(pk=replay.pk).update(replayed=done, total=total)


def replay_revision(
    revision: PolicyRevision,
    limit: int,
    progress: Any = None,
    user: AbstractBaseUser | None = None,
    environment_ids: list[int] | None = None,
) -> dict[str, Any]:
    """Evaluate ``revision`` on the recorded inputs of the policy's last ``limit`` deployments that
    ``user`` may see (None: the platform itself, which sees every one).

    Returns the counts per decision before and after, and every deployment whose decision or
    requirements change (before, after, and the messages and requirements behind both, without the
    sensitive values of its input); with no environment to replay over, says so (``applies_nowhere``)."""
    evaluator = evaluator_for([revision])
    return {
        "revision": revision.number,
        **replay_evaluator(
            revision.policy,
            lambda text: evaluator(text).outcomes[0],
            requirements_of_revision(revision),
            limit,
            progress,
            user,
            environment_ids,
        ),
    }


def replay_content(policy: ApprovalPolicy, content: PolicyContent, limit: int) -> dict[str, Any]:
    """Content that is no revision yet (a branch's policy) replayed as the platform, over the deployments
    of the environments the policy applies to, like ``replay_revision``."""
    evaluator = evaluator_for_content(policy, content)
    try:
        declared = declared_requirements(
            ((name, source) for name, source in content.modules if not name.endswith("_test.rego")),
            content.data,
        )
    except RequirementDeclarationError:
        declared = []  # the branch's own tests and save say why; the decisions are still compared
    return replay_evaluator(policy, lambda text: evaluator(text).outcomes[0], declared, limit)


def replay_evaluator(
    policy: ApprovalPolicy,
    evaluate: Callable[[str], rego.PolicyOutcome],
    declared: list[dict[str, Any]],
    limit: int,
    progress: Any = None,
    user: AbstractBaseUser | None = None,
    environment_ids: list[int] | None = None,
) -> dict[str, Any]:
    """``evaluate`` (the policy's outcome on an input, which declares ``declared`` requirements) over the
    recorded inputs, as replay_revision says."""
    seen = access.visible_deployments(user) if user is not None else None
    rows = list(
        recorded_deployments(policy, limit, seen, environment_ids).values_list(
            "pk", "latest_evaluation", "environment__name", "type", "created_at"
        )
    )
    before_counts: Counter[str] = Counter()
    after_counts: Counter[str] = Counter()
    changed: list[dict[str, Any]] = []
    errors = 0
    requirements_changed = 0
    # Each evaluation runs in an engine worker process: as many at once as the pool has workers.
    with ThreadPoolExecutor(max_workers=settings.POLICY_REPLAY_CONCURRENCY) as workers:
        for start in range(0, len(rows), _CHUNK):
            chunk = rows[start : start + _CHUNK]
            evaluations = Evaluation.objects.in_bulk([row[1] for row in chunk])
            inputs = stored_inputs.inputs_of(evaluations.values())
            outcomes = workers.map(evaluate, [inputs[row[1]] or "null" for row in chunk])
            for offset, ((deployment_id, evaluation_id, environment, kind, created_at), outcome) in enumerate(
                zip(chunk, outcomes, strict=True)
            ):
                entry = _compare(policy.pk, evaluations[evaluation_id], outcome, declared)
                before_counts[entry["before"]] += 1
                after_counts[entry["after"]] += 1
                errors += entry["after_policy"]["decision"] == "error"
                requirements_changed += entry["requirements_changed"]
                if entry["before"] != entry["after"] or entry["requirements_changed"]:
                    recorded = inputs[evaluation_id] or "null"
                    secrets = secrets_of(json.loads(recorded), Sensitivity.of(evaluations[evaluation_id]))
                    changed.append(
                        {
                            "deployment": deployment_id,
                            "environment": environment,
                            "type": kind,
                            "created_at": created_at.isoformat(),
                            **scrubbed(entry, secrets),
                        }
                    )
                done = start + offset + 1
                if progress is not None and (done % _PROGRESS_EVERY == 0 or done == len(rows)):
                    progress(done, len(rows))
    return {
        "replayed": len(rows),
        "changed_count": len(changed),
        "counts": {
            "before": {decision: before_counts[decision] for decision in DECISIONS},
            "after": {decision: after_counts[decision] for decision in DECISIONS},
        },
        "requirements_changed_count": requirements_changed,
        "policy_errors": errors,
        "changed": changed,
        "environments": environment_ids or [],
        "applies_nowhere": not environment_ids and not environments_applying(policy).exists(),
    }


def result_shown_to(user: AbstractBaseUser, result: dict[str, Any] | None) -> dict[str, Any] | None:
    """A replay's result as a reader sees it: the counts, and only the changed deployments the reader may
    see (another author may have started it, seeing other projects)."""
    if not result or not result.get("changed"):
        return result
    ids = [entry.get("deployment") for entry in result["changed"]]
    visible = set(access.visible_deployments(user).filter(pk__in=ids).values_list("pk", flat=True))
    return {**result, "changed": [entry for entry in result["changed"] if entry.get("deployment") in visible]}


def _applying(decision: Any, requirements: list[dict[str, Any]]) -> list[str]:
    """What a policy's requirements ask while it says ``decision``: nothing unless it waits."""
    return [label(requirement) for requirement in requirements] if decision == "pending" else []


def _compare(
    policy_id: int, evaluation: Evaluation, outcome: rego.PolicyOutcome, declared: list[dict[str, Any]]
) -> dict[str, Any]:
    """The deployment's recorded decision and requirements, and those with this policy's outcome (and
    the revision's declared requirements) in place of the recorded ones."""
    others = [o for o in evaluation.outcomes or [] if o.get("policy_id") != policy_id]
    mine = next((o for o in evaluation.outcomes or [] if o.get("policy_id") == policy_id), None)
    after = rego.combine_decisions([*(o.get("decision") for o in others), outcome.decision])
    after_messages = {
        kind: [*(m for o in others for m in o.get(kind) or []), *outcome.messages.get(kind, [])]
        for kind in ("deny", "pending", "warn", "allow")
    }
    # Unknown when the outcome was recorded before requirements were kept: not compared.
    known = mine is None or "requirements" in mine
    before_requirements = (
        [] if mine is None else _applying(mine.get("decision"), mine.get("requirements") or [])
    )
    after_requirements = _applying(outcome.decision, declared)
    return {
        "before": evaluation.decision,
        "after": after,
        "before_requirements": before_requirements,
        "after_requirements": after_requirements,
        "requirements_changed": known and before_requirements != after_requirements,
        "before_messages": _kept(evaluation.messages or {}),
        "after_messages": _kept(after_messages),
        "before_policy": None
        if mine is None
        else {"revision": mine.get("revision"), "decision": mine.get("decision")},
        "after_policy": {
            "decision": outcome.decision or "none",
            "messages": _kept(outcome.messages),
            "error": str(outcome.error) if outcome.error else None,
        },
    }


def _kept(messages: dict[str, list[str]]) -> dict[str, list[str]]:
    return {
        kind: list(messages.get(kind) or [])[:_MESSAGES_KEPT] for kind in ("deny", "pending", "warn", "allow")
    }
