"""Server-rendered pages. Who may see and do what comes from access.py, what happens from the services:
a page that the user may not see answers 404, an action the user may not take answers 403."""

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .. import access
from ..choices import CANCELLABLE_STATUSES, Capability, DeploymentStatus
from ..deployments import cancel_deployment, record_approval
from ..environments import masked, masked_input
from ..errors import DomainError
from ..models import ApprovalPolicy, Deployment, Environment, PolicyModule, PolicyRevision, Project
from ..policies import dry_run_policy
from ..tree import InheritedPolicy, ProjectTree, tree_for
from .forms import ApprovalForm, DeploymentFilterForm, DryRunForm

logger = logging.getLogger(__name__)

QUEUE_PAGE_SIZE = 50
RECENT_DEPLOYMENTS = 20


# --- deployments -------------------------------------------------------------------------------------


@login_required
@require_GET
def deployment_queue(request: HttpRequest) -> HttpResponse:
    environments = access.visible_environments(request.user)
    # Without any filter in the URL the queue shows what waits for someone: the pending deployments.
    data = request.GET if "status" in request.GET else {"status": DeploymentStatus.PENDING_APPROVAL}
    form = DeploymentFilterForm(data, environments=[(e.pk, str(e)) for e in environments])
    deployments = access.visible_deployments(request.user)
    if form.is_valid():
        if form.cleaned_data["status"]:
            deployments = deployments.filter(status=form.cleaned_data["status"])
        if form.cleaned_data["environment"] is not None:
            deployments = deployments.filter(environment_id=form.cleaned_data["environment"])
    else:
        deployments = deployments.none()
    page = Paginator(deployments, QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "web/deployment_queue.html",
        {"form": form, "page": page, "query": query.urlencode()},
    )


def _visible_deployment(request: HttpRequest, pk: int) -> Deployment:
    return get_object_or_404(access.visible_deployments(request.user), pk=pk)


def _render_deployment(
    request: HttpRequest,
    deployment: Deployment,
    *,
    form: ApprovalForm | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    project = deployment.environment.project
    pending = deployment.status == DeploymentStatus.PENDING_APPROVAL
    held = access.grants(request.user)
    evaluations = deployment.evaluations.prefetch_related(
        Prefetch("policy_revisions", queryset=PolicyRevision.objects.select_related("policy"))
    )
    context: dict[str, Any] = {
        "deployment": deployment,
        "project": project,
        "evaluations": evaluations,
        "approvals": deployment.approvals.select_related("user"),
        "events": deployment.events.select_related("actor"),
        "pinned_revisions": deployment.policy_revisions.select_related("policy"),
        "may_approve": pending and held.can(Capability.APPROVE, project),
        "may_cancel": deployment.status in CANCELLABLE_STATUSES and held.can(Capability.DEPLOY, project),
        "approval_form": form or ApprovalForm(),
        "error": error,
    }
    return render(request, "web/deployment_detail.html", context, status=status)


@login_required
@require_GET
def deployment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _render_deployment(request, _visible_deployment(request, pk))


@login_required
@require_POST
def deployment_decide(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve or reject; record_approval holds every rule (role, self-approval, still pending, once)."""
    deployment = _visible_deployment(request, pk)
    form = ApprovalForm(request.POST)
    if not form.is_valid():
        return _render_deployment(
            request, deployment, form=form, error="Choose approve or reject.", status=400
        )
    try:
        record_approval(deployment, request.user, form.cleaned_data["decision"], form.cleaned_data["comment"])
    except DomainError as refusal:
        return _refused(request, deployment, refusal, form)
    return redirect("web:deployment-detail", pk=deployment.pk)


def _refused(
    request: HttpRequest, deployment: Deployment, refusal: DomainError, form: ApprovalForm | None = None
) -> HttpResponse:
    """The web's one translation of a use case's refusal: the page again, with why and the error's status."""
    deployment.refresh_from_db()
    return _render_deployment(
        request, deployment, form=form, error=refusal.message, status=refusal.http_status
    )


@login_required
@require_POST
def deployment_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    deployment = _visible_deployment(request, pk)
    try:
        cancel_deployment(deployment, request.user)
    except DomainError as refusal:
        return _refused(request, deployment, refusal)
    return redirect("web:deployment-detail", pk=deployment.pk)


@login_required
@require_GET
def evaluation_input(request: HttpRequest, pk: int, evaluation_pk: int) -> HttpResponse:
    """The exact input an evaluation gave the engine, to debug a policy or replay it in a dry run."""
    deployment = _visible_deployment(request, pk)
    evaluation = get_object_or_404(deployment.evaluations, pk=evaluation_pk)
    body = evaluation.input_json
    if evaluation.sensitive_variables:
        body = json.dumps(masked_input(json.loads(body), evaluation.sensitive_variables))
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = (
        f'inline; filename="deployment-{deployment.pk}-evaluation-{evaluation.pk}.json"'
    )
    return response


# --- projects and environments ------------------------------------------------------------------------


@dataclass
class ProjectNode:
    project: Project
    own_policies: list[ApprovalPolicy]
    inherited_policies: list[InheritedPolicy]
    environments: list[Environment] = field(default_factory=list)
    children: list["ProjectNode"] = field(default_factory=list)


@login_required
@require_GET
def project_tree(request: HttpRequest) -> HttpResponse:
    visible = list(access.visible_projects(request.user))
    # Loaded around the visible projects, because they inherit from ancestors the user may not see.
    tree = ProjectTree.around(visible)
    environments: dict[int, list[Environment]] = {}
    for environment in access.visible_environments(request.user):
        environments.setdefault(environment.project_id, []).append(environment)
    nodes = {
        project.pk: ProjectNode(
            project,
            [attachment.policy for attachment in tree.own_attachments(project)],
            tree.inherited_policies(project),
            environments.get(project.pk, []),
        )
        for project in sorted(visible, key=lambda project: project.name.lower())
    }
    roots: list[ProjectNode] = []
    for node in nodes.values():
        parent = nodes.get(node.project.parent_id)
        (parent.children if parent is not None else roots).append(node)
    return render(request, "web/project_tree.html", {"roots": roots})


@login_required
@require_GET
def environment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    environment = get_object_or_404(
        access.visible_environments(request.user).prefetch_related("template__approval_policies"), pk=pk
    )
    deployments = access.visible_deployments(request.user).filter(environment=environment)[
        :RECENT_DEPLOYMENTS
    ]
    tree = tree_for(environment.project)
    context = {
        "environment": environment,
        "environment_variables": masked(
            environment.environment_variables, environment.sensitive_names("environment")
        ),
        "terraform_variables": masked(
            environment.terraform_variables, environment.sensitive_names("terraform")
        ),
        "project_name": tree.full_name(environment.project),
        "policies": tree.policy_sources(environment),
        "deployments": deployments,
        "current_state": environment.current_state,
    }
    return render(request, "web/environment_detail.html", context)


# --- policies -----------------------------------------------------------------------------------------


@login_required
@require_GET
def policy_list(request: HttpRequest) -> HttpResponse:
    policies = access.visible_policies(request.user).prefetch_related("projects", "templates", "revisions")
    return render(request, "web/policy_list.html", {"policies": policies})


@login_required
@require_http_methods(["GET", "POST"])
def policy_detail(request: HttpRequest, pk: int) -> HttpResponse:
    policy = get_object_or_404(access.visible_policies(request.user), pk=pk)
    held = access.grants(request.user)
    revisions = list(
        policy.revisions.select_related("created_by").prefetch_related(
            Prefetch("modules", queryset=PolicyModule.objects.order_by("filename"))
        )
    )
    for revision in revisions:
        revision.data_json = (
            "" if revision.data is None else json.dumps(revision.data, indent=2, sort_keys=True)
        )
    numbers = [revision.number for revision in revisions]
    result: dict[str, Any] | None = None
    dry_run_error = ""
    if request.method == "POST":
        form = DryRunForm(request.POST, revisions=numbers)
        if form.is_valid():
            revision = next(r for r in revisions if r.number == form.cleaned_data["revision"])
            try:
                result = dry_run_policy(revision, form.cleaned_data["input_json"])
            except Exception as problem:  # noqa: BLE001 - show the engine's failure instead of a 500
                logger.exception("dry run of %s r%s failed", policy.name, revision.number)
                dry_run_error = f"The evaluation failed: {problem}"
    else:
        form = DryRunForm(initial={"revision": numbers[0] if numbers else None}, revisions=numbers)
    context = {
        "policy": policy,
        "revisions": revisions,
        "projects": [p for p in policy.projects.all() if held.can(Capability.READ, p)],
        "templates": policy.templates.all(),
        "form": form,
        "result": result,
        "dry_run_error": dry_run_error,
    }
    return render(request, "web/policy_detail.html", context, status=400 if form.errors else 200)
