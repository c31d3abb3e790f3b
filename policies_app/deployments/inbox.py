"""The deployment queue: what waits for a user, their own deployments, and every deployment they may see
filtered, searched and sorted. The API and the pages ask these functions; each is a queryset of a
constant number of queries, whatever the number of rows.

"Waiting for me" is the rule of deployments.refusal_to_decide written as a query: pending approval, on
a project where the user approves, not already decided by them, and not their own unless the project
lets deployers approve their own deployments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from policies_app import access
from policies_app.access import Grants
from policies_app.choices import Capability, DeploymentStatus
from policies_app.deployments import requirements
from policies_app.models import Approval, Deployment, Evaluation, Project

# What a list may be sorted by (the API's ``ordering`` and the page's sort links), newest first by default.
SORTS = {
    "created": ("created_at", "id"),
    "-created": ("-created_at", "-id"),
    "status": ("status", "-created_at", "-id"),
    "-status": ("-status", "-created_at", "-id"),
    "environment": ("environment__name", "-created_at", "-id"),
    "-environment": ("-environment__name", "-created_at", "-id"),
    "deployer": ("deployer__username", "-created_at", "-id"),
    "-deployer": ("-deployer__username", "-created_at", "-id"),
    "type": ("type", "-created_at", "-id"),
    "-type": ("-type", "-created_at", "-id"),
    # Urgency: what expires soonest first, then what has waited longest; what never expires last.
    "expires": (F("expires_at").asc(nulls_last=True), F("pending_since").asc(nulls_last=True), "id"),
    "-expires": (F("expires_at").desc(nulls_last=True), F("pending_since").desc(nulls_last=True), "-id"),
}
# The sort of each view when none is asked for: what waits for me, most urgent first.
DEFAULT_SORTS = {"waiting": "expires", "mine": "-created", "all": "-created"}
VIEWS = ("waiting", "mine", "all")


@dataclass(frozen=True)
class QueueFilters:
    view: str = "all"  # one of VIEWS
    project: int | None = None  # the project and its sub-projects
    environment: int | None = None
    deployer: str = ""  # username
    type: str = ""
    statuses: tuple[str, ...] = ()
    since: date | None = None
    until: date | None = None
    text: str = ""
    sort: str = ""  # "": the view's default (DEFAULT_SORTS)

    @property
    def shown_sort(self) -> str:
        return self.sort or DEFAULT_SORTS.get(self.view, "-created")


def waiting_for(user: AbstractBaseUser, deployments: QuerySet[Deployment] | None = None) -> QuerySet:
    """Deployments the user may approve or reject now."""
    held = Grants.of(user)
    deployments = access.visible_deployments(user) if deployments is None else deployments
    approving = held.capability_filter(Capability.APPROVE, "environment__project__")
    if approving is not None:
        deployments = deployments.filter(approving)
    own_allowed = _self_approval_subtrees()
    not_own = ~Q(deployer=user) if own_allowed is None else ~Q(deployer=user) | own_allowed
    decided = Approval.objects.filter(deployment=OuterRef("pk"), user=user)
    return (
        deployments.filter(status=DeploymentStatus.PENDING_APPROVAL).filter(not_own).exclude(Exists(decided))
    )


def _self_approval_subtrees() -> Q | None:
    """Projects (and their sub-projects) that let deployers approve their own deployments."""
    allowing = list(Project.objects.filter(allow_self_approval=True).values_list("pk", "lineage"))
    if not allowing:
        return None
    clause = Q(environment__project_id__in=[pk for pk, _ in allowing])
    for pk, lineage in allowing:
        clause |= Q(environment__project__lineage__startswith=f"{lineage}{pk}/")
    return clause


def count_waiting_for(user: AbstractBaseUser) -> int:
    if not user.is_authenticated:
        return 0
    return waiting_for(user).count()


# A list never shows these, and on a large table reading them is most of a list's cost.
LIST_DEFERRED = ("variables", "policy_data")


def deployments_for(user: AbstractBaseUser, filters: QueueFilters) -> QuerySet[Deployment]:
    deployments = access.visible_deployments(user).defer(*LIST_DEFERRED)
    if filters.view == "waiting":
        deployments = waiting_for(user, deployments)
    elif filters.view == "mine":
        deployments = deployments.filter(deployer=user)
    if filters.project is not None:
        deployments = deployments.filter(in_project(filters.project))
    if filters.environment is not None:
        deployments = deployments.filter(environment_id=filters.environment)
    if filters.deployer:
        deployments = deployments.filter(deployer__username=filters.deployer)
    if filters.type:
        deployments = deployments.filter(type=filters.type)
    if filters.statuses:
        deployments = deployments.filter(status__in=filters.statuses)
    zone = timezone.get_current_timezone()
    if filters.since:
        deployments = deployments.filter(created_at__gte=datetime.combine(filters.since, time.min, zone))
    if filters.until:
        deployments = deployments.filter(created_at__lte=datetime.combine(filters.until, time.max, zone))
    if filters.text:
        deployments = deployments.filter(search_clause(filters.text))
    sort = filters.sort or DEFAULT_SORTS.get(filters.view, "-created")
    return deployments.order_by(*SORTS.get(sort, SORTS["-created"]))


def in_project(project_id: int) -> Q:
    """Deployments of a project and of its sub-projects."""
    return Q(environment__project_id=project_id) | Q(
        environment__project__lineage__contains=f"/{project_id}/"
    )


def search_clause(text: str) -> Q:
    """A deployment matches by its number (#12 or 12), revision, environment, project or deployer."""
    text = text.strip()
    clause = (
        Q(revision__icontains=text)
        | Q(environment__name__icontains=text)
        | Q(environment__project__name__icontains=text)
        | Q(deployer__username__icontains=text)
    )
    number = text.removeprefix("#")
    if number.isdigit() and len(number) < 19:
        clause |= Q(pk=int(number))
    return clause


@dataclass
class QueueRow:
    """A deployment as a queue lists it: why it waits (the policies' pending reasons and the requirements
    not met yet) and its plan's counts by action."""

    deployment: Deployment
    reasons: list[str] = field(default_factory=list)
    unmet: list[str] = field(default_factory=list)
    counts: dict[str, int] | None = None

    @property
    def count_rows(self) -> list[tuple[str, int]]:
        """(action, count) of the actions the plan has, in reading order, none that is zero."""
        order = ("delete", "replace", "create", "update", "read")
        return [(action, self.counts[action]) for action in order if self.counts and self.counts.get(action)]


def queue_rows(deployments: list[Deployment]) -> list[QueueRow]:
    """The rows of a page of the queue, in at most three queries whatever their number: the evaluations'
    outcomes, the approvals, the approvers' teams (when a requirement names one). No plan is read: the
    counts were kept at trigger (a deployment triggered before they were shows none)."""
    waiting = [d.pk for d in deployments if d.status == DeploymentStatus.PENDING_APPROVAL]
    evaluations: dict[int, list[Any]] = {}
    approvers: dict[int, list[Any]] = {}
    if waiting:
        for evaluation in (
            Evaluation.objects.filter(deployment_id__in=waiting)
            .only("pk", "deployment_id", "outcomes")
            .order_by("created_at", "pk")
        ):
            evaluations.setdefault(evaluation.deployment_id, []).append(evaluation)
        for approval in Approval.objects.filter(deployment_id__in=waiting, decision="approve").select_related(
            "user"
        ):
            approvers.setdefault(approval.deployment_id, []).append(approval.user)
    applying = {pk: requirements.applying_requirements(found) for pk, found in evaluations.items()}
    teams = (
        requirements.teams_of({user.pk for users in approvers.values() for user in users})
        if any(r.get("team") for found in applying.values() for _, r in found)
        else {}
    )
    rows = []
    for deployment in deployments:
        row = QueueRow(deployment, counts=deployment.plan_counts)
        if deployment.pk in applying:
            progress = requirements.requirement_progress(
                evaluations[deployment.pk], approvers.get(deployment.pk, []), [], teams
            )
            row.unmet = [p.summary for p in progress if not p.met]
        messages = deployment.messages if isinstance(deployment.messages, dict) else {}
        if deployment.status == DeploymentStatus.PENDING_APPROVAL:
            row.reasons = [str(message) for message in messages.get("pending") or []]
        rows.append(row)
    return rows
