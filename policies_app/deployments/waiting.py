"""What a waiting pipeline asks, at next to no cost: a deployment's slim status and the entity tags that
let a poll whose answer has not changed be answered "304 Not Modified" without serialising anything.

A pipeline gate polls its deployment every few seconds for as long as approvers take (hours). Each poll
reads one small row (``slim_status``: one prepared query, no plan, no evaluations' inputs, no approvers'
names), and the tag is a digest of exactly what that answer shows, so it changes whenever the answer
would.

The full representation (``DeploymentSerializer``) shows evaluations, approvals and who may still act;
its tag (``full_tag``) is a digest of one small query over the columns and related rows that change when
the deployment does. It is a weak tag: who may still approve follows role changes on the project, and
the names shown (the deployer's, approvers', policies') follow renames, none of which touch the
deployment, so a client holding the tag may keep such a detail stale; its status, verdict, messages,
evaluations and approvals never.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import (
    BooleanField,
    CharField,
    Count,
    Exists,
    ExpressionWrapper,
    IntegerField,
    Max,
    OuterRef,
    Q,
    Subquery,
    Value,
)
from django.db.models.functions import Cast, Coalesce, Concat
from django.utils.http import parse_etags

from policies_app import access
from policies_app.accounts import tokens
from policies_app.choices import Capability, DeploymentStatus
from policies_app.deployments.lifecycle import queued_reason
from policies_app.models import (
    ApiToken,
    Approval,
    Deployment,
    Evaluation,
    LegacyApiToken,
    OrganisationMembership,
    ProjectMembership,
)
from policies_app.prepared import PreparedQuery

# The columns the slim status is made of; nothing else is read.
SLIM_COLUMNS = (
    "id",
    "status",
    "decision",
    "messages",
    "error",
    "expires_at",
    "superseded_by_id",
    "queued_behind_id",
)
# And what the full representation shows of the deployment's own row and related rows, for its tag.
FULL_COLUMNS = (
    *SLIM_COLUMNS,
    "updated_at",
    "template_commit",
    "pending_since",
    "released_at",
    "completed_at",
)
NO_DEPLOYMENT = -7_340_017  # the placeholder of a prepared query's deployment id


def _of_each(model: type, aggregate: type) -> Subquery | Coalesce:
    """``aggregate`` (Count, Max) of the ids of a deployment's rows of ``model``, as a subquery: no GROUP
    BY over the deployment's own columns. A count of no rows is 0 (the subquery itself gives NULL)."""
    rows = (
        model.objects.filter(deployment=OuterRef("pk"))
        .order_by()
        .values("deployment")
        .annotate(n=aggregate("pk"))
        .values("n")
    )
    found = Subquery(rows, output_field=IntegerField())
    return Coalesce(found, 0) if aggregate is Count else found


def _slim_row(pk: int) -> Any:
    return (
        Deployment.objects.filter(pk=pk)
        .order_by()  # one row: nothing to sort
        .annotate(approvals_given=_of_each(Approval, Count))
        .values_list(
            "environment__project_id", "environment__project__lineage", *SLIM_COLUMNS, "approvals_given"
        )
    )


# Each: the deployment's project (id, lineage) first, for the check of who may see it, then the columns.
SLIM_ROW = PreparedQuery(_slim_row, NO_DEPLOYMENT)
FULL_TAG_ROW = PreparedQuery(
    lambda pk: (
        Deployment.objects.filter(pk=pk)
        .order_by()  # one row: nothing to sort
        .annotate(
            approvals_given=_of_each(Approval, Count),
            last_approval=_of_each(Approval, Max),
            evaluations_made=_of_each(Evaluation, Count),
            last_evaluation=_of_each(Evaluation, Max),
        )
        .values_list(
            "environment__project_id",
            "environment__project__lineage",
            *FULL_COLUMNS,
            "approvals_given",
            "last_approval",
            "evaluations_made",
            "last_evaluation",
        )
    ),
    NO_DEPLOYMENT,
)


def _visible_row(query: PreparedQuery, user: AbstractBaseUser, deployment_id: int) -> list[Any] | None:
    """The row of a deployment the user may see (the same rule as access.visible_deployments: a role on
    its project or an ancestor, or an organisation role), without its project; None otherwise."""
    rows = query.rows(deployment_id)
    if not rows:
        return None
    project_id, lineage, *row = rows[0]
    if not access.grants(user).can_reach(Capability.READ, project_id, lineage):
        return None
    return row


def slim_status(user: AbstractBaseUser, deployment_id: int) -> dict[str, Any] | None:
    """The status a pipeline waits on, of a deployment ``user`` may see (None: not there for them).
    One prepared query, and the user's grants (loaded once per request).

    ``required`` is what the deployment waits for (the policies' pending messages) while it waits for
    approvers; ``approvals`` counts the approvals and rejections given so far."""
    row = _visible_row(SLIM_ROW, user, deployment_id)
    return None if row is None else _slim_shown(row)


def _slim_shown(row: list[Any]) -> dict[str, Any]:
    values = dict(zip((*SLIM_COLUMNS, "approvals"), row, strict=True))
    messages = values["messages"] if isinstance(values["messages"], dict) else {}
    status = values["status"]
    return {
        "id": values["id"],
        "status": status,
        "decision": values["decision"] or None,
        "required": list(messages.get("pending") or [])
        if status == DeploymentStatus.PENDING_APPROVAL
        else [],
        "messages": {kind: list(messages.get(kind) or []) for kind in ("deny", "warn", "pending")},
        "error": values["error"] or None,
        "approvals": values["approvals"],
        "expires_at": values["expires_at"],
        "superseded_by": values["superseded_by_id"],
        "queued_behind": values["queued_behind_id"],
        "queued_reason": queued_reason(values["queued_behind_id"])
        if status == DeploymentStatus.QUEUED and values["queued_behind_id"]
        else None,
    }


def _in_subtree(project: OuterRef, deployment_id: int) -> Exists:
    """Whether the deployment is in ``project`` or below it (its lineage names the project)."""
    path_part = Concat(Value("/"), Cast(project, CharField()), Value("/"))
    return Exists(
        Deployment.objects.filter(pk=deployment_id).filter(
            Q(environment__project_id=project) | Q(environment__project__lineage__contains=path_part)
        )
    )


def _token_may_read(kind: type, deployment_id: int) -> ExpressionWrapper:
    """Whether the token of a ``kind`` row may see the deployment: the rule of access.Grants for
    reading, in SQL (tests/deployments/test_poll_in_one_query.py checks both agree for every persona). A
    service account's token reads its account's project and below; any other token what its user
    reads: a superuser and every organisation role everything, a role on a project (the user's own or
    a team's) that project and below. Every role reads."""
    member = ProjectMembership.objects.filter(
        Q(user_id=OuterRef(OuterRef("user_id"))) | Q(team__members__id=OuterRef(OuterRef("user_id")))
    ).filter(_in_subtree(OuterRef("project_id"), deployment_id))
    organisation = OrganisationMembership.objects.filter(user_id=OuterRef("user_id"))
    users_reading = Q(user__is_superuser=True) | Exists(organisation) | Exists(member)
    if kind is ApiToken:
        account = _in_subtree(OuterRef("service_account__project_id"), deployment_id)
        users_reading = (Q(service_account__isnull=False) & account) | (
            Q(service_account__isnull=True) & users_reading
        )
    return ExpressionWrapper(users_reading, output_field=BooleanField())


def _poll_row(kind: type) -> PreparedQuery:
    """A conditional poll in one round trip: the tokens of the key's prefix with their users and whether
    each may see the deployment, beside the deployment's slim row (NULLs: no such deployment). Prepared
    on the server (prepared.py): planning it would cost PostgreSQL more than answering it."""
    return PreparedQuery(
        lambda prefix, pk: (
            tokens.candidates(kind, prefix).annotate(may_read=_token_may_read(kind, pk)),
            _slim_row(pk),
        ),
        tokens.NO_PREFIX,
        NO_DEPLOYMENT,
        server_side=True,
    )


POLL_ROWS = {ApiToken: _poll_row(ApiToken), LegacyApiToken: _poll_row(LegacyApiToken)}


@dataclass(frozen=True)
class Poll:
    """A poll answered from one query: who asked, and the slim status (None: not there for them)."""

    user: AbstractBaseUser
    shown: dict[str, Any] | None


def poll_with_key(key: str, deployment_id: int) -> Poll | None:
    """A pipeline's poll of a deployment's slim status with a named token's key, authenticated and
    answered from one query (``POLL_ROW``): the token is looked up on every poll, so a revoked or
    expired token or a deactivated user is refused at once. None: nothing this answers (no such
    token, an expired one): the ordinary path refuses it."""
    kind = tokens.kind_of(key)
    rows = POLL_ROWS[kind].rows(tokens.key_prefix(key), deployment_id)
    try:
        user, row = tokens.user_among(kind, key, rows)
    except tokens.TokenExpired:
        return None
    if user is None:
        return None
    may_read, project_id, _lineage, *slim = row[tokens.candidate_width(kind) :]
    if project_id is None or not may_read:
        return Poll(user, None)
    return Poll(user, _slim_shown(slim))


def tag_of(shown: Any, weak: bool = False) -> str:
    """An entity tag for ``shown`` (anything whose repr is deterministic: the values of one answer)."""
    digest = hashlib.blake2b(repr(shown).encode(), digest_size=12).hexdigest()
    return f'W/"{digest}"' if weak else f'"{digest}"'


def full_tag(user: AbstractBaseUser, deployment_id: int) -> str | None:
    """The weak tag of the full representation of a deployment ``user`` may see (None: not there for
    them), from one prepared query: its own columns that are shown, and the newest and number of its
    evaluations and approvals."""
    row = _visible_row(FULL_TAG_ROW, user, deployment_id)
    return None if row is None else tag_of(row, weak=True)


def full_tag_of(deployment: Deployment) -> str:
    """``full_tag`` of a deployment loaded for its full representation (its evaluations and approvals
    prefetched): the same values, so the same tag, without the query."""
    evaluations = [evaluation.pk for evaluation in deployment.evaluations.all()]
    approvals = [approval.pk for approval in deployment.approvals.all()]
    row = [getattr(deployment, column) for column in FULL_COLUMNS]
    row += [len(approvals), max(approvals, default=None), len(evaluations), max(evaluations, default=None)]
    return tag_of(row, weak=True)


def matches(if_none_match: str, tag: str) -> bool:
    """Whether a request's If-None-Match names ``tag`` (weak comparison, as for every GET: RFC 9110)."""
    if not if_none_match:
        return False
    wanted = tag.removeprefix("W/")
    return any(sent == "*" or sent.removeprefix("W/") == wanted for sent in parse_etags(if_none_match))
